"""The activation family's ``accurate`` tier (issue 17): one polynomial program per function and
direction, fitted, measured on the float32 replay and every 16-bit input, stored as a spec.

The tier's bounds (``ABS_BOUND``, ``ONE_ULP_FROM``), each for the program's float32 result:

* float32: max |error| <= 3e-5 over the whole real line, inside the clamp and in the asymptote
  beyond it, beyond half a float32 ulp of the result (its own rounding);
* bfloat16 and float16 (the float32 result rounded to the format): within 1 ulp of the
  correctly rounded value for every input of tanh, and for x >= -3 for sigmoid, SiLU and
  softplus; in their negative tails (x < -3) judged as GELU's is: |error| <= 3e-5 beyond half
  an ulp of the result. An input that misses its bound is counted, never dropped
  (``sixteen_bit_errors``).

The programs are the GELU kernels' kind (``polyspec.PolySpec``, replayed by ``replay.run``,
order "generic"): a polynomial P in a normalised variable z in [-1, 1], the target's reduction
(``targets.py``), a clamp at L and the asymptote beyond it; u = |x|, z = fma(u, 2/L, -1):

* sigmoid: 1/2 + x P(z) = fma(x, P(z), 1/2); 0 / 1 beyond L;
* tanh: x P(z); -1 / 1 beyond L;
* SiLU: x/2 + u^2 P(z) = fma(u, u P(z), x/2); -0.0 / x beyond L;
* softplus: x/2 + P(z) (its residual log(2 cosh(u/2)) is log 2 at u = 0: no factor of u);
  +0.0 / x beyond L. It grows like x, and the float32 bound suits that as it is: the error
  beyond half an ulp of the result is what the polynomial adds, and it is absolute because
  the residual it approximates is, while the result's own rounding (excluded) grows with x;
  a relative bound would demand ever more of P as x grows, for no reader of the result. Its
  clamp L = 10.5 is the smallest round one where the asymptote's error e^-L falls below the
  bound (2.8e-5).

The ``paper`` tier (``build_paper_spec``, ``data/specs/<function>/paper.json``, ``--tier
paper``) holds the source paper's own Table 2 programs instead (``table2.Row.same``: degree
2-4, bfloat16 coefficients; SiLU's in x^2), measured the same way, with no tier bound: the ops
run them with ``tier="paper"`` so that the paper's trade of accuracy for operations can be
timed beside ours.

Backward, as GELU's: a ``direct`` fit of the derivative with the forward's degree, clamp and
variable (sigmoid', tanh': P(z), 0 beyond L; SiLU': 1/2 + x P(z), 0 / 1 beyond L;
softplus' = sigmoid: 1/2 + sign(x) P(z), the form of its matched derivative) and the
``matched`` one, the exact derivative of the forward program (``matched``).

Why z is made from u = |x| and not from x^2 as GELU's is: GELU's residual is entire, and a
polynomial in x^2 of degree d is one of degree 2d in |x| for the price of d operations. These
functions have poles at +-i pi (sigmoid, SiLU: tanh(u/2)) or +-i pi/2 (tanh) and must follow
the function out to L = 5.6-13, where it is flat. In x^2 the pole lies on the real axis just
beyond the interval's left end (tanh: x^2 = -pi^2/4 against [0, 31]), and the fit converges
slowly (``scan`` with variable "y": sigmoid needs degree 16, tanh 18, SiLU more than 26; SiLU's
float32 replay never gets below 1.3e-4 there, its Horner sums growing to ~15 while P ~ 0.04);
in |x| the pole is off the axis, and degrees 11-13 do.

The fit (``fit_forward``) is Lawson's IRLS (``fit._solve_irls``) of the residual on [0, L]
relative to a per-point budget (``budget``): 3e-5, or 2^-12 |f| where the 1-ulp bound is
stricter (half a float16 ulp of the smaller of |f(u)|, |f(-u)| is at least that), so one
minimax fit aims at every bound at once; the coefficients are rounded to float32 once.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

from .. import _spec_names, _table
from . import fit, report, rounding, spec, targets
from .polyspec import PolySpec, replay

F32 = np.float32
F64 = np.float64
FUNCTIONS = _spec_names.FAMILY_FUNCTIONS  # the table's (turbogelu/_table.py)
ABS_BOUND = 3e-5
# The 1-ulp bound holds for x >= this (below, the absolute bound; -inf: every input).
ONE_ULP_FROM = {"sigmoid": -3.0, "tanh": -math.inf, "silu": -3.0, "softplus": -3.0,
                # GELU's paper-tier programs (their targets' names), measured as SiLU's.
                "gelu": -3.0, "gelu_tanh": -3.0}  # fmt: skip
FORMATS = ("bfloat16", "float16")
# The float32 measurement inside the clamp: u = k GRID_STEP on [0, L], both signs, plus the
# CLAMP_NEIGHBOURS float32 values below +-fl(L) (beyond it: the asymptote's tail_error).
GRID_STEP = 2.0**-11
CLAMP_NEIGHBOURS = 2000
COMMAND = spec.SCHEMAS["accurate"].command


def budget(function: str, u) -> np.ndarray:
    """The forward fit's error budget at u >= 0 (module docstring)."""
    t = targets.get(function)
    u = np.asarray(u, F64)
    small = np.minimum(np.abs(t.f(u)), np.abs(t.f(-u)))
    # Below ONE_ULP_FROM only the absolute bound applies, so f(-u) does not count there.
    small = np.where(-u >= ONE_ULP_FROM[function], small, np.abs(t.f(u)))
    return np.minimum(ABS_BOUND, np.maximum(small * 2.0**-12, 1e-12))


