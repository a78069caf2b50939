"""The CPU's table-driven programs ("cells": a cubic in each of 32 cells; family_eval.h's
cells_eval) of every row of the kernels' table that has them: GELU's two forms
(turbogelu/approx/cells.py) and sigmoid, tanh and SiLU (turbogelu/approx/family_cells.py; through
them softcap and SwiGLU). The default where the CPU has AVX-512 two-table permutes
(tests/test_program.py), forced here with ``turbogelu.ops.use_cpu_kernel("cells")`` (or
TURBOGELU_CPU_KERNEL=cells) on every ISA.

For every row (``ROWS``, one test body through ``_cpu_*`` and ``_replay*``):
* the committed tables are what the fit gives (refit, to the LP's tolerance:
  ``cells.refit_differences``) and what the header holds (bit for bit);
* every instruction set gives the replay's bits, forward and both derivatives (float32 grid,
  cell edges, clamps and specials; every 16-bit input), and float64 runs the same program;
* gradcheck of the matched backward inside the cells; a NaN gradient stays NaN in the tails.
Then each lab's own figures: GELU's (test_accuracy's bounds under cells, and the cells' own,
ten times tighter; its IEEE semantics, thread invariance, opcheck, the switch itself) and the
family's (the accurate tier's bounds on every 16-bit input, softcap and SwiGLU through tanh's
and SiLU's cells, where "auto" takes cells).
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import test_accuracy as acc
import torch
from conftest import ROOT, assert_same_bits, subprocess_env

import turbogelu
import turbogelu.ops as tops
from turbogelu import _table
from turbogelu.approx import cells, cells16, codegen, reference, report, rounding
from turbogelu.approx import family_cells as fc
from turbogelu.approx import family_programs as fp
from turbogelu.approx import spec as specmod

OPS = torch.ops.turbogelu
MODES = ("none", "tanh")
ISAS = tops.cpu_isas_available()
F32 = np.float32
# Every row of the kernels' table with cells programs: GELU's forms (gelu_none, gelu_tanh:
# approximate=) and the family's functions.
GELU_ROWS = {_table.APPROXIMATE[m]: m for m in MODES}
ROWS = (*GELU_ROWS, *fc.FUNCTIONS)
STORAGE = [torch.float32, torch.float16, torch.bfloat16]
IDS = lambda d: str(d).removeprefix("torch.")  # noqa: E731


@pytest.fixture(autouse=True)
def cells_kernel():
    with tops.use_cpu_kernel("cells"):
        assert tops.cpu_kernel() == "cells"
        yield


@functools.cache
def _parts(mode: str) -> dict:
    """GELU's cells, by form: {part: part_values}."""
    spec = cells.load(cells.spec_path(mode))
    return {p: cells.part_values(spec[p]) for p in cells.PARTS}


@functools.cache
def _family_parts(fn: str) -> dict:
    """The family's cells, by function: {part: (part_values, form)}."""
    spec = fc.load(fn)
    return {p: (fc.part_values(spec[p]), spec[p]["form"]) for p in fc.PARTS}


# A 16-bit format's own program of a row (turbogelu/approx/cells16.py), where it has one: the
# kernels run its forward and its matched derivative in that dtype (the direct derivative,
# softcap's and SwiGLU's stay the float32 tables).
CELLS16_FN = {row: ("gelu" if mode == "none" else "gelu_tanh") for row, mode in GELU_ROWS.items()}
HALF = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


@functools.cache
def _sized(row: str, fmt: str | None) -> dict | None:
    """{part: part values} of the row's program sized for fmt, or None (float32's tables)."""
    fn = CELLS16_FN.get(row, row)
    if (fn, fmt) not in cells16.SIZED:
        return None
    doc = specmod.load(cells16.spec_path(fn, fmt), "cells16")
    return {p: cells16.table_values(fn, cells16.part_table(doc[p])) for p in specmod.CELLS16_PARTS}


