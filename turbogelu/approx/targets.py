"""The functions the lab approximates, each with its symmetry reduction, in one table.

Every activation here is a simple part plus a residual ``r(u)`` of ``u = |x| >= 0``:

==============  =========================================  ======================================
reduction       f(x) =                                     targets
==============  =========================================  ======================================
"x/2 + even"    x/2 + r(|x|)                               gelu, gelu_tanh, silu, softplus
"1/2 + odd"     1/2 + sign(x) r(|x|)                       sigmoid, gelu_grad, gelu_tanh_grad,
                                                           silu_grad, softplus_grad
"odd"           sign(x) r(|x|)                             tanh
"even"          r(|x|)                                     sigmoid_grad, tanh_grad
"none"          r(x) on the domain                         exp2_frac (2^f, f in [0, 1])
==============  =========================================  ======================================

so an approximation only has to cover ``u`` in ``[0, L]``. ``residual_parity`` says how the
residual continues to negative u: "even" (a smooth function of u^2, so a polynomial in
y = u^2 fits it) or "odd" (u times a function of u^2). ``natural_factor`` is the order of its
zero at u = 0: ``r(u) = u^k g(u^2)`` with ``g(0) != 0``, so the form ``u^k P(u^2)`` keeps the
relative accuracy for small |x| (GELU: r = u/2 erf(u/sqrt2) = u^2 (1/sqrt(2 pi) + ...)).

Beyond a clamp ``|x| > L_c`` a kernel returns the ``asymptote`` (ReLU, a step, +-1 or 0), and
``tail(u)`` is the signed distance to it, written so that it does not cancel:
``f(x) - asymptote(x) = tail(|x|)`` for the even reductions and ``sign(x) tail(|x|)`` for the
odd ones (GELU: ``-u/2 erfc(u/sqrt2)``). ``tail_error(L)`` is the error a clamp at L costs.

The residuals are closed forms (erf, tanh, expit: no ``f(u) - u/2``), accurate to a few float64
ulps; they are also valid formulas for negative u, which is how the tests check the parity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import mpmath
import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import erf, erfc, expit

from . import reference, rounding

REDUCTIONS = ("x/2 + even", "1/2 + odd", "odd", "even", "none")
_PARITY = {"x/2 + even": "even", "1/2 + odd": "odd", "odd": "odd", "even": "even", "none": "none"}
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)
K, C = reference.TANH_K, reference.TANH_C


def _a(u):
    """The tanh-GELU argument k (u + c u^3)."""
    return K * (u + C * u**3)


def _phi(u):
    return np.exp(-0.5 * u * u) * _INV_SQRT2PI


def _sig2(u):
    """s(u) s(-u) = sigmoid'(u)."""
    return expit(u) * expit(-u)


ASYMPTOTES: dict[str, Callable] = {
    "relu": lambda x: np.where(x > 0, x, -0.0),  # -0.0 on the left, as gelu(-inf)
    "relu+": lambda x: np.where(x > 0, x, 0.0),  # +0.0 on the left, as softplus(-inf)
    "step": lambda x: np.where(x > 0, 1.0, 0.0),
    "sign": lambda x: np.where(x > 0, 1.0, -1.0),
    "zero": lambda x: np.zeros_like(x),
}


