"""turbogelu.approx.half16: GELU's float16 forward in half-precision arithmetic, proven on every
float16 input by a replay of each rounded operation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from turbogelu.approx import half16, report

H = np.float16


@pytest.fixture(scope="module")
def table():
    return half16.fit()


@pytest.mark.parametrize("fn", half16.FUNCTIONS)
def test_every_float16_input_within_the_rule(table, fn):
    # GELU's two forms, sigmoid, tanh and SiLU: every finite input, and the special values
    r = half16.verify(table if fn == "gelu" else half16.fit(fn=fn), fn)
    assert r["inputs"] == report.all_finite("float16").size
    assert r["failures"] == 0 and r["failing_cells"] == []
    assert r["specials_ok"]


def test_a_lower_degree_of_the_same_fit_misses_the_rule():
    # Not a proof that no linear Q exists (that would need the LP over float16 rounding): the
    # least-squares fit of degree 1, nudged, is what the module reports, and it misses.
    r = half16.verify(half16.fit(1))
    assert r["failures"] > 100 and r["specials_ok"]


def test_the_nudge_mends_what_rounding_broke():
    # PyTorch's tanh form: the rounded least-squares table misses a few inputs, the nudged one
    # none, and only the cells that missed moved.
    raw, nudged = half16.fit(fn="gelu_tanh", nudge=False), half16.fit(fn="gelu_tanh")
    missed = half16.verify(raw, "gelu_tanh")
    assert missed["failures"] > 0 and half16.verify(nudged, "gelu_tanh")["failures"] == 0
    moved = np.flatnonzero((raw.view(np.uint16) != nudged.view(np.uint16)).any(axis=1))
    assert set(moved) <= set(missed["failing_cells"]) and moved.size > 0
    with pytest.raises(ValueError, match="fn must be one of"):
        half16.fit(fn="softplus")


def test_operation_count():
    assert half16.operations() == 15 and half16.operations(1) == 13
    assert half16.operations(half16.LAYOUTS["silu"].degree) == 17


def _fma_exact(a, b, c) -> np.float16:
    """fl16(a b + c) from the exact rational, round half to even, with float16's range."""
    s = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    lo = np.float16(float(s))  # float(s) rounds once to float64, then to float16: corrected below
    cands = {lo, np.nextafter(lo, H(np.inf)), np.nextafter(lo, H(-np.inf))}
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - s) if math.isfinite(v) else 1e9,
                                     int(np.array(v, H).view(np.uint16)) & 1))  # fmt: skip
    return best


def test_fma16_rounds_once():
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 0x7C00, size=(3, 4000)).astype(np.uint16)
    sign = rng.integers(0, 2, size=(3, 4000)).astype(np.uint16) << 15
    a, b, c = (bits | sign).view(H)
    # ties: c a float16 value and a b exactly half an ulp of c away (b = 2^-k)
    ties_c = np.array([1.0, 1.0, 3.0, -2.0, 1024.0], H)
    ties_a = np.array([2.0**-11, -(2.0**-11), 2.0**-10, 2.0**-10, 0.5], H)
    ties_b = np.array([1.0, 1.0, 1.0, -1.0, 1.0], H)
    a, b, c = np.r_[a, ties_a], np.r_[b, ties_b], np.r_[c, ties_c]
    got = half16.fma16(a, b, c)
    finite = np.isfinite(a.astype(float) * b.astype(float) + c.astype(float)) & np.isfinite(got)
    want = np.array([_fma_exact(*t) for t in zip(a[finite], b[finite], c[finite], strict=True)], H)
    np.testing.assert_array_equal(got[finite].view(np.uint16), want.view(np.uint16))
    # just above a float16 tie (1 + 2^-11 + 2^-21) rounds up; exactly on one, to even
    assert half16.fma16(H(2.0**-11), H(1 + 2.0**-10), H(1.0)) == np.nextafter(H(1), H(2))
    assert half16.fma16(H(2.0**-11), H(1.0), H(1.0)) == H(1.0)


