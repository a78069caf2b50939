"""The approximation lab's fitting methods (``turbogelu.approx.methods``): least squares, IRLS,
endpoint-constrained least squares, Remez, coefficient rounding and its search, and the
optional Sollya control. The references are independent: scipy's linear programming for
discrete minimax, closed forms (|x|, x^4 and Chebyshev polynomials), exact rational rounding
with ``fractions.Fraction``."""

from __future__ import annotations

import math
import re
import shutil
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linprog

from turbogelu.approx import fit, methods, reference, rounding

F64 = np.float64
EPS = float(np.finfo(F64).eps)


def power_basis(a: float, b: float, degree: int, factor: int = 0, var: str = "sym"):
    """``u^factor * t^k``, k = 0..degree; t in [-1, 1] ('sym'), [0, 1] ('unit') or t = u."""

    def basis(u):
        u = np.asarray(u, F64)
        if var == "sym":
            t = (2.0 * u - (a + b)) / (b - a)
        elif var == "unit":
            t = (u - a) / (b - a)
        else:
            t = u
        return (u**factor)[:, None] * np.vander(t, degree + 1, increasing=True)

    return basis


def gelu_residual(u):
    """gelu(u) - u/2: even, O(u^2) at 0 (the residual behind the kernels' x/2 + x^2 P)."""
    return reference.gelu(np.asarray(u, F64), "none") - 0.5 * np.asarray(u, F64)


