"""The CPU's table-driven program ("cells": a cubic in each of 32 cells; turbogelu/approx/cells.py,
kernels/include/turbogelu/family_eval.h's cells_eval), the default where the
CPU has AVX-512 two-table permutes (tests/test_program.py), forced here with
``turbogelu.ops.use_cpu_kernel("cells")`` (or TURBOGELU_CPU_KERNEL=cells) on every ISA.

* the committed tables are what the fit gives (refit, to the LP's tolerance:
  ``cells.refit_differences``) and what the header holds (bit for bit);
* every instruction set gives the replay's bits (float32 grid and specials, every 16-bit input);
* the accuracy bounds of the polynomial kernel (test_accuracy's tests, run under cells) and
  the cells' own, ten times tighter, figures;
* the IEEE semantics, thread invariance, opcheck, gradcheck of the matched backward, and the
  switch itself (bad names, the environment variable, poly_gelu unaffected).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import numpy as np
import pytest
import test_accuracy as acc
import torch
from conftest import ROOT, assert_same_bits, subprocess_env

import turbogelu
import turbogelu.ops as tops
from turbogelu.approx import cells, codegen, reference, rounding
from turbogelu.approx import spec as specmod

OPS = torch.ops.turbogelu
MODES = ("none", "tanh")
ISAS = tops.cpu_isas_available()
F32 = np.float32


@pytest.fixture(autouse=True)
def cells_kernel():
    with tops.use_cpu_kernel("cells"):
        assert tops.cpu_kernel() == "cells"
        yield


@functools.cache
def _parts(mode: str) -> dict:
    spec = cells.load(cells.spec_path(mode))
    return {p: cells.part_values(spec[p]) for p in cells.PARTS}


def _f32_inputs() -> np.ndarray:
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 3.4e38, -3.4e38]
    edges = []
    scale = float(_parts("none")["forward"]["scale"])
    for k in range(1, cells.CELLS):  # both sides of every cell edge, and of the tails
        e = F32((k - 0.5 - cells.CENTER) / scale)
        edges += [np.nextafter(e, F32(-np.inf)), e, np.nextafter(e, F32(np.inf))]
    clamp = _parts("none")["forward"]["clamp"]
    edges += [clamp, -clamp, np.nextafter(clamp, F32(np.inf)), np.nextafter(-clamp, F32(-np.inf))]
    rng = np.random.default_rng(0)
    return np.concatenate(
        [np.linspace(-8, 8, 200_001), rng.normal(0, 3, 100_000), specials, edges]
    ).astype(F32)


# ---------------------------------------------------------------- the tables


def test_refit_gives_the_committed_specs(capsys):
    # `--check` compares by cells.refit_differences, never the files' text: settings and
    # constants bit for bit; a table, the float32 rounding of an LP solved by HiGHS to 1e-7
    # from float64 targets through numpy's / scipy's transcendentals (last bits CPU-dependent),
    # as a program within cells.SOLVER_ATOL; the errors to spec.MEASURED_RTOL (or, for a table
    # of other bits, cells.REFIT_ERRORS_RTOL). The kernels' bits are the committed tables'
    # (test_header_holds_the_committed_tables, the replay tests).
    status = cells.main(["--check"])
    out = capsys.readouterr().out
    assert status == 0, f"refit of the cells differs from data/specs/cells:\n{out}"
    assert out.count("matches the refit") == len(MODES), out


def test_check_names_what_differs(tmp_path, capsys):
    # the --check above can fail (the committed file stands in for the refit: no fit is run)
    name = cells.spec_path("none").name
    committed = cells.load(cells.spec_path("none"))
    (tmp_path / name).write_text(cells.dumps(committed))

    def check(doc) -> tuple[int, str]:
        refit = {name: lambda: cells.dumps(doc)}
        status = cells.cli(["--check", "--out", str(tmp_path)], "cells", "doc", tmp_path, refit)
        return status, capsys.readouterr().out

    def moved(part="forward", row=0, cell=5, by=0.0, scale=False, err=1.0):
        doc = json.loads(json.dumps(committed))
        c = F32(float.fromhex(doc[part]["table"][row][cell]))
        doc[part]["table"][row][cell] = specmod.f32_hex(c + F32(by))
        if scale:
            s = F32(float.fromhex(doc[part]["scale"]))
            doc[part]["scale"] = specmod.f32_hex(np.nextafter(s, F32(np.inf)))
        doc[part]["errors"]["mean_abs_float32_grid"] *= err
        return doc

    assert check(committed) == (0, f"{tmp_path / name}: matches the refit\n")
    # a table entry the LP left 2e-7 elsewhere (in value): within its tolerance; 1e-6: not
    assert check(moved(by=2e-7))[0] == 0
    status, out = check(moved(by=1e-6))
    assert status == 1 and "forward.table: the programs are 9.98e-07 apart (> 5e-07)" in out
    status, out = check(moved(part="backward_direct", row=3, cell=30, by=1e-8))  # x^3 ~ 110
    assert status == 1 and "backward_direct.table: the programs are" in out
    # the scale (and every other constant and setting): bit for bit
    status, out = check(moved(scale=True))
    assert status == 1 and "forward.scale" in out
    # the same tables: the errors to spec.MEASURED_RTOL (1e-7); other tables: to 1 %
    assert check(moved(err=1 + 1e-9))[0] == 0
    status, out = check(moved(err=1 + 1e-6))
    assert status == 1 and "forward.errors.mean_abs_float32_grid" in out
    assert check(moved(by=2e-7, err=1 + 1e-3))[0] == 0
    assert check(moved(by=2e-7, err=1.02))[0] == 1


def test_header_holds_the_committed_tables():
    assert codegen.outputs()[codegen.HEADER] == codegen.HEADER.read_text()
    text = codegen.HEADER.read_text()
    for mode in MODES:
        for part in cells.PARTS:
            assert f"CellTable gelu_{mode}_{part}_cells" in text


def test_spec_loader_rejects_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        cells.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        cells.load(bad)
    bad.write_text(specmod.spec_path("none").read_text())  # GELU's polynomial spec
    with pytest.raises(ValueError, match="program is 'polynomial', not 'cells'"):
        cells.load(bad)
    bad.write_text('{"schema_version": 1, "kind": "cells"}')  # the format before schema 2
    with pytest.raises(ValueError, match="schema 1 != 2: written by an earlier turbogelu"):
        cells.load(bad)
    doc = json.loads(cells.spec_path("none").read_text())
    bad.write_text(json.dumps({**doc, "schema": 1}))
    with pytest.raises(ValueError, match=r"schema 1 != 2"):
        cells.load(bad)
    bad.write_text(json.dumps({**doc, "parts": ["forward", "sideways"]}))
    with pytest.raises(ValueError, match="parts"):
        cells.load(bad)
    spec = cells.load(cells.spec_path("none"))
    spec["forward"]["table"][0] = spec["forward"]["table"][0][:31]
    bad.write_text(cells.dumps(spec))
    with pytest.raises(ValueError, match="malformed"):
        cells.load(bad)
    spec["forward"]["table"][0] = ["0x1.000001p+0"] * 32  # not a float32 value
    bad.write_text(cells.dumps(spec))
    with pytest.raises(ValueError, match="not a float32"):
        cells.load(bad)


def test_design_puts_zero_in_a_cell_centre_and_the_tails_in_cells_0_1_31():
    d = cells.design()
    idx = cells.cell_index(np.array([0.0, -d["clamp"], d["clamp"], -4.99, 4.99], F32),
                           d["scale"], d["offset"])  # fmt: skip
    assert idx.tolist() == [cells.CENTER, 1, 31, 2, 30]
    # The offset makes fma(x, scale, offset) an integer: exactly representable, ulp 1.
    assert float(d["offset"]) == cells.CENTER + cells.MAGIC


# ---------------------------------------------------------------- kernels == replay


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
def test_float32_bits_match_the_replay(isa, mode):
    x = _f32_inputs()
    xt = torch.from_numpy(x)
    g = torch.from_numpy(np.random.default_rng(1).normal(size=x.size).astype(F32))
    p = _parts(mode)
    with tops.use_cpu_isa(isa):
        assert_same_bits(OPS.gelu(xt, mode), torch.from_numpy(cells.forward32(x, p["forward"])))
        for b in ("direct", "matched"):
            want = cells.backward32(x, p["backward_" + b], g.numpy())
            assert_same_bits(OPS.gelu_backward(g, xt, mode, b), torch.from_numpy(want), b)


def _to_half(v: np.ndarray, dtype) -> torch.Tensor:
    # float32 -> 16 bits, round to nearest even: what the kernels' stores do.
    return torch.from_numpy(v).to(dtype)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_every_16bit_input_matches_the_replay(isa, dtype):
    x = acc.all_inputs(dtype)
    x32 = x.float().numpy()
    p = _parts("none")
    with tops.use_cpu_isa(isa):
        assert_same_bits(OPS.gelu(x), _to_half(cells.forward32(x32, p["forward"]), dtype))
        g = torch.ones_like(x)
        want = cells.backward32(x32, p["backward_direct"], g.float().numpy())
        assert_same_bits(OPS.gelu_backward(g, x), _to_half(want, dtype))


def test_float64_is_the_same_program_in_double():
    x = _f32_inputs().astype(np.float64)
    xt = torch.from_numpy(x)
    p = _parts("none")
    got = OPS.gelu(xt).numpy()
    want = cells.forward64(x, p["forward"])
    ok = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    # The kernel fuses each multiply-add (std::fma), the numpy replay rounds twice: they agree
    # to a few double ulps of the cubic's terms (relative 1e-12 where the result is ~1e-6).
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-13, atol=1e-16)
    gb = OPS.gelu_backward(torch.ones_like(xt), xt).numpy()
    want_b = cells.backward64(x, p["backward_direct"])[ok]
    np.testing.assert_allclose(gb[ok], want_b, rtol=1e-13, atol=1e-16)


# ---------------------------------------------------------------- accuracy


@pytest.mark.parametrize("mode", MODES)
def test_float32_errors_are_the_recorded_ones_and_ten_times_under_the_bounds(mode):
    spec = cells.load(cells.spec_path(mode))
    lo, hi, n = cells.specmod.GRID
    x = np.linspace(lo, hi, n).astype(F32)
    xt = torch.from_numpy(x)
    exact = reference.gelu(x.astype(np.float64), mode)
    err = np.abs(OPS.gelu(xt, mode).double().numpy() - exact)
    # The recorded errors (the header's comment) are the kernel's, to spec.MEASURED_RTOL: a
    # mean of float64 errors against a reference through scipy's erfc and numpy's exp (their
    # last bits depend on the CPU), here summed by np.mean (its order: numpy's SIMD width)...
    recorded = spec["forward"]["errors"]["mean_abs_float32_grid"]
    assert err.mean() == pytest.approx(recorded, rel=specmod.MEASURED_RTOL)
    assert err.max() <= spec["forward"]["errors"]["max_abs_float32"]
    # ... and a tenth of issue 2's float32 bounds (mean 1.25e-5, max 3e-5; backward 6e-4).
    assert err.mean() <= 1.25e-6 and spec["forward"]["errors"]["max_abs_float32"] <= 3e-6
    gexact = reference.gelu_grad(x.astype(np.float64), mode)
    gerr = np.abs(OPS.gelu_backward(torch.ones_like(xt), xt, mode).double().numpy() - gexact)
    assert gerr.max() <= spec["backward_direct"]["errors"]["max_abs_float32"] <= 6e-5
    # The matched backward (the forward's own derivative) is the less accurate one, as in
    # the polynomial kernel, but still under the bound.
    assert spec["default_backward"] == "direct"
    assert spec["backward_matched"]["errors"]["max_abs_float32"] <= 6e-4


# test_accuracy's tests (the polynomial kernel's bounds) under the cells program.
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", list(acc.DTYPES), ids=list(acc.DTYPES.values()))
def test_grid_vs_mpmath(dtype, mode, isa):
    acc.test_grid_vs_mpmath(dtype, mode, isa)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_exhaustive_forward(fmt, mode):
    acc.test_exhaustive_forward(fmt, mode, ISAS[0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", list(acc.HALF), ids=list(acc.HALF.values()))
def test_exhaustive_backward(dtype, mode):
    acc.test_exhaustive_backward(dtype, mode)


@pytest.mark.parametrize("mode", MODES)
def test_exhaustive_table_is_at_least_as_good_as_the_polynomials(mode):
    """Every region of the exhaustive ulp table: the cells' worst case and share of correctly
    rounded results are no worse than the polynomial kernel's. Print both with
    ``pytest tests/test_cells.py -k table -s``."""
    rows, text = acc.exhaustive_table(mode)
    with tops.use_cpu_kernel("poly"):
        poly_rows, poly_text = acc.exhaustive_table(mode)
    print("\ncells:\n" + text + "\npoly:\n" + poly_text)
    ours = {(r["format"], r["region"]): r for r in rows if r["impl"].startswith("turbogelu")}
    poly = {(r["format"], r["region"]): r for r in poly_rows if r["impl"].startswith("turbogelu")}
    assert ours.keys() == poly.keys()
    for key, r in ours.items():
        assert r["max_ulp"] <= poly[key]["max_ulp"], key
        assert r["pct_correctly_rounded"] >= poly[key]["pct_correctly_rounded"], key
    assert ours[("bfloat16", "x >= 0")]["max_ulp"] <= 1
    assert ours[("float16", "x >= 0")]["max_ulp"] <= 1


# ---------------------------------------------------------------- semantics


def test_ieee_special_values():
    x = torch.tensor([np.nan, np.inf, -np.inf, 0.0, -0.0, -6.0, -100.0, 6.0, 1e30, 1e-40, -1e-40])
    y = OPS.gelu(x)
    assert torch.isnan(y[0])
    assert y[1] == np.inf
    for i in (2, 4, 5, 6):  # -inf, -0.0 and the clamped negative tail: -0.0
        assert y[i] == 0 and torch.signbit(y[i]), (x[i], y[i])
    assert y[3] == 0 and not torch.signbit(y[3])
    assert y[7] == 6.0 and y[8] == 1e30  # the positive tail is x itself
    # Subnormals: gelu(x) = x/2 to within the last bit, sign kept.
    assert y[9] > 0 and y[10] < 0 and abs(float(y[9]) - 0.5e-40) <= 1.5e-45
    g = torch.tensor([np.nan, np.nan, 1.0, 1.0, 2.0])
    xb = torch.tensor([-100.0, 100.0, np.nan, -np.inf, np.inf])
    gb = OPS.gelu_backward(g, xb)
    assert torch.isnan(gb[0]) and torch.isnan(gb[1]) and torch.isnan(gb[2])  # NaN grad in tails
    assert gb[3] == 0 and gb[4] == 2.0


def test_results_do_not_depend_on_the_thread_count():
    x = torch.randn(1 << 18) * 4
    prev = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = (OPS.gelu(x), OPS.gelu_backward(x, x))
        torch.set_num_threads(2)
        two = (OPS.gelu(x), OPS.gelu_backward(x, x))
    finally:
        torch.set_num_threads(prev)
    assert_same_bits(one[0], two[0])
    assert_same_bits(one[1], two[1])


def test_strided_out_and_inplace_forms_agree():
    x = torch.randn(64, 33).t()
    want = OPS.gelu(x.contiguous())
    assert_same_bits(turbogelu.gelu(x).contiguous(), want)
    out = torch.empty(33, 64)
    tops.gelu_op(x, out=out)
    assert_same_bits(out, want)
    y = x.clone()
    turbogelu.gelu_(y)
    assert_same_bits(y.contiguous(), want)


def test_opcheck():
    from torch.library import opcheck

    x = torch.randn(5, 7, requires_grad=True)
    opcheck(OPS.gelu.default, (x,), {"approximate": "tanh"})
    opcheck(OPS.gelu_backward.default, (torch.randn(5, 7), x.detach()))


def test_gradcheck_of_the_matched_backward_in_float64():
    # The forward is one cubic per cell (continuous to ~1e-7 at the edges, where a finite
    # difference would straddle two cells): points well inside cells 2..30.
    scale = float(_parts("none")["forward"]["scale"])
    k = torch.arange(2, 31, dtype=torch.float64)
    x = (k - cells.CENTER + torch.linspace(-0.3, 0.3, 29, dtype=torch.float64)) / scale
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: turbogelu.gelu(t, backward="matched"), (x,), eps=1e-6, atol=1e-6
    )


def test_autograd_uses_the_cells_backward():
    x = torch.from_numpy(_f32_inputs()[:1000]).requires_grad_(True)
    turbogelu.gelu(x).sum().backward()
    want = cells.backward32(x.detach().numpy(), _parts("none")["backward_direct"])
    assert_same_bits(x.grad, torch.from_numpy(want))


# ---------------------------------------------------------------- the switch


def test_switch_names_and_errors():
    assert OPS._set_cpu_kernel("poly") == "cells"  # the previous setting
    assert tops.cpu_kernel() == "poly"
    with pytest.raises(ValueError, match="must be 'auto', 'poly' or 'cells'"):
        OPS._set_cpu_kernel("table")
    with pytest.raises(ValueError, match="expected one of"):
        with tops.use_cpu_kernel("table"):
            pass
    assert tops.cpu_kernel() == "poly"


def test_the_two_programs_differ_and_poly_gelu_always_takes_the_polynomial():
    x = torch.linspace(-5, 5, 10001)
    with tops.use_cpu_kernel("poly"):
        poly = OPS.gelu(x)
        runtime = tops.poly_gelu(x, specmod.turbogelu_form("none", "forward"))
    assert not torch.equal(OPS.gelu(x), poly)
    assert_same_bits(tops.poly_gelu(x, specmod.turbogelu_form("none", "forward")), runtime)
    assert_same_bits(runtime, poly)


def test_environment_variable_picks_the_program():
    code = (
        "import torch, turbogelu.ops as t; x = torch.linspace(-3, 3, 7); t.gelu(x); "
        "print(t.cpu_kernel())"
    )
    for value in ("cells", "poly"):  # "auto" and the default: tests/test_program.py
        r = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
            env=subprocess_env(TURBOGELU_CPU_KERNEL=value), timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == value
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
        env=subprocess_env(TURBOGELU_CPU_KERNEL="fast"), timeout=120,
    )  # fmt: skip
    assert r.returncode != 0
    assert "must be 'auto', 'poly' or 'cells'" in r.stderr and "TURBOGELU_CPU_KERNEL" in r.stderr


def test_16bit_rounding_helper_matches_torch():
    # _to_half relies on torch's float32 -> 16-bit conversion rounding to nearest even, as
    # the kernels' stores do; check it against the lab's own rounding on random values.
    v = np.random.default_rng(2).normal(0, 3, 10_000).astype(F32)
    for dtype, fmt in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        want = rounding.round_to(v.astype(np.float64), fmt)
        assert np.array_equal(_to_half(v, dtype).double().numpy(), want)