@pytest.mark.parametrize("fn", half16.FUNCTIONS)
def test_layout_holds_its_claims(fn):
    lay, hi = half16.LAYOUTS[fn], half16.high(fn)
    scale, offset = H(lay.scale), H(lay.offset)
    assert half16.fma16(hi, scale, offset) < half16.CELLS
    assert half16.fma16(np.nextafter(hi, H(np.inf)), scale, offset) >= half16.CELLS
    assert -1 < half16.fma16(H(lay.low), scale, offset) < 1  # truncates to cell 0
    table = half16.fit(fn=fn)
    x = report.all_finite("float16").astype(H)
    xb, xc, k = half16._clamped(x, fn)
    # the value cells' t = xc - origin is exact (the docstring's Sterbenz claim), but for
    # for sigmoid's cells next to its band (the cell of 0), which keep the rule without it
    value = (table[k, 1] == 0) & (k > 0) & (k < half16.CELLS - 1) & (table[k, 0] != 0)
    assert value.sum() > 1000
    t = half16.sub16(xc[value], table[k[value], 0])
    exact = xc[value].astype(np.float64) - table[k[value], 0].astype(np.float64)
    assert (t.astype(np.float64) == exact).all() == (fn != "sigmoid")
    # the tail cells hold many inputs; GELU's and SiLU's lower one is -0 (the function < 0)
    y = half16.replay(x, table, fn)
    for c in (0, half16.CELLS - 1):
        assert (k == c).sum() > 1000
    if fn in ("gelu", "gelu_tanh", "silu"):
        assert (y[k == 0] == 0).all() and np.signbit(y[k == 0]).all()


def test_the_product_form_needs_a_correctly_rounded_factor():
    misses = half16.product_form_misses()
    assert misses[0] == 0 and misses[-1] > 1000 and misses[1] > 1000


def _probes():
    try:
        from experiments import probes
    except ImportError as e:  # a build without the benchmark's probes
        pytest.skip(str(e))
    if not probes.OPS._half16_available():
        pytest.skip("the CPU has no AVX512-FP16")
    return probes


def _same(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


@pytest.mark.parametrize("stream", [True, False])
def test_the_probe_gives_the_replay_bits_on_every_pattern(table, stream):
    """kernels/bench/half_probe.cpp (the benchmark's half-precision GELU) against the replay:
    every 16-bit pattern, with heads and tails (slices that misalign input and output)."""
    import torch

    probes = _probes()
    x = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16)
    want = half16.replay(x.numpy(), table)
    program = probes.half16_program()
    for start, stop in ((0, 65536), (3, 65536 - 5), (17, 17 + 1015)):
        _same(probes.OPS._gelu_half16(x[start:stop], program, stream).numpy(), want[start:stop])
        n = stop - start
        backing = torch.empty(n + 40, dtype=torch.float16)
        for shift in (0, 1, 7):
            out = backing[shift : shift + n]
            probes.OPS._gelu_half16.out(x[start:stop], program, stream, out=out)
            _same(out.numpy(), want[start:stop])


def test_the_probe_refuses_what_it_cannot_run():
    import torch

    probes = _probes()
    program = probes.half16_program()
    with pytest.raises(RuntimeError, match="x must be a float16 CPU tensor"):
        probes.OPS._gelu_half16(torch.zeros(8), program)
    with pytest.raises(RuntimeError, match=r"program must be a \(7, 32\) float16"):
        probes.OPS._gelu_half16(torch.zeros(8, dtype=torch.float16), program[:6])
    x = torch.zeros(64, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        probes.OPS._gelu_half16.out(x[:32], program, out=x[16:48])
    probes.OPS._gelu_half16.out(x, program, out=x)  # in place: GELU(0) = 0
    assert (x == 0).all()
    with pytest.raises(RuntimeError, match="out must be a contiguous float16"):
        probes.OPS._gelu_half16.out(
            torch.zeros(8, dtype=torch.float16),
            program,
            out=torch.zeros(8, dtype=torch.float16)[::2],
        )
