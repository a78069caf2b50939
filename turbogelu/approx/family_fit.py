"""Fit one PolySpec of any target: float64 fit, coefficients rounded to a format, optional
search over neighbouring representable coefficients, and the error of the whole program.

``fit_polyspec(target, variable, factor, degree, fit_interval, clamp, fmt, method)`` fits the
residual ``targets.TARGETS[target].residual`` on ``u`` in ``[0, L_i]`` in the basis of
``PolySpec.template`` (``u^factor t^k``), by one of ``METHODS``:

* ``"ls"`` / ``"irls"`` / ``"endpoint-ls"`` / ``"remez"``: ``methods.least_squares`` /
  ``irls`` / ``endpoint_ls`` / ``remez`` in float64, then every coefficient rounded to nearest
  in ``fmt`` (``rounding.round_to_format``);
* ``"remez+search"`` / ``"endpoint-ls+search"``: the same, then ``methods.search_rounded``
  moves the rounded coefficients to neighbouring values of ``fmt`` while the program's error
  decreases.

The error that matters is that of the full program, not of the fit on ``[0, L_i]``: the
residual approximation inside the clamp (including its extrapolation from ``L_i`` to
``L_c`` when ``L_c > L_i``) and the asymptote beyond it. ``ErrorModel`` measures it in real
arithmetic (float64, coefficients as they are) on a dense grid of ``[0, X]``,
``X = max(8, 1.5 L_c)`` (``error_extent``): ``u_k = k h`` (``h = 2^-10``) plus the points
``L_i`` and ``L_c``:

    window(c) = max over u <= L_c of |r(u) - u^factor P(t(u))|,
    tail      = max over u >= L_c of |tail(u)|   (the asymptote's error; u = L_c is the
                                                   limit from above),
    error(c)  = max(window(c), tail).

Every reduction has ``|f(x) - approx(x)| = |r(|x|) - p(|x|)|`` (or ``|tail(|x|)|`` past the
clamp), so ``[0, X]`` stands for ``[-X, X]`` (``tests/test_search.py`` checks it against
``PolySpec.evaluate``). The tail does not depend on the coefficients, so the search descends
on ``window``: the full error ``max(window, tail)`` is then never worse than plain rounding,
and the search keeps improving the window where the tail dominates (``tail`` is recorded,
so that a reader sees which part decides).

Optionally (``replay=True``) the error of the program as a kernel runs it,
``polyspec.replay`` in float32 and in the coefficient format itself, at the float32 (or
``fmt``) values of the same grid mirrored to ``[-X, X]`` plus the float32 neighbours of the
clamp (``replay_error``).
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from . import methods, polyspec, rounding, targets
from .polyspec import PolySpec

METHODS = ("ls", "irls", "endpoint-ls", "remez", "remez+search", "endpoint-ls+search")
BASE_METHODS = ("ls", "irls", "endpoint-ls", "remez")
FMT_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "fp64": "float64",
    "f64": "float64",
    "double": "float64",
}
DEFAULT_STEP = 2.0**-10  # the error grid's spacing (finer than any bfloat16 input beyond 1/8)
MIN_EXTENT = 8.0

# The float64 fits' default settings (those of methods.*), recorded in meta.
FIT_DEFAULTS = {
    "ls": {"points": 2000},
    "irls": {"points": 20000, "iters": 35},
    "endpoint-ls": {"points": 2000},
    "remez": {"grid_points": 8193, "max_iter": 50},
}
SEARCH_DEFAULTS = {"radius": 1, "pairs": True, "max_rounds": 100}
OPTIONS = {
    "shift",
    "program",
    "extent",
    "step",
    "replay",
    *SEARCH_DEFAULTS,
    *(k for d in FIT_DEFAULTS.values() for k in d),
}


def normalize_fmt(fmt: str) -> str:
    """'bf16' -> 'bfloat16', 'fp16' -> 'float16', ...; a name of ``rounding.ROUNDING_FORMATS``
    as is."""
    name = FMT_ALIASES.get(str(fmt).lower(), str(fmt).lower())
    if name not in rounding.ROUNDING_FORMATS:
        raise ValueError(
            f"format must be one of {rounding.ROUNDING_FORMATS} (or {tuple(FMT_ALIASES)})"
        )
    return name


def split_method(method: str) -> tuple[str, bool]:
    """'remez+search' -> ('remez', True); checks the name."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    base, _, search = method.partition("+")
    return base, bool(search)


