"""Minimum degrees (``turbogelu.approx.mindegree``): the acceptance intervals, the exclusion
classes, the exact infeasibility certificates and the verified polynomials, each checked
independently: rounding through ``report.round_output`` / ``rounding.ulp_distance``, exact
rational arithmetic (``fractions.Fraction``, ``rounding.round_exact``), mpmath, and the
project's replay and exhaustive report."""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from turbogelu.approx import mindegree as md
from turbogelu.approx import polyspec, reference, replay, report, rounding, spec, targets

F32 = np.float32
F64 = np.float64


# ---------------------------------------------------------------- helpers


def _steps(v: float, fmt: str, k: int) -> float:
    """The fmt value k steps (signed) from the fmt value v, by bit patterns (+0 = -0)."""
    f = rounding.get_format(fmt)
    b = int(rounding.to_bits(np.array([v]), fmt)[0])
    mag = b & ((1 << (f.bits - 1)) - 1)
    o = -mag if b >> (f.bits - 1) else mag
    o += k
    nb = ((1 << (f.bits - 1)) | -o) if o < 0 else o
    return float(rounding.from_bits(np.array([nb]), fmt)[0])


def _cell_end(cr: float, fmt: str, k: int, up: bool) -> Fraction:
    """The real rounding boundary beyond the k-th neighbour of cr (exact)."""
    s = 1 if up else -1
    return (Fraction(_steps(cr, fmt, s * k)) + Fraction(_steps(cr, fmt, s * (k + 1)))) / 2


def _accepts(o, cr, fmt: str, k: int) -> np.ndarray:
    got = report.round_output(np.asarray(o, F32), fmt)
    ok = np.isfinite(got)
    out = np.zeros(got.shape, bool)
    out[ok] = rounding.ulp_distance(got[ok], np.asarray(cr, F64)[ok], fmt) <= k
    return out


def _toy() -> targets.Target:
    """x/2 + u^2 (1/4 + u^2/16): an 'x/2 + even' polynomial target with dyadic coefficients
    (P linear in u^2 for the even family; u Q(u) with Q cubic for the full family)."""

    def f(x):
        x = np.asarray(x, F64)
        return 0.5 * x + x * x * (0.25 + 0.0625 * x * x)

    def f_mp(x, dps):
        with mpmath.workdps(dps):
            X = mpmath.mpf(x)
            return X / 2 + X**2 * (mpmath.mpf(1) / 4 + X**2 / 16)

    return targets.Target(
        "toy_poly",
        "x/2 + u^2 (1/4 + u^2/16)",
        f,
        f_mp,
        "x/2 + even",
        residual=lambda u: u * u * (0.25 + 0.0625 * u * u),
        tail=lambda u: -u + u * u * (0.25 + 0.0625 * u * u),
        asymptote_kind="relu",
        natural_factor=2,
    )


TOY = _toy()


def _toy_exact(x: float) -> Fraction:
    X = Fraction(x)
    return X / 2 + X * X * (Fraction(1, 4) + X * X / 16)


@functools.cache
def _prob(fmt="bfloat16", criterion="faithful"):
    return md.problem("gelu", fmt, criterion)


def _index(prob, x: float) -> int:
    return int(np.flatnonzero(prob.x == x)[0])


# ---------------------------------------------------------------- intervals