def _irls(tpl: PolySpec, iters: int, points: int, weights) -> tuple[PolySpec, list[float]]:
    u = np.linspace(0.0, float(F32(tpl.clamp)), points)
    w = np.ones_like(u) if weights is None else weights(u)
    B = tpl.basis(u)
    c = fit._solve_irls(B / w[:, None], tpl.tgt.residual(u) / w, iters)
    return tpl.with_coefficients(c, round_to_fmt=True), [float(v) for v in c]


def _template(
    target: str, settings: spec.FamilySettings, order: str, factor: int | None = None
) -> PolySpec:
    L = float(F32(settings.clamp))
    return PolySpec.template(
        target,
        settings.degree,
        L,
        clamp=L,
        variable=settings.variable,
        program=order,
        **({} if factor is None else {"factor": factor}),
    )


def derivative_factor(factor: int, variable: str) -> int:
    """The factor of the exact derivative of a program r = u^factor P(z) (``matched``):
    factor - 1, or for factor 0 one (in x^2: 2 s u P') or zero (in u: s P')."""
    if factor == 0:
        return 1 if variable == "y" else 0
    return factor - 1


def fit_forward(function: str, settings: spec.FamilySettings) -> tuple[PolySpec, list[float]]:
    """The forward program and its float64 coefficients (before rounding to float32)."""
    tpl = _template(function, settings, settings.order)
    return _irls(tpl, settings.iters, settings.points, lambda u: budget(function, u))


def fit_direct(function: str, settings: spec.FamilySettings) -> tuple[PolySpec, list[float]]:
    """The direct backward: a minimax IRLS fit of f' (sigmoid', tanh': P(z); SiLU':
    1/2 + x P(z); softplus': 1/2 + sign(x) P(z)) with the forward's settings, in the form of
    the matched derivative (the kernels run both derivatives in one form)."""
    fwd = targets.get(function)
    factor = derivative_factor(fwd.natural_factor, settings.variable)
    tpl = _template(function + "_grad", settings, "generic", factor)
    return _irls(tpl, settings.iters, settings.points, None)