@functools.cache
def _f32_inputs() -> np.ndarray:
    """Dense float32 values over [-8, 8] and [-20, 20], random ones, the specials, and both
    sides of every cell edge and clamp of every row's tables."""
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 3.4e38, -3.4e38]
    edges = []
    scale = float(_parts("none")["forward"]["scale"])
    for k in range(1, cells.CELLS):  # GELU's cells are over x, zero at the centre of one
        e = F32((k - 0.5 - cells.CENTER) / scale)
        edges += [np.nextafter(e, F32(-np.inf)), e, np.nextafter(e, F32(np.inf))]
    clamp = _parts("none")["forward"]["clamp"]
    edges += [clamp, -clamp, np.nextafter(clamp, F32(np.inf)), np.nextafter(-clamp, F32(-np.inf))]
    for fn in fc.FUNCTIONS:  # the family's over |x|
        d = fc.design(fn)
        e = ((np.arange(32) + 0.5) / float(d["scale"])).astype(F32)
        c = F32(d["clamp"])
        for v in (e, -e, np.array([c, -c], F32)):
            edges += [*v, *np.nextafter(v, F32(np.inf)), *np.nextafter(v, F32(-np.inf))]
    rng = np.random.default_rng(0)
    return np.concatenate(
        [
            np.linspace(-8, 8, 200_001),
            np.linspace(-20, 20, 100_001),
            rng.normal(0, 5, 100_000),
            specials,
            edges,
        ]  # fmt: skip
    ).astype(F32)


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    if dtype != torch.float32:  # every 16-bit value
        return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    return torch.from_numpy(_f32_inputs())


def _cpu_forward(row: str, x: torch.Tensor) -> torch.Tensor:
    """The CPU op of a row of the table (GELU's: gelu with its approximate)."""
    if row in GELU_ROWS:
        return OPS.gelu(x, GELU_ROWS[row])
    return getattr(OPS, row)(x)


def _cpu_backward(row: str, g: torch.Tensor, x: torch.Tensor, backward: str) -> torch.Tensor:
    if row in GELU_ROWS:
        return OPS.gelu_backward(g, x, GELU_ROWS[row], backward)
    return getattr(OPS, f"{row}_backward")(g, x, backward=backward)


def _replay(
    row: str, part: str, x: np.ndarray, g: np.ndarray | None = None, dtype=torch.float32
) -> np.ndarray:
    """The lab's float32 replay of one part of a row's cells (a derivative times g), as the
    kernels run it in dtype (a 16-bit format's own program where it has one: ``_sized``)."""
    sized = (_sized(row, HALF.get(dtype)) or {}).get(part)
    with np.errstate(invalid="ignore", over="ignore"):
        if row in GELU_ROWS:
            p = _parts(GELU_ROWS[row])[part] if sized is None else sized
            return cells.forward32(x, p) if part == "forward" else cells.backward32(x, p, g)
        values, form = _family_parts(row)[part]
        if sized is not None:
            values, form = sized, cells16.FORMS[row][0 if part == "forward" else 1]
        r = fc.eval32(x, values, form)
        return r if part == "forward" else (np.asarray(g, F32) * r).astype(F32)


def _replay64(row: str, part: str, x: np.ndarray) -> np.ndarray:
    """The same program in double (float32 coefficients): the float64 kernels'."""
    if row in GELU_ROWS:
        p = _parts(GELU_ROWS[row])[part]
        return cells.forward64(x, p) if part == "forward" else cells.backward64(x, p)
    values, form = _family_parts(row)[part]
    return fc.eval64(x, values, form)


# ---------------------------------------------------------------- the tables


@pytest.mark.parametrize(("lab", "n"), [(cells, len(MODES)), (fc, len(fc.FUNCTIONS))],
                         ids=["gelu", "family"])  # fmt: skip
def test_refit_gives_the_committed_specs(lab, n, capsys):
    # `--check` compares by cells.refit_differences, never the files' text: settings and
    # constants bit for bit; a table, the float32 rounding of an LP solved by HiGHS to 1e-7
    # from float64 targets through numpy's / scipy's transcendentals (last bits CPU-dependent:
    # tanh's differs in 23 entries without numpy's SIMD loops), as a program within
    # cells.SOLVER_ATOL; the errors to spec.MEASURED_RTOL (or, for a table of other bits,
    # cells.REFIT_ERRORS_RTOL). The kernels' bits are the committed tables'
    # (test_header_holds_the_committed_tables, the replay tests).
    status = lab.main(["--check"])
    out = capsys.readouterr().out
    assert status == 0, f"refit of the cells differs from data/specs/cells:\n{out}"
    assert out.count("matches the refit") == n, out


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


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("row", ROWS)
def test_kernels_are_the_replay(row, dtype, isa):
    """Forward and both derivatives, on every instruction set (the ``isa`` fixture): float32
    the replay's bits, 16-bit its float32 result rounded once (the kernels' stores), with the
    format's own tables where it has them."""
    x = _inputs(dtype)
    g = torch.linspace(-2, 2, x.numel()).to(dtype)
    x32, g32 = x.float().numpy(), g.float().numpy()
    assert_same_bits(
        _cpu_forward(row, x), _to_half(_replay(row, "forward", x32, None, dtype), dtype)
    )
    for backward in ("direct", "matched"):
        want = _replay(row, f"backward_{backward}", x32, g32, dtype)
        assert_same_bits(_cpu_backward(row, g, x, backward), _to_half(want, dtype), backward)