def error_extent(clamp: float, fit_interval: float) -> float:
    """X: the error grid covers [0, X] (standing for [-X, X]): max(8, 1.5 L_c), a bit beyond
    the clamp; for a target without asymptote (clamp inf), the fit interval itself."""
    if math.isinf(clamp):
        return float(fit_interval)
    return max(MIN_EXTENT, 1.5 * float(clamp))


@functools.lru_cache(maxsize=64)
def _grid(target: str, n: int, step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_k = k step (k < n, exact), the residual there and |tail| (zeros without asymptote)."""
    tgt = targets.TARGETS[target]
    u = np.arange(n, dtype=np.float64) * step
    r = np.asarray(tgt.residual(u), np.float64)
    t = np.zeros_like(u) if tgt.tail is None else np.abs(np.asarray(tgt.tail(u), np.float64))
    for a in (u, r, t):
        a.flags.writeable = False
    return u, r, t


class ErrorModel:
    """The full program's max |error| in real arithmetic (module docstring), for one form,
    degree, fit interval and clamp; the coefficients vary. ``tpl`` is any PolySpec of that
    form (its coefficients are ignored)."""

    def __init__(self, tpl: PolySpec, extent: float | None = None, step: float = DEFAULT_STEP):
        self.tpl = tpl
        tgt = tpl.tgt
        L_i, L_c = tpl.fit_interval, tpl.clamp
        self.extent = float(extent) if extent is not None else error_extent(L_c, L_i)
        self.step = float(step)
        n = int(math.floor(self.extent / self.step)) + 1
        u, r, t = _grid(tpl.target, n, self.step)
        top = min(L_c, self.extent)
        inside = u <= top
        extra = [v for v in {L_i, top} if v <= top and v <= self.extent]
        ex = np.array(sorted(extra), np.float64)
        self.u = np.concatenate([u[inside], ex])
        self.r = np.concatenate([r[inside], np.asarray(tgt.residual(ex), np.float64)])
        self.B = tpl.basis(self.u)
        if tgt.tail is None or math.isinf(L_c):
            self.tail = 0.0
        else:
            beyond = t[~inside]
            at_clamp = abs(float(tgt.tail(np.float64(L_c))))
            self.tail = max(at_clamp, float(beyond.max()) if beyond.size else 0.0)

    def signed_curve(self, c) -> np.ndarray:
        """r - p at the window's points ``self.u`` (u <= L_c), with its sign (the error curve
        whose alternation ``methods.alternations`` counts)."""
        return self.r - self.B @ np.asarray(c, np.float64)

    def window_curve(self, c) -> np.ndarray:
        """|r - p| at the window's points ``self.u`` (u <= L_c)."""
        return np.abs(self.signed_curve(c))

    def window(self, c) -> float:
        """max |r - p| over u <= L_c."""
        return float(np.max(self.window_curve(c)))

    def __call__(self, c) -> float:
        """max(window(c), tail): the full program's error."""
        return max(self.window(c), self.tail)

    def errors(self, c) -> dict:
        w = self.window_curve(c)
        k = int(np.argmax(w))
        win = float(w[k])
        full = max(win, self.tail)
        return {
            "max_abs_error": full,
            "window_error": win,
            "window_argmax": float(self.u[k]),
            "tail_error": self.tail,
            "decided_by": "tail" if self.tail >= win else "polynomial",
        }