def matched(forward: PolySpec) -> PolySpec:
    """The forward's own derivative, in the same variable and clamp (0 or 1 beyond it).

    r = u^f P(z), z = v s - 1 with v = u (or u^2), so dz/du = s (or 2u s) and v s = z + 1:
    r' = u^(f-1) (f P + m (z + 1) P'(z)), m = 1 (or 2), i.e.
    q_k = (f + m k) c_k + m (k + 1) c_{k+1}, factor f - 1; the reductions turn 1/2 + sign(x) r
    and sign(x) r into the even r', x/2 + r into 1/2 + sign(x) r'. Computed in float64 from the
    float32 coefficients (exact: small integers times float32 values, two of them added) and
    rounded to float32 once."""
    f, m = forward.factor, (1 if forward.variable == "u" else 2)
    c = list(forward.coefficients) + [0.0]
    degree, factor = forward.degree, f - 1
    if f == 0:
        # r = P(z), z = v s - 1: in x^2 (v = u^2) r' = 2 s u P'(z), factor 1; in u (softplus)
        # r' = s P'(z), factor 0 (1/2 + sign(x) r': family_eval.h's HalfPlusSigned). So
        # q_k = m s (k + 1) c_{k+1}, degree one less; exact in float64 for float32 or narrower
        # s and c (48 bits of product times an integer below 2^5).
        s = forward.scale
        q = [m * s * (k + 1) * c[k + 1] for k in range(forward.degree)]
        degree, factor = forward.degree - 1, derivative_factor(0, forward.variable)
    else:
        q = [(f + m * k) * c[k] + m * (k + 1) * c[k + 1] for k in range(len(c) - 1)]

    def template(fit_interval: float) -> PolySpec:
        return PolySpec.template(
            forward.target + "_grad",
            degree,
            fit_interval,
            clamp=forward.clamp,
            variable=forward.variable,
            factor=factor,
        )

    tpl = template(forward.fit_interval)
    if tpl.scale != forward.scale:
        # A forward with coefficients narrower than float32 (the paper tier's bfloat16) has
        # its scale rounded to that format: give the float32 derivative the fit interval
        # whose float32 scale is that same value, so both programs compute the same z.
        s = forward.scale
        tpl = template(2.0 / s if forward.variable == "u" else math.sqrt(2.0 / s))
        if tpl.scale != s:
            raise ValueError(f"no float32 fit interval gives the forward's scale {s!r}")
    return tpl.with_coefficients(q, round_to_fmt=True, method="derivative of forward")


# ---------------------------------------------------------------- measurements


def float32_errors(ps: PolySpec) -> dict:
    """max |replay - f| beyond half a float32 ulp of the result: inside the clamp on the grid
    (module constants) and the asymptote's ``tail_error`` beyond it."""
    L = F32(ps.clamp)
    u = np.arange(int(float(L) / GRID_STEP) + 1, dtype=F64) * GRID_STEP
    bits = L.view(np.int32)
    near = np.arange(bits - CLAMP_NEIGHBOURS, bits + 1, dtype=np.int32)
    pos = np.concatenate([u, near.view(F32).astype(F64)])
    x = np.concatenate([-pos, pos]).astype(F32)
    got = replay(ps, x).astype(F64)
    err = np.abs(got - ps.tgt.f(x.astype(F64))) - rounding.ulp_of(got, "float32") / 2
    i = int(np.argmax(err))
    window = max(float(err[i]), 0.0)
    tail = ps.tgt.tail_error(float(L))
    return {
        "max_abs_float32": max(window, tail),
        "window_max_abs_float32": window,
        "window_argmax": float(x[i]),
        "tail_error": tail,
        "grid": f"u = k 2^-11 on [0, L], fl(L) and the {CLAMP_NEIGHBOURS} float32 values below "
        "it, both signs; errors beyond half a float32 ulp of the result; beyond the clamp the "
        "asymptote's error, targets.Target.tail_error",
    }


def sixteen_bit_errors(ps: PolySpec, fmt: str, one_ulp_from: float) -> dict:
    """The exhaustive replay on every finite ``fmt`` input (``report.exhaustive``): where
    x >= ``one_ulp_from`` the ulp distance to the correctly rounded value (max, the inputs
    over 1 ulp, % correctly rounded); below it the absolute error beyond half an ulp of the
    result (max, the inputs over 3e-5) and the ulp distance too (how many within 1 ulp)."""
    fn = ps.target
    rep = report.exhaustive(lambda v: replay(ps, v), fn, fmt)
    exact = report.reference_table(fn, fmt)[2]
    valid = ~np.isnan(rep.want)
    x, ulps = rep.x, rep.ulps
    with np.errstate(invalid="ignore"):
        beyond = np.abs(rep.got - exact) - rounding.ulp_of(rep.got, fmt) / 2
    one = valid & (x >= one_ulp_from)
    out = {
        "one_ulp_region": f"x >= {one_ulp_from:g}",
        "inputs": int(one.sum()),
        "max_ulp": int(ulps[one].max()),
        "over_1_ulp": int((ulps[one] > 1).sum()),
        "pct_correctly_rounded": 100.0 * float(np.mean(ulps[one] == 0)),
        "max_abs_beyond_half_ulp": float(max(beyond[one].max(), 0.0)),
    }
    tail = valid & (x < one_ulp_from)
    if tail.any():
        out["tail"] = {
            "region": f"x < {one_ulp_from:g}",
            "inputs": int(tail.sum()),
            "max_abs_beyond_half_ulp": float(max(beyond[tail].max(), 0.0)),
            "over_abs_bound": int((beyond[tail] > ABS_BOUND).sum()),
            "max_ulp": int(ulps[tail].max()),
            "within_1_ulp": int((ulps[tail] <= 1).sum()),
        }
    return out