@pytest.mark.parametrize("dtype", list(HALF), ids=IDS)
@pytest.mark.parametrize("row", ROWS)
def test_sized_programs_switch_off_for_the_benchmark(row, dtype):
    """The benchmark's switch (turbogelu_bench._set_sized_cells(False)) puts 16-bit calls back
    on the float32 tables, so that the two programs can be timed side by side; cpu_program()
    says which degree runs."""
    from experiments import probes

    x = _inputs(dtype)
    x32 = x.float().numpy()
    float32 = _to_half(_replay(row, "forward", x32), dtype)
    assert probes.OPS._set_sized_cells(False) is True  # the default: on
    try:
        assert_same_bits(_cpu_forward(row, x), float32)
        assert turbogelu.cpu_program()["degrees"][row][HALF[dtype]]["forward"] == 3
    finally:
        assert probes.OPS._set_sized_cells(True) is False
    sized = _sized(row, HALF[dtype])
    assert turbogelu.cpu_program()["degrees"][row][HALF[dtype]]["forward"] == (
        3 if sized is None else 2
    )
    if sized is not None:  # and the sized program is another one, so this test can fail
        assert not torch.equal(_cpu_forward(row, x), float32)


def _to_half(v: np.ndarray, dtype) -> torch.Tensor:
    # float32 -> the dtype, round to nearest even: what the kernels' stores do.
    return torch.from_numpy(np.ascontiguousarray(v)).to(dtype)


@pytest.mark.parametrize("row", ROWS)
def test_float64_is_the_same_program_in_double(row):
    x = _f32_inputs().astype(np.float64)
    xt = torch.from_numpy(x)
    for part in ("forward", "backward_direct"):
        if part == "forward":
            got = _cpu_forward(row, xt).numpy()
        else:
            got = _cpu_backward(row, torch.ones_like(xt), xt, "direct").numpy()
        want = _replay64(row, part, x)
        assert np.array_equal(np.isnan(got), np.isnan(want)), part
        ok = np.isfinite(want)
        assert np.array_equal(got[~ok], want[~ok], equal_nan=True), part
        # The kernel fuses each multiply-add (std::fma), the numpy replay rounds twice: they
        # agree to a few double ulps of the cubic's terms: relative 1e-13 (GELU's cells, over x,
        # whose results near 0 are x times a small cubic), or 1e-13 of max(|x|, 1) (the
        # family's, over |x|: SiLU's product scales them by |x|).
        if row in GELU_ROWS:
            np.testing.assert_allclose(got[ok], want[ok], rtol=1e-13, atol=1e-16, err_msg=part)
        else:
            scale = np.maximum(np.abs(x[ok]), 1.0)
            assert np.all(np.abs(got[ok] - want[ok]) <= 1e-13 * scale), part


def _cell_interiors(row: str) -> torch.Tensor:
    """Points well inside cells (a finite difference across a cell edge would see the cubics'
    jump, ~1e-7): GELU's cells 2..30 over x; the family's 0..30 over |x|, both signs."""
    if row in GELU_ROWS:
        scale = float(_parts(GELU_ROWS[row])["forward"]["scale"])
        k = torch.arange(2, 31, dtype=torch.float64)
        return (k - cells.CENTER + torch.linspace(-0.3, 0.3, 29, dtype=torch.float64)) / scale
    scale = float(fc.design(row)["scale"])
    k = torch.arange(0, 31, dtype=torch.float64)
    u = (k + torch.linspace(-0.3, 0.3, 31, dtype=torch.float64)).clamp(min=0.2) / scale
    return torch.cat([u, -u])