def replay_error(
    ps: PolySpec,
    precision: str = "float32",
    *,
    extent: float | None = None,
    step: float = DEFAULT_STEP,
    scheme: str = "horner",
    fma: bool = True,
) -> float:
    """max |replay(x) - f(x)| of ``polyspec.replay(ps, x, precision=...)`` over the grid
    ``+-k step`` in [-X, X] and +-L_i, +-L_c with their float32 neighbours, each x first
    rounded to the working format (float32, or ``ps.fmt`` for "target"), f in float64."""
    X = float(extent) if extent is not None else error_extent(ps.clamp, ps.fit_interval)
    u = np.arange(int(math.floor(X / step)) + 1, dtype=np.float64) * step
    marks = [ps.fit_interval] + ([] if math.isinf(ps.clamp) else [ps.clamp])
    m32 = np.array(marks, np.float32)
    near = np.concatenate(
        [m32, np.nextafter(m32, np.float32(np.inf)), np.nextafter(m32, np.float32(0))]
    ).astype(np.float64)
    u = np.concatenate([u, near])
    lo = ps.tgt.domain[0]
    x = np.concatenate([-u[::-1], u]) if lo < 0 else u
    work = "float32" if precision == "float32" else ps.fmt
    xr = rounding.round_to_format(x, work)
    x_ok = (xr >= ps.tgt.domain[0]) & (xr <= ps.tgt.domain[1])
    xr = xr[x_ok]
    got = polyspec.replay(ps, xr, scheme=scheme, precision=precision, fma=fma).astype(np.float64)
    want = np.asarray(ps.tgt.f(xr), np.float64)
    with np.errstate(invalid="ignore"):
        return float(np.max(np.abs(got - want)))


def rounding_error(
    ps: PolySpec,
    x,
    *,
    scheme: str = "horner",
    fma: bool = True,
    precision: str = "float32",
) -> dict:
    """What the arithmetic alone costs: ``polyspec.replay`` against the same program in real
    arithmetic (``ps.evaluate``), at ``x`` rounded to the working format, inside the window
    (|x| <= L_c; outside both return the asymptote). Returns the max and mean absolute
    difference and, for x > 0 (where the reconstruction adds terms of one sign, so the result
    is not a cancellation), the max in units of the working format's ulp of the exact value."""
    work = "float32" if precision == "float32" else ps.fmt
    xr = rounding.round_to_format(np.asarray(x, np.float64), work)
    xr = xr[np.abs(xr) <= ps.clamp]
    got = polyspec.replay(ps, xr, scheme=scheme, precision=precision, fma=fma).astype(np.float64)
    want = ps.evaluate(xr)
    d = np.abs(got - want)
    pos = xr > 0
    ulp = np.asarray(rounding.ulp_of(want[pos], work), np.float64)
    return {
        "max_abs": float(d.max()),
        "mean_abs": rounding.exact_mean(d),
        "max_ulps_positive": float(np.max(d[pos] / ulp)) if pos.any() else 0.0,
        "points": int(xr.size),
    }


def fit_float64(tpl: PolySpec, base: str, **opts) -> tuple[np.ndarray, dict]:
    """The float64 coefficients of a base method (``BASE_METHODS``) for ``tpl``'s form and
    fit interval, and the settings used (plus Remez's diagnostics)."""
    f = tpl.tgt.residual
    a = max(0.0, float(tpl.tgt.domain[0]))
    b = tpl.fit_interval
    settings = {**FIT_DEFAULTS[base], **{k: v for k, v in opts.items() if k in FIT_DEFAULTS[base]}}
    if base == "ls":
        c = methods.least_squares(tpl.basis, f, a, b, points=settings["points"])
        return c, settings
    if base == "irls":
        c = methods.irls(tpl.basis, f, a, b, points=settings["points"], iters=settings["iters"])
        return c, settings
    if base == "endpoint-ls":
        return methods.endpoint_ls(tpl.basis, f, a, b, points=settings["points"]), settings
    res = methods.remez(
        tpl.basis, f, a, b, grid_points=settings["grid_points"], max_iter=settings["max_iter"]
    )
    info = {
        **settings,
        "levelled_error": res.error,
        "float64_max_error": res.max_error,
        "converged": res.converged,
        "equioscillation_ok": res.equioscillation_ok,
        "iterations": res.iterations,
    }
    return res.coeffs, info