def measure(ps: PolySpec, forward: bool) -> dict:
    """float32 and 16-bit errors of one program; the 16-bit bounds apply to the forward, the
    backward's figures are over every input (no tier bound: reported as measured)."""
    fn = ps.target.removesuffix("_grad")
    start = ONE_ULP_FROM[fn] if forward else -math.inf
    return {
        "op_count": ps.op_count("horner", fma=True)["total"],
        "float32": float32_errors(ps),
        **{fmt: sixteen_bit_errors(ps, fmt, start) for fmt in FORMATS},
    }


def holds_tier(errors: dict) -> bool:
    """Whether a forward's measurements hold every bound of the tier."""
    ok = errors["float32"]["max_abs_float32"] <= ABS_BOUND
    for fmt in FORMATS:
        e = errors[fmt]
        ok &= e["over_1_ulp"] == 0 and e.get("tail", {}).get("over_abs_bound", 0) == 0
    return bool(ok)


# ---------------------------------------------------------------- the spec file


def _part(ps: PolySpec, c64, method: dict, forward: bool) -> dict:
    meta = {**method}
    if c64 is not None:
        meta["float64_coefficients"] = [float.hex(v) for v in c64]
    d = ps.with_coefficients(ps.coefficients, meta=meta).to_dict()
    return {**d, "errors": measure(ps, forward)}


def build_spec(function: str) -> dict:
    """Fit and measure the three programs of ``function`` with its ``spec.FAMILY_DEFAULTS``."""
    if function not in spec.FAMILY_DEFAULTS:
        raise ValueError(f"function must be one of {tuple(spec.FAMILY_DEFAULTS)}, got {function!r}")
    s = spec.FAMILY_DEFAULTS[function]
    irls = {"fit": "irls", "iters": s.iters, "points": s.points}
    fwd, c_fwd = fit_forward(function, s)
    direct, c_dir = fit_direct(function, s)
    parts = {
        "forward": _part(fwd, c_fwd, {**irls, "weights": "budget (family_programs)"}, True),
        "backward_direct": _part(direct, c_dir, irls, False),
        "backward_matched": _part(matched(fwd), None, {"fit": "derivative of forward"}, False),
    }
    d = parts["backward_direct"]["errors"]["float32"]["max_abs_float32"]
    m = parts["backward_matched"]["errors"]["float32"]["max_abs_float32"]
    default = "direct" if d <= m else "matched"
    return {
        **spec.envelope(function, "polynomial", "accurate", spec.FIT_ALL, spec.PARTS, default),
        "settings": {
            "degree": s.degree,
            "clamp": s.clamp,
            "variable": s.variable,
            "order": s.order,
        },
        "bounds": {
            "float32": f"max |error| <= {ABS_BOUND:g} beyond half an ulp of the result",
            "16-bit": f"within 1 ulp of the correctly rounded value for x >= "
            f"{ONE_ULP_FROM[function]:g}; below, |error| <= {ABS_BOUND:g} beyond half an ulp",
        },
        "holds_tier": holds_tier(parts["forward"]["errors"]),
        **parts,
    }


# ---------------------------------------------------------------- the paper tier

# The source paper's Table 2 programs, by function: (the forward's row, the backward's row or
# None). Each is ``table2.Row.same``: the paper's form at the (L_i, L_c) of table2's grid
# search, fitted by minimax with bfloat16 coefficients and a search among their neighbours.
# The paper has a derivative row for sigmoid only; tanh, SiLU and GELU take the matched
# derivative. GELU's rows (_table.GELU: the op gelu's approximate='none' and 'tanh') both run
# the paper's "GELU D5" form (x/2 + P5(x^2)) at its (L_i, L_c): fitted to erf's GELU, which the
# paper's row is, and to the tanh form (PAPER_TARGETS; the paper has no program for it).
PAPER_ROWS = {"sigmoid": ("sigmoid D3", "sigmoid' D4"), "tanh": ("tanh D4", None),
              "silu": ("SiLU D3", None), "gelu_none": ("GELU D5", None),
              "gelu_tanh": ("GELU D5", None)}  # fmt: skip
