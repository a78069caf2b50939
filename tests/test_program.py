"""Which CPU program runs by default, and what ``turbogelu.cpu_program()`` says about it.

The default ("auto") is the cells program on the AVX-512 instruction sets (its lookups are one
two-table permute) and the degree-8 polynomial on AVX2 and scalar code. ``TURBOGELU_CPU_KERNEL``
and ``turbogelu.ops.use_cpu_kernel`` force either. What each program computes is tested in
test_ops*.py (the polynomial) and test_cells.py (cells); here: the choice, the report of it, and
that the default computes exactly the bits of the program it names.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from conftest import ISAS, ROOT, assert_same_bits, clamp_radius, subprocess_env

import turbogelu
import turbogelu.ops as tops

OPS = torch.ops.turbogelu
CELLS_ISAS = {"avx512bf16", "avx512"}  # two-table permutes (vpermt2ps)


def _expected_default(isa: str) -> str:
    return "cells" if isa in CELLS_ISAS else "poly"


def _outputs(x: torch.Tensor, g: torch.Tensor, backward: str) -> tuple[torch.Tensor, ...]:
    return (
        OPS.gelu(x),
        OPS.gelu(x, "tanh"),
        OPS.gelu_backward(g, x, "none", backward),
        OPS.gelu_backward(g, x, "tanh", backward),
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_default_is_cells_on_avx512_and_poly_elsewhere(isa, dtype):
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(5000, generator=gen) * 3).to(dtype)
    g = torch.randn(5000, generator=gen).to(dtype)
    with tops.use_cpu_kernel("auto"):
        program = turbogelu.cpu_program()
        assert program["isa"] == isa == turbogelu.cpu_isa()
        assert program["program"] == tops.cpu_kernel() == _expected_default(isa)
        assert program["reason"].startswith(f"default on {isa}")
        _check_degrees(program["degrees"], program["program"])
        default = {b: _outputs(x, g, b) for b in ("direct", "matched")}
    with tops.use_cpu_kernel(_expected_default(isa)):
        for b, outs in default.items():
            for got, want in zip(outs, _outputs(x, g, b), strict=True):
                assert_same_bits(got, want, f"{isa} {b}")
    other = "poly" if _expected_default(isa) == "cells" else "cells"
    with tops.use_cpu_kernel(other):  # and the two programs differ, so the test can fail
        assert not torch.equal(OPS.gelu(x), default["direct"][0])


def test_forced_program_is_reported_and_the_setting_restored():
    before = OPS._set_cpu_kernel("auto")
    try:
        for name in ("poly", "cells"):
            with tops.use_cpu_kernel(name):
                p = turbogelu.cpu_program()
                assert p.pop("store").startswith("auto: streaming above")
                _check_degrees(p.pop("degrees"), name)
                assert p == {
                    "program": name,
                    "isa": turbogelu.cpu_isa(),
                    "reason": f"forced by use_cpu_kernel('{name}') on this thread",
                }
            # restored to "auto", so the program follows the instruction set again
            assert OPS._set_cpu_kernel("auto") == "auto"
            assert tops.cpu_kernel() == _expected_default(turbogelu.cpu_isa())
    finally:
        OPS._set_cpu_kernel(before)


# The rows of the kernels' table with a program of their own (the plain ops), and the cells
# programs' functions in the lab's names (turbogelu/approx/cells16.py).
PLAIN = [r.name for r in (*turbogelu._table.GELU, *turbogelu._table.OPS) if r.kind == "Plain"]
CELLS16_FN = {"gelu_none": "gelu", "gelu_tanh": "gelu_tanh"}
DEGREE_DTYPES = ("float32", "float16", "bfloat16", "float64")


def _check_degrees(degrees: dict, program: str) -> None:
    """What cpu_program()["degrees"] must say, from the lab's lists and not the kernels': the
    polynomial's degrees alike in every dtype (16-bit data runs the float32 program); under
    cells a cubic per cell, and a quadratic forward and matched derivative where cells16 found
    one for the 16-bit format (the direct derivative stays the float32 table)."""
    from turbogelu.approx import cells16

    assert list(degrees) == PLAIN
    for row, by_dtype in degrees.items():
        assert list(by_dtype) == list(DEGREE_DTYPES)
        fn = CELLS16_FN.get(row, row)
        for dtype, got in by_dtype.items():
            if program == "cells" and fn in cells16.FUNCTIONS:
                sized = 2 if (fn, dtype) in cells16.SIZED else 3
                assert got == {"forward": sized, "direct": 3, "matched": sized}, (row, dtype)
            else:
                assert got == by_dtype["float32"], (row, dtype)
    if program == "poly":  # GELU's polynomial is its spec's
        from turbogelu.approx import spec

        doc = spec.load(spec.spec_path("none"))
        assert degrees["gelu_none"]["float32"]["forward"] == doc["forward"]["degree"]


def test_cpu_degrees_refuses_what_it_cannot_name():
    with pytest.raises(ValueError, match="no plain op named 'softcap'"):
        OPS._cpu_degrees("softcap", torch.float32)
    with pytest.raises(TypeError, match="unsupported dtype Int"):
        OPS._cpu_degrees("sigmoid", torch.int32)


def test_default_follows_an_isa_switch():
    with tops.use_cpu_kernel("auto"):
        for isa in ISAS:
            with tops.use_cpu_isa(isa):
                assert tops.cpu_kernel() == _expected_default(isa)


def _child(**env: str) -> subprocess.CompletedProcess:
    code = (
        "import json, torch, turbogelu; turbogelu.gelu(torch.ones(3)); "
        "print(json.dumps(turbogelu.cpu_program()))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=subprocess_env(**env),
        timeout=120,
    )


@pytest.mark.parametrize("setting", ["", "auto", "poly", "cells"])
def test_environment_variable(setting):
    r = _child(TURBOGELU_CPU_KERNEL=setting)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    best = ISAS[0]  # a fresh process picks the best instruction set
    assert p["isa"] == best
    if setting in ("", "auto"):
        assert p["program"] == _expected_default(best)
        assert p["reason"].startswith(f"default on {best}")
    else:
        p.pop("store")
        _check_degrees(p.pop("degrees"), setting)
        assert p == {
            "program": setting,
            "isa": best,
            "reason": f"forced by TURBOGELU_CPU_KERNEL={setting}",
        }


def test_environment_isa_without_avx512_defaults_to_the_polynomial():
    if "avx2" not in ISAS:
        pytest.skip("no AVX2 on this CPU")
    r = _child(TURBOGELU_CPU_ISA="avx2")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["program"] == "poly"


# ---------------------------------------------------------------- stores: plain or streaming


@pytest.mark.parametrize("program", ["poly", "cells"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_streaming_stores_give_the_plain_bits(isa, program, dtype):
    """Non-temporal stores align each chunk's output to a cache line first (a head through
    the block buffer) and write whole blocks: every offset of the output in a line, sizes
    around the blocks, and a call split over two threads give the bits of plain stores."""
    gen = torch.Generator().manual_seed(11)
    base = (torch.randn(70_000, generator=gen) * 3).to(dtype)
    gbase = torch.randn(70_000, generator=gen).to(dtype)
    r = clamp_radius("none")
    base[:64:7] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40,
                                -1e-40, r, -r, 100.0]).to(dtype)  # fmt: skip
    with tops.use_cpu_kernel(program):
        for offset in range(0, 64 // base.element_size() + 1, 3):
            for n in (1, 17, 33, 100, 1000, 40_000):
                x, g = base[offset : offset + n], gbase[offset : offset + n]
                out = {}
                for store in ("plain", "stream"):
                    with tops.use_cpu_store(store):
                        o = torch.empty(n + offset, dtype=dtype)[offset:]  # misaligned output
                        OPS.gelu.out(x, out=o)
                        ob = torch.empty(n + offset, dtype=dtype)[offset:]
                        OPS.gelu_backward.out(g, x, out=ob)
                        out[store] = (o, ob)
                for a, b in zip(out["plain"], out["stream"], strict=True):
                    assert_same_bits(a, b, f"{isa} {program} offset {offset} n {n}")
        prev = torch.get_num_threads()
        try:
            torch.set_num_threads(2)  # two chunks of a call, each aligned on its own
            with tops.use_cpu_store("stream"):
                two = OPS.gelu(base)
            with tops.use_cpu_store("plain"):
                assert_same_bits(two, OPS.gelu(base))
        finally:
            torch.set_num_threads(prev)


def test_store_switch_names_and_errors():
    # the hook sets this thread's override and returns the previous one; "process" drops it
    assert OPS._set_cpu_store("stream") == "process"
    assert turbogelu.cpu_program()["store"] == "stream (forced)"
    assert OPS._set_cpu_store("auto") == "stream"
    with pytest.raises(ValueError, match="must be 'auto', 'plain' or 'stream'"):
        OPS._set_cpu_store("nt")
    with pytest.raises(ValueError, match="expected one of"):
        with tops.use_cpu_store("nt"):
            pass
    assert OPS._set_cpu_store("process") == "auto"
    assert OPS._set_cpu_store("process") == "process"


def test_store_rule_reads_the_caches_the_benchmark_labels_by():
    """The automatic store rule's threshold is half the cache it names, in the figures the
    benchmark labels rows by (experiments.records.cpu_caches: sysfs first; glibc's sysconf
    reported a whole socket's L3 on an AMD EPYC, eight times the core's)."""
    import re

    from experiments import records

    r = _child(TURBOGELU_CPU_STORE="auto")
    assert r.returncode == 0, r.stderr
    store = json.loads(r.stdout)["store"]
    m = re.fullmatch(r"auto: streaming above (\d+) bytes per (call|thread) \((.*)\)", store)
    assert m, store
    threshold, per, why = int(m.group(1)), m.group(2), m.group(3)
    caches = records.cpu_caches()
    if why.startswith("no L3 reported"):
        assert "L3" not in caches and threshold == (64 << 20) // 2
    elif per == "thread":
        assert why.startswith("Intel") and threshold == caches["L2"] // 2
    else:
        assert threshold == caches["L3"] // 2
    index3 = Path("/sys/devices/system/cpu/cpu0/cache/index3/size")
    if index3.is_file() and "L3" in caches:
        size = index3.read_text().strip()
        unit = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
        assert caches["L3"] == int(size.rstrip("KM")) * unit


def test_store_environment_variable():
    r = _child(TURBOGELU_CPU_STORE="plain")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["store"] == "plain (forced)"
    r = _child(TURBOGELU_CPU_STORE="fast")
    assert r.returncode != 0
    assert "must be 'auto', 'plain' or 'stream'" in r.stderr and "TURBOGELU_CPU_STORE" in r.stderr


# ---------------------------------------------------------------- the switches are per thread


def _in_block_on_another_thread(block, inside) -> dict:
    """Run ``inside()`` on a second thread within ``block`` (a use_* context), and hold the
    block open while this thread looks: returns what the other thread saw. Deterministic:
    events order the two threads, no race decides the outcome."""
    entered, release, seen = threading.Event(), threading.Event(), {}

    def other():
        try:
            with block:
                seen["inside"] = inside()
                entered.set()
                release.wait(60)
            seen["after"] = inside()
        finally:
            entered.set()

    t = threading.Thread(target=other)
    t.start()
    try:
        assert entered.wait(60), "the other thread did not enter its block"
        seen["here"] = inside()  # this thread, while the other is inside its block
    finally:
        release.set()
        t.join(60)
    return seen


def test_a_program_switch_on_one_thread_leaves_the_others_alone():
    """use_cpu_kernel on one thread changed every thread's program (another thread got cells
    in 220 of 300 calls); now each thread keeps its own setting."""
    x = torch.linspace(-6, 6, 4099)
    default = turbogelu.cpu_program()["program"]
    other = "poly" if default == "cells" else "cells"
    with tops.use_cpu_kernel(default):
        want_default = OPS.gelu(x)
    with tops.use_cpu_kernel(other):
        want_other = OPS.gelu(x)
    assert not torch.equal(want_default, want_other)  # so the test can fail

    seen = _in_block_on_another_thread(
        tops.use_cpu_kernel(other), lambda: (tops.cpu_kernel(), OPS.gelu(x))
    )
    assert seen["inside"][0] == other and torch.equal(seen["inside"][1], want_other)
    assert seen["here"][0] == default and torch.equal(seen["here"][1], want_default)
    assert seen["after"][0] == default and torch.equal(seen["after"][1], want_default)


def test_isa_and_store_switches_are_per_thread_too():
    isa = turbogelu.cpu_isa()
    seen = _in_block_on_another_thread(tops.use_cpu_isa("scalar"), turbogelu.cpu_isa)
    assert (seen["inside"], seen["here"], seen["after"]) == ("scalar", isa, isa)
    store = turbogelu.cpu_program()["store"]
    forced = "plain" if store != "plain (forced)" else "stream"
    seen = _in_block_on_another_thread(
        tops.use_cpu_store(forced), lambda: turbogelu.cpu_program()["store"]
    )
    assert (seen["inside"], seen["here"], seen["after"]) == (f"{forced} (forced)", store, store)


def test_a_block_restores_the_process_setting_from_the_environment():
    """After a block, the thread follows the process's setting again (here the environment
    variable's), not the value the block replaced it with."""
    code = (
        "import json, torch, turbogelu, turbogelu.ops as t\n"
        "with t.use_cpu_kernel('cells'):\n"
        "    inside = turbogelu.cpu_program()\n"
        "print(json.dumps([inside, turbogelu.cpu_program()]))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=subprocess_env(TURBOGELU_CPU_KERNEL="poly"),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    inside, after = json.loads(r.stdout)
    assert inside["program"] == "cells" and inside["reason"].endswith("on this thread")
    assert after["program"] == "poly" and after["reason"] == "forced by TURBOGELU_CPU_KERNEL=poly"
