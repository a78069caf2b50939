"""IRLS fits of GELU and GELU' in the kernels' polynomial form.

Forward:  gelu(x)  ~ x/2 + y P(z)   on [-R, R],   y = x^2, z = y * 2/R^2 - 1
Backward: gelu'(x) ~ 1/2 + x Q(z)   (a direct fit of the derivative), or
          the matched form, Q = 2 (P + (z + 1) P'(z)), the exact derivative of the forward.

GELU is x/2 plus an even residual, so only [0, R] is sampled. P is written in the shifted
variable z in [-1, 1] rather than in y in [0, R^2]: the monomial basis in y has coefficients
that grow like R^(2k) and cancel in float32, while the basis in z keeps float32 evaluation at
the float64 fit's error (see the issue's figures and ``tests/test_fit.py``).

IRLS (Lawson's algorithm): weighted least squares whose weights are multiplied by the
absolute residual after each solve, which drives the fit from least squares towards the
minimax (equioscillating) error with the same linear solver.

The forward fit is minimax in the error *relative to what each output needs*
(``forward_tolerance``): the float32 bound of 3e-5, or one bfloat16 ulp of the negative-side
output where that is smaller. GELU is x/2 plus an even residual, so an error at +x is also
an error at -x, where the output is small: for the tanh form, whose negative tail is
steeper, an unweighted fit is 2 bfloat16 ulps off near x = -3.
"""

from __future__ import annotations

import numpy as np

from . import reference

F32 = np.float32


def _solve_irls(basis: np.ndarray, target: np.ndarray, iters: int) -> np.ndarray:
    weights = np.ones_like(target)
    coeffs = None
    for _ in range(max(1, iters)):
        sw = np.sqrt(weights)
        coeffs, *_ = np.linalg.lstsq(basis * sw[:, None], target * sw, rcond=None)
        resid = np.abs(basis @ coeffs - target)
        weights = weights * resid
        total = weights.sum()
        if not np.isfinite(total) or total == 0.0:
            break  # exact fit (or numerical trouble): keep the last solution
        weights /= weights.mean()
    return coeffs


FLOAT32_BOUND = 3e-5  # the float32 forward bound (max |error| over [-6, 6])


def forward_tolerance(x: np.ndarray, mode: str) -> np.ndarray:
    """Per-point error budget of the forward residual at |x|: min(3e-5, one bfloat16 ulp of
    |gelu(-|x|)|) for |x| <= 3, 3e-5 beyond. (Eight float16 ulps, the float16 budget on
    [-3, 0), is the same number.) The fit minimizes max |error| / budget."""
    ax = np.abs(np.asarray(x, dtype=np.float64))
    small = np.abs(reference.gelu(-ax, mode))
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.maximum(small, np.finfo(np.float64).tiny)))
    bf16_ulp = 2.0 ** (exponent - 7)
    return np.where(ax <= 3.0, np.minimum(FLOAT32_BOUND, bf16_ulp), FLOAT32_BOUND)


def fit_gelu(
    range_: float, degree: int, iters: int, points: int, mode: str = "none", grad: bool = False
) -> dict:
    """Fit P (forward) or Q (direct backward); return clamp, scale and float64 coefficients.

    The clamp R and the scale 2/R^2 are first rounded to float32, the values the kernel
    holds, so the fit maps exactly the interval the kernel evaluates on.
    """
    reference.check_mode(mode)
    if not (range_ > 0 and np.isfinite(range_)):
        raise ValueError(f"range must be a positive finite number, got {range_}")
    if degree < 0 or degree > 16:
        raise ValueError(f"degree must be in [0, 16], got {degree}")
    if points < 2 * (degree + 1):
        raise ValueError(f"need at least {2 * (degree + 1)} points for degree {degree}")
    clamp = float(F32(range_))
    scale = float(F32(2.0 / (clamp * clamp)))
    x = np.linspace(0.0, clamp, points)
    y = x * x
    z = y * scale - 1.0
    vander = np.vander(z, degree + 1, increasing=True)
    if grad:
        basis, target = x[:, None] * vander, reference.gelu_grad(x, mode) - 0.5
    else:
        budget = forward_tolerance(x, mode)
        basis = y[:, None] * vander / budget[:, None]
        target = (reference.gelu(x, mode) - 0.5 * x) / budget
    coeffs = _solve_irls(basis, target, iters)
    return {"clamp": clamp, "scale": scale, "coefficients": [float(c) for c in coeffs]}


def matched_backward(forward: dict) -> dict:
    """The forward's own derivative as a backward spec, 1/2 + x Q(z).

    d/dx [x/2 + y P(z)] = 1/2 + 2x (P + y dP/dy) and y dP/dy = (z + 1) P'(z), so
    q_k = 2 (k + 1) (c_k + c_{k+1}). Computed in float64 from the float32 coefficients:
    exact there (small integers times a sum of two float32 values), rounded once to float32.
    """
    c = [float(F32(v)) for v in forward["coefficients"]] + [0.0]
    q = [2.0 * (k + 1) * (c[k] + c[k + 1]) for k in range(len(c) - 1)]
    return {"clamp": forward["clamp"], "scale": forward["scale"], "coefficients": q}