PAPER_TARGETS = {"gelu_tanh": "gelu_tanh"}  # the function whose row is fitted to another target
# The functions with a paper tier: the family's and GELU's rows (data/specs/<function>/paper.json).
PAPER_FUNCTIONS = tuple(
    fn
    for fn in (*FUNCTIONS, *(o.program for o in _table.GELU))
    if "paper" in _table.program_tiers(fn)
)
TIERS = _spec_names.FAMILY_TIERS


def build_paper_spec(function: str) -> dict:
    """The paper tier of ``function``: Table 2's programs, measured as the accurate tier's
    are (float32 over the whole line, every 16-bit input); no tier bound, their own errors.
    ``backward_direct`` is the paper's derivative row where it has one, else the matched
    derivative again (said in its method)."""
    from . import table2

    if function not in PAPER_ROWS:
        raise ValueError(f"function must be one of {tuple(PAPER_ROWS)}, got {function!r}")
    fwd_row, bwd_row = PAPER_ROWS[function]
    config = table2.get_row(fwd_row).same
    if function in PAPER_TARGETS:
        config = dataclasses.replace(config, target=PAPER_TARGETS[function])
    fwd = config.fit("remez+search")
    match = matched(fwd)
    direct = match if bwd_row is None else table2.get_row(bwd_row).same.fit("remez+search")
    meta = {"row": fwd_row, "fit": "remez+search (table2.Row.same)"}
    if function in PAPER_TARGETS:
        meta["target"] = f"{PAPER_TARGETS[function]} (the row's form and (L_i, L_c), refitted)"
    d_meta = (
        {"row": None, "fit": "the paper has no row: the matched derivative"}
        if bwd_row is None
        else {"row": bwd_row, "fit": "remez+search (table2.Row.same)"}
    )
    parts = {
        "forward": _part(fwd, None, meta, True),
        "backward_direct": _part(direct, None, d_meta, False),
        "backward_matched": _part(match, None, {"fit": "derivative of forward"}, False),
    }
    d = parts["backward_direct"]["errors"]["float32"]["max_abs_float32"]
    m = parts["backward_matched"]["errors"]["float32"]["max_abs_float32"]
    # No derivative row: the direct part is the matched one; call it by that name.
    default = "direct" if bwd_row is not None and d <= m else "matched"
    return {
        **spec.envelope(function, "polynomial", "paper", spec.FIT_ALL, spec.PARTS, default),
        "rows": {"forward": fwd_row, "backward": bwd_row},
        "bounds": {"float32": "measured (the paper's programs: no tier bound)"},
        "holds_tier": holds_tier(parts["forward"]["errors"]),
        **parts,
    }


def load(function: str, root: str | Path | None = None, tier: str = "accurate") -> dict:
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
    return spec.load(spec.spec_path(function, tier, root=root), tier)


def programs(doc: dict) -> dict[str, PolySpec]:
    """The three PolySpecs of a spec document, by part."""
    return {name: PolySpec.from_dict(doc[name]) for name in spec.PARTS}


# ---------------------------------------------------------------- the ops, replayed

# The ops of the family and the function whose programs each runs (kernels/include/turbogelu/
# family.h's TG_FAMILY_OPS): softcap is tanh's programs scaled, swiglu SiLU's gated.
OPS = {o.name: o.program for o in _table.OPS if o.program not in _table.OWN_PROGRAMS}


def _derivative(doc: dict, backward: str) -> PolySpec:
    if backward not in ("default", "direct", "matched"):
        raise ValueError(f"backward must be 'default', 'direct' or 'matched', got {backward!r}")
    if backward == "default":
        backward = doc["default_backward"]
    return PolySpec.from_dict(doc[f"backward_{backward}"])


def _f32(v) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.asarray(v, F32)


def cap_constants(cap: float) -> tuple[np.float32, np.float32]:
    """softcap's (cap, 1/cap) as the kernels hold them: cap rounded to float32, then its
    reciprocal rounded to float32."""
    c = F32(cap)
    return c, F32(1.0) / c