def test_rounding_interval_hand_checked():
    one = np.array([1.0])
    # within 1 ulp of 1.0 in bfloat16: 1 - 2^-8, 1, 1 + 2^-7; the boundaries beyond are the
    # midpoints 1 - 3 2^-9 and 1 + 3 2^-8, whose ties go to the even patterns 0x3F7E / 0x3F82,
    # outside: so the float32 interval stops one float32 step inside them
    mlo, mhi, lo, hi = md.rounding_interval(one, "bfloat16", 1)
    assert mlo[0] == 1 - 3 * 2.0**-9 and mhi[0] == 1 + 3 * 2.0**-8
    assert lo[0] == 1 - 3 * 2.0**-9 + 2.0**-24 and hi[0] == 1 + 3 * 2.0**-8 - 2.0**-23
    # correctly rounded: the cell of 1.0 (even), ties included
    mlo, mhi, lo, hi = md.rounding_interval(one, "bfloat16", 0)
    assert (lo[0], hi[0]) == (1 - 2.0**-9, 1 + 2.0**-8) == (mlo[0], mhi[0])
    # zero, within 1 ulp: +-min subnormal; the ties at +-1.5 min go to +-2 min (even)
    tiny = 2.0**-133
    mlo, mhi, lo, hi = md.rounding_interval(np.array([-0.0]), "bfloat16", 1)
    assert (mlo[0], mhi[0]) == (-1.5 * tiny, 1.5 * tiny)
    assert lo[0] == np.nextafter(F32(-1.5 * tiny), F32(0)) and hi[0] == -lo[0]
    # the largest float16 within 1 ulp: infinity is acceptable, so no upper end
    _, mhi, _, hi = md.rounding_interval(np.array([65504.0]), "float16", 1)
    assert mhi[0] == np.inf and hi[0] == np.inf


@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
@pytest.mark.parametrize("k", [0, 1])
def test_rounding_interval_is_exactly_the_accepted_float32_set(fmt, k):
    rng = np.random.default_rng(1)
    x = report.all_finite(fmt).astype(F64)
    cr = np.concatenate(
        [rng.choice(x, 3000), [0.0, -0.0, 2.0**-24 if fmt == "float16" else 2.0**-133]]
    )
    cr = cr[np.abs(cr) < rounding.max_finite(fmt) / 2]
    _, _, lo, hi = md.rounding_interval(cr, fmt, k)
    down = lambda v: np.nextafter(v.astype(F32), F32(-np.inf))  # noqa: E731
    up = lambda v: np.nextafter(v.astype(F32), F32(np.inf))  # noqa: E731
    assert _accepts(lo, cr, fmt, k).all() and _accepts(hi, cr, fmt, k).all()
    assert not _accepts(down(lo), cr, fmt, k).any() and not _accepts(up(hi), cr, fmt, k).any()


# ---------------------------------------------------------------- exclusion classes


def test_tail_class_boundary_and_asymptote_bfloat16():
    p = _prob("bfloat16", "faithful")
    tail = p.classes["tail"]
    for x, inside in (
        (-4.34375, True),
        (-4.3125, False),
        (-5.0, True),
        (-20.0, True),
        (3.0, False),
    ):
        i = _index(p, x)
        ulp32 = 2.0 ** (np.floor(np.log2(abs(x) / 2)) - 23)
        want = x < 0 and ulp32 > float(rounding.ulp_of(p.cr[i], "bfloat16"))
        assert bool(tail[i]) == want == inside, x
    # -5: the clamp returns -0.0 but GELU(-5) is a normal bfloat16 number: excluded
    i = _index(p, -5.0)
    assert p.excluded[i] and not p.asym_ok[i] and abs(p.cr[i]) > 2.0**-126
    # -20: GELU rounds to -0.0, which the clamp returns: in the class but served
    i = _index(p, -20.0)
    assert p.cr[i] == 0 and p.asym_ok[i] and not p.excluded[i]
    # the clamp is the largest non-excluded |x| whose asymptote is not acceptable
    need = ~p.excluded & ~p.asym_ok
    assert p.clamp == np.abs(p.x[need]).max() and not (need & (np.abs(p.x) > p.clamp)).any()
    counts = md.class_counts(p)["tail"]
    assert counts["excluded"] == counts["asymptote_unacceptable"] > 0


def test_near_ties_against_mpmath():
    p = _prob("bfloat16", "correct")
    near = np.flatnonzero(p.classes["near_tie"])
    rng = np.random.default_rng(2)
    inside = np.flatnonzero(p.window)
    for i, is_near in [(i, True) for i in rng.choice(near, 6)] + [
        (i, False) for i in rng.choice(inside, 6)
    ]:
        x, cr = float(p.x[i]), float(p.cr[i])
        with mpmath.workdps(60):
            ex = mpmath.mpf(rounding.FUNCTIONS["gelu"][1](x, 50))
            d = min(abs(ex - mpmath.mpf(float(_cell_end(cr, "bfloat16", 0, up)))) for up in (0, 1))
        unit = 2.0 ** (np.floor(np.log2(abs(x) / 2)) - 23)
        assert (d < md.NEAR_TIE_ULPS * unit) == is_near, x
    assert not p.classes["tie"].any()


