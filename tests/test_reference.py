"""The float64 GELU / GELU' references against mpmath, and their special values."""

from __future__ import annotations

import numpy as np
import pytest

from turbogelu.approx import reference

MODES = reference.GELU_MODES


def _points() -> np.ndarray:
    rng = np.random.default_rng(0)
    tiny = np.logspace(-300, -1, 60)
    return np.unique(
        np.concatenate(
            [
                np.linspace(-30.0, 30.0, 241),
                rng.uniform(-8.0, 8.0, 100),
                np.linspace(-30.0, -5.0, 51),  # the negative tail: tiny results
                tiny,
                -tiny,
                [5e-324, -5e-324, 2.0**-1022, -(2.0**-1022), 1e-8, -1e-8],
            ]
        )
    )


POINTS = _points()


# Relative bound 1e-13, growing as x^2 * 2^-52 in the far negative tail: scipy's erfc forms
# exp(-t^2) from a rounded t^2, which alone costs about t^2 * 2^-52 relative (1.0e-13 at
# x = -30; the argument t = -x/sqrt(2) itself is compensated in reference.py). The reference
# only has to resolve errors of 1e-9 relative and rounding midpoints (rounding.py's guard is
# 1e-12), so this is ample.
def _tolerance(x: np.ndarray) -> np.ndarray:
    return np.maximum(1e-13, 2.0 * x * x * 2.0**-52)


def _check_close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    err = np.abs(got - want)
    ok = (err <= _tolerance(POINTS) * np.abs(want)) | (err <= 1e-300)
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = bad[np.argmax(err[bad] / np.maximum(np.abs(want[bad]), 1e-300))]
        raise AssertionError(
            f"{what}: {bad.size} of {want.size} points off by more than the relative bound; worst "
            f"at x = {POINTS[i]!r}: float64 {got[i]!r} vs mpmath {want[i]!r}"
        )


@pytest.mark.parametrize("mode", MODES)
def test_gelu_matches_mpmath(mode):
    assert POINTS.size >= 300
    want = reference.gelu_mp_array(POINTS, mode)
    _check_close(reference.gelu(POINTS, mode), want, f"gelu({mode})")


@pytest.mark.parametrize("mode", MODES)
def test_gelu_grad_matches_mpmath(mode):
    want = reference.gelu_mp_array(POINTS, mode, grad=True)
    _check_close(reference.gelu_grad(POINTS, mode), want, f"gelu_grad({mode})")


def test_mpmath_oracle_is_converged():
    # 40 digits (the default) and 80 digits give the same float64 values.
    x = POINTS[::7]
    for mode in MODES:
        for grad in (False, True):
            a = reference.gelu_mp_array(x, mode, grad=grad)
            b = reference.gelu_mp_array(x, mode, grad=grad, dps=80)
            np.testing.assert_array_equal(a, b)


def _same(got, want) -> bool:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return bool(
        np.all(
            (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.isnan(got) == np.isnan(want)))
        )
    )


@pytest.mark.parametrize("mode", MODES)
def test_gelu_special_values(mode):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    with np.errstate(all="ignore"):
        got = reference.gelu(x, mode)
    # gelu(inf) = inf, gelu(-inf) = 0 (from below: -0.0 or 0 both accepted), nan -> nan,
    # gelu(+-0) = +-0 with the sign kept.
    assert got[0] == np.inf, f"gelu(inf) = {got[0]}"
    assert got[1] == 0.0, f"gelu(-inf) = {got[1]} (mode {mode!r}), want 0 or -0.0"
    assert np.isnan(got[2]), f"gelu(nan) = {got[2]}"
    assert got[3] == 0.0 and not np.signbit(got[3]), f"gelu(0.0) = {got[3]}"
    assert got[4] == 0.0 and np.signbit(got[4]), f"gelu(-0.0) = {got[4]}"


@pytest.mark.parametrize("mode", MODES)
def test_gelu_grad_special_values(mode):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    with np.errstate(all="ignore"):
        got = reference.gelu_grad(x, mode)
    assert _same(got, [1.0, 0.0, np.nan, 0.5, 0.5]), f"gelu_grad({x}) = {got}"


@pytest.mark.parametrize("mode", MODES)
def test_huge_finite_inputs(mode):
    # No overflow to NaN for the largest float32 / bfloat16 magnitudes (x^3 is still finite).
    x = np.array([3.4e38, -3.4e38, 1e30, -1e30, 65504.0, -65504.0])
    with np.errstate(all="ignore"):
        g = reference.gelu(x, mode)
        d = reference.gelu_grad(x, mode)
    np.testing.assert_array_equal(g, np.where(x > 0, x, 0.0))
    np.testing.assert_array_equal(d, np.where(x > 0, 1.0, 0.0))


def test_bad_mode():
    with pytest.raises(ValueError, match="gelu mode"):
        reference.gelu(1.0, "sigmoid")


def test_gelu_grad_keeps_relative_accuracy_at_its_root():
    # GELU'(x) = Phi(x) + x phi(x) vanishes at x0 = -0.7518: the plain sum loses about
    # 5e-17 / |x - x0| relative there (1e-1 at the float64 neighbours of x0), so reference.py
    # switches to the Taylor series around x0 within 1/4 of it. Offsets from one float64 ulp to
    # beyond the switch, both sides; 2e-15 as for the other family members (test_family.py).
    root = reference._GELU_ROOT_HI
    offsets = np.concatenate([np.arange(1, 4) * 2.0**-53, np.logspace(-15, -0.3, 15)])
    x = np.concatenate([root + offsets, root - offsets, [root]])
    got = reference.gelu_grad(x)
    want = reference.gelu_mp_array(x, grad=True, dps=60)
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=0)
    assert np.all(np.sign(want[: offsets.size]) == 1) and np.all(
        np.sign(want[offsets.size : -1]) == -1
    )