def lp_minimax(B: np.ndarray, y: np.ndarray, w: np.ndarray | None = None):
    """Discrete minimax ``min_c max_i |(y_i - B_i c) / w_i|`` by linear programming (HiGHS).

    Solved for the correction to the least-squares fit, scaled to O(1), so that HiGHS's
    absolute tolerances are relative ones."""
    if w is not None:
        B, y = B / w[:, None], y / w
    c0, *_ = np.linalg.lstsq(B, y, rcond=None)
    r0 = y - B @ c0
    s = float(np.max(np.abs(r0)))
    n, m = B.shape
    ones = np.ones((n, 1))
    res = linprog(
        np.r_[np.zeros(m), 1.0],
        A_ub=np.block([[B, -ones], [-B, -ones]]),
        b_ub=np.r_[r0, -r0] / s,
        bounds=[(None, None)] * (m + 1),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    assert res.status == 0, res.message
    return c0 + res.x[:m] * s, float(res.x[m]) * s


# ---------------------------------------------------------------- sampling, LS, IRLS


def test_sample_points():
    for kind in ("chebyshev", "uniform"):
        u = methods.sample_points(-2.0, 3.0, 101, kind)
        assert u[0] == -2.0 and u[-1] == 3.0 and np.all(np.diff(u) > 0)
    u = methods.sample_points(-1.0, 1.0, 9)
    assert np.array_equal(u, -u[::-1]) and u[4] == 0.0
    np.testing.assert_allclose(u, np.sort(np.cos(np.pi * np.arange(9) / 8)), atol=1e-15)
    with pytest.raises(ValueError):
        methods.sample_points(1.0, 1.0, 10)
    with pytest.raises(ValueError):
        methods.sample_points(0.0, 1.0, 10, "random")


@pytest.mark.parametrize("kind", ["chebyshev", "uniform"])
def test_least_squares_reproduces_its_span(kind):
    a, b = 0.5, 3.0
    basis = power_basis(a, b, 5, factor=2)
    want = np.array([0.3, -1.0, 0.25, 2.0, -0.5, 0.125])
    f = lambda u: basis(u) @ want  # noqa: E731
    np.testing.assert_allclose(methods.least_squares(basis, f, a, b, kind=kind), want, rtol=1e-12)
    got = methods.least_squares(basis, f, a, b, weights=lambda u: 1.0 + u**2, kind=kind)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_least_squares_weights():
    a, b = 0.0, 2.0
    basis, f = power_basis(a, b, 4), np.exp
    u = methods.sample_points(a, b, 500)
    w = 1.0 / (1.0 + u)
    by_array = methods.least_squares(basis, f, a, b, points=500, weights=w)
    by_callable = methods.least_squares(basis, f, a, b, points=500, weights=lambda x: 1 / (1 + x))
    sw = np.sqrt(w)
    manual, *_ = np.linalg.lstsq(basis(u) * sw[:, None], f(u) * sw, rcond=None)
    np.testing.assert_allclose(by_array, manual, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(by_callable, manual, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError):
        methods.least_squares(basis, f, a, b, points=500, weights=-w)


@pytest.mark.parametrize(
    "f, factor, a, b", [(np.exp, 0, 0.0, 1.0), (gelu_residual, 2, 0.0, 6.0)], ids=["exp", "gelu"]
)
@pytest.mark.parametrize("degree", [4, 8])
def test_chebyshev_points_beat_uniform_points_in_max_error(f, factor, a, b, degree):
    """Why least squares samples Chebyshev-Lobatto points: on smooth targets its max error is
    smaller than on uniform points (the Legendre-like projection is worst at the ends)."""
    basis = power_basis(a, b, degree, factor)
    err = {
        kind: methods.max_error(basis, f, a, b, methods.least_squares(basis, f, a, b, kind=kind))
        for kind in ("chebyshev", "uniform")
    }
    assert err["chebyshev"] < err["uniform"], err


def test_irls_is_fit_solve_irls_on_the_same_grid():
    a, b, n = 0.0, 5.0, 3000
    basis, f = power_basis(a, b, 6, factor=2), gelu_residual
    got = methods.irls(basis, f, a, b, points=n, iters=20, kind="uniform")
    u = np.linspace(a, b, n)
    want = fit._solve_irls(basis(u), f(u), 20)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-12)


def test_irls_tends_to_the_discrete_minimax():
    a, b = 0.0, 1.0
    basis = power_basis(a, b, 3)
    u = methods.sample_points(a, b, 4000)
    _, lp_err = lp_minimax(basis(u), np.exp(u))
    c = methods.irls(basis, np.exp, a, b, points=4000, iters=60)
    err = float(np.max(np.abs(np.exp(u) - basis(u) @ c)))
    assert lp_err <= err <= lp_err * (1 + 1e-4)


# ---------------------------------------------------------------- endpoint-constrained LS


@pytest.mark.parametrize("var", ["sym", "unit"])
def test_endpoint_ls_is_exact_at_both_ends(var):
    a, b = 0.25, 3.5
    basis, f = power_basis(a, b, 6, var=var), lambda u: np.sin(u) * np.exp(-u)
    c = methods.endpoint_ls(basis, f, a, b)
    ends = np.array([a, b])
    for row, want in zip(basis(ends), f(ends), strict=True):
        # p(e) evaluated exactly: the coefficients match f(e) to the rounding of the terms.
        exact = sum(Fraction(float(r)) * Fraction(float(ck)) for r, ck in zip(row, c, strict=True))
        assert abs(float(exact - Fraction(float(want)))) <= 4 * EPS * float(np.abs(row) @ np.abs(c))
        if var == "sym":
            assert abs(float(row @ c) - want) <= 1e-15 * max(1.0, abs(want))
    # Constrained, so no better than free least squares in the L2 sense, but close.
    u = methods.sample_points(a, b, 2000)
    free = methods.least_squares(basis, f, a, b)
    l2 = lambda cc: float(np.sum((f(u) - basis(u) @ cc) ** 2))  # noqa: E731
    assert l2(free) <= l2(c) <= 4 * l2(free)


def test_endpoint_ls_equals_the_explicit_construction():
    """The paper's construction on t = (u - a)/(b - a) in [0, 1]:
    p(t) = f(a) (1 - t) + f(b) t + sum_{j>=2} d_j (t^j - t), the d_j by least squares, is the
    same polynomial as the equality-constrained least squares over {1, t, ..., t^n}."""
    a, b, n = 0.5, 2.0, 5
    f = np.log1p
    c = methods.endpoint_ls(power_basis(a, b, n, var="unit"), f, a, b)
    u = methods.sample_points(a, b, 2000)
    t = (u - a) / (b - a)
    fa, fb = float(f(np.array([a]))[0]), float(f(np.array([b]))[0])
    lin = fa * (1 - t) + fb * t
    D = np.stack([t**j - t for j in range(2, n + 1)], axis=1)
    d, *_ = np.linalg.lstsq(D, f(u) - lin, rcond=None)
    want = np.r_[fa, fb - fa - d.sum(), d]
    np.testing.assert_allclose(c, want, rtol=1e-10, atol=1e-13)


def test_endpoint_ls_drops_a_degenerate_constraint():
    """With a u^2 factor every basis function vanishes at a = 0: the constraint p(0) = f(0)
    is 0 = 0 for a residual with f(0) = 0, dropped; p(b) = f(b) is still exact."""
    a, b = 0.0, 4.0
    basis = power_basis(a, b, 5, factor=2)
    c = methods.endpoint_ls(basis, gelu_residual, a, b)
    fb = float(gelu_residual(np.array([b]))[0])
    row = basis(np.array([b]))[0]
    assert abs(float(row @ c) - fb) <= 4 * EPS * float(np.abs(row) @ np.abs(c))
    assert float((basis(np.array([a])) @ c)[0]) == 0.0
    # The same as a fit with the right-end constraint only (done by hand).
    u = methods.sample_points(a, b, 2000)
    B, y = basis(u), gelu_residual(u)
    kkt = np.block([[B.T @ B, row[:, None]], [row[None, :], np.zeros((1, 1))]])
    want = np.linalg.solve(kkt, np.r_[B.T @ y, fb])[:-1]
    np.testing.assert_allclose(c, want, rtol=1e-7, atol=1e-12)
    with pytest.raises(ValueError, match="vanishes"):
        methods.endpoint_ls(basis, lambda u: gelu_residual(u) + 1.0, a, b)


# ---------------------------------------------------------------- Remez


def test_remez_exp_matches_linear_programming_minimax():
    a, b = 0.0, 1.0
    basis = power_basis(a, b, 3)
    r = methods.remez(basis, np.exp, a, b)
    assert r.converged and r.equioscillation_ok
    assert r.extrema.size == 5  # m + 1 = 5 alternation points for 4 coefficients
    # the endpoints, up to the extremum search's last bits (np.linalg's, which depend on the
    # CPU: 0.9999999999999989 for b on an AVX2-only AMD EPYC)
    assert r.extrema[0] == pytest.approx(a, abs=1e-12) and r.extrema[-1] == pytest.approx(b)
    assert np.all(np.sign(r.extrema_errors[1:]) == -np.sign(r.extrema_errors[:-1]))
    u = np.linspace(a, b, 20001)
    c_lp, e_lp = lp_minimax(basis(u), np.exp(u))
    assert abs(r.error - e_lp) <= 1e-6 * e_lp
    assert abs(r.max_error - r.error) <= 1e-10 * r.error
    np.testing.assert_allclose(r.coeffs, c_lp, atol=1e-7)


def test_remez_relative_error_matches_linear_programming():
    a, b = -1.0, 2.0
    basis = power_basis(a, b, 4)
    r = methods.remez(basis, np.exp, a, b, weight=np.exp)
    assert r.converged and r.equioscillation_ok
    u = np.linspace(a, b, 20001)
    _, e_lp = lp_minimax(basis(u), np.exp(u), np.exp(u))
    assert abs(r.error - e_lp) <= 1e-6 * e_lp
    rel = np.abs(np.exp(u) - basis(u) @ r.coeffs) / np.exp(u)
    assert np.max(rel) <= r.max_error * (1 + 1e-12)


@pytest.mark.parametrize("degree", [2, 3])
def test_remez_abs_x(degree):
    """Best approximation of |x| on [-1, 1] of degree 2 and 3: x^2 + 1/8, error 1/8,
    alternating at -1, -1/2, 0, 1/2, 1 (a kink at 0)."""
    r = methods.remez(power_basis(-1.0, 1.0, degree, var="raw"), np.abs, -1.0, 1.0)
    assert r.converged and r.equioscillation_ok
    assert abs(r.error - 0.125) <= 1e-12 and abs(r.max_error - 0.125) <= 1e-12
    np.testing.assert_allclose(r.coeffs, [0.125, 0.0, 1.0, 0.0][: degree + 1], atol=1e-12)
    assert r.extrema.size == degree + 2


@pytest.mark.parametrize("n", [3, 4, 6])
@pytest.mark.parametrize("start", ["irls", "chebyshev"])
def test_remez_chebyshev_monic_extremal(n, start):
    """x^n on [-1, 1] by degree n-1: the error is T_n(x) / 2^(n-1), so the best approximation
    is x^n - T_n(x) / 2^(n-1), error 2^(1-n), alternating at the n+1 extrema of T_n."""
    r = methods.remez(
        power_basis(-1.0, 1.0, n - 1, var="raw"), lambda x: x**n, -1.0, 1.0, start=start
    )
    assert r.converged and r.equioscillation_ok
    assert abs(r.error - 2.0 ** (1 - n)) <= 1e-12
    tn = np.polynomial.chebyshev.cheb2poly([0] * n + [1])
    want = -tn[:n] / 2.0 ** (n - 1)
    np.testing.assert_allclose(r.coeffs, want, atol=1e-12)
    np.testing.assert_allclose(
        np.sort(r.extrema), np.sort(np.cos(np.pi * np.arange(n + 1) / n)), atol=1e-7
    )


def test_remez_u2_factor_at_zero_and_the_method_ordering():
    """GELU's residual with the kernels' basis u^2 t^k on [0, R]: the basis vanishes at 0 (not
    Haar there), so Remez works on [2^-30 R, R]; still equioscillating, and its max error
    (measured independently on a dense grid) is at most IRLS's, which is at most LS's."""
    a, b = 0.0, 4.0
    basis = power_basis(a, b, 6, factor=2)
    r = methods.remez(basis, gelu_residual, a, b)
    assert r.converged and r.equioscillation_ok and r.extrema.size == 8
    assert r.interval[0] == 2.0**-30 * b and r.interval[1] == b
    errs = [
        methods.max_error(basis, gelu_residual, a, b, c, points=100001, kind="uniform")
        for c in (
            r.coeffs,
            methods.irls(basis, gelu_residual, a, b),
            methods.least_squares(basis, gelu_residual, a, b),
        )
    ]
    assert errs[0] <= errs[1] <= errs[2], errs
    assert abs(errs[0] - r.error) <= 1e-6 * r.error
    with pytest.raises(ValueError, match="vanishes"):
        methods.remez(basis, lambda u: gelu_residual(u) + 1.0, a, b)


def test_remez_relative_weight_vanishing_with_the_basis():
    """A relative error weight that vanishes at 0 with the u^2 factor (f ~ u^2 / (2 sqrt(2 pi))):
    the weighted problem has a finite limit there and is solved on the moved interval."""
    a, b = 0.0, 3.0
    basis = power_basis(a, b, 5, factor=2)
    r = methods.remez(basis, gelu_residual, a, b, weight=lambda u: np.abs(gelu_residual(u)))
    assert r.converged and r.equioscillation_ok
    u = np.linspace(1e-3, b, 50001)
    rel = np.abs(gelu_residual(u) - basis(u) @ r.coeffs) / np.abs(gelu_residual(u))
    assert np.max(rel) <= r.max_error * (1 + 1e-9)
    # IRLS and max_error leave out u = 0, where basis, f and the weight all vanish.
    w = lambda u: np.abs(gelu_residual(u))  # noqa: E731
    c = methods.irls(basis, gelu_residual, a, b, weight=w)
    e_irls = methods.max_error(basis, gelu_residual, a, b, c, weight=w, points=100001)
    e_remez = methods.max_error(basis, gelu_residual, a, b, r.coeffs, weight=w, points=100001)
    assert e_remez <= e_irls <= 1.01 * e_remez


# ---------------------------------------------------------------- rounding


FORMAT_PARAMS = {  # precision, emin, emax
    "float32": (24, -126, 127),
    "float16": (11, -14, 15),
    "bfloat16": (8, -126, 127),
}


def exact_round(x: float, fmt: str) -> float:
    """Round-to-nearest-even of the exact value of x in fmt, in rational arithmetic."""
    if x == 0 or not math.isfinite(x):
        return x
    p, emin, emax = FORMAT_PARAMS[fmt]
    q = abs(Fraction(x))
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    step = Fraction(2) ** (max(e, emin) - p + 1)
    n = q / step
    k = n.numerator // n.denominator
    rem = n - k
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and k % 2 == 1):
        k += 1
    val = k * step
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    out = math.inf if val > top else float(val)
    return math.copysign(out, x)


