"""Ground truth for GELU and its derivative, in float64 (vectorized) and in mpmath.

Two forms of GELU are supported, named as in ``torch.nn.functional.gelu``:

* ``"none"`` (exact): ``gelu(x) = x * Phi(x)``, ``Phi`` the standard normal CDF;
* ``"tanh"``: ``gelu(x) = x/2 * (1 + tanh(k * (x + 0.044715 x^3)))``, ``k = sqrt(2/pi)``.

The float64 versions avoid the cancellation of ``1 + erf`` / ``1 + tanh`` for negative x
(``erfc`` and the logistic function instead), so their relative error stays near float64
rounding over the whole line; ``tests/test_reference.py`` checks them against mpmath.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy.special import erfc, expit

GELU_MODES = ("none", "tanh")
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


def gelu_grad(x, mode: str = "none") -> np.ndarray:
    """d/dx GELU in float64."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if check_mode(mode) == "none":
            out = 0.5 * _erfc_of_minus_x_over_sqrt2(x) + x * np.exp(-0.5 * x * x) * _INV_SQRT2PI
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