@pytest.mark.parametrize("row", ROWS)
def test_gradcheck_of_the_matched_backward_in_float64(row):
    """The matched derivative is the cells forward's own."""
    x = _cell_interiors(row).requires_grad_()
    if row in GELU_ROWS:
        f = lambda t: turbogelu.gelu(t, GELU_ROWS[row], backward="matched")  # noqa: E731
    else:
        f = lambda t: getattr(turbogelu, row)(t, backward="matched")  # noqa: E731
    assert torch.autograd.gradcheck(f, (x,), eps=1e-7, atol=1e-6)


@pytest.mark.parametrize("row", ROWS)
def test_nan_gradient_stays_nan_in_the_tails(row):
    x = torch.tensor([-100.0, 100.0, 0.5, -np.inf, np.inf])
    g = torch.full_like(x, math.nan)
    for backward in ("direct", "matched"):
        assert torch.isnan(_cpu_backward(row, g, x, backward)).all(), backward


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
    sized = _sized(_table.APPROXIMATE[mode], HALF.get(dtype)) is not None
    acc.test_grid_vs_mpmath(dtype, mode, isa, sized)


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
        # A program sized for the format keeps its rule (the worst case above), not the
        # float32 program's share of correctly rounded results: its fewer operations cost
        # some (bfloat16 GELU: 99.5% against the polynomial's 99.8% for x >= 0).
        if _sized(_table.APPROXIMATE[mode], key[0]) is None:
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


# ---------------------------------------------------------------- the family's own


def _family_replay(fn: str, part: str, x: torch.Tensor) -> torch.Tensor:
    """A family part's float32 replay as a float32 tensor (a derivative: f' itself)."""
    ones = np.ones(x.numel(), F32)
    r = _replay(fn, part, x.float().numpy(), None if part == "forward" else ones)
    return torch.from_numpy(np.ascontiguousarray(r))


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_swiglu_runs_silus_cells(dtype, isa):
    a = _inputs(dtype)
    b = torch.linspace(-3, 3, a.numel()).to(dtype)
    g = torch.linspace(2, -1, a.numel()).to(dtype)
    f = _family_replay("silu", "forward", a)
    d = _family_replay("silu", "backward_direct", a)
    assert_same_bits(OPS.swiglu(a, b), (f * b.float()).to(dtype))
    ga, gb = OPS.swiglu_backward(g, a, b)
    assert_same_bits(ga, (g.float() * b.float() * d).to(dtype))
    assert_same_bits(gb, (g.float() * f).to(dtype))


@pytest.mark.parametrize("cap", [50.0, 1.0, 0.3])
@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_softcap_runs_tanhs_cells(cap, dtype, isa):
    """softcap = fl(cap32 * tanh_cells(fl(x * fl(1/cap32)))); backward grad * tanh'(q)."""
    x = _inputs(dtype)
    g = torch.linspace(-2, 2, x.numel()).to(dtype)
    cap32, inv = np.float32(cap), np.float32(1) / np.float32(cap)
    with np.errstate(over="ignore", invalid="ignore"):
        q = torch.from_numpy((x.float().numpy() * inv).astype(np.float32))
        t = _family_replay("tanh", "forward", q).numpy()
        want = torch.from_numpy((cap32 * t).astype(np.float32))
    d = _family_replay("tanh", "backward_direct", q)
    assert_same_bits(OPS.softcap(x, cap), want.to(dtype))
    got = OPS.softcap_backward(g, x, cap, backward="direct")
    assert_same_bits(got, (g.float() * d).to(dtype))


def _poly(op, x, **kw):
    with tops.use_cpu_kernel("poly"):
        return op(x, **kw)


def test_auto_takes_cells_where_gelu_does(isa):
    """The default ("auto") runs the family's cells programs where GELU's default is cells
    (the AVX-512 instruction sets: the lookups are one permute) and the polynomial elsewhere
    (on AVX2 the cells run at half the polynomial's speed: experiments/family_cells_ab.py --isa
    avx2); "poly" and "cells" force either; exp2 and the paper tier have polynomials only."""
    x = _inputs(torch.float32)
    cells_silu = OPS.silu(x)  # (cells: this file's autouse fixture)
    assert_same_bits(OPS.exp2(x), _poly(OPS.exp2, x))
    assert_same_bits(OPS.sigmoid(x, tier="paper"), _poly(OPS.sigmoid, x, tier="paper"))
    poly = _poly(OPS.silu, x)
    assert not torch.equal(cells_silu, poly)
    with tops.use_cpu_kernel("auto"):
        assert tops.cpu_kernel() == ("cells" if isa.startswith("avx512") else "poly")
        assert_same_bits(OPS.silu(x), cells_silu if tops.cpu_kernel() == "cells" else poly)