@dataclass(frozen=True)
class Target:
    """One approximation target (see the module docstring for the fields' meaning).

    ``f``: float64 vectorized function; ``f_mp(x, dps)``: mpmath value of one float;
    ``residual(u)`` / ``tail(u)``: float64, for u >= 0; ``asymptote_kind``: a key of
    ``ASYMPTOTES`` or None (no clamp); ``domain``: where the target is defined for fitting.
    """

    name: str
    formula: str
    f: Callable
    f_mp: Callable
    reduction: str
    residual: Callable
    tail: Callable | None
    asymptote_kind: str | None
    natural_factor: int
    domain: tuple[float, float] = (-math.inf, math.inf)
    # Whether its programs floor their result at +0.0: a positive function whose small values
    # (softplus's left tail, its derivative's) lie below the absolute error bound, where an
    # unfloored program could return a negative value (a negative step size, a negative
    # gradient: wrong in sign, not only in size).
    nonnegative: bool = False

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {self.reduction!r}")

    @property
    def residual_parity(self) -> str:
        """ "even" (r is a function of u^2), "odd" (u times one) or "none" (no reduction)."""
        return _PARITY[self.reduction]

    def reconstruct(self, x, r) -> np.ndarray:
        """f(x) from residual values r = r(|x|) (or an approximation of them), in float64.

        On the side where the simple part and the residual have opposite signs (x/2 + r for
        x < 0, 1/2 - r for x < 0) the sum cancels: its error is relative to |x/2| + |r|,
        not to |f| (a kernel has the same absolute error there). -0.0 maps to f(-0.0).
        """
        x = np.asarray(x, np.float64)
        r = np.asarray(r, np.float64)
        signed = np.where(np.signbit(x), -r, r)
        if self.reduction == "x/2 + even":
            half = 0.5 * x
            return np.where(r == 0, half, half + r)  # keeps gelu(-0.0) = -0.0
        if self.reduction == "1/2 + odd":
            return 0.5 + signed
        if self.reduction == "odd":
            return signed
        return r + np.zeros_like(x)  # "even", "none"

    def asymptote(self, x) -> np.ndarray:
        """The value a kernel returns for |x| > clamp (float64)."""
        if self.asymptote_kind is None:
            raise ValueError(f"{self.name} has no clamp and no asymptote")
        return ASYMPTOTES[self.asymptote_kind](np.asarray(x, np.float64))

    def tail_error(self, L: float) -> float:
        """max over |x| >= L of |f(x) - asymptote(x)| = max over u >= L of |tail(u)|.

        Every |tail| here decays monotonically beyond a few units (like u e^-u or faster), so a
        grid of [L, L + 64] (spacing 1e-3 near L) with the largest value refined by a bounded
        scalar search finds the maximum.
        """
        if self.tail is None:
            raise ValueError(f"{self.name} has no clamp and no tail")
        if not L >= 0:
            raise ValueError(f"L must be >= 0, got {L}")
        u = L + np.concatenate([np.linspace(0.0, 8.0, 8001), np.linspace(8.0, 64.0, 561)[1:]])
        t = np.abs(self.tail(u))
        i = int(np.argmax(t))
        best = float(t[i])
        if 0 < i < len(u) - 1:
            res = minimize_scalar(
                lambda v: -abs(float(self.tail(np.float64(v)))),
                bounds=(u[i - 1], u[i + 1]),
                method="bounded",
                options={"xatol": 1e-12},
            )
            best = max(best, -float(res.fun))
        return best


def _fn(name: str) -> tuple[Callable, Callable]:
    return rounding.FUNCTIONS[name]


def _exp2_mp(v, dps: int = 40):
    with mpmath.workdps(dps):
        return mpmath.power(2, mpmath.mpf(v))


