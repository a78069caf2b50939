"""The target table: every reduction rebuilds its function, the parities hold, the residuals and
tails are accurate (no cancellation), and the tail error behaves as a clamp needs."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from turbogelu.approx import reference, rounding, spec, targets

EPS = 2.0**-52
NAMES = tuple(targets.TARGETS)
ACTIVATIONS = tuple(n for n in NAMES if targets.TARGETS[n].asymptote_kind is not None)


def _linear_part(t: targets.Target, x: np.ndarray) -> np.ndarray:
    """|simple part| of the reduction: |x|/2, 1/2 or 0 (the scale of the reconstruction's sum)."""
    return {"x/2 + even": 0.5 * np.abs(x), "1/2 + odd": 0.5 + 0 * x}.get(t.reduction, 0 * x)


def _xs(t: targets.Target) -> np.ndarray:
    if t.domain == (0.0, 1.0):
        return np.linspace(0.0, 1.0, 101)
    small = np.logspace(-8, 0, 25)
    return np.concatenate([np.linspace(-30.0, 30.0, 241), small, -small, [0.0, -0.0]])


def test_table():
    assert set(NAMES) == {
        "gelu",
        "gelu_tanh",
        "gelu_grad",
        "gelu_tanh_grad",
        "silu",
        "silu_grad",
        "sigmoid",
        "sigmoid_grad",
        "tanh",
        "tanh_grad",
        "softplus",
        "softplus_grad",
        "exp2_frac",
    }
    for name, t in targets.TARGETS.items():
        assert t.name == name and t.reduction in targets.REDUCTIONS
        # The natural factor's parity is the residual's parity (u^k g(u^2)).
        if t.residual_parity != "none":
            assert t.residual_parity == ("even" if t.natural_factor % 2 == 0 else "odd"), name
        if name in rounding.FUNCTIONS:  # one source of truth for the functions
            assert (t.f, t.f_mp) == rounding.FUNCTIONS[name]
    assert targets.TARGETS["exp2_frac"].domain == (0.0, 1.0)
    with pytest.raises(ValueError, match="target must be one of"):
        targets.get("relu")


@pytest.mark.parametrize("name", NAMES)
def test_reconstruct_gives_the_function(name):
    # Against mpmath: the error of reconstruct(x, residual(|x|)) is a few ulps of the summands
    # |simple part| + |r| (where they cancel, x < 0, that is not relative to f: the same holds
    # for any kernel of this form). Against the float64 reference as well, which itself is
    # within ~50 ulps (gelu_tanh_grad's 1 - s near x = 7).
    t = targets.TARGETS[name]
    x = _xs(t)
    r = t.residual(np.abs(x))
    got = t.reconstruct(x, r)
    scale = _linear_part(t, x) + np.abs(r)
    exact = reference.mp_array(t.f_mp, x)
    assert np.all(np.abs(got - exact) <= 4 * EPS * scale + 1e-300)
    assert np.all(np.abs(got - t.f(x)) <= 64 * EPS * scale + 1e-300)
    # Where nothing cancels the reconstruction is accurate relative to f itself.
    pos = x > 0
    np.testing.assert_allclose(got[pos], exact[pos], rtol=4 * EPS, atol=1e-300)
    # -0.0 goes where f sends it.
    zero = np.array([-0.0])
    assert np.signbit(t.reconstruct(zero, t.residual(np.abs(zero)))) == np.signbit(t.f(zero))


@pytest.mark.parametrize("name", NAMES)
def test_residual_has_no_cancellation(name):
    # r(u) = f(u) - simple part, computed in mpmath at 60 digits: the float64 closed forms are
    # within 4 ulps relative, from u = 1e-6 (r ~ u or u^2) to the far tail.
    t = targets.TARGETS[name]
    if t.domain == (0.0, 1.0):
        u = np.linspace(0.001, 1.0, 40)
    else:
        u = np.concatenate([np.logspace(-6, 0, 25), np.linspace(0.5, 30.0, 60)])
    lin = {"x/2 + even": lambda v: v / 2, "1/2 + odd": lambda v: mpmath.mpf(1) / 2}

    def exact(v):
        with mpmath.workdps(60):
            return float(t.f_mp(v, 60) - lin.get(t.reduction, lambda v: 0)(mpmath.mpf(v)))

    want = np.array([exact(float(v)) for v in u])
    np.testing.assert_allclose(t.residual(u), want, rtol=4 * EPS, atol=1e-300)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_residual_parity(name):
    # The closed forms are valid for negative u; their parity is the one declared, which is
    # what makes the u^k P(u^2) form smooth through u = 0.
    t = targets.TARGETS[name]
    u = np.linspace(0.0, 8.0, 161)
    sign = {"even": 1.0, "odd": -1.0}[t.residual_parity]
    np.testing.assert_allclose(t.residual(-u), sign * t.residual(u), rtol=EPS, atol=0)
    # r(u) / u^k tends to a nonzero limit at 0.
    k = t.natural_factor
    small = t.residual(np.array([1e-6, 2e-6])) / np.array([1e-6, 2e-6]) ** k
    assert small[0] != 0 and abs(small[0] / small[1] - 1) < 1e-9


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_function_symmetry(name):
    # The reduction as an identity of the function itself (float64 references).
    t = targets.TARGETS[name]
    x = np.linspace(0.0, 30.0, 301)
    f, g = t.f(x), t.f(-x)
    size = np.abs(f) + np.abs(g) + np.abs(x)
    lhs, rhs = {
        "x/2 + even": (f - g, x),  # f(x) - f(-x) = x
        "1/2 + odd": (f + g, 1 + 0 * x),  # f(x) + f(-x) = 1
        "odd": (f + g, 0 * x),
        "even": (f - g, 0 * x),
    }[t.reduction]
    assert np.all(np.abs(lhs - rhs) <= 64 * EPS * size)


def test_silu_grad_sums_to_one():
    # s'(x) + s'(-x) = 1, the "1/2 + odd" reduction of SiLU' (both from reference.silu_grad).
    x = np.concatenate([np.linspace(0.0, 40.0, 401), [reference._SILU_ROOT_HI, 1.2784645]])
    np.testing.assert_allclose(reference.silu_grad(x) + reference.silu_grad(-x), 1.0, atol=4 * EPS)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_tail_is_f_minus_asymptote(name):
    # tail(|x|) (signed for the odd reductions) = f(x) - asymptote(x), against mpmath at 120
    # digits (the difference cancels there, not in the closed form). Relative 1e-12 from
    # |x| = 2 (gelu's erfc argument costs ~u^2 ulps); 1e-15 absolute below, where some tails
    # cross zero (gelu_grad's at 0.75).
    t = targets.TARGETS[name]
    x = np.concatenate([np.linspace(0.25, 12.0, 48), -np.linspace(0.25, 12.0, 48)])
    sign = np.where((t.residual_parity == "odd") & (x < 0), -1.0, 1.0)
    got = sign * t.tail(np.abs(x))

    def exact(v):
        with mpmath.workdps(120):
            return float(t.f_mp(v, 120) - float(t.asymptote(np.float64(v))))

    want = np.array([exact(float(v)) for v in x])
    far = np.abs(x) >= 2
    np.testing.assert_allclose(got[far], want[far], rtol=1e-12, atol=0)
    np.testing.assert_allclose(got[~far], want[~far], rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_asymptote_and_tail_error(name):
    t = targets.TARGETS[name]
    big = np.array([800.0, 1e4, np.inf])
    for x in (big, -big):
        np.testing.assert_array_equal(t.asymptote(x), t.f(x))
        # The sign of a zero at +-inf too (finite x may give -0.0 where f is a tiny negative
        # number, as silu' for x << 0, whose limit the references take as +0.0).
        assert np.signbit(t.asymptote(x[-1:])) == np.signbit(t.f(x[-1:]))
    errs = [t.tail_error(L) for L in (3.0, 4.0, 5.0, 6.0, 8.0)]
    assert all(e > 0 for e in errs) and all(a > b for a, b in zip(errs, errs[1:], strict=False))
    assert t.tail_error(0.0) >= t.tail_error(3.0)
    # It bounds |f - asymptote| on samples of |x| >= L (float64 f: no cancellation that
    # matters at these sizes), and is attained (to the grid) near L for L past the humps.
    rng = np.random.default_rng(2)
    for L in (1.0, 4.0):
        x = L + rng.exponential(2.0, 2000)
        x = np.concatenate([x, -x, [L, -L]])
        seen = np.abs(t.f(x) - t.asymptote(x)).max()
        assert seen <= t.tail_error(L) * (1 + 1e-9) + 1e-15
    assert t.tail_error(4.0) == pytest.approx(abs(float(t.tail(np.float64(4.0)))), rel=1e-12)
    with pytest.raises(ValueError):
        t.tail_error(-1.0)


def test_known_tail_values():
    # gelu's clamp at the shipped R costs 2.5e-5 (data/specs/gelu_exact.json's error
    # at x = -R), and the largest |gelu(x) - relu(x)| is 0.1700 (at |x| = 0.7518).
    g = targets.TARGETS["gelu"]
    assert g.tail_error(spec.DEFAULTS["exact"].range) == pytest.approx(2.4998e-5, rel=1e-3)
    x0 = 0.7517915246935645  # where d/du (u Phi(-u)) = 0
    assert g.tail_error(0.0) == pytest.approx(x0 * 0.5 * math.erfc(x0 / math.sqrt(2)), rel=1e-9)
    assert targets.TARGETS["tanh"].tail_error(0.0) == 1.0  # at x = 0: |0 - sign|


def test_exp2_frac_has_no_clamp():
    t = targets.TARGETS["exp2_frac"]
    f = np.linspace(0.0, 1.0, 11)
    np.testing.assert_array_equal(t.reconstruct(f, t.residual(f)), np.exp2(f))
    assert t.residual_parity == "none"
    assert float(t.f_mp(0.5, 40)) == math.sqrt(2.0)
    with pytest.raises(ValueError, match="no clamp"):
        t.asymptote(f)
    with pytest.raises(ValueError, match="no clamp"):
        t.tail_error(1.0)