def test_ties_of_a_dyadic_polynomial_exactly():
    p = md.problem(TOY, "bfloat16", "correct", max_abs=2.0)
    # candidates: float64 value within 1e-9 of a midpoint next to CR (the float64 polynomial is
    # within a few float64 ulps of the exact value); then exact rational comparison
    f = rounding.get_format("bfloat16")
    b = rounding.to_bits(p.cr, "bfloat16")
    mag = b & 0x7FFF
    o = np.where(b >> 15 == 1, -mag, mag)
    nb = lambda j: rounding.from_bits(np.where(j < 0, (1 << 15) | -j, j), f)  # noqa: E731
    v = TOY.f(p.x)
    near = np.zeros(p.x.size, bool)
    for j in (o - 1, o + 1):
        mid = 0.5 * (p.cr + nb(j))
        near |= np.abs(v - mid) <= 1e-9 * np.abs(mid)
    ties = []
    for i in np.flatnonzero(near):
        ex, cr = _toy_exact(float(p.x[i])), float(p.cr[i])
        if ex in (_cell_end(cr, "bfloat16", 0, False), _cell_end(cr, "bfloat16", 0, True)):
            ties.append(i)
    assert ties and np.array_equal(np.flatnonzero(p.classes["tie"]), ties)
    assert not (p.classes["near_tie"] & p.classes["tie"]).any()
    assert md.class_counts(p)["tie"]["excluded"] == len(ties)


# ---------------------------------------------------------------- proofs


def _check_exact_certificate(p, family: str, degree: int, cert):
    """No real polynomial of ``degree`` in z (an affine function of u^2 or u) maps every
    certificate input into its correctly rounded cell's acceptable interval: the exact
    multipliers combine the rows into 0 <= negative."""
    s = Fraction(md.program_scale(family, p.clamp))
    k = md.CRITERIA[p.criterion]
    total = [Fraction(0)] * (degree + 1)
    gap = Fraction(0)
    for x, side, mu in cert:
        assert mu >= 0
        i = _index(p, x)
        X = Fraction(x)
        u = abs(X)
        v = u * u if family == "even" else u
        z = v * s - 1
        up = side == "upper"
        bound = (_cell_end(float(p.cr[i]), p.fmt, k, up) - X / 2) / v  # P(z) <= or >= this
        sign = 1 if up else -1
        for j in range(degree + 1):
            total[j] += sign * mu * z**j
        gap += -mu * bound if up else mu * bound
    assert all(t == 0 for t in total)
    return gap


def test_lower_bound_bfloat16_faithful_even():
    p = _prob("bfloat16", "faithful")
    ev = md.prove_infeasible(p, "even", p.clamp, 6)
    assert ev.certificate_ok and ev.proven and ev.exact_proven
    assert ev.beta < 1 and ev.alpha / (1 - ev.beta) < ev.s_lb
    assert len(ev.exact_certificate) == 8  # degree + 2 inputs prove it
    assert _check_exact_certificate(p, "even", 6, ev.exact_certificate) > 0
    # the float32 certificate: the same identity on the program's z and the float32 rows
    s = F32(md.program_scale("even", p.clamp))
    total = [Fraction(0)] * 7
    value = Fraction(0)
    norm = Fraction(0)
    for x, side, mu, w in ev.certificate:
        i = _index(p, x)
        xf = F32(x)
        y = F32(abs(xf) * abs(xf))
        z = Fraction(float(replay.fma32(y, s, F32(-1.0))))
        up = side == "upper"
        end = float(p.hi[i] if up else p.lo[i])
        nb = float(np.nextafter(F32(end), F32(np.inf if up else -np.inf)))
        bound = ((Fraction(end) + Fraction(nb)) / 2 - Fraction(x) / 2) / Fraction(float(y))
        for j in range(7):
            total[j] += (1 if up else -1) * mu * z**j
        value += -mu * bound if up else mu * bound
        norm += mu * w
    assert all(t == 0 for t in total) and norm == 1
    assert float(value) == pytest.approx(ev.s_lb, rel=1e-12) and value > 0


