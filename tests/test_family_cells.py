"""The family's table-driven CPU programs ("cells" for sigmoid, tanh and SiLU, and through them
softcap and SwiGLU; turbogelu/approx/family_cells.py): the committed specs are the refit (to the
LP's tolerance: ``cells.refit_differences``), the kernels are the replay bit for bit on every
instruction set and dtype, the programs hold the accurate tier's bounds (float32 and every
16-bit input), the IEEE rules hold, and they run where GELU's cells do: by default on AVX-512,
or when asked for (``use_cpu_kernel``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import assert_same_bits

import turbogelu  # noqa: F401  (registers the ops)
from turbogelu import ops as tops
from turbogelu.approx import family_cells as fc
from turbogelu.approx import family_programs as fp
from turbogelu.approx import report, rounding

OPS = torch.ops.turbogelu
STORAGE = [torch.float32, torch.float16, torch.bfloat16]
IDS = lambda d: str(d).removeprefix("torch.")  # noqa: E731
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40, 1e-45, 3.4e38, -3.4e38]


def _parts(fn: str) -> dict:
    spec = fc.load(fn)
    return {p: (fc.part_values(spec[p]), spec[p]["form"]) for p in fc.PARTS}


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    if dtype != torch.float32:  # every 16-bit value
        return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([SPECIALS, np.linspace(-20, 20, 1 << 16), rng.normal(0, 6, 1 << 14)])
    # the cell edges and the clamps of both functions, and the floats beside them
    for fn in fc.FUNCTIONS:
        d = fc.design(fn)
        edges = (np.arange(32) + 0.5) / float(d["scale"])
        x = np.concatenate([x, edges, -edges, [d["clamp"], -d["clamp"]]])
    x = x.astype(np.float32)
    return torch.from_numpy(np.concatenate([x, np.nextafter(x, np.float32(np.inf))]))


def _replay(fn: str, part: str, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    values, form = _parts(fn)[part]
    with np.errstate(invalid="ignore", over="ignore"):
        r = fc.eval32(x.float().numpy(), values, form)
    return torch.from_numpy(np.ascontiguousarray(r)).to(dtype)  # rounded once


def test_committed_specs_are_the_refit(capsys):
    # `--check` compares by cells.refit_differences, never the files' text: settings and
    # constants bit for bit, each table (an LP's solution through numpy's tanh, whose last bits
    # depend on the CPU: tanh's differs in 23 entries without numpy's SIMD loops) as a program
    # within cells.SOLVER_ATOL, the errors to a relative tolerance (test_cells.py's tests)
    status = fc.main(["--check"])
    out = capsys.readouterr().out
    assert status == 0, f"refit of the family cells differs from the committed specs:\n{out}"
    assert out.count("matches the refit") == len(fc.FUNCTIONS), out


# ---------------------------------------------------------------- bits: the replay


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_kernels_are_the_replay(fn, dtype, isa):
    x = _inputs(dtype)
    g = torch.linspace(-2, 2, x.numel()).to(dtype)
    with tops.use_cpu_kernel("cells"):
        assert_same_bits(getattr(OPS, fn)(x), _replay(fn, "forward", x, dtype))
        for backward in ("direct", "matched"):
            got = getattr(OPS, f"{fn}_backward")(g, x, backward=backward)
            d = _replay(fn, f"backward_{backward}", x, torch.float32).float()
            assert_same_bits(got, (g.float() * d).to(dtype))


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_swiglu_runs_silus_cells(dtype, isa):
    a = _inputs(dtype)
    b = torch.linspace(-3, 3, a.numel()).to(dtype)
    g = torch.linspace(2, -1, a.numel()).to(dtype)
    f = _replay("silu", "forward", a, torch.float32).float()
    d = _replay("silu", "backward_direct", a, torch.float32).float()
    with tops.use_cpu_kernel("cells"):
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
        t = _replay("tanh", "forward", q, torch.float32).numpy()
        want = torch.from_numpy((cap32 * t).astype(np.float32))
    d = _replay("tanh", "backward_direct", q, torch.float32)
    with tops.use_cpu_kernel("cells"):
        assert_same_bits(OPS.softcap(x, cap), want.to(dtype))
        got = OPS.softcap_backward(g, x, cap, backward="direct")
    assert_same_bits(got, (g.float() * d).to(dtype))


@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_float64_is_the_same_program_in_double(fn):
    x = _inputs(torch.float32).double()
    with tops.use_cpu_kernel("cells"):
        got = getattr(OPS, fn)(x).numpy()
    values, form = _parts(fn)["forward"]
    want = fc.eval64(x.numpy(), values, form)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    # The kernel fuses each multiply-add (std::fma), the replay rounds twice: they agree to a
    # few double ulps of the cubic's terms, scaled by |x| for SiLU's product.
    scale = np.maximum(np.abs(x.numpy()[ok]), 1.0)
    assert np.all(np.abs(got[ok] - want[ok]) <= 1e-13 * scale)
    assert np.array_equal(got[~ok], want[~ok], equal_nan=True)


def test_auto_takes_cells_where_gelu_does(isa):
    """The default ("auto") runs the cells programs where GELU's default is cells (the
    AVX-512 instruction sets: the lookups are one permute) and the polynomial elsewhere (on
    AVX2 the cells run at half the polynomial's speed: experiments/family_cells_ab.py --isa
    avx2); "poly" and "cells" force either; exp2 and the paper tier have polynomials only."""
    x = _inputs(torch.float32)
    with tops.use_cpu_kernel("poly"):
        poly = OPS.silu(x)
    with tops.use_cpu_kernel("cells"):
        cells = OPS.silu(x)
        assert_same_bits(OPS.exp2(x), _poly(OPS.exp2, x))
        assert_same_bits(OPS.sigmoid(x, tier="paper"), _poly(OPS.sigmoid, x, tier="paper"))
    assert not torch.equal(cells, poly)
    with tops.use_cpu_kernel("auto"):
        assert tops.cpu_kernel() == ("cells" if isa.startswith("avx512") else "poly")
        assert_same_bits(OPS.silu(x), cells if tops.cpu_kernel() == "cells" else poly)


def _poly(op, x, **kw):
    with tops.use_cpu_kernel("poly"):
        return op(x, **kw)


# ---------------------------------------------------------------- accuracy


@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_float32_errors_are_the_recorded_ones_and_under_the_tier(fn):
    spec = fc.load(fn)
    for part in fc.PARTS:
        got = fc.measure(fn, part, fc.part_values(spec[part]))
        # a float64 error against numpy's / scipy's transcendentals (last bits CPU-dependent)
        want = spec[part]["errors"]["max_abs_float32"]
        assert got["max_abs_float32"] == pytest.approx(want, rel=fc.specmod.MEASURED_RTOL)
    # the forward and the direct derivative: well under the tier's 3e-5 (the polynomial's
    # are 2.9e-5); the matched derivative is the forward's own, as GELU's
    assert spec["forward"]["errors"]["max_abs_float32"] <= fp.ABS_BOUND / 5
    assert spec["backward_direct"]["errors"]["max_abs_float32"] <= fp.ABS_BOUND / 2


@pytest.mark.parametrize("fmt", fp.FORMATS)
@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_forward_every_16bit_input(fn, fmt):
    """The accurate tier's 16-bit bounds, judged from the replay: within 1 ulp of the
    correctly rounded value where x >= -3, below that |error| <= 3e-5 beyond half an ulp."""
    values, form = _parts(fn)["forward"]
    rep = report.exhaustive(lambda v: fc.eval32(v, values, form), fn, fmt)
    exact = report.reference_table(fn, fmt)[2]
    x, ulps = rep.x, rep.ulps
    assert not np.any(np.isnan(rep.got)), "NaN for a finite input"
    one = x >= fp.ONE_ULP_FROM[fn]
    assert ulps[one].max() <= 1, f"{fn} {fmt}: {int(np.sum(ulps[one] > 1))} over 1 ulp"
    err = np.abs(rep.got - exact)
    bound = fp.ABS_BOUND + rounding.ulp_of(rep.got, fmt) / 2
    assert np.all(err[~one] <= bound[~one]), f"{fn} {fmt}: tail over 3e-5"


# ---------------------------------------------------------------- IEEE rules and autograd


@pytest.mark.parametrize("dtype", STORAGE + [torch.float64], ids=IDS)
def test_special_values(dtype, isa):
    x = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40], dtype=dtype)
    with tops.use_cpu_kernel("cells"):
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


def test_nan_gradient_stays_nan_in_the_tails():
    x = torch.tensor([-100.0, 100.0, 0.5])
    g = torch.full_like(x, math.nan)
    with tops.use_cpu_kernel("cells"):
        for fn in fc.FUNCTIONS:
            assert torch.isnan(getattr(OPS, f"{fn}_backward")(g, x, backward="direct")).all()


@pytest.mark.parametrize("fn", fc.FUNCTIONS)
def test_gradcheck_of_the_matched_backward_in_float64(fn):
    """The matched derivative is the cells forward's own: gradcheck at points inside cells
    (a finite difference across a cell edge would see the cubics' jump)."""
    scale = float(fc.design(fn)["scale"])
    k = torch.arange(0, 31, dtype=torch.float64)
    u = (k + torch.linspace(-0.3, 0.3, 31, dtype=torch.float64)).clamp(min=0.2) / scale
    x = torch.cat([u, -u]).requires_grad_()
    f = getattr(turbogelu, fn)
    with tops.use_cpu_kernel("cells"):
        assert torch.autograd.gradcheck(lambda t: f(t, backward="matched"), (x,), eps=1e-7)
