"""turbogelu.approx.rounding: rounding to float32/float16/bfloat16, ulps, correct rounding.

torch is the second opinion here (only in the tests): its float32 -> float16/bfloat16
conversion rounds to nearest even. From float64 it goes through float32 (two roundings), so
the comparison from float64 leaves out the values where that double rounding bites, and those
are checked against exact rational rounding (``rounding.round_exact``) instead.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

from turbogelu.approx import reference, rounding

F32 = np.float32
F64 = np.float64
TORCH_DTYPE = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
FORMATS = ("float32", "float16", "bfloat16")
HALF_FORMATS = ("float16", "bfloat16")


def torch_round(values: np.ndarray, fmt: str, via_float32: bool = False) -> np.ndarray:
    t = torch.from_numpy(np.asarray(values, F64))
    if via_float32:
        t = t.float()
    return t.to(TORCH_DTYPE[fmt]).double().numpy()


def random_float64(rng, n: int) -> np.ndarray:
    """Signed values over every magnitude a 16-bit or float32 result can have, and beyond."""
    exps = rng.uniform(-160, 135, n)
    signs = rng.choice([-1.0, 1.0], n)
    return signs * np.exp2(exps)


def all_patterns(fmt: str) -> np.ndarray:
    """float64 values of every 16-bit pattern of fmt."""
    return rounding.from_bits(np.arange(1 << 16), fmt)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values and equal signs of zero, NaN matching NaN."""
    a, b = np.asarray(a, F64), np.asarray(b, F64)
    both_nan = np.isnan(a) & np.isnan(b)
    eq = (a == b) & (np.signbit(a) == np.signbit(b))
    return bool(np.all(both_nan | eq))


# ---------------------------------------------------------------- round_to


@pytest.mark.parametrize("fmt", HALF_FORMATS)
def test_round_to_matches_torch_from_float32(fmt):
    # From float32 torch rounds once: every float32 exponent, random mantissas, both signs.
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    with np.errstate(invalid="ignore"):
        x = bits.view(F32).astype(F64)
    x = x[np.isfinite(x)]
    assert same(rounding.round_to(x, fmt), torch_round(x, fmt))