def rounding_cases(fmt: str, rng: np.random.Generator) -> np.ndarray:
    p, emin, emax = FORMAT_PARAMS[fmt]
    exps = rng.integers(emin - p - 2, emax + 2, 400)
    vals = rng.uniform(1.0, 2.0, 400) * np.ldexp(1.0, exps) * rng.choice([-1.0, 1.0], 400)
    # Midpoints between neighbours of fmt, and float64 values just beside them: the ones a
    # double rounding (via float32 to nearest) gets wrong for bfloat16 / float16.
    reps = rounding.round_to_format(vals[np.abs(vals) < 2.0**emax], fmt)
    reps = reps[(reps != 0) & np.isfinite(reps)]
    ulp = np.ldexp(1.0, np.maximum(np.frexp(np.abs(reps))[1] - 1, emin) - (p - 1))
    mids = reps + np.sign(reps) * ulp / 2
    beside = np.concatenate(
        [np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), mids * (1 + 2.0**-30)]
    )
    return np.concatenate([vals, mids, beside, [0.0, -0.0, 1.0, -1.5, 2.0 ** (emax + 1)]])


@pytest.mark.parametrize("fmt", ["float32", "float16", "bfloat16"])
def test_round_to_format_is_the_exact_rational_rounding(fmt):
    x = rounding_cases(fmt, np.random.default_rng(7))
    got = rounding.round_to_format(x, fmt)
    want = np.array([exact_round(float(v), fmt) for v in x])
    bad = got != want
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5], strict=True))
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_round_to_format_float64_and_errors():
    x = np.array([0.1, -3.0, 1e-310])
    assert np.array_equal(rounding.round_to_format(x, "float64"), x)
    assert rounding.round_to_format(1.0 + 2.0**-8 + 2.0**-30, "bfloat16") == 1.0 + 2.0**-7
    assert rounding.round_to_format(1.0 + 2.0**-8, "bfloat16") == 1.0  # tie to even
    with pytest.raises(ValueError):
        rounding.round_to_format(x, "float8")