def _targets() -> dict[str, Target]:
    rows = [
        Target(
            "gelu",
            "x Phi(x) = x/2 + u/2 erf(u/sqrt2)",
            *_fn("gelu"),
            "x/2 + even",
            residual=lambda u: 0.5 * u * erf(u * _INV_SQRT2),
            tail=lambda u: -0.5 * u * erfc(u * _INV_SQRT2),
            asymptote_kind="relu",
            natural_factor=2,
        ),
        Target(
            "gelu_tanh",
            "x/2 (1 + tanh a), a = k (x + c x^3) = x/2 + u/2 tanh a(u)",
            *_fn("gelu_tanh"),
            "x/2 + even",
            residual=lambda u: 0.5 * u * np.tanh(_a(u)),
            tail=lambda u: -u * expit(-2.0 * _a(u)),
            asymptote_kind="relu",
            natural_factor=2,
        ),
        Target(
            "gelu_grad",
            "Phi(x) + x phi(x) = 1/2 + sign(x) (erf(u/sqrt2)/2 + u phi(u))",
            *_fn("gelu_grad"),
            "1/2 + odd",
            residual=lambda u: 0.5 * erf(u * _INV_SQRT2) + u * _phi(u),
            tail=lambda u: u * _phi(u) - 0.5 * erfc(u * _INV_SQRT2),
            asymptote_kind="step",
            natural_factor=1,
        ),
        Target(
            "gelu_tanh_grad",
            "1/2 + sign(x) (tanh(a)/2 + u/2 sech^2(a) a'(u)), a' = k (1 + 3 c u^2)",
            *_fn("gelu_tanh_grad"),
            "1/2 + odd",
            residual=lambda u: (
                0.5 * np.tanh(_a(u))
                + 0.5 * u * reference.tanh_grad(_a(u)) * K * (1.0 + 3.0 * C * u * u)
            ),
            tail=lambda u: (
                0.5 * u * reference.tanh_grad(_a(u)) * K * (1.0 + 3.0 * C * u * u)
                - expit(-2.0 * _a(u))
            ),
            asymptote_kind="step",
            natural_factor=1,
        ),
        Target(
            "silu",
            "x s(x) = x/2 + u/2 tanh(u/2)",
            *_fn("silu"),
            "x/2 + even",
            residual=lambda u: 0.5 * u * np.tanh(0.5 * u),
            tail=lambda u: -u * expit(-u),
            asymptote_kind="relu",
            natural_factor=2,
        ),
        Target(
            "silu_grad",
            "s(x) (1 + x s(-x)) = 1/2 + sign(x) (tanh(u/2)/2 + u s(u) s(-u))",
            *_fn("silu_grad"),
            "1/2 + odd",
            residual=lambda u: 0.5 * np.tanh(0.5 * u) + u * _sig2(u),
            tail=lambda u: expit(-u) * (u * expit(u) - 1.0),
            asymptote_kind="step",
            natural_factor=1,
        ),
        Target(
            "sigmoid",
            "1 / (1 + e^-x) = 1/2 + sign(x) tanh(u/2)/2",
            *_fn("sigmoid"),
            "1/2 + odd",
            residual=lambda u: 0.5 * np.tanh(0.5 * u),
            tail=lambda u: -expit(-u),
            asymptote_kind="step",
            natural_factor=1,
        ),
        Target(
            "sigmoid_grad",
            "s(x) s(-x)",
            *_fn("sigmoid_grad"),
            "even",
            residual=_sig2,
            tail=_sig2,
            asymptote_kind="zero",
            natural_factor=0,
        ),
        Target(
            "tanh",
            "tanh x = sign(x) tanh u",
            *_fn("tanh"),
            "odd",
            residual=np.tanh,
            tail=lambda u: -2.0 * expit(-2.0 * u),
            asymptote_kind="sign",
            natural_factor=1,
        ),
        Target(
            "tanh_grad",
            "sech^2 x = 4 s(2x) s(-2x)",
            *_fn("tanh_grad"),
            "even",
            residual=reference.tanh_grad,
            tail=reference.tanh_grad,
            asymptote_kind="zero",
            natural_factor=0,
        ),
        # softplus = x/2 + log(2 cosh(u/2)): the residual is even but not 0 at 0 (log 2), so
        # the program is x/2 + P(z) (factor 0, family_eval.h's XHalfPlusNonNeg), and its exact
        # derivative 1/2 + sign(x) s P'(z) (factor 0, HalfPlusSigned: family_programs fits
        # the direct derivative in that form too, not in its natural u P). Its poles, at
        # u = +-i pi, are sigmoid's: the fit is in u = |x| as sigmoid's is.
        Target(
            "softplus",
            "log(1 + e^x) = x/2 + log(2 cosh(u/2))",
            *_fn("softplus"),
            "x/2 + even",
            # |u|: the same formula at -u (the parity tests evaluate it there), so that its
            # evenness is exact rather than up to the rounding of log1p(exp(u)) against
            # u + log1p(exp(-u)), which differs by an ulp with numpy's other SIMD paths
            residual=lambda u: 0.5 * np.abs(u) + np.log1p(np.exp(-np.abs(u))),
            tail=lambda u: np.log1p(np.exp(-u)),
            asymptote_kind="relu+",
            natural_factor=0,
            nonnegative=True,
        ),
        Target(
            "exp2_frac",
            "2^f on f in [0, 1] (the fraction part of exp2; Table 8)",
            lambda x: np.exp2(np.asarray(x, np.float64)),
            _exp2_mp,
            "none",
            residual=lambda u: np.exp2(np.asarray(u, np.float64)),
            tail=None,
            asymptote_kind=None,
            natural_factor=0,
            domain=(0.0, 1.0),
        ),
    ]
    by_name = {t.name: t for t in rows}
    # softplus' = sigmoid: its target, floored (nonnegative), under softplus's names.
    by_name["softplus_grad"] = replace(
        by_name["sigmoid"],
        name="softplus_grad",
        formula="softplus'(x) = s(x) = 1/2 + sign(x) tanh(u/2)/2",
        f=_fn("softplus_grad")[0],
        f_mp=_fn("softplus_grad")[1],
        nonnegative=True,
    )
    return by_name


TARGETS: dict[str, Target] = _targets()


def get(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"target must be one of {tuple(TARGETS)}, got {name!r}") from None