def finish(
    tpl: PolySpec,
    c64,
    method: str,
    fit_info: dict,
    *,
    model: ErrorModel | None = None,
    replay: bool = False,
    extent: float | None = None,
    step: float = DEFAULT_STEP,
    **opts,
) -> PolySpec:
    """Round ``c64`` to ``tpl.fmt`` (and search, for a "+search" method), measure, and return
    the PolySpec with ``method`` and ``meta`` filled in."""
    _, search = split_method(method)
    t0 = time.perf_counter()
    model = model if model is not None else ErrorModel(tpl, extent=extent, step=step)
    c64 = np.asarray(c64, np.float64)
    rounded = rounding.round_to_format(c64, tpl.fmt)
    if not np.all(np.isfinite(rounded)):
        raise ValueError(f"coefficients overflow {tpl.fmt}: {c64.tolist()}")
    meta: dict = {
        "method": method,
        "fit": fit_info,
        "error_grid": {"extent": model.extent, "step": model.step, "points": int(model.u.size)},
        "float64_coefficients": [float.hex(float(v)) for v in c64],
    }
    rounded_err = model(rounded)
    coeffs = rounded
    if search:
        settings = {**SEARCH_DEFAULTS, **{k: v for k, v in opts.items() if k in SEARCH_DEFAULTS}}
        res = methods.search_rounded(
            None,
            None,
            0.0,
            tpl.fit_interval,
            c64,
            tpl.fmt,
            radius=settings["radius"],
            max_rounds=settings["max_rounds"],
            error=model.window,
            pairs=settings["pairs"],
        )
        coeffs = res.coeffs
        meta["search"] = {
            **settings,
            "objective": "window error (u <= L_c); the tail does not depend on c",
            "initial_window_error": res.initial_error,
            "window_error": res.max_error,
            "evaluations": res.evaluations,
            "rounds": res.rounds,
            "moves": len(res.moves),
        }
    errors = model.errors(coeffs)
    errors["float64_fit_error"] = model(c64)
    errors["rounded_max_abs_error"] = rounded_err
    ps = tpl.with_coefficients(coeffs, method=method)
    errors["op_count"] = ps.op_count("horner", fma=True)["total"]
    if replay:
        errors["float32_replay_max_abs_error"] = replay_error(ps, "float32", extent=model.extent)
        if ps.fmt not in ("float32", "float64"):
            errors["target_replay_max_abs_error"] = replay_error(ps, "target", extent=model.extent)
    meta["errors"] = errors
    meta["seconds"] = round(time.perf_counter() - t0, 4)
    return ps.with_coefficients(coeffs, meta=meta)


def fit_polyspec(
    target: str,
    variable: str | None = None,
    factor: int | None = None,
    degree: int = 3,
    fit_interval: float = 4.0,
    clamp: float | None = None,
    fmt: str = "bfloat16",
    method: str = "endpoint-ls",
    **opts,
) -> PolySpec:
    """Fit ``target``'s residual with ``PolySpec.template(target, degree, fit_interval, ...)``
    (see the module docstring); returns the PolySpec with coefficients in ``fmt``.

    ``variable`` / ``factor`` None: the target's natural form (template defaults); ``clamp``
    None: the fit interval (inf for a target without asymptote). ``opts``: ``shift`` (the
    normalized variable z, default True), ``program`` (the evaluation order of the replays:
    "generic", the default, or "turbogelu"), the base method's ``points`` / ``iters`` /
    ``grid_points`` / ``max_iter``, the search's ``radius`` / ``pairs`` / ``max_rounds``, the
    error grid's ``extent`` (X) / ``step``, and ``replay`` (also measure the float32 and
    target-format replays; default True here). ``meta`` records the method, its settings, the
    float64 coefficients and the errors: ``max_abs_error`` (real arithmetic, the full
    program), ``window_error`` / ``tail_error`` (its two parts), ``rounded_max_abs_error``
    (plain rounding), ``float64_fit_error`` (before rounding) and ``op_count``.
    """
    base, _ = split_method(method)
    fmt = normalize_fmt(fmt)
    unknown = set(opts) - OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; known: {sorted(OPTIONS)}")
    form = {"fmt": fmt, "shift": bool(opts.pop("shift", True))}
    if "program" in opts:  # the evaluation order the replays follow (PolySpec.program)
        form["program"] = opts.pop("program")
    if variable is not None:
        form["variable"] = variable
    if factor is not None:
        form["factor"] = int(factor)
    if clamp is not None:
        form["clamp"] = float(clamp)
    tpl = PolySpec.template(target, int(degree), float(fit_interval), **form)
    c64, info = fit_float64(tpl, base, **opts)
    opts.setdefault("replay", True)
    return finish(tpl, c64, method, info, **opts)