@pytest.mark.parametrize("fmt", rounding.ROUNDING_FORMATS)
def test_neighbours(fmt):
    p = {"float64": 53, **{k: v[0] for k, v in FORMAT_PARAMS.items()}}[fmt]
    nb = methods.neighbours(1.0, fmt, 3)
    assert nb.size == 7 and nb[3] == 1.0
    np.testing.assert_array_equal(np.diff(nb[3:]), 2.0 ** (1 - p))  # above 1: one ulp
    np.testing.assert_array_equal(np.diff(nb[:4]), 2.0**-p)  # below 1: half an ulp
    assert np.all(rounding.round_to_format(nb, fmt) == nb)
    if fmt == "float64":
        v = -3.7e-300
        want = [np.nextafter(np.nextafter(v, -1.0), -1.0), np.nextafter(v, -1.0), v]
        want += [np.nextafter(v, 1.0), np.nextafter(np.nextafter(v, 1.0), 1.0)]
        assert np.array_equal(methods.neighbours(v, fmt, 2), want)
    z = methods.neighbours(0.0, fmt, 2)
    assert z.size == 5 and z[2] == 0.0 and z[1] == -z[3] and z[3] > 0
    assert not np.signbit(z[2])
    assert np.array_equal(methods.neighbours(-0.0, fmt, 2), z)
    # Not representable: centred on the rounded value.
    v = 1.0 + 2.0 ** (-p - 2)
    assert np.array_equal(methods.neighbours(v, fmt, 1), methods.neighbours(1.0, fmt, 1))
    if fmt != "float64":
        top = float(np.ldexp(2.0 - 2.0 ** (1 - p), FORMAT_PARAMS[fmt][2]))
        assert np.array_equal(methods.neighbours(top, fmt, 2)[-1:], [top])  # no infinity
        assert methods.neighbours(top, fmt, 2).size == 3