def replay_forward(
    op: str, *inputs, cap: float | None = None, doc: dict | None = None, tier: str = "accurate"
):
    """The float32 result of the forward op on float32 inputs, operation for operation as the
    kernels (family_eval.h): f(x), cap * f(x * fl(1/cap)), or f(a) * b. 16-bit kernels round
    this once to their format."""
    doc = doc if doc is not None else load(OPS[op], tier=tier)
    f = PolySpec.from_dict(doc["forward"])
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "swiglu":
            a, b = (_f32(v) for v in inputs)
            return (replay(f, a).astype(F32) * b).astype(F32)
        (x,) = (_f32(v) for v in inputs)
        if op == "softcap":
            c, inv = cap_constants(cap)
            return (c * replay(f, x * inv).astype(F32)).astype(F32)
        return replay(f, x).astype(F32)


def replay_backward(
    op: str,
    grad,
    *inputs,
    cap: float | None = None,
    backward: str = "default",
    doc=None,
    tier: str = "accurate",
):
    """The float32 backward: grad * f'(x) (softcap: f'(x * fl(1/cap))); swiglu returns the
    pair (fl(grad * b) * f'(a), grad * f(a))."""
    doc = doc if doc is not None else load(OPS[op], tier=tier)
    d = _derivative(doc, backward)
    g = _f32(grad)
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "swiglu":
            a, b = (_f32(v) for v in inputs)
            f = PolySpec.from_dict(doc["forward"])
            ga = ((g * b).astype(F32) * replay(d, a).astype(F32)).astype(F32)
            return ga, (g * replay(f, a).astype(F32)).astype(F32)
        (x,) = (_f32(v) for v in inputs)
        if op == "softcap":
            x = (x * cap_constants(cap)[1]).astype(F32)
        return (g * replay(d, x).astype(F32)).astype(F32)


# ---------------------------------------------------------------- scan


def scan(
    function: str, degrees, clamp: float, variable: str = "u", order: str = "generic"
) -> list[dict]:
    """The forward fitted at each degree with one clamp (``FamilySettings`` of 35 IRLS
    iterations on 20,000 points): float32 window and tail errors, the 16-bit failures; how the
    defaults were chosen, and SiLU's measurement (module docstring)."""
    rows = []
    for d in degrees:
        s = spec.FamilySettings(d, clamp, variable, order, iters=35, points=20000)
        ps, c64 = fit_forward(function, s)
        u = np.linspace(0.0, float(F32(clamp)), 20000)
        e64 = float(np.max(np.abs(ps.basis(u) @ np.array(c64) - ps.tgt.residual(u))))
        errors = measure(ps, True)
        rows.append(
            {
                "degree": d,
                "clamp": clamp,
                "variable": variable,
                "order": order,
                "op_count": errors["op_count"],
                "float64_fit_error": e64,
                "float32_window": errors["float32"]["window_max_abs_float32"],
                "tail": errors["float32"]["tail_error"],
                **{
                    f"{fmt}_over_1_ulp": errors[fmt]["over_1_ulp"]
                    + errors[fmt].get("tail", {}).get("over_abs_bound", 0)
                    for fmt in FORMATS
                },
                "holds_tier": holds_tier(errors),
            }
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog=COMMAND, description="Fit the accurate tier's program of an activation function."
    )
    ap.add_argument("function", choices=dict.fromkeys((*FUNCTIONS, *PAPER_FUNCTIONS)))
    ap.add_argument("--tier", choices=TIERS, default="accurate", help="which tier's spec")
    ap.add_argument("--out", type=Path, help="write here instead of data/specs/<function>/")
    ap.add_argument(
        "--force", action="store_true", help="overwrite a differing committed spec (fit --all only)"
    )
    ap.add_argument("--scan", metavar="D0-D1", help="print a degree scan instead of fitting")
    ap.add_argument("--clamp", type=float, help="the scan's clamp")
    ap.add_argument("--variable", default="u", help="the scan's variable: u (|x|) or y (x^2)")
    ap.add_argument("--order", default="generic", help="the scan's operation order")
    args = ap.parse_args(argv)
    if args.scan:
        lo, _, hi = args.scan.partition("-")
        for row in scan(
            args.function, range(int(lo), int(hi or lo) + 1), args.clamp, args.variable, args.order
        ):
            print(row)
        return 0
    if args.function not in FUNCTIONS and args.tier != "paper":
        ap.error(f"{args.function} has only a paper tier here (its accurate programs: fit --all)")
    build = build_spec if args.tier == "accurate" else build_paper_spec
    text = spec.dumps(build(args.function), args.tier)
    out = args.out if args.out is not None else spec.spec_path(args.function, args.tier)
    return spec.write_reported(out, text, force=args.force)


if __name__ == "__main__":
    sys.exit(main())
