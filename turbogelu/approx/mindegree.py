"""Minimum polynomial degrees, proven: the smallest P for which a float32 ``x/2 + p(|x|)``
kernel is within 1 ulp of the correctly rounded value (or correctly rounded) on every
bfloat16 / float16 input outside a listed set of inputs no such kernel can be relied on for.

numpy / scipy (HiGHS) / mpmath / fractions only; no torch.

The program (what "evaluated in float32" means here)
----------------------------------------------------
For a target f of the "x/2 + even" targets (gelu, gelu_tanh, silu; ``targets.py``) and every
finite input x of the format (as float32), with u = |x|:

* family ``"even"`` (TurboGeLU's form, PolySpec variable "y", factor 2):
  ``y = fl(u*u)``, ``z = fma(y, s, -1)``, ``s = fl(2 / L^2)``, ``out = fma(y, P(z), fl(x/2))``:
  p(u) = u^2 P(u^2), a polynomial of degree 2d + 2 in u with only even powers;
* family ``"full"`` (PolySpec variable "u", factor 1): ``z = fma(u, s, -1)``, ``s = fl(2/L)``,
  ``out = fma(u, P(z), fl(x/2))``: p(u) = u P(u), degree d + 1 in u, every power but u^0 (a
  constant term cannot vanish at x -> 0 in float32 arithmetic: fl(x/2) + c is wrong for tiny x
  unless c is 0 to about 2^-140);

with ``P(z) = sum_{k<=d} c_k z^k`` by Horner's rule with fused multiply-adds (c_k float32),
z in [-1, 1] over the window, ``|x| <= L_c`` the window (the clamp) and the ReLU asymptote
(x, or -0.0) beyond it; L, the fit interval that sets the evaluation variable, is L_c unless
given. The result is rounded to the format (nearest even), as the report does. This is
exactly ``polyspec.replay`` of the matching PolySpec (program "generic", shift, float32;
``replay32`` runs the same ``replay.Program`` without a PolySpec, so for any target, and the
results check the two give the same bits). "Degree" below is d, the degree of P in z;
``MinDegreeResult.degree_in_u`` is the degree of p in |x|.

The parts
---------
``mindegree_problem.py``: the inputs, the acceptable outputs, the excluded inputs and the
clamp. ``mindegree_rows.py``: the LP rows and the float32 Horner error bound.
``mindegree_proof.py``: the lower bound (a degree proven infeasible, with exact certificates).
``mindegree_search.py``: the upper bound (verified float32 coefficients). This module: the
driver that walks up the degrees (``min_degree``) and the table (``render_markdown``); it
gathers the public names of the parts.

Between the lower and the upper bound: a degree whose real-arithmetic LP is feasible
(s* < 0) but within the float32 error bound cannot be proven infeasible by this argument,
and the search may not find float32 coefficients for it; ``MinDegreeResult.lower_bound <
degree`` then reports the gap instead of a proven minimum. Such gaps come from inputs whose
acceptable interval is a few float32 ulps wide (the tail's edge); the default N = 4 excludes
them and closes every gap of the GELU table.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from . import polyspec, targets
from .mindegree_problem import (
    BOUNDED_TAIL,
    CLASSES,
    CRITERIA,
    NEAR_TIE_ULPS,
    Problem,
    acceptable_values,
    class_counts,
    exclusion_classes,
    interval_of_values,
    problem,
    rounding_interval,
    tail_reachability,
    within_abs,
)
from .mindegree_proof import Certificate, Infeasibility, prove_infeasible
from .mindegree_rows import FAMILIES, Rows, exact_row, horner_bound, program_scale, rows
from .mindegree_search import Feasible, check, family_program, find_feasible, replay32

__all__ = [
    "BOUNDED_TAIL",
    "CLASSES",
    "CRITERIA",
    "FAMILIES",
    "NEAR_TIE_ULPS",
    "Certificate",
    "Feasible",
    "Infeasibility",
    "MinDegreeResult",
    "Problem",
    "Rows",
    "acceptable_values",
    "check",
    "class_counts",
    "exact_row",
    "exclusion_classes",
    "family_program",
    "find_feasible",
    "horner_bound",
    "interval_of_values",
    "min_degree",
    "problem",
    "program_scale",
    "prove_infeasible",
    "render_markdown",
    "replay32",
    "rounding_interval",
    "rows",
    "tail_reachability",
    "within_abs",
]


@dataclass
class MinDegreeResult:
    """The minimum degree of one (target, format, family, criterion) case.

    ``degree``: the degree of P (in z) of the verified float32 polynomial (None: none found up
    to ``max_degree``); ``degree_in_u``: its degree as a polynomial in |x| (even: 2d + 2,
    full: d + 1); ``lower_bound``: the smallest degree not proven infeasible (every degree
    below it is proven infeasible for the float32 program); ``proven_minimum``: the two
    agree. ``lower``: the evidence for degree - 1 (or for the highest degree tried).
    ``coefficients`` / ``coefficients_hex``: c_0 .. c_d (float32); ``clamp`` (L_c),
    ``fit_interval`` (L) and ``scale`` (s) define the program; ``spec``: the same as a
    PolySpec (None for targets outside ``targets.TARGETS``). ``verification``: the exhaustive
    replay (``check``: max ulp and failures over the non-excluded inputs, how many excluded
    inputs are within the criterion anyway), the LP margin, the search's candidates, and
    whether ``polyspec.replay`` gives the same bits. ``tried``: per degree, the LP's s*, the
    certified s_lb, alpha, beta, the real-arithmetic s_lb, what was proven or found.
    ``classes``: ``class_counts``; ``tail_reachability``: see that function; ``timings``:
    seconds for the problem set-up, the proofs, the fits and in total.
    """

    target: str
    fmt: str
    family: str
    criterion: str
    form: str
    degree: int | None
    degree_in_u: int | None
    lower_bound: int
    proven_minimum: bool
    clamp: float
    fit_interval: float
    scale: float
    coefficients: tuple
    coefficients_hex: tuple
    verification: dict
    lower: Infeasibility | None
    tried: list
    classes: dict
    tail_reachability: dict
    near_tie_ulps: float
    timings: dict
    spec: object = None

    def summary(self) -> str:
        rng = (
            f"{self.degree}"
            if self.proven_minimum
            else f"{self.lower_bound}..{self.degree if self.degree is not None else '?'}"
        )
        return (
            f"{self.target} {self.fmt} {self.criterion} {self.family}: degree {rng} "
            f"(u-degree {self.degree_in_u}), clamp {self.clamp:g}"
        )


def _form(family: str) -> str:
    if family == "even":
        return "x/2 + y P(z), y = fl(u*u), z = fma(y, fl(2/L^2), -1)"
    return "x/2 + u Q(z), z = fma(u, fl(2/L), -1)"


def _u_degree(family: str, d: int) -> int:
    return 2 * d + 2 if family == "even" else d + 1


def min_degree(
    target="gelu",
    fmt="bfloat16",
    family="even",
    criterion="faithful",
    max_degree=12,
    *,
    near_tie_ulps=NEAR_TIE_ULPS,
    max_abs=None,
    fit_interval=None,
    start_degree=0,
    rounds=6,
) -> MinDegreeResult:
    """The smallest degree of P whose float32 program meets ``criterion`` on every
    non-excluded input, with the proof that the degree below is infeasible (the docstrings of
    this module and its parts). Degrees from ``start_degree`` up: each is first attacked by
    ``prove_infeasible``; if that fails, ``find_feasible`` looks for float32 coefficients.

    ``target``: a name of ``targets.TARGETS`` with reduction "x/2 + even" (gelu, gelu_tanh,
    silu) or such a ``targets.Target``; ``fmt``: "bfloat16" or "float16"; ``family``: "even"
    or "full"; ``criterion``: "faithful" (within 1 ulp of the correctly rounded value),
    "correct" or "bounded" (faithful for x >= -3, an absolute bound below: mindegree_problem);
    ``near_tie_ulps``: N of the near-tie class; ``max_abs``: only the inputs with |x| <=
    max_abs (a target on a bounded domain, e.g. the tests' toy polynomial);
    ``fit_interval``: L of the evaluation variable (default: the clamp); ``rounds``: the
    search rounds of ``find_feasible``.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {tuple(FAMILIES)}, got {family!r}")
    t0 = time.perf_counter()
    prob = problem(target, fmt, criterion, near_tie_ulps, max_abs)
    L = prob.clamp if fit_interval is None else float(fit_interval)
    if not L > 0:
        raise ValueError("the asymptote serves every input: no polynomial needed")
    s = program_scale(family, L)
    tried = []
    evidence = {}
    lower_bound = 0
    found = None
    proof_s = fit_s = 0.0
    for d in range(start_degree, max_degree + 1):
        ev = prove_infeasible(prob, family, L, d)
        evidence[d] = ev
        proof_s += ev.seconds
        entry = {
            "degree": d,
            "s_star": ev.s_star,
            "s_lb": ev.s_lb,
            "alpha": ev.alpha,
            "beta": ev.beta,
            "proven_infeasible": ev.proven,
            "exact_s_lb": ev.exact_s_lb,
            "exact_infeasible": ev.exact_proven,
            "found": False,
            "note": ev.note,
            "seconds": ev.seconds,
        }
        tried.append(entry)
        if ev.proven:  # a lower degree is this degree with zero leading coefficients
            lower_bound = d + 1
            continue
        t1 = time.perf_counter()
        f = find_feasible(prob, family, L, d, rounds=rounds)
        fit_s += time.perf_counter() - t1
        entry["seconds"] += time.perf_counter() - t1
        if f is not None:
            entry["found"] = True
            found = (d, f)
            break
    if found is not None:
        d, f = found
        lower = evidence.get(d - 1)
        coeffs = f.coefficients
        out = replay32(prob.x32, coeffs, family, s, prob.clamp)
        verification = {k: v for k, v in f.check.items() if k != "fail_idx"}
        verification["lp_margin"] = f.margin
        verification["search_candidates"] = f.search_candidates
        spec = None
        if targets.TARGETS.get(prob.target.name) is prob.target:
            var, factor = FAMILIES[family]
            spec = polyspec.PolySpec(
                target=prob.target.name,
                variable=var,
                factor=factor,
                shift=True,
                degree=d,
                fit_interval=L,
                clamp=prob.clamp,
                fmt="float32",
                coefficients=coeffs,
                method="mindegree (max-slack LP, sequential float32 rounding, search)",
                program="generic",
                meta={"criterion": criterion, "format": fmt, "near_tie_ulps": prob.near_tie_ulps},
            )
            ref = polyspec.replay(spec, prob.x32)
            verification["polyspec_replay_identical"] = bool(
                np.array_equal(ref.view(np.uint32), out.view(np.uint32))
            )
        degree, u_deg = d, _u_degree(family, d)
    else:
        coeffs, verification, spec, degree, u_deg = (), {}, None, None, None
        lower = evidence.get(max_degree)
    return MinDegreeResult(
        target=prob.target.name,
        fmt=fmt,
        family=family,
        criterion=criterion,
        form=_form(family),
        degree=degree,
        degree_in_u=u_deg,
        lower_bound=lower_bound,
        proven_minimum=degree is not None and lower_bound == degree,
        clamp=prob.clamp,
        fit_interval=L,
        scale=s,
        coefficients=tuple(coeffs),
        coefficients_hex=tuple(polyspec._hex(c, "float32") for c in coeffs),
        verification=verification,
        lower=lower,
        tried=tried,
        classes=class_counts(prob),
        tail_reachability=tail_reachability(prob),
        near_tie_ulps=prob.near_tie_ulps,
        timings={
            "problem": prob.seconds,
            "proofs": proof_s,
            "fits": fit_s,
            "total": time.perf_counter() - t0,
        },
        spec=spec,
    )


# ---------------------------------------------------------------- output


def _g(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.3g}"


def _proof_cell(r: MinDegreeResult) -> str:
    ev = r.lower
    if r.degree is None or r.degree == 0:
        return "- (degree 0)" if r.degree == 0 else "-"
    if ev is None:
        return "not attempted"
    if ev.proven:
        f32 = f"float32: s_lb {_g(ev.s_lb)} > {_g(ev.alpha / (1 - ev.beta))}"
    elif ev.certificate_ok and ev.s_lb <= 0:
        f32 = f"open: real LP feasible (s* {_g(ev.s_star)})"
    else:
        f32 = f"open: {ev.note or 'bound too weak'} (s_lb {_g(ev.s_lb)})"
    real = f"real: s_lb {_g(ev.exact_s_lb)}" + ("" if ev.exact_proven else " (not infeasible)")
    return f"{f32}; {real}"


def render_markdown(results) -> str:
    """Markdown: one row per result (minimum degree, the proof for the degree below, clamp,
    excluded inputs per class, verification, time), then the coefficients."""
    results = [results] if isinstance(results, MinDegreeResult) else list(results)
    lines = [
        "| target | format | criterion | family | degree of P (in \\|x\\|) | degree − 1 infeasible "
        "(units of the Horner bound) | clamp | excluded: tail / tie / near-tie (N) | "
        "verified: max ulp, inputs | time |",
        "|---|---|---|---|---:|---|---:|---|---|---:|",
    ]
    for r in results:
        if r.degree is None:
            deg = f">= {r.lower_bound} (none found)"
        elif r.proven_minimum:
            deg = f"**{r.degree}** ({r.degree_in_u})"
        else:
            deg = f"{r.lower_bound}..{r.degree} ({r.degree_in_u})"
        c = r.classes
        exc = (
            f"{c['tail']['excluded']} / {c['tie']['excluded']} / "
            f"{c['near_tie']['excluded']} ({r.near_tie_ulps:g})"
        )
        v = r.verification
        ver = f"{v['max_ulp']}, {v['checked']}" if v else "-"
        lines.append(
            f"| {r.target} | {r.fmt} | {r.criterion} | {r.family} | {deg} | {_proof_cell(r)} | "
            f"{r.clamp:g} | {exc} | {ver} | {r.timings['total']:.1f} s |"
        )
    lines += [
        "",
        "| case | form | fit interval | coefficients c_0 .. c_d (float32) |",
        "|---|---|---:|---|",
    ]
    for r in results:
        if r.degree is None:
            continue
        lines.append(
            f"| {r.target} {r.fmt} {r.criterion} {r.family} | {r.form} | {r.fit_interval:g} | "
            f"{', '.join(r.coefficients_hex)} |"
        )
    return "\n".join(lines) + "\n"