# ---------------------------------------------------------------- rounded-coefficient search


def test_search_rounded_bfloat16_beats_plain_rounding():
    a, b = 0.0, 4.0
    basis = power_basis(a, b, 4, factor=2)
    c = methods.remez(basis, gelu_residual, a, b).coeffs
    res = methods.search_rounded(basis, gelu_residual, a, b, c, "bfloat16")
    coeffs, err = res  # unpacks as (coeffs, max_error)
    plain = rounding.round_to_format(c, "bfloat16")
    plain_err = methods.max_error(basis, gelu_residual, a, b, plain, points=4001)
    assert res.initial_error == plain_err
    assert err < 0.75 * plain_err  # rounding hurts: the search wins a lot back
    assert np.array_equal(rounding.round_to_format(coeffs, "bfloat16"), coeffs)
    assert err == methods.max_error(basis, gelu_residual, a, b, coeffs, points=4001)
    assert res.evaluations > 1 and 0 < res.rounds <= len(res.moves)
    again = methods.search_rounded(basis, gelu_residual, a, b, c, "bfloat16")
    assert np.array_equal(again.coeffs, coeffs) and again.evaluations == res.evaluations


@pytest.mark.parametrize("fmt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("degree", [2, 3])
def test_search_rounded_never_worse(fmt, degree):
    a, b = 0.0, 1.0
    basis = power_basis(a, b, degree)
    c = methods.least_squares(basis, np.exp, a, b)
    res = methods.search_rounded(basis, np.exp, a, b, c, fmt, radius=2, pairs=False)
    assert res.max_error <= res.initial_error
    assert res.initial_error == methods.max_error(
        basis, np.exp, a, b, rounding.round_to_format(c, fmt), points=4001
    )


def test_search_rounded_with_a_user_error():
    """A custom error (here: the float32 evaluation of the polynomial, Horner in float32 on a
    grid) replaces the grid; basis and f may then be None. Evaluations are counted."""
    a, b = 0.0, 1.0
    basis = power_basis(a, b, 3)
    u32 = np.linspace(a, b, 513, dtype=np.float32)
    t32 = (2 * u32 - np.float32(1)).astype(np.float32)
    want = np.exp(u32.astype(F64))
    calls = []

    def err32(c):
        calls.append(c.copy())
        acc = np.full_like(t32, np.float32(c[-1]))
        for ck in c[-2::-1]:
            acc = (acc * t32 + np.float32(ck)).astype(np.float32)
        return float(np.max(np.abs(acc.astype(F64) - want)))

    c = methods.remez(basis, np.exp, a, b).coeffs
    res = methods.search_rounded(None, None, a, b, c, "bfloat16", radius=1, error=err32)
    assert res.evaluations == len(calls)
    assert res.max_error <= res.initial_error == err32(rounding.round_to_format(c, "bfloat16"))
    assert res.max_error == err32(res.coeffs)
    with pytest.raises(ValueError):
        methods.search_rounded(None, None, a, b, c, "bfloat16")


# ---------------------------------------------------------------- Sollya control


def test_sollya_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert not methods.sollya_available()
    with pytest.raises(RuntimeError, match="sollya is not installed"):
        methods.sollya_fpminimax("exp(x)", [0, 1, 2], "float32", (0.0, 1.0))


def test_sollya_version_from_its_banner(tmp_path):
    """The version from Sollya's banner, None where there is no program or no version."""
    fake = tmp_path / "sollya"
    fake.write_text("#!/bin/sh\necho 'This is sollya 8.0 connected to a regular file.'\n")
    fake.chmod(0o755)
    assert methods.sollya_version(str(fake)) == "8.0"
    fake.write_text("#!/bin/sh\necho 'something else'\n")
    assert methods.sollya_version(str(fake)) is None
    assert methods.sollya_version(str(tmp_path / "absent")) is None
    if methods.sollya_available():  # the installed one says its version
        assert re.fullmatch(r"[0-9][\w.]*", methods.sollya_version())


@pytest.mark.skipif(not methods.sollya_available(), reason="the sollya program is not installed")
def test_sollya_fpminimax_control():
    """A loose cross-check only: Sollya's float32 fpminimax error is near (and, as its
    coefficients are constrained, not below) the float64 minimax error of ``remez``."""
    res = methods.sollya_fpminimax("exp(x)", [0, 1, 2, 3], "float32", (0.0, 1.0))
    assert np.array_equal(rounding.round_to_format(res.coeffs, "float32"), res.coeffs)
    assert [float(q) for q in res.exact] == list(res.coeffs)
    r = methods.remez(power_basis(0.0, 1.0, 3, var="raw"), np.exp, 0.0, 1.0)
    assert r.error * (1 - 1e-6) <= res.error <= 1.01 * r.error
    mixed = methods.sollya_fpminimax(
        "exp(x)",
        [0, 1, 2, 3],
        ["bfloat16", "float16", "float32", "float64"],
        (0.0, 1.0),
        error="relative",
    )
    for v, fmt in zip(mixed.coeffs, ["bfloat16", "float16", "float32", "float64"], strict=True):
        assert rounding.round_to_format(v, fmt) == v
    for bad in ("exp(x", "exp(y)", "foo(x)"):  # Sollya would silently solve another problem
        with pytest.raises(RuntimeError, match="sollya reported a problem"):
            methods.sollya_fpminimax(bad, [0, 1], "float32", (0.0, 1.0))
