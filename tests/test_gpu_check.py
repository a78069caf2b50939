"""tests/gpu_check.sh where there is no GPU: its dry run end to end (so the one-shot check
cannot rot before a GPU is lent), and its refusal to judge a machine without one.

The dry run reuses the extension that ``make build`` made (--reuse-build: skipped, and said so,
when turbogelu/_C is not current) and runs a few of the CUDA tests and the memcheck cases on
small tensors (GPU_CHECK_TESTS, GPU_CHECK_QUICK), to fit the suite's time; the full
tests/test_cuda.py runs in the suite anyway.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile

import gpu_check
import pytest
import torch
from conftest import ROOT, subprocess_env

SCRIPT = ROOT / "tests" / "gpu_check.sh"
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=subprocess_env(PYTHON=sys.executable, **env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _archive(path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


@needs_bash
def test_dry_run_writes_the_two_files_and_exits_0(tmp_path):
    ok, why = gpu_check.fresh()
    if not ok:
        pytest.skip(f"turbogelu/_C is not current ({why}): make build first")
    out = tmp_path / "check"
    done = _run(
        "--dry-run",
        "--reuse-build",
        str(out),
        GPU_CHECK_TESTS="ptx_has_every_kernel or bench or (every_op and n17)",
        GPU_CHECK_QUICK="1",
        OMP_NUM_THREADS="1",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.tar.gz", "summary.md"]

    summary = (out / "summary.md").read_text()
    assert summary.startswith("# turbogelu GPU check: DRY RUN: every step ran")
    assert "| build | reused, not rebuilt (--reuse-build:" in summary
    for step in ("machine", "resources", "tests", "memcheck", "bench-1m", "bench-sweep"):
        assert f"| {step} | ok" in summary, step
    assert "## Speed verdicts (shown, not judged: a dry run)" in summary
    assert "| forward | float32 | 4096 | turbogelu (misaligned) |" in summary
    assert "| backward | bfloat16 | 16384 | turbogelu (packed) |" in summary

    files = _archive(out / "gpu_check.tar.gz")
    names = {n.removeprefix("gpu_check/") for n in files}
    assert {"summary.md", "machine.log", "build.log", "resources.md", "tests.log",
            "test_cuda.xml", "memcheck.log", "bench.jsonl", "bench_1m.md", "bench_sweep.md",
            "verdicts.txt"} <= names  # fmt: skip
    assert files["gpu_check/summary.md"].decode() == summary
    junit = gpu_check.junit_summary(str(tmp_path / "x.xml"))  # a missing report is said so
    assert junit.startswith("no JUnit report")
    xml = tmp_path / "test_cuda.xml"
    xml.write_bytes(files["gpu_check/test_cuda.xml"])
    counts = gpu_check.junit_summary(str(xml)).splitlines()[0]
    assert " 0 failed" in counts and not counts.startswith("0 passed")
    assert counts in summary
    rows = [json.loads(line) for line in files["gpu_check/bench.jsonl"].decode().splitlines()]
    assert {r["device"] for r in rows} == {"cpu"} and {r["size"] for r in rows} == {4096, 16384}
    assert b"memcheck cases: " in files["gpu_check/memcheck.log"]
    resources = files["gpu_check/resources.md"]
    assert b"| float32 forward horner (degree 8) |" in resources or (
        b"no resource usage" in resources
    )
    if b"| float32 forward horner (degree 8) |" in resources:
        # the family's packed kernels are listed by name too (gpu_check.describe)
        assert b"| bfloat16 packed swiglu (paper) backward (degrees 3, 2) |" in resources


@needs_bash
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_without_a_gpu_the_check_says_so_and_exits_2(tmp_path):
    out = tmp_path / "check"
    done = _run(str(out))
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.tar.gz", "summary.md"]
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# turbogelu GPU check: NOT RUN (torch.cuda.is_available() is False)")
    assert "gpu_check/machine.log" in _archive(out / "gpu_check.tar.gz")


@needs_bash
def test_usage_errors_exit_2(tmp_path):
    assert _run().returncode == 2
    assert _run("--no-such-option", str(tmp_path)).returncode == 2
    assert _run(str(tmp_path / "a"), str(tmp_path / "b")).returncode == 2
