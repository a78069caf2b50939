"""Exponential negative tails for sigmoid and SiLU (turbogelu.approx.family_tails): the
replay's arithmetic against an independent rational re-implementation and against mpmath,
special values, the polynomial part unchanged, and the bounds as measured."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from turbogelu.approx import family_programs as fp
from turbogelu.approx import family_tails as ft
from turbogelu.approx import report, rounding, spec
from turbogelu.approx.polyspec import PolySpec, replay

F32 = np.float32
F64 = np.float64
FUNCTIONS = ft.FUNCTIONS
VARIANTS = (
    ft.DEFAULT,
    ft.Variant(reduction="split", degree=5),
    ft.Variant(divide="poly"),
    ft.Variant(threshold=None),
    ft.Variant(threshold=None, degree=5, reduction="split"),
)


def _ids(v: ft.Variant) -> str:
    return v.name


# ---------------------------------------------------------------- constants


def test_log2e_split():
    with mpmath.workdps(60):
        l2e = 1 / mpmath.log(2)
        assert ft.L2E == float(F32(float(l2e)))
        assert float(F32(ft.L2E_LO)) == ft.L2E_LO and ft.L2E_LO != 0
        # hi + lo carries log2 e to ~48 bits; hi alone to 24.
        assert abs(mpmath.mpf(ft.L2E) + mpmath.mpf(ft.L2E_LO) - l2e) < 2.0**-48
        assert abs(mpmath.mpf(ft.L2E) - l2e) > 2.0**-27


def _exp2_rel_error(degree: int) -> float:
    c = ft.exp2_coefficients(degree)
    f = np.linspace(-0.5 - 2e-6, 0.5 + 2e-6, 200_001)
    return float(np.max(np.abs(np.polynomial.polynomial.polyval(f, c) / np.exp2(f) - 1.0)))


@pytest.mark.parametrize("degree", [2, 3, 4, 5])
def test_exp2_coefficients(degree):
    c = ft.exp2_coefficients(degree)
    assert len(c) == degree + 1 and c[0] == 1.0
    assert all(float(F32(v)) == v for v in c)
    # The relative minimax's error falls by ~2^-5 a degree (Taylor terms ln2^k / k! / 2^k).
    bound = {2: 2e-3, 3: 1.1e-4, 4: 4e-6, 5: 2e-7}[degree]
    assert _exp2_rel_error(degree) < bound
    # The default degree's error is below 2^-13, so under half a float16 ulp (2^-12 relative).
    if degree == ft.DEFAULT_DEGREE:
        assert _exp2_rel_error(degree) < 2.0**-13


def test_recip_coefficients():
    q = ft.recip_coefficients(-3.0, 2)
    e = np.linspace(0.0, math.exp(-3.0), 10001)
    rel = np.abs(np.polynomial.polynomial.polyval(e, q) * (1.0 + e) - 1.0)
    assert rel.max() < 4e-6
    with pytest.raises(ValueError):
        ft.recip_coefficients(-3.0, 0)


def test_variant_validation():
    with pytest.raises(ValueError, match="reduction"):
        ft.Variant(reduction="cody")
    with pytest.raises(ValueError, match="divide"):
        ft.Variant(divide="rcp")
    with pytest.raises(ValueError, match="threshold"):
        ft.Variant(threshold=1.0)
    with pytest.raises(ValueError, match="divide='div'"):
        ft.Variant(threshold=None, divide="poly")
    with pytest.raises(ValueError, match="degree"):
        ft.Variant(degree=1)
    with pytest.raises(ValueError, match="function"):
        ft.tail_branch("tanh", np.array([-4.0]))


# ---------------------------------------------------------------- the arithmetic


def _rn(q) -> float:
    return rounding.round_exact(q, "float32")


def test_division_is_correctly_rounded():
    """TailArith.div (float64 quotient, then float32) against rational rounding, normal and
    subnormal quotients and quotients next to float32 midpoints."""
    rng = np.random.default_rng(17)
    a = rng.uniform(1.0, 2.0, 3000).astype(F32)
    b = rng.uniform(1.0, 2.0, 3000).astype(F32)
    scale = np.ldexp(1.0, rng.integers(-160, 10, 3000)).astype(F32)
    num = (a * scale).astype(F32)
    # Numerators that are near-midpoints of the quotient: b times a float32 plus half an ulp.
    q0 = rng.uniform(1.0, 2.0, 1000).astype(F32)
    mid = (q0.astype(F64) + 2.0**-24) * b[:1000].astype(F64)
    num = np.concatenate([num, rounding.round_to_format(mid, "float32").astype(F32)])
    den = np.concatenate([b, b[:1000]])
    got = ft.TailArith().div(num.astype(F64), den.astype(F64))
    want = [_rn(Fraction(float(n)) / Fraction(float(d))) for n, d in zip(num, den, strict=True)]
    assert np.array_equal(got, np.array(want))
    assert np.any((got != 0) & (np.abs(got) < 2.0**-126))  # subnormal results were tested


def _oracle(function: str, x: float, v: ft.Variant) -> float:
    """The tail program's operation sequence (module docstring) in rational arithmetic,
    each result rounded once to float32 by ``rounding.round_exact``: written apart from
    ``tail_branch``, which must agree bit for bit (nonzero x only: zeros lose their sign in
    Fractions)."""
    F = Fraction
    whole = v.threshold is None
    u = -abs(x) if whole else x
    xc = max(u, ft.X_MIN)
    k = _rn(F(xc) * F(ft.L2E) + F(ft.MAGIC))
    n = _rn(F(k) - F(ft.MAGIC))
    if v.reduction == "split":
        f = _rn(F(xc) * F(ft.L2E_LO) + F(_rn(F(xc) * F(ft.L2E) - F(n))))
    else:
        f = _rn(F(xc) * F(ft.L2E) - F(n))
    c = ft.exp2_coefficients(v.degree)
    p = c[-1]
    for ck in reversed(c[:-1]):
        p = _rn(F(p) * F(f) + F(ck))
    assert n == int(n) and -160 <= n <= 0
    m = _rn(F(p) * F(2) ** (int(n) + ft.BIAS))
    assert m == F(p) * F(2) ** (int(n) + ft.BIAS)  # the first scaling is exact
    e = _rn(F(m) * F(2) ** -ft.BIAS)
    low = F(2) ** -ft.BIAS
    if v.divide == "poly":
        qc = ft.recip_coefficients(v.threshold, v.q_degree)
        q = qc[-1]
        for ck in reversed(qc[:-1]):
            q = _rn(F(q) * F(e) + F(ck))
        if function == "sigmoid":
            return _rn(F(e) * F(q))
        return _rn(F(_rn(F(_rn(F(xc) * F(m))) * F(q))) * low)
    d = _rn(1 + F(e))
    neg = x < 0
    if function == "sigmoid":
        num = e if (neg or not whole) else 1.0
        return _rn(F(num) / F(d))
    num = _rn(F(xc) * F(m)) if (neg or not whole) else x
    scale = low if (neg or not whole) else F(1)
    return _rn(F(_rn(F(num) / F(d))) * scale)


def _sample_points(whole: bool) -> np.ndarray:
    rng = np.random.default_rng(5)
    x = [
        rng.uniform(-120.0, -3.0, 120),
        -np.geomspace(1e-6, 3.0, 30),
        rng.uniform(-104.5, -86.0, 40),  # subnormal sigmoid, and its underflow to zero
        rng.uniform(-109.5, -103.0, 30),  # SiLU's subnormals and zeros
        [-3.0000002, -87.33655, -103.97208, -108.6, -110.0, -110.5, -1e30],
    ]
    if whole:
        x += [-x[0][:40], np.geomspace(1e-6, 30.0, 30), [3.0, 17.0, 88.0, 1e30]]
    return np.concatenate(x).astype(F32)


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_tail_branch_matches_rational_oracle(function, variant):
    x = _sample_points(variant.threshold is None)
    got = ft.tail_branch(function, x.astype(F64), variant).astype(F32)
    want = np.array([_oracle(function, float(v), variant) for v in x], F32)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def _mp(function: str, x: float):
    with mpmath.workdps(50):
        s = 1 / (1 + mpmath.exp(-mpmath.mpf(x)))
        return s if function == "sigmoid" else mpmath.mpf(x) * s


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_tail_branch_against_mpmath(function, variant):
    """|result - f| <= (the 2^f polynomial's relative error + the reduction's + 6 roundings
    of 2^-24 + Q's) |f| + 2^-150 (the one rounding into the subnormals)."""
    x = _sample_points(variant.threshold is None)
    x = x[np.abs(x) <= 120]
    if variant.threshold is not None:  # where the kernel uses the branch
        x = x[x < variant.threshold]
    got = ft.tail_branch(function, x.astype(F64), variant)
    rel = _exp2_rel_error(variant.degree) + 6 * 2.0**-24
    rel += 110 * 2.0**-25 * 1.5 if variant.reduction == "single" else 2.0**-23
    rel += 4e-6 if variant.divide == "poly" else 0.0
    for xv, g in zip(x, got, strict=True):
        want = _mp(function, float(xv))
        err = abs(mpmath.mpf(float(g)) - want)
        assert err <= rel * abs(want) + 2.0**-150, (float(xv), float(g), want)


# ---------------------------------------------------------------- special values


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_special_values(variant):
    x = np.array([-np.inf, np.nan, -0.0, 0.0, np.inf, -1e30, -200.0], F32)
    s = ft.replay_exp_tail("sigmoid", x, variant)
    y = ft.replay_exp_tail("silu", x, variant)
    assert s[0] == 0 and not np.signbit(s[0])
    assert y[0] == 0 and np.signbit(y[0])
    assert np.isnan(s[1]) and np.isnan(y[1])
    assert s[2] == 0.5 and s[3] == 0.5
    assert y[2] == 0 and np.signbit(y[2]) and y[3] == 0 and not np.signbit(y[3])
    assert s[4] == 1.0 and y[4] == np.inf
    assert np.all(s[5:] == 0) and not np.any(np.signbit(s[5:]))
    assert np.all(y[5:] == 0) and np.all(np.signbit(y[5:]))


def _rn32_mp(function: str, x: float) -> float:
    return rounding.round_exact(_mp(function, x), "float32")


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_subnormal_and_zero_results(variant):
    """Very negative x: zeros exactly where the correctly rounded value is zero, with its sign,
    and subnormal results rounded once, at the end: within 1 float32 ulp of the correctly
    rounded value wherever the relative error (exp2 polynomial) is under 2^-151 in absolute
    terms (all subnormals for degree 5, those below 2^-138 for degree 3; above, the relative
    bound of test_tail_branch_against_mpmath holds)."""
    x = np.array([-88.0, -95.0, -100.0, -103.0, -103.9, -104.0, -105.0, -108.0, -108.5], F32)
    x = np.concatenate([x, np.linspace(-109.0, -87.0, 200, dtype=F32)])
    small = 2.0**-126 if variant.degree >= 5 else 2.0**-138
    for fn in FUNCTIONS:
        got = ft.replay_exp_tail(fn, x, variant).astype(F64)
        want = np.array([_rn32_mp(fn, float(v)) for v in x])
        sub = (want != 0) & (np.abs(want) < small)
        assert np.count_nonzero(sub) > 10 and np.any(want == 0)
        assert np.all((got == 0) == (want == 0)), fn
        assert np.all(rounding.ulp_distance(got[sub], want[sub], "float32") <= 1), fn
        assert np.all(np.signbit(got) == (fn == "silu")), fn
    # sigmoid is zero from -103.97 on (e^x < 2^-150), SiLU only from about -108.6.
    s, y = (ft.replay_exp_tail(fn, np.array([-105.0], F32), variant) for fn in FUNCTIONS)
    assert s[0] == 0 and y[0] != 0


# ---------------------------------------------------------------- the polynomial part


@pytest.mark.parametrize("function", FUNCTIONS)
def test_polynomial_part_is_the_shipped_program(function):
    doc = fp.load(function)
    shipped = PolySpec.from_dict(doc["forward"])
    ps = ft.polynomial(function)
    assert ps == shipped and ps.coefficients == shipped.coefficients
    assert ps.to_dict()["coefficients"] == doc["forward"]["coefficients"]
    # Bit for bit the shipped replay wherever x >= T (every 16-bit input and the grid).
    xs = [report.all_finite(fmt) for fmt in fp.FORMATS] + [ft._grid(ps)]
    x = np.concatenate(xs + [np.array([np.nan, np.inf, -0.0, -3.0], F32)])
    for v in (ft.DEFAULT, ft.Variant(threshold=-5.0, degree=5, divide="poly")):
        got = ft.replay_exp_tail(function, x, v)
        want = replay(shipped, x)
        keep = ~(x < F32(v.threshold))
        assert np.array_equal(got[keep].view(np.int32), want[keep].view(np.int32))
        assert not np.array_equal(got[~keep], want[~keep])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_polynomial_measured_as_the_spec_stores(function):
    """This module's measurement of the shipped program gives the figures the committed spec
    stores (family_programs.measure), so the two programs are measured alike."""
    stored = fp.load(function)["forward"]["errors"]
    m = ft.measure(function, lambda x: ft.replay_polynomial(function, x))
    # the float64 errors against numpy's tanh / scipy's expit, whose last bits depend on the
    # CPU, to the spec files' rule (spec.MEASURED_RTOL); the counts and ulps exactly
    rtol = spec.MEASURED_RTOL
    assert m["float32"]["max_abs_float32"] == pytest.approx(
        stored["float32"]["max_abs_float32"], rel=rtol
    )
    for fmt in fp.FORMATS:
        s, got = stored[fmt], m[fmt]
        assert got["one_ulp_region"]["inputs"] == s["inputs"]
        assert got["one_ulp_region"]["max_ulp"] == s["max_ulp"]
        assert got["one_ulp_region"]["over_1_ulp"] == s["over_1_ulp"]
        for key in ("inputs", "max_ulp", "within_1_ulp", "over_abs_bound"):
            assert got["tail"][key] == s["tail"][key], (fmt, key)
        assert got["tail"]["max_abs_beyond_half_ulp"] == pytest.approx(
            s["tail"]["max_abs_beyond_half_ulp"], rel=rtol
        )
        assert got["everywhere"]["max_ulp"] == s["tail"]["max_ulp"] > 1


# ---------------------------------------------------------------- the bounds, as measured


def _ulps(function: str, fmt: str, variant: ft.Variant):
    rep = report.exhaustive(lambda v: ft.replay_exp_tail(function, v, variant), function, fmt)
    valid = ~np.isnan(rep.want)
    return rep.x[valid], rep.ulps[valid]


@pytest.mark.parametrize("fmt", fp.FORMATS)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_default_within_one_ulp_on_every_16bit_input(function, fmt):
    """Judged from report.exhaustive directly: every finite input, tail and all."""
    x, ulps = _ulps(function, fmt, ft.DEFAULT)
    assert np.all(ulps >= 0) and ulps.max() <= 1
    assert np.count_nonzero(x < -3) > 14000


@pytest.mark.parametrize("function", FUNCTIONS)
def test_degree_two_is_not_enough(function):
    """The default's degree is the least that holds: degree 2 misses 1 ulp in float16."""
    _, ulps = _ulps(function, "float16", ft.Variant(degree=2))
    assert ulps.max() > 1


@pytest.mark.parametrize("function", FUNCTIONS)
def test_degree_five_split_rounds_the_tail_correctly(function):
    v = ft.Variant(degree=5, reduction="split")
    for fmt in fp.FORMATS:
        x, ulps = _ulps(function, fmt, v)
        assert np.all(ulps[x < -3] == 0), fmt
        assert ulps.max() <= 1


@pytest.mark.parametrize("function", FUNCTIONS)
def test_default_float32(function):
    """Whole line <= 3e-5 beyond half an ulp (the positive asymptote, shared with the
    polynomial, is the largest); the exponential tail itself far below it."""
    e = ft.float32_errors(function, lambda x: ft.replay_exp_tail(function, x))
    assert e["max_abs_float32"] <= fp.ABS_BOUND
    assert e["max_abs_float32"] == e["positive_asymptote_error"]
    assert e["tail"]["max_abs_beyond_half_ulp"] < 1.5e-5
    assert e["tail"]["max_ulp_float32"] < 2000
    poly = ft.float32_errors(function, lambda x: ft.replay_polynomial(function, x))
    assert poly["tail"]["max_ulp_float32"] > 10**8  # the polynomial's tail: no relative bound
    # The grid reaches past X_MIN, where both results are zeros.
    assert e["tail"]["points"] > 200_000


@pytest.mark.parametrize("function", FUNCTIONS)
def test_whole_line_exponential_float32(function):
    v = ft.Variant(threshold=None)
    e = ft.float32_errors(function, lambda x: ft.replay_exp_tail(function, x, v), asymptote=False)
    assert e["positive_asymptote_error"] is None
    assert e["max_abs_float32"] <= fp.ABS_BOUND
    assert ft._grid(ft.polynomial(function), positive_far=True).max() > 100


# ---------------------------------------------------------------- operation counts, report


def test_op_counts():
    c = {fn: ft.op_counts(fn) for fn in FUNCTIONS}
    s, y = c["sigmoid"], c["silu"]
    assert s["polynomial"]["float"] == 13 and y["polynomial"]["float"] == 16
    assert s["exp_branch"] == {
        "fma": 5, "mul": 2, "add": 2, "div": 1, "max": 1, "int": 2, "select": 0, "float": 10
    }  # fmt: skip
    assert y["exp_branch"]["float"] == 12 and y["exp_branch"]["mul"] == 4
    for fn in FUNCTIONS:
        simd = c[fn]["simd"]
        assert simd["float"] == c[fn]["polynomial"]["float"] + c[fn]["exp_branch"]["float"]
        assert simd["compare"] == 1 and simd["select"] == 1
    split = ft.op_counts("sigmoid", ft.Variant(reduction="split", degree=5))
    assert split["exp_branch"]["fma"] == s["exp_branch"]["fma"] + 3
    nodiv = ft.op_counts("sigmoid", ft.Variant(divide="poly"))["exp_branch"]
    assert nodiv["div"] == 0 and nodiv["fma"] == 7 and nodiv["float"] == 11
    whole = ft.op_counts("silu", ft.Variant(threshold=None))
    assert whole["simd"]["float"] == whole["exp_branch"]["float"] == 12
    assert whole["simd"]["select"] == 2 and whole["simd"]["compare"] == 0


def test_report_is_jsonable_and_consistent():
    r = ft.exp_tail_report("sigmoid", scan=False)
    json.dumps(r)
    assert r["threshold"] == ft.THRESHOLD and "scan" not in r
    assert r["holds"]["exp_tail"] == {"tier": True, "one_ulp_everywhere": True}
    assert r["holds"]["polynomial"] == {"tier": True, "one_ulp_everywhere": False}
    assert r["variant"]["exp2_coefficients"][0] == "0x1.0000000000000p+0"
    for fmt in fp.FORMATS:
        assert r["exp_tail"][fmt]["everywhere"]["over_1_ulp"] == 0
        assert r["exp_tail"][fmt]["largest_x_over_1_ulp"] is None
        assert r["polynomial"][fmt]["largest_x_over_1_ulp"] < -4


def test_render_markdown():
    rep = {"function": "silu", "scan": [ft._row("p", *_fake_row_inputs())]}
    text = ft.render_markdown([rep])
    assert text.count("\n") == 2 and "| silu | p |" in text


def _fake_row_inputs():
    region = {"max_ulp": 1, "within_1_ulp": 3, "inputs": 3, "pct_correctly_rounded": 100.0}
    fmt = {
        "everywhere": {**region, "over_1_ulp": 0},
        "one_ulp_region": {"over_1_ulp": 0},
        "tail": {**region, "over_abs_bound": 0},
    }
    m = {
        "float32": {"max_abs_float32": 1e-5, "tail": {"max_abs_beyond_half_ulp": 1e-6}},
        "bfloat16": fmt,
        "float16": fmt,
    }
    m["float32"]["tail"]["max_ulp_float32"] = 2
    return m, {"simd": {"float": 10, "div": 1}}