def test_toy_polynomial_known_degrees():
    r = md.min_degree(TOY, "bfloat16", "even", "faithful", max_degree=4, max_abs=2.0)
    assert (r.degree, r.degree_in_u, r.proven_minimum) == (1, 4, True)
    assert (
        r.lower.exact_proven
        and _check_exact_certificate(
            md.problem(TOY, "bfloat16", "faithful", max_abs=2.0),
            "even",
            0,
            r.lower.exact_certificate,
        )
        > 0
    )
    r = md.min_degree(TOY, "bfloat16", "full", "correct", max_degree=4, max_abs=2.0)
    assert (r.degree, r.degree_in_u, r.proven_minimum) == (3, 4, True)
    assert r.verification["max_ulp"] == 0 and r.classes["tie"]["excluded"] > 0


# ---------------------------------------------------------------- verified polynomials


def _exact_program(x: float, coeffs, family: str, scale: float) -> float:
    """The float32 program in exact rational arithmetic, rounded once per operation by
    rounding.round_exact (independent of replay.fma32 and polyspec)."""
    r32 = lambda q: Fraction(rounding.round_exact(q, "float32"))  # noqa: E731
    X = Fraction(x)
    u = abs(X)
    y = r32(u * u)
    v = y if family == "even" else u
    z = r32(v * Fraction(scale) - 1)
    p = Fraction(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = r32(p * z + Fraction(c))
    return rounding.round_exact(v * p + X / 2, "float32")


def test_min_degree_bfloat16_faithful_even_independent_replay():
    p = _prob("bfloat16", "faithful")
    r = md.min_degree("gelu", "bfloat16", "even", "faithful", start_degree=6)
    assert (r.degree, r.degree_in_u, r.proven_minimum) == (7, 16, True)
    assert r.lower.degree == 6 and r.lower.proven and r.lower.exact_proven
    ps = r.spec
    assert (ps.variable, ps.factor, ps.shift, ps.program) == ("y", 2, True, "generic")
    assert ps.clamp == p.clamp == r.clamp and ps.scale == r.scale
    # the project's replay and exhaustive report: within 1 ulp on every non-excluded input
    rep = report.exhaustive(lambda x: polyspec.replay(ps, x), "gelu", "bfloat16")
    assert np.array_equal(rep.x, p.x)
    assert rep.ulps[~p.excluded].max() <= 1 and r.verification["max_ulp"] <= 1
    mine = md.replay32(p.x32, r.coefficients, "even", ps.scale, p.clamp)
    assert np.array_equal(mine.view(np.uint32), polyspec.replay(ps, p.x32).view(np.uint32))
    # exact rational evaluation of the program on the narrowest inputs and a sample
    win = np.flatnonzero(p.window)
    width = (p.hi[win] - p.lo[win]) / np.maximum(np.abs(p.x[win]), 1e-30)
    pick = np.concatenate([win[np.argsort(width)[:60]], np.random.default_rng(3).choice(win, 60)])
    for i in pick:
        o = _exact_program(float(p.x[i]), r.coefficients, "even", ps.scale)
        assert F32(o).view(np.uint32) == mine[i].view(np.uint32)
        got = rounding.round_exact(o, "bfloat16")
        assert rounding.ulp_distance(np.array([got]), p.cr[i : i + 1], "bfloat16")[0] <= 1


def test_min_degree_bfloat16_faithful_full_and_markdown():
    r = md.min_degree("gelu", "bfloat16", "full", "faithful", start_degree=6)
    assert r.proven_minimum and r.degree == 7 and r.lower.proven and r.lower.degree == 6
    assert r.verification["failures"] == 0 and r.verification["polyspec_replay_identical"]
    assert r.spec.degree == 7 and r.spec.variable == "u" and r.spec.factor == 1
    text = md.render_markdown([r])
    assert "**7** (8)" in text and r.coefficients_hex[0] in text


# The GELU table with the default N = 4 (module docstring): proven minimum degrees of P.
EXPECTED = {
    ("bfloat16", "faithful", "even"): 7,
    ("bfloat16", "faithful", "full"): 7,
    ("bfloat16", "correct", "even"): 9,
    ("bfloat16", "correct", "full"): 11,
    ("float16", "faithful", "even"): 7,
    ("float16", "faithful", "full"): 9,
    ("float16", "correct", "even"): 9,
    ("float16", "correct", "full"): 11,
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt, criterion, family", sorted(EXPECTED))
def test_min_degree_gelu_table(fmt, criterion, family):
    r = md.min_degree("gelu", fmt, family, criterion, max_degree=14)
    assert r.proven_minimum and r.degree == EXPECTED[fmt, criterion, family]
    assert r.verification["failures"] == 0 and r.verification["polyspec_replay_identical"]
    assert r.lower.proven and r.lower.exact_proven
    p = md.problem("gelu", fmt, criterion)
    assert _check_exact_certificate(p, family, r.degree - 1, r.lower.exact_certificate) > 0


def test_min_degree_bfloat16_faithful_even_without_near_tie_exclusion():
    # N = 0: only the tail (and exact ties, none for GELU) set aside, as notebook 09 and the
    # paper report it: one degree more than with the default N = 4 (the test above), because
    # the near-ties at the tail's edge must then be served too.
    r = md.min_degree("gelu", "bfloat16", "even", "faithful", near_tie_ulps=0, start_degree=7)
    assert (r.degree, r.degree_in_u, r.proven_minimum) == (8, 18, True)
    assert r.lower.degree == 7 and r.lower.proven and r.lower.exact_proven
    p4 = _prob("bfloat16", "faithful")  # N = 4
    c, c4 = r.classes, md.class_counts(p4)
    assert c["near_tie"]["excluded"] == 0 and c["tie"]["excluded"] == 0
    assert c["tail"]["excluded"] == c4["tail"]["excluded"] and c4["near_tie"]["excluded"] > 0
    # every input but the tail's is checked, and within 1 ulp
    assert r.verification["checked"] == p4.x.size - c["tail"]["excluded"]
    assert r.verification["failures"] == 0 and r.verification["max_ulp"] <= 1


# ---------------------------------------------------------------- "bounded"
#
# tests/test_accuracy.py holds the bfloat16 kernels to: within 1 ulp for x >= -3, and below -3
# an absolute error of at most 3e-5 plus half an ulp of the 16-bit result (its float16 tests
# ask 1 ulp on x >= 0 only). Issue 13 asks for a 16-bit program with fewer operations where
# that holds at 1 ulp for x >= -3: how few can there be?


def _all_values(fmt: str) -> np.ndarray:
    v = report.all_finite(fmt).astype(F64)
    return np.unique(v)  # sorted; -0 and +0 one value


@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_within_abs_is_the_tests_bound_by_enumeration(fmt):
    values = _all_values(fmt)
    half = rounding.ulp_of(values, fmt) / 2
    rng = np.random.default_rng(5)
    exact = np.concatenate([[0.0, -2.9e-5, -3.1e-5, -4.05e-3], -rng.uniform(0, 5e-3, 40)])
    jl, jh = md.within_abs(exact, fmt, 3e-5)
    for e, a, b in zip(exact, jl, jh, strict=True):
        ok = values[np.abs(values - e) <= 3e-5 + half]
        assert ok.size and np.all(np.diff(rounding.to_ordered(ok, fmt)) == 1)  # one run
        assert rounding.to_ordered(ok[[0, -1]], fmt).tolist() == [a, b]


@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_bounded_problem_judges_below_minus_3_by_absolute_error(fmt):
    p, f = _prob(fmt, "bounded"), _prob(fmt, "faithful")
    below = p.x < -3
    assert np.array_equal(p.by_abs, below) and not f.by_abs.any()
    # x >= -3: the faithful criterion's values and intervals
    for a in ("jlo", "jhi", "lo", "hi"):
        assert np.array_equal(getattr(p, a)[~below], getattr(f, a)[~below]), a
    # below: a superset of the faithful values, in no exclusion class
    assert (p.jlo <= f.jlo).all() and (p.jhi >= f.jhi).all()
    assert not p.excluded[below].any()
    for m in p.classes.values():
        assert not m[below].any()
    # -0.0 beyond the clamp is within 3e-5 of GELU there; just inside, it is not
    assert np.abs(p.exact[below & (p.x < -p.clamp)]).max() <= 3e-5
    inside = below & (np.abs(p.x) <= p.clamp) & ~p.asym_ok
    assert inside.any() and np.abs(p.exact[inside]).max() > 3e-5


def _bound_holds(fmt: str, x64, out32) -> tuple[int, int]:
    """The "bounded" criterion computed independently of mindegree: failures at x >= -3 (ulps
    > 1 against the correctly rounded value) and below -3 (absolute error)."""
    got = report.round_output(np.asarray(out32, F32), fmt)
    cr = rounding.correctly_rounded(x64, fmt, "gelu")
    head = x64 >= -3
    ulps = rounding.ulp_distance(got[head], cr[head], fmt)
    exact = reference.gelu_mp_array(x64[~head], "none")
    err = np.abs(got[~head] - exact)
    return int((ulps > 1).sum()), int((err > 3e-5 + rounding.ulp_of(got[~head], fmt) / 2).sum())


@pytest.mark.parametrize("fmt, degree", [("bfloat16", 7), ("float16", 8)])
def test_min_degree_under_the_bounded_criterion(fmt, degree):
    # bfloat16: one multiply-add fewer than the shipped degree 8; float16: none fewer
    r = md.min_degree("gelu", fmt, "even", "bounded", start_degree=degree - 1)
    assert (r.degree, r.proven_minimum) == (degree, True)
    assert r.lower.degree == degree - 1 and r.lower.proven and r.lower.exact_proven
    assert r.verification["failures"] == 0 and r.verification["polyspec_replay_identical"]
    p = _prob(fmt, "bounded")
    # the exact certificate of the degree below, against the module's intervals (checked
    # above against the bound itself)
    s = Fraction(md.program_scale("even", p.clamp))
    total, gap = [Fraction(0)] * degree, Fraction(0)
    for x, side, mu in r.lower.exact_certificate:
        i, X = _index(p, x), Fraction(x)
        v = X * X
        z = v * s - 1
        up = side == "upper"
        bound = (Fraction(float(p.mhi[i] if up else p.mlo[i])) - X / 2) / v
        for j in range(degree):
            total[j] += (1 if up else -1) * mu * z**j
        gap += -mu * bound if up else mu * bound
    assert all(t == 0 for t in total) and gap > 0
    # the program found meets the bound on every finite input, by the independent check
    x = report.all_finite(fmt)
    out = polyspec.replay(r.spec, x)
    assert _bound_holds(fmt, x.astype(F64), out) == (0, 0)


def test_the_shipped_kernel_under_the_bounded_criterion():
    # The shipped program (degree 8): bfloat16 within the bound everywhere (as
    # tests/test_accuracy.py holds it); float16 over 1 ulp on part of [-3, 0) (up to 6), which
    # the degree-8 float16 program of the test above is not.
    shipped = spec.turbogelu_form("none", "forward")
    for fmt, want in (("bfloat16", 0), ("float16", None)):
        p = _prob(fmt, "bounded")
        ck = md.check(p, polyspec.replay(shipped, p.x32))
        head, below = _bound_holds(fmt, p.x, polyspec.replay(shipped, p.x32))
        assert ck["failures"] == head + below
        if want is not None:
            assert ck["failures"] == want
        else:
            bad = p.x[ck["fail_idx"]]
            assert ck["failures"] > 0 and below == 0 and ((bad >= -3) & (bad < 0)).all()
            assert 1 < ck["max_ulp"] <= 8  # tests/test_cli.py's bound on [-3, 0)
