"""Ground truth for GELU, SiLU, sigmoid, tanh, softplus and their derivatives, in float64
(vectorized) and in mpmath.

Two forms of GELU are supported, named as in ``torch.nn.functional.gelu``:

* ``"none"`` (exact): ``gelu(x) = x * Phi(x)``, ``Phi`` the standard normal CDF;
* ``"tanh"``: ``gelu(x) = x/2 * (1 + tanh(k * (x + 0.044715 x^3)))``, ``k = sqrt(2/pi)``.

The float64 versions avoid the cancellation of ``1 + erf`` / ``1 + tanh`` for negative x
(``erfc`` and the logistic function instead), so their relative error stays near float64
rounding over the whole line; ``tests/test_reference.py`` checks them against mpmath.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import numpy as np
from scipy.special import erfc, expit

from .._spec_names import MODES as GELU_MODES

TANH_K = math.sqrt(2.0 / math.pi)
TANH_C = 0.044715
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)


def check_mode(mode: str) -> str:
    if mode not in GELU_MODES:
        raise ValueError(f"gelu mode must be one of {GELU_MODES}, got {mode!r}")
    return mode


# 1/sqrt(2) as a float64 pair (hi + lo), for the compensated argument of erfc below.
_INV_SQRT2_LO = float(mpmath.mpf(1) / mpmath.sqrt(2) - mpmath.mpf(_INV_SQRT2))


def _erfc_of_minus_x_over_sqrt2(x: np.ndarray) -> np.ndarray:
    """erfc(-x/sqrt(2)) without the error of rounding the argument.

    Rounding t = -x/sqrt(2) to float64 costs a relative error of about 2 t^2 eps in erfc
    (1e-13 at x = -30). t is split into hi + lo exactly (Dekker's product) and erfc(hi + lo)
    is taken as erfc(hi) - lo * 2/sqrt(pi) * exp(-hi^2), first order in the tiny lo.
    """
    hi = -x * _INV_SQRT2
    # Dekker/Veltkamp exact product error of x * _INV_SQRT2 (no fma in numpy).
    split = 134217729.0  # 2^27 + 1
    with np.errstate(over="ignore", invalid="ignore"):
        xa = x * split
        xh = xa - (xa - x)
        xl = x - xh
        ca = _INV_SQRT2 * split
        ch = ca - (ca - _INV_SQRT2)
        cl = _INV_SQRT2 - ch
        err = ((xh * ch - x * _INV_SQRT2) + xh * cl + xl * ch) + xl * cl
        lo = -(err + x * _INV_SQRT2_LO)
        corr = lo * (2.0 / math.sqrt(math.pi)) * np.exp(-hi * hi)
        out = erfc(hi) - np.where(np.isfinite(corr), corr, 0.0)
    return out


def gelu(x, mode: str = "none") -> np.ndarray:
    """GELU in float64."""
    x = np.asarray(x, dtype=np.float64)
    if check_mode(mode) == "none":
        with np.errstate(invalid="ignore"):
            out = 0.5 * x * _erfc_of_minus_x_over_sqrt2(x)
        return np.where(np.isinf(x), np.where(x > 0, x, -0.0), out)
    # 1 + tanh(u) = 2 * logistic(2u): no cancellation for u << 0.
    u = TANH_K * (x + TANH_C * x**3)
    with np.errstate(over="ignore", invalid="ignore"):
        out = x * expit(2.0 * u)
    return np.where(np.isinf(x), np.where(x > 0, x, -0.0), out)


# GELU'(x) = Phi(x) + x phi(x) has a root at x0 = -0.75179..., where the two terms cancel:
# the plain sum's relative error is about 5e-17 / |x - x0|. Near x0 it is evaluated as its
# Taylor series in h = x - x0 (h exact by Sterbenz with x0 a float64 pair), whose
# coefficients follow from GELU'' = phi - phi'' and phi^(n) = (-1)^n He_n phi:
#   c_k = (-1)^(k-1) phi(x0) (He_{k-1}(x0) - He_{k+1}(x0)) / k!.
# With |h| <= 1/4 and 20 terms the truncation is below 1e-21 relative (c_20 h^20 / c_1 h).
_GELU_ROOT_RADIUS = 0.25
with mpmath.workdps(50):
    _GELU_ROOT = mpmath.findroot(lambda t: mpmath.ncdf(t) + t * mpmath.npdf(t), -0.75)
    _GELU_ROOT_HI = float(_GELU_ROOT)
    _GELU_ROOT_LO = float(_GELU_ROOT - _GELU_ROOT_HI)
    _he = [mpmath.mpf(1), _GELU_ROOT]
    for _n in range(1, 21):
        _he.append(_GELU_ROOT * _he[_n] - _n * _he[_n - 1])
    _GELU_ROOT_TAYLOR = [  # c_20 ... c_1, for Horner
        float(
            (-1) ** (k - 1)
            * mpmath.npdf(_GELU_ROOT)
            * (_he[k - 1] - _he[k + 1])
            / mpmath.factorial(k)
        )
        for k in range(20, 0, -1)
    ]
    del _he, _n


def _gelu_grad_near_root(x: np.ndarray) -> np.ndarray:
    h = (x - _GELU_ROOT_HI) - _GELU_ROOT_LO
    acc = np.zeros_like(h)
    for c in _GELU_ROOT_TAYLOR:
        acc = acc * h + c
    return acc * h


def gelu_grad(x, mode: str = "none") -> np.ndarray:
    """d/dx GELU in float64 (exact form: written around its root near -0.7518, see above)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if check_mode(mode) == "none":
            out = 0.5 * _erfc_of_minus_x_over_sqrt2(x) + x * np.exp(-0.5 * x * x) * _INV_SQRT2PI
            near = np.abs(x - _GELU_ROOT_HI) <= _GELU_ROOT_RADIUS
            out = np.where(near, _gelu_grad_near_root(x), out)
        else:
            u = TANH_K * (x + TANH_C * x**3)
            s = expit(2.0 * u)
            du = TANH_K * (1.0 + 3.0 * TANH_C * x * x)
            out = s + 2.0 * x * s * (1.0 - s) * du
    return np.where(np.isinf(x), np.where(x > 0, 1.0, 0.0), out)


def gelu_mp(x, mode: str = "none", dps: int = 40):
    """GELU of one value in mpmath at ``dps`` decimal digits (returns an mpf)."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        if check_mode(mode) == "none":
            return x * mpmath.ncdf(x)
        u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
        return x / (1 + mpmath.exp(-2 * u))


def gelu_grad_mp(x, mode: str = "none", dps: int = 40):
    """d/dx GELU of one value in mpmath (returns an mpf)."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        if check_mode(mode) == "none":
            return mpmath.ncdf(x) + x * mpmath.npdf(x)
        k = mpmath.sqrt(2 / mpmath.pi)
        c = mpmath.mpf("0.044715")
        s = 1 / (1 + mpmath.exp(-2 * k * (x + c * x**3)))
        return s + 2 * x * s * (1 - s) * k * (1 + 3 * c * x * x)


def gelu_mp_array(xs, mode: str = "none", grad: bool = False, dps: int = 40) -> np.ndarray:
    """mpmath oracle over an array, rounded to float64 (ample for errors of 1e-5)."""
    f = gelu_grad_mp if grad else gelu_mp
    flat = np.asarray(xs, dtype=np.float64).ravel()
    return np.array([float(f(v, mode, dps)) for v in flat]).reshape(np.shape(xs))


# ---------------------------------------------------------------- SiLU, sigmoid, tanh
#
# sigmoid s(x) = 1 / (1 + e^-x) = expit(x);  silu(x) = x s(x);  tanh.
# Derivatives, in forms without cancellation:
#   s'(x)    = s(x) s(-x)                        (never 1 - s, which cancels for x >> 0)
#   tanh'(x) = sech^2(x) = 4 s(2x) s(-2x)        (never 1 - tanh^2)
#   silu'(x) = s(x) (1 + x s(-x)) = s(x) s(-x) (1 + x + e^x).
# The bracket vanishes at x0 = -1.27846... (silu's minimum) and cancels near it, so on
# [-2.5, -0.64] it is written around the root: with h = x - x0 and e^x0 = -(1 + x0),
#   1 + x + e^x = h + e^x0 (e^h - 1) = h + e^x0 expm1(h),
# two terms of the same sign (h is exact there by Sterbenz, x0 a float64 pair). Elsewhere
# 1 + x s(-x) loses at most a factor ~2 to cancellation.
# Each result is a handful of correctly rounded or faithful operations: relative error a few
# 1e-16 (tests/test_family.py holds 2e-15 against mpmath); +-inf and +-0 are exact.

with mpmath.workdps(50):
    _SILU_ROOT = mpmath.findroot(lambda t: 1 + t + mpmath.exp(t), -1.28)
    _SILU_ROOT_HI = float(_SILU_ROOT)
    _SILU_ROOT_LO = float(_SILU_ROOT - _SILU_ROOT_HI)
    _SILU_ROOT_EXP = float(mpmath.exp(_SILU_ROOT))


def sigmoid(x) -> np.ndarray:
    """Logistic sigmoid 1 / (1 + e^-x) in float64 (0 and 1 at -inf and +inf)."""
    return expit(np.asarray(x, dtype=np.float64))


def sigmoid_grad(x) -> np.ndarray:
    """sigmoid'(x) = s(x) s(-x) in float64 (0 at +-inf)."""
    x = np.asarray(x, dtype=np.float64)
    return expit(x) * expit(-x)


def tanh(x) -> np.ndarray:
    """tanh in float64 (libm's, +-1 at +-inf, sign of zero kept)."""
    return np.tanh(np.asarray(x, dtype=np.float64))


def tanh_grad(x) -> np.ndarray:
    """tanh'(x) = sech^2(x) = 4 s(2x) s(-2x) in float64 (0 at +-inf)."""
    x = np.asarray(x, dtype=np.float64)
    return 4.0 * expit(2.0 * x) * expit(-2.0 * x)


def silu(x) -> np.ndarray:
    """SiLU (swish) x s(x) in float64: inf at +inf, -0.0 at -inf (as gelu), -0.0 at -0.0."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = x * expit(x)
    return np.where(np.isinf(x), np.where(x > 0, x, -0.0), out)


def silu_grad(x) -> np.ndarray:
    """d/dx SiLU in float64 (see above for the forms): 1 at +inf, 0 at -inf, 1/2 at 0."""
    x = np.asarray(x, dtype=np.float64)
    s, sm = expit(x), expit(-x)
    with np.errstate(invalid="ignore", over="ignore"):
        out = s * (1.0 + x * sm)
        h = (x - _SILU_ROOT_HI) - _SILU_ROOT_LO
        near = s * sm * (h + _SILU_ROOT_EXP * np.expm1(h))
    out = np.where((x >= -2.5) & (x <= -0.64), near, out)
    return np.where(np.isinf(x), np.where(x > 0, 1.0, 0.0), out)


def sigmoid_mp(x, dps: int = 40):
    """sigmoid of one finite value in mpmath (returns an mpf)."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        return 1 / (1 + mpmath.exp(-x))


def sigmoid_grad_mp(x, dps: int = 40):
    """sigmoid' = s(x) s(-x) of one finite value in mpmath (1 - s would cancel for x >> 0)."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        return 1 / ((1 + mpmath.exp(-x)) * (1 + mpmath.exp(x)))


def tanh_mp(x, dps: int = 40):
    """tanh of one finite value in mpmath."""
    with mpmath.workdps(dps):
        return mpmath.tanh(mpmath.mpf(x))


def tanh_grad_mp(x, dps: int = 40):
    """tanh' = sech^2 of one finite value in mpmath."""
    with mpmath.workdps(dps):
        return mpmath.sech(mpmath.mpf(x)) ** 2


def silu_mp(x, dps: int = 40):
    """SiLU x s(x) of one finite value in mpmath."""
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        return x / (1 + mpmath.exp(-x))


def silu_grad_mp(x, dps: int = 40):
    """SiLU' = s(x) (1 + x s(-x)) of one finite value in mpmath.

    Near the root x0 = -1.278... the bracket cancels: a float64 x within 2^-52 of x0 loses about
    16 of the ``dps`` digits, so 40 digits still give float64 accuracy; ``rounding`` retries at
    more digits when it needs them.
    """
    with mpmath.workdps(dps):
        x = mpmath.mpf(x)
        s = 1 / (1 + mpmath.exp(-x))
        return s * (1 + x / (1 + mpmath.exp(x)))


def softplus(x) -> np.ndarray:
    """softplus log(1 + e^x) in float64 (F.softplus with beta 1 and no threshold): log1p of the
    smaller exponential plus max(x, 0), so that neither side overflows or cancels; +0.0 at
    -inf and at -0.0 (log(1 + 1) > 0 there anyway), inf at +inf."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
    return np.where(np.isinf(x), np.where(x > 0, x, 0.0), out)


def softplus_mp(x, dps: int = 40):
    """softplus of one finite value in mpmath."""
    with mpmath.workdps(dps):
        return mpmath.log1p(mpmath.exp(mpmath.mpf(x)))


def mp_array(fn_mp: Callable, xs, dps: int = 40) -> np.ndarray:
    """An mpmath function ``fn_mp(v, dps)`` over an array, rounded to float64."""
    flat = np.asarray(xs, dtype=np.float64).ravel()
    return np.array([float(fn_mp(float(v), dps)) for v in flat]).reshape(np.shape(xs))