@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_family_float32_errors_are_the_recorded_ones_and_under_the_tier(fn):
    spec = fc.load(fn)
    for part in fc.PARTS:
        got = fc.measure(fn, part, fc.part_values(spec[part]))
        # a float64 error against numpy's / scipy's transcendentals (last bits CPU-dependent)
        want = spec[part]["errors"]["max_abs_float32"]
        assert got["max_abs_float32"] == pytest.approx(want, rel=specmod.MEASURED_RTOL)
    # the forward and the direct derivative: well under the tier's 3e-5 (the polynomial's
    # are 2.9e-5); the matched derivative is the forward's own, as GELU's
    assert spec["forward"]["errors"]["max_abs_float32"] <= fp.ABS_BOUND / 5
    assert spec["backward_direct"]["errors"]["max_abs_float32"] <= fp.ABS_BOUND / 2


@pytest.mark.parametrize("fmt", fp.FORMATS)
@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_family_forward_every_16bit_input(fn, fmt):
    """The accurate tier's 16-bit bounds, judged from the replay: within 1 ulp of the
    correctly rounded value where x >= -3, below that |error| <= 3e-5 beyond half an ulp."""
    values, form = _family_parts(fn)["forward"]
    rep = report.exhaustive(lambda v: fc.eval32(v, values, form), fn, fmt)
    exact = report.reference_table(fn, fmt)[2]
    x, ulps = rep.x, rep.ulps
    assert not np.any(np.isnan(rep.got)), "NaN for a finite input"
    one = x >= fp.ONE_ULP_FROM[fn]
    assert ulps[one].max() <= 1, f"{fn} {fmt}: {int(np.sum(ulps[one] > 1))} over 1 ulp"
    err = np.abs(rep.got - exact)
    bound = fp.ABS_BOUND + rounding.ulp_of(rep.got, fmt) / 2
    assert np.all(err[~one] <= bound[~one]), f"{fn} {fmt}: tail over 3e-5"


@pytest.mark.parametrize("dtype", STORAGE + [torch.float64], ids=IDS)
def test_family_special_values(dtype, isa):
    x = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40], dtype=dtype)
    s, y, t = OPS.sigmoid(x), OPS.silu(x), OPS.tanh(x)
    gt = OPS.tanh_backward(torch.ones_like(x), x, backward="direct")
    gs = OPS.sigmoid_backward(torch.ones_like(x), x, backward="direct")
    gy = OPS.silu_backward(torch.ones_like(x), x, backward="direct")
    assert s[:4].tolist() == [0.5, 0.5, 1.0, 0.0] and math.isnan(s[4])
    assert y[2].item() == math.inf and math.isnan(y[4])
    for i in (1, 3, 6):  # silu(-0.0), silu(-inf) and silu(-tiny) are -0.0 or negative
        assert math.copysign(1.0, y[i].item()) == -1.0
    assert y[0].item() == 0.0 and math.copysign(1.0, y[0].item()) == 1.0
    assert gs[2].item() == 0.0 and gs[3].item() == 0.0 and math.isnan(gs[4])
    assert gy[2].item() == 1.0 and gy[3].item() == 0.0 and math.isnan(gy[4])
    assert gy[0].item() == 0.5 and gy[1].item() == 0.5
    assert t[:4].tolist() == [0.0, -0.0, 1.0, -1.0] and math.isnan(t[4])
    assert math.copysign(1.0, t[1].item()) == -1.0  # tanh(-0.0) = -0.0
    assert gt[0].item() == pytest.approx(1.0, abs=1e-5) and gt[1].item() == gt[0].item()
    assert gt[2].item() == 0.0 and gt[3].item() == 0.0 and math.isnan(gt[4])
    if dtype == torch.float32:  # subnormals: silu(x) = x/2, tanh(x) = x to float32's precision
        assert y[5].item() == pytest.approx(0.5e-40, rel=1e-6)
        assert t[5].item() == pytest.approx(1e-40, rel=1e-6)
        assert t[6].item() == pytest.approx(-1e-40, rel=1e-6)