@pytest.mark.parametrize("fmt", HALF_FORMATS)
def test_round_to_matches_torch_from_float64(fmt):
    rng = np.random.default_rng(2)
    x = np.concatenate([random_float64(rng, 200_000), rng.uniform(-8, 8, 100_000)])
    ours = rounding.round_to(x, fmt)
    theirs = torch_round(x, fmt)
    # torch converts float64 -> float32 -> fmt: where the float32 value is exactly a midpoint
    # of fmt but x is not, that double rounding can differ from the correct rounding.
    with np.errstate(over="ignore", invalid="ignore"):
        x32 = x.astype(F32).astype(F64)
        lo = rounding.round_to(x32 - rounding.ulp_of(x32, fmt) / 4, fmt)
        hi = rounding.round_to(x32 + rounding.ulp_of(x32, fmt) / 4, fmt)
    double_rounding_risk = (x32 != x) & (lo != hi) & (x32 == (lo + hi) / 2)
    ok = ~double_rounding_risk
    assert same(ours[ok], theirs[ok])
    for v in x[double_rounding_risk][:50]:
        assert rounding.round_to(v, fmt) == rounding.round_exact(v, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_to_matches_exact_rational_rounding(fmt):
    rng = np.random.default_rng(3)
    x = random_float64(rng, 3000)
    got = rounding.round_to(x, fmt)
    want = np.array([rounding.round_exact(float(v), fmt) for v in x])
    np.testing.assert_array_equal(np.abs(got), np.abs(want))
    assert np.all(np.signbit(got) == np.signbit(x))


@pytest.mark.parametrize("fmt", FORMATS)
def test_midpoints_ties_to_even_and_double_rounding(fmt):
    """Exact midpoints go to the even neighbour; a hair above or below goes that way."""
    f = rounding.get_format(fmt)
    rng = np.random.default_rng(4)
    # Representable values in the normal and subnormal ranges, positive and negative.
    if fmt == "float32":
        v = rng.integers(1, 0x7F7FFFFF, 4000).astype(np.uint32).view(F32).astype(F64)
    else:
        v = all_patterns(fmt)
        v = v[np.isfinite(v)]
    v = v[(np.abs(v) < rounding.max_finite(f)) & (v != 0)]
    v = np.concatenate([v, -v])
    step = rounding.ulp_of(v, f)  # up one step (|v| below the largest finite value)
    up = np.where(v > 0, v + step, v - step)  # the neighbour away from zero
    mid = (v + up) / 2  # exact in float64
    even = np.where(rounding.to_bits(v, f) % 2 == 0, v, up)
    assert same(rounding.round_to(mid, fmt), even)
    # A hair off the midpoint, well below a float32 ulp (where torch's float64 path rounds
    # twice and gets the even neighbour both times).
    hair = np.abs(mid) * 2.0**-40
    inward = mid - np.sign(mid) * hair
    outward = mid + np.sign(mid) * hair
    assert same(rounding.round_to(inward, fmt), v)
    assert same(rounding.round_to(outward, fmt), up)
    if fmt != "float32":
        # torch agrees on the exact midpoints (they are float32 values: one rounding)...
        assert same(torch_round(mid, fmt), even)
        # ...and from float64 it rounds the hair-off values to even (double rounding), which
        # is why rounding.py does not use torch's float64 conversion as its yardstick.
        torch_out = torch_round(outward, fmt)
        assert np.any(torch_out != up)
    k = slice(0, 300)
    exact = [rounding.round_exact(float(a), fmt) for a in outward[k]]
    np.testing.assert_array_equal(exact, up[k])


@pytest.mark.parametrize("fmt", FORMATS)
def test_subnormals_underflow_and_overflow(fmt):
    f = rounding.get_format(fmt)
    tiny = 2.0 ** (f.emin - f.precision + 1)  # smallest subnormal
    top = rounding.max_finite(f)
    big_ulp = 2.0 ** (f.emax - f.precision + 1)
    cases = {
        tiny: tiny,
        tiny / 2: 0.0,  # tie between 0 and tiny: to even (0)
        tiny / 2 * (1 + 2.0**-20): tiny,
        tiny / 2 * (1 - 2.0**-20): 0.0,
        1.5 * tiny: 2 * tiny,  # tie: to even (2 tiny)
        2.5 * tiny: 2 * tiny,
        3 * tiny: 3 * tiny,
        1e-300: 0.0,
        2.0**f.emin - tiny / 2: 2.0**f.emin,  # largest subnormal / smallest normal tie
        2.0**f.emin - tiny / 2 * (1 + 2.0**-20): 2.0**f.emin - tiny,
        top: top,
        top + big_ulp / 2: np.inf,  # the midpoint to "2^(emax+1)" rounds to infinity
        top + big_ulp / 2 * (1 - 2.0**-20): top,
        1e300: np.inf,
        np.inf: np.inf,
    }
    x = np.array(list(cases))
    want = np.array(list(cases.values()))
    assert same(rounding.round_to(x, fmt), want)
    assert same(rounding.round_to(-x, fmt), -want)
    assert same([rounding.round_exact(v, fmt) for v in x], want)
    assert np.isnan(rounding.round_to(np.nan, fmt))
    if fmt != "float32":
        # Values that are float32 numbers: torch (one rounding) agrees.
        with np.errstate(over="ignore"):
            x32 = x[x.astype(F32).astype(F64) == x]
        assert same(rounding.round_to(x32, fmt), torch_round(x32, fmt))


def test_bfloat16_nan_bits():
    bits = rounding.bfloat16_bits(np.array([np.nan, -np.nan, np.inf, -np.inf, 1.0, -0.0]))
    assert [hex(b) for b in bits] == ["0x7fc0", "0xffc0", "0x7f80", "0xff80", "0x3f80", "0x8000"]


# ---------------------------------------------------------------- ulp_of / ulp_distance


def test_ulp_of_known_values():
    assert rounding.ulp_of(1.0, "float32") == 2.0**-23
    assert rounding.ulp_of(1.0, "float16") == 2.0**-10
    assert rounding.ulp_of(1.0, "bfloat16") == 2.0**-7
    assert rounding.ulp_of(1.999, "bfloat16") == 2.0**-7
    assert rounding.ulp_of(-3.0, "bfloat16") == 2.0**-6
    assert rounding.ulp_of(0.0, "float16") == 2.0**-24
    assert rounding.ulp_of(1e-30, "float16") == 2.0**-24
    assert rounding.ulp_of(2.0**-14, "float16") == 2.0**-24
    assert rounding.ulp_of(0.0, "bfloat16") == 2.0**-133
    assert rounding.ulp_of(0.0, "float32") == 2.0**-149
    assert rounding.ulp_of(1e6, "float16") == 2.0**5  # beyond the range: the top binade
    assert rounding.ulp_of(np.inf, "float16") == np.inf
    assert np.isnan(rounding.ulp_of(np.nan, "float16"))


@pytest.mark.parametrize("fmt", HALF_FORMATS)
def test_ulp_of_is_the_spacing_of_the_format(fmt):
    """Every 16-bit pattern: the next value up is ulp_of away (and ulp_distance is 1)."""
    v = all_patterns(fmt)
    v = v[:0x7C00] if fmt == "float16" else v[:0x7F80]  # +0 ... largest finite
    nxt = np.append(v[1:], np.inf)
    spacing = nxt[:-1] - v[:-1]
    np.testing.assert_array_equal(spacing, rounding.ulp_of(v[:-1], fmt))
    np.testing.assert_array_equal(rounding.ulp_distance(v[:-1], nxt[:-1], fmt), 1)
    np.testing.assert_array_equal(rounding.ulp_distance(-v[:-1], -nxt[:-1], fmt), 1)


def test_ulp_of_matches_nextafter_float32():
    rng = np.random.default_rng(5)
    v = rng.integers(0, 0x7F7FFFFF, 100_000).astype(np.uint32).view(F32)
    spacing = (np.nextafter(v, F32(np.inf)).astype(F64) - v.astype(F64)).astype(F64)
    np.testing.assert_array_equal(rounding.ulp_of(v.astype(F64), "float32"), spacing)


@pytest.mark.parametrize("fmt", FORMATS)
def test_ulp_distance(fmt):
    f = rounding.get_format(fmt)
    tiny = 2.0 ** (f.emin - f.precision + 1)
    top = rounding.max_finite(f)
    d = rounding.ulp_distance
    assert d(0.0, -0.0, fmt) == 0
    assert d(-tiny, tiny, fmt) == 2
    assert d(top, np.inf, fmt) == 1
    assert d(1.0, 2.0, fmt) == 2 ** (f.precision - 1)
    assert d(-1.0, 1.0, fmt) == 2 * d(0.0, 1.0, fmt)
    assert d(2.0, 1.0, fmt) == d(1.0, 2.0, fmt)
    with pytest.raises(ValueError, match="not representable"):
        d(1.0, 1.0 + tiny / 3 + 2.0**-30, fmt)
    with pytest.raises(ValueError, match="NaN"):
        d(np.nan, 1.0, fmt)


@pytest.mark.parametrize("fmt", HALF_FORMATS)
def test_ordered_integers_number_every_finite_value(fmt):
    v = all_patterns(fmt)
    v = np.unique(v[np.isfinite(v)] + 0.0)  # -0.0 and +0.0 are one value
    top = rounding.max_ordered(fmt)
    np.testing.assert_array_equal(rounding.to_ordered(v, fmt), np.arange(-top, top + 1))
    back = rounding.from_ordered(np.arange(-top, top + 1), fmt)
    assert same(back, v)
    assert same(rounding.from_ordered([-top - 1, top + 1, top + 5], fmt), [-np.inf, np.inf, np.inf])


@pytest.mark.parametrize("fmt", ("float64", *FORMATS))
def test_ordered_integers_step_by_one_ulp(fmt):
    top = rounding.max_finite(fmt) if fmt != "float64" else float(np.finfo(F64).max)
    v = np.array([-top, -1.5, -1e-300 if fmt == "float64" else -1.0, -0.0, 0.0, 1.0, top])
    v = rounding.round_to_format(v, fmt)
    o = rounding.to_ordered(v, fmt)
    assert o[3] == o[4] == 0 and o[0] == -rounding.max_ordered(fmt) and o[-1] == -o[0]
    up = rounding.from_ordered(o + 1, fmt)
    assert np.all(up > v) and np.all(rounding.round_to_format(up, fmt) == up)
    assert up[-1] == np.inf
    if fmt in ("float64", "float32"):  # nothing in between (the 16-bit ones: the test above)
        dt = F64 if fmt == "float64" else F32
        with np.errstate(over="ignore"):  # max -> inf
            want = np.nextafter(v.astype(dt), dt(np.inf)).astype(F64)
        np.testing.assert_array_equal(up, want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_overflow_threshold_is_where_rounding_reaches_infinity(fmt):
    t = rounding.overflow_threshold(fmt)
    assert rounding.round_to(np.nextafter(t, 0.0), fmt) == rounding.max_finite(fmt)
    assert rounding.round_to(t, fmt) == np.inf  # the tie goes to even: infinity


def test_round_to_format_checks_the_format():
    x = np.array([0.1, -3.0])
    got = rounding.round_to_format(x, "float64")
    assert np.array_equal(got, x) and got is not x
    with pytest.raises(ValueError, match="fmt must be one of"):
        rounding.round_to_format(x, "float8")


# ---------------------------------------------------------------- correctly_rounded


def _mp_round(x: float, fn: str, fmt: str, dps: int = 60) -> float:
    fmp = rounding.FUNCTIONS[fn][1]
    return rounding.round_exact(mpmath.mpf(fmp(x, dps)), fmt)


@pytest.mark.parametrize("fn", ["gelu", "gelu_tanh", "gelu_grad"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_correctly_rounded_matches_mpmath_rounding(fn, fmt):
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-8, 8, 150), rng.uniform(-0.01, 0.01, 30)])
    x = np.concatenate([x, -np.exp2(rng.uniform(-140, 3, 20))])
    got = rounding.correctly_rounded(x, fmt, fn)
    want = np.array([_mp_round(float(v), fn, fmt) for v in x])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", ["bfloat16", "float32"])
def test_correctly_rounded_tiny_inputs_use_mpmath(fmt):
    """gelu(x) = x/2 + x^2/sqrt(2 pi) + ...: for subnormal x (odd multiples of the step) the
    float64 value is exactly the midpoint x/2, and the x^2 term decides the side: up for x > 0,
    toward zero for x < 0. (float16 subnormals are large enough for float64 to see the x^2
    term.)"""
    f = rounding.get_format(fmt)
    tiny = 2.0 ** (f.emin - f.precision + 1)
    k = np.arange(1, 64, 2, dtype=F64)
    x = np.concatenate([k * tiny, -k * tiny])
    np.testing.assert_array_equal(reference.gelu(x), x / 2)  # midpoints in float64
    got, stats = rounding.correctly_rounded(x, fmt, "gelu", return_stats=True)
    assert stats == {"mpmath": x.size, "ties": 0}
    want = np.concatenate([(k + 1) / 2 * tiny, -(k - 1) / 2 * tiny])
    assert same(got, want)
    # round_to of the float64 value would have gone to even instead, wrong for half of them.
    assert np.any(rounding.round_to(reference.gelu(x), fmt) != want)


def test_correctly_rounded_exact_ties_go_to_even():
    half = (lambda x: np.asarray(x, F64) / 2, lambda v, dps: mpmath.mpf(v) / 2)
    k = np.arange(1, 40, dtype=F64)
    x = np.concatenate([k, -k]) * 2.0**-133  # x/2: bfloat16 midpoints for odd k
    got, stats = rounding.correctly_rounded(x, "bfloat16", half, return_stats=True)
    assert stats["ties"] == 2 * int(np.sum(k % 2 == 1))
    assert same(got, rounding.round_to(x / 2, "bfloat16"))  # round_to: ties to even
    # A float64 value on the midpoint whose exact value is not: mpmath moves it.
    off = (
        lambda x: np.asarray(x, F64) / 2,
        lambda v, dps: mpmath.mpf(v) / 2 * (1 + mpmath.mpf("1e-30")),
    )
    got, stats = rounding.correctly_rounded(x, "bfloat16", off, return_stats=True)
    assert stats["ties"] == 0
    want = [
        rounding.round_exact(Fraction(v) / 2 * (1 + Fraction(1, 10**30)), "bfloat16") for v in x
    ]
    assert same(got, want)


def test_correctly_rounded_special_values():
    # (-inf is left to tests/test_reference.py: it is the float64 reference's business.)
    x = np.array([np.inf, np.nan, 0.0, -0.0, -1e30, 1e30, -40.0])
    for fmt in FORMATS:
        for fn in ("gelu", "gelu_tanh"):
            got = rounding.correctly_rounded(x, fmt, fn)
            assert same(got[:4], [np.inf, np.nan, 0.0, -0.0])
            assert got[4] == 0.0 and np.signbit(got[4])  # -1e30 Phi(-1e30): negative underflow
            assert got[5] == rounding.round_to(1e30, fmt)
            assert got[6] == 0.0 and np.signbit(got[6])


def test_region_table():
    x = np.array([-4.0, -1.0, 1.0, 2.0])
    ref = np.array([-0.0, -0.15625, 0.84375, 1.953125])
    out = {"a": ref.copy(), "b": ref + np.array([0, 0, 2.0**-7, 0])}
    rows = rounding.region_table(x, out, ref, "bfloat16")
    assert [(r["impl"], r["region"], r["max_ulp"], r["pct_correctly_rounded"]) for r in rows] == [
        ("a", "x < -3", 0, 100.0),
        ("a", "-3 <= x < 0", 0, 100.0),
        ("a", "x >= 0", 0, 100.0),
        ("b", "x < -3", 0, 100.0),
        ("b", "-3 <= x < 0", 0, 100.0),
        ("b", "x >= 0", 2, 50.0),
    ]
    assert "x >= 0" in rounding.format_table(rows)
