"""tests/gpu_check.sh where there is no GPU: its dry run end to end (so the one-shot check
cannot rot before a GPU is lent), and its refusal to judge a machine without one.

The dry run reuses the extension that ``make build`` made (--reuse-build: skipped, and said so,
when turbogelu/_C is not current) and runs a few of the CUDA tests and the memcheck cases on
small tensors (GPU_CHECK_TESTS, GPU_CHECK_QUICK), to fit the suite's time; the full
tests/test_cuda.py runs in the suite anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

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
        # one PTX test (gelu_kernels.cu's, the short compile), the faked bench, every row on n17
        GPU_CHECK_TESTS="gelu_kernels_cu_has or bench or (every_op and n17)",
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
    assert (
        "| memcheck | ok: " in summary
        and "(device cpu); tests/cuda_memcheck.py on the CPU" in summary
    )
    if gpu_check._build_module().find_cuda_home():
        # the tests' nvcc compiles ran beside them; stopped after the tests if unfinished
        prefetch = files["gpu_check/prefetch.log"].decode()
        stopped = "the nvcc prefetch was still running after the tests" in summary
        assert stopped or prefetch.count("ok in ") == 4, prefetch + summary
    resources = files["gpu_check/resources.md"]
    # GELU's shipped program is its row of family_kernels.cu; gelu_kernels.cu has Estrin's
    assert b"| float32 gelu_none (accurate) forward (degree 8) |" in resources or (
        b"no resource usage" in resources
    )
    if b"| float32 gelu_none (accurate) forward (degree 8) |" in resources:
        assert b"| float32 forward estrin (degree 8) |" in resources
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


# ------------------------------------------------------------------ the memcheck step's verdict

# What compute-sanitizer prints around the cases' own lines (tests/cuda_memcheck.py).
SANITIZER_HEAD = "========= COMPUTE-SANITIZER\n"
CASES_OK = (
    "size 1: 714 passed, 0 failed so far, 9.0 s\n"
    "memcheck cases: 714 passed, 0 failed (device cuda)\n"
)
API_ERROR = (
    '========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA'
    " API call to cudaPointerGetAttributes.\n"
)
BAD_READ = (
    "========= Invalid __global__ read of size 16 bytes\n"
    "=========     at void turbogelu::elementwise_kernel<float>(...)+0x1b0\n"
    "=========     Address 0x7f1c00000400 is out of bounds\n"
)


def _verdict(log: str, rc: int = 0, mode: str = "sanitizer"):
    return gpu_check.memcheck_verdict(log, rc, mode)


def test_memcheck_verdict_passes_a_clean_run_whatever_torch_api_errors():
    ok, cell, notes = _verdict(SANITIZER_HEAD + CASES_OK + "========= ERROR SUMMARY: 0 errors\n")
    assert ok and cell.startswith("ok: 714 passed, 0 failed") and "ERROR SUMMARY: 0 errors" in cell
    assert notes == []
    # the sanitizer's exit status counts torch's failed API calls: not the kernels' accesses
    log = SANITIZER_HEAD + API_ERROR + CASES_OK + "========= ERROR SUMMARY: 1 error\n"
    ok, cell, _ = _verdict(log, rc=99)
    assert ok and "ERROR SUMMARY: 1 error(s) in all" in cell


def test_memcheck_verdict_fails_a_bad_access_a_mismatch_or_an_unfinished_run():
    log = SANITIZER_HEAD + BAD_READ + CASES_OK + "========= ERROR SUMMARY: 1 error\n"
    ok, cell, _ = _verdict(log, rc=99)
    assert not ok and cell.startswith("FAILED") and "2 invalid or misaligned accesses" in cell
    log = (
        SANITIZER_HEAD
        + "MISMATCH gelu float16 n=3 offset=1\n"
        + CASES_OK.replace("0 failed (device", "1 failed (device")
    )
    ok, cell, _ = _verdict(log + "========= ERROR SUMMARY: 0 errors\n", rc=1)
    assert not ok and cell.startswith("FAILED: memcheck cases: 714 passed, 1 failed")
    # killed by the step's time limit after one size: says how far it got
    ok, cell, _ = _verdict(SANITIZER_HEAD + CASES_OK.splitlines()[0] + "\n", rc=124)
    assert not ok and cell.startswith("TIMED OUT: did not finish (size 1: 714 passed")
    # the cases finished but the sanitizer's summary is missing: it did not finish either
    ok, cell, _ = _verdict(SANITIZER_HEAD + CASES_OK, rc=0)
    assert not ok and "did not finish" in cell
    ok, cell, _ = _verdict("not started: no time left in the 450 s budget\n", rc=125)
    assert not ok and cell.startswith("NOT RUN (no time left): did not finish (no size finished")
    ok, cell, _ = _verdict(CASES_OK, rc=1, mode="dry")  # a crash after the count
    assert not ok and cell.startswith("FAILED (exit 1)")


def test_memcheck_verdict_passes_a_run_cut_short_by_its_budget_as_partial():
    log = (
        SANITIZER_HEAD
        + CASES_OK
        + "memcheck stopped at its 70 s budget: sizes 1 to 4099 run, 65537, 1048559 not run\n"
        + "========= ERROR SUMMARY: 0 errors\n"
    )
    ok, cell, notes = _verdict(log)
    assert ok and cell.startswith("ok, PARTIAL: 714 passed")
    assert notes == ["- PARTIAL memcheck: stopped at its 70 s budget: sizes 1 to 4099 run, "
                     "65537, 1048559 not run"]  # fmt: skip
    ok, cell, notes = _verdict(CASES_OK, mode="bare")
    assert ok and "WITHOUT the sanitizer" in cell and notes[0].startswith("- WARNING")


def test_memcheck_cases_stop_at_their_budget_smallest_sizes_first():
    """--budget 0: the first size (every dtype, every offset) runs, then it stops and names
    the sizes left out; exit 0, as nothing failed."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "cuda_memcheck.py"), "--quick", "--budget", "0"],
        env=subprocess_env(TURBOGELU_TEST_DEVICE="cpu", OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert [x.split(":")[0] for x in lines if x.startswith("size ")] == ["size 1"]
    assert "memcheck stopped at its 0 s budget: size 1 run, 2, 3, 4, 5," in done.stdout
    assert lines[-1].endswith(", 4099 not run")
    ok, cell, notes = gpu_check.memcheck_verdict(done.stdout, 0, "dry")
    assert ok and cell.startswith("ok, PARTIAL: ") and " 0 failed" in cell and len(notes) == 1


# ------------------------------------------------------------------ the tests' nvcc cache


class _FakeNvcc:
    """subprocess.run for nvcc: counts the calls, prints the command."""

    def __init__(self):
        self.calls = 0

    def __call__(self, cmd, **kwargs):
        self.calls += 1
        return subprocess.CompletedProcess(cmd, 0, stdout=f"out {cmd[-1]}", stderr="err")


def test_nvcc_cache_reuses_a_result_and_keys_on_the_kernel_sources(tmp_path, monkeypatch):
    fake = _FakeNvcc()
    monkeypatch.setattr(gpu_check.subprocess, "run", fake)
    monkeypatch.setenv(gpu_check.NVCC_CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    root = tmp_path / "root"
    (root / "kernels" / "cuda").mkdir(parents=True)
    (root / "kernels" / "cuda" / "k.cu").write_text("one")
    monkeypatch.setattr(gpu_check, "ROOT", root)
    cmd = ["nvcc", "-ptx", "k.cu", "-o", "-"]
    assert gpu_check.run_nvcc(cmd, 10) == ("out -", "err") and fake.calls == 1
    assert gpu_check.run_nvcc(cmd, 10) == ("out -", "err") and fake.calls == 1  # reused
    assert gpu_check.run_nvcc([*cmd[:-1], "x"], 10) == ("out x", "err") and fake.calls == 2
    (root / "kernels" / "cuda" / "k.cu").write_text("two")  # a source changed: compiled again
    gpu_check.run_nvcc(cmd, 10)
    assert fake.calls == 3
    key = gpu_check._nvcc_key(cmd)
    (tmp_path / "cache" / f"{key}.json").write_text("{damaged")
    assert gpu_check.run_nvcc(cmd, 10) == ("out -", "err") and fake.calls == 4
    monkeypatch.delenv(gpu_check.NVCC_CACHE_ENV)
    gpu_check.run_nvcc(cmd, 10)
    assert fake.calls == 5  # no cache folder: always compiled


def test_nvcc_cache_waits_only_for_a_live_prefetch(tmp_path, monkeypatch):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    fake = _FakeNvcc()
    monkeypatch.setattr(gpu_check.subprocess, "run", fake)
    monkeypatch.setenv(gpu_check.NVCC_CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(gpu_check, "PREFETCH_WAIT", 0.5)
    cmd = ["nvcc", "-ptx", "k.cu", "-o", "-"]
    pending = tmp_path / f"{gpu_check._nvcc_key(cmd)}.pending"
    pending.write_text(dead)  # a prefetch that died: compiled at once
    t = time.monotonic()
    gpu_check.run_nvcc(cmd, 10)
    assert fake.calls == 1 and time.monotonic() - t < 0.4
    (tmp_path / f"{gpu_check._nvcc_key(cmd)}.json").unlink()
    pending.write_text(str(os.getpid()))  # a live one that never finishes: waited for, then
    t = time.monotonic()
    gpu_check.run_nvcc(cmd, 10)
    assert fake.calls == 2 and time.monotonic() - t >= 0.5
