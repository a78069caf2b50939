"""SiLU, sigmoid, tanh, softplus and their derivatives: float64 references against mpmath, special
values, and correctly rounded values through ``rounding.FUNCTIONS``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from turbogelu.approx import reference, rounding

NAMES = ("silu", "silu_grad", "sigmoid", "sigmoid_grad", "tanh", "tanh_grad", "softplus")
F64 = {n: getattr(reference, n) for n in NAMES}
MP = {n: getattr(reference, n + "_mp") for n in NAMES}
ROOT = reference._SILU_ROOT_HI  # silu'(x) = 0: where relative accuracy is hardest


def _points() -> np.ndarray:
    rng = np.random.default_rng(0)
    tiny = np.logspace(-300, -1, 40)
    near_root = ROOT + np.concatenate([np.arange(-4, 5) * 2.0**-52, np.logspace(-15, -1, 15)])
    return np.unique(
        np.concatenate(
            [
                np.linspace(-40.0, 40.0, 161),
                rng.uniform(-8.0, 8.0, 100),
                tiny,
                -tiny,
                near_root,
                2 * ROOT - near_root,
                [-745.0, -700.0, -300.0, 300.0, 700.0, 750.0, -2.5, -0.64, 5e-324, -5e-324],
            ]
        )
    )


POINTS = _points()

# Relative bound 2e-15 (9 float64 ulps). Each float64 form is a few correctly rounded
# operations on faithful expit / tanh / expm1 values with no cancellation (reference.py), so
# the worst case is about 6 ulps and the measured worst is under 2. Results below 1e-290 are
# subnormal or nearly so and are compared absolutely (1e-300).
REL = 2e-15


@pytest.mark.parametrize("name", NAMES)
def test_float64_matches_mpmath(name):
    assert POINTS.size >= 300
    got = F64[name](POINTS)
    want = reference.mp_array(MP[name], POINTS)
    err = np.abs(got - want)
    ok = (err <= REL * np.abs(want)) | (err <= 1e-300)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (
        f"{name}: {bad.size} points beyond {REL} relative, e.g. x = {POINTS[bad[0]]!r}: "
        f"{got[bad[0]]!r} vs {want[bad[0]]!r}"
    )


def test_silu_grad_keeps_relative_accuracy_at_its_root():
    # The float64 neighbours of the root: values ~1e-17, still within REL of mpmath (with the
    # 1 + x s(-x) form they would be off by 100 %), and the sign changes at the root.
    x = ROOT + np.arange(-3, 4) * 2.0**-52 * abs(ROOT)
    got = reference.silu_grad(x)
    want = reference.mp_array(reference.silu_grad_mp, x, dps=60)
    np.testing.assert_allclose(got, want, rtol=REL, atol=0)
    assert np.all(np.abs(want) < 1e-15)
    assert np.all(np.diff(np.sign(want)) >= 0)


def test_mpmath_oracle_is_converged():
    x = POINTS[::5]
    for name in NAMES:
        a = reference.mp_array(MP[name], x, dps=40)
        b = reference.mp_array(MP[name], x, dps=80)
        np.testing.assert_array_equal(a, b, err_msg=name)


SPECIALS = {
    # name: f(+inf), f(-inf), f(+0), f(-0)
    "silu": (math.inf, -0.0, 0.0, -0.0),
    "silu_grad": (1.0, 0.0, 0.5, 0.5),
    "sigmoid": (1.0, 0.0, 0.5, 0.5),
    "sigmoid_grad": (0.0, 0.0, 0.25, 0.25),
    "tanh": (1.0, -1.0, 0.0, -0.0),
    "tanh_grad": (0.0, 0.0, 1.0, 1.0),
    "softplus": (math.inf, 0.0, math.log(2.0), math.log(2.0)),
}


@pytest.mark.parametrize("name", NAMES)
def test_special_values(name):
    x = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan])
    got = F64[name](x)
    want = np.array([*SPECIALS[name], np.nan])
    assert np.isnan(got[4])
    np.testing.assert_array_equal(got[:4], want[:4])
    np.testing.assert_array_equal(np.signbit(got[:4]), np.signbit(want[:4]))
    assert got.dtype == np.float64 and got.shape == x.shape
    # Scalars and lists are accepted, and the exact values at 0 come out exactly.
    assert float(F64[name](0.0)) == SPECIALS[name][2]
    assert F64[name]([1.0, 2.0]).shape == (2,)


def test_registered_for_correct_rounding():
    for name in NAMES:
        assert rounding.FUNCTIONS[name] == (F64[name], MP[name])


def _exact_rounded(name: str, x: np.ndarray, fmt: str) -> np.ndarray:
    """The slow yardstick: mpmath at 60 digits, rounded once by exact rational arithmetic."""
    return np.array([rounding.round_exact(MP[name](float(v), 60), fmt) for v in x])


@pytest.mark.parametrize("fmt", ["float32", "bfloat16", "float16"])
def test_correctly_rounded_spot_checks(fmt):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-12.0, 12.0, 40), [ROOT, -30.0, 30.0, 1e-5, -1e-5]])
    for name in NAMES:
        got = rounding.correctly_rounded(x, fmt, name)
        np.testing.assert_array_equal(got, _exact_rounded(name, x, fmt), err_msg=name)


@pytest.mark.parametrize(
    ("name", "inverse"),
    [("sigmoid", lambda m: math.log(m / (1 - m))), ("tanh", math.atanh)],
)
def test_correctly_rounded_near_midpoints(name, inverse):
    # x = f^-1(a bfloat16 midpoint): f(x) is within ~1e-16 of the midpoint, so the float64
    # value cannot decide and mpmath must.
    # bfloat16 has 8 significant bits: spacing 2^-8 on [1/2, 1), 2^-9 on [1/4, 1/2).
    mids = [0.5 + 0.5 * 2.0**-8, 0.5 + 37.5 * 2.0**-8, 0.25 + 11.5 * 2.0**-9, 0.75 + 20.5 * 2.0**-8]
    x = np.array([inverse(m) for m in mids])
    got, stats = rounding.correctly_rounded(x, "bfloat16", name, return_stats=True)
    assert stats["mpmath"] == len(x) and stats["ties"] == 0
    np.testing.assert_array_equal(got, _exact_rounded(name, x, "bfloat16"))
