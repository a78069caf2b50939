"""The upper bound of a minimum-degree case (``mindegree.py``): float32 coefficients whose
exhaustive replay meets the criterion on every non-excluded input (``find_feasible``), and the
check that decides it.

Upper bound: a verified polynomial (``find_feasible``)
-------------------------------------------------------
The LP maximizing the slack on the tight rows (in units of the Horner bound of a reference
fit plus the coefficient rounding), the coefficients rounded to float32 one at a time from
the highest order down with the LP re-solved for the remaining ones after each, then a seeded
random search over float32 neighbours (up to 2 ulps per coefficient) if some window inputs
still fail, and a few rounds that tighten the failing inputs' rows by the observed excess.
The result counts only if the exhaustive float32 replay of every finite input meets the
criterion on every non-excluded input (``check``); ``polyspec.replay`` of the PolySpec gives
the same bits.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from . import replay, report, rounding, targets
from .mindegree_problem import Problem
from .mindegree_rows import (
    FAMILIES,
    U32,
    Rows,
    cheb2mono,
    first_row_weights,
    min_widening,
    program_parts,
    program_scale,
    row_weights,
    rows,
)

F32 = np.float32
F64 = np.float64


def family_program(coeffs, family: str, scale: float, clamp: float) -> replay.Program:
    """The family's float32 program (``mindegree``'s docstring) as ``replay`` runs it: u = |x|,
    y = fl(u*u), z = fma(v, scale, -1), P(z) by Horner with FMA, out = fma(m, P, fl(x/2)) for
    |x| <= clamp, ReLU (x or -0.0) beyond; v = m = y (even family) or u (full family). The
    "generic" order of the matching PolySpec."""
    var, factor = FAMILIES[family]
    return replay.Program(
        coefficients=tuple(coeffs),
        reduction="x/2 + even",
        parity="even",
        variable=var,
        factor=factor,
        scale=scale,
        clamp=clamp,
        asymptote=targets.ASYMPTOTES["relu"],
    )


def replay32(x32, coeffs, family: str, scale: float, clamp: float) -> np.ndarray:
    """The program in float32 at the inputs ``x32``. Equals polyspec.replay of the matching
    PolySpec bit for bit (tests/test_mindegree.py)."""
    prog = family_program(coeffs, family, scale, clamp)
    return replay.run(prog, np.asarray(x32, F32)).astype(F32)


def check(prob: Problem, out32) -> dict:
    """ulp errors of float32 outputs (rounded to the format) against the correctly rounded
    values: max over the non-excluded inputs (those judged by absolute error left out of the
    max, their largest absolute error given apart), failures (an output outside the input's
    acceptable values), and how many excluded inputs are acceptable anyway."""
    got = report.round_output(np.asarray(out32, F32), prob.fmt)
    bad = np.isnan(got)
    # one ordered-integer conversion serves both the ulp distance and the [jlo, jhi] test
    # (ulp_distance is the same difference, and it refuses NaN)
    j = np.zeros(got.shape, np.int64)
    j[~bad] = rounding.to_ordered(got[~bad], prob.fmt)
    d = np.full(got.shape, np.iinfo(np.int64).max)
    d[~bad] = np.abs(j[~bad] - rounding.to_ordered(prob.cr[~bad], prob.fmt))
    ok = ~bad & (prob.jlo <= j) & (j <= prob.jhi)
    inc = ~prob.excluded
    fail = inc & ~ok
    head = inc & ~prob.by_abs
    out = {
        "max_ulp": int(d[head].max()) if head.any() else 0,
        "checked": int(inc.sum()),
        "failures": int(fail.sum()),
        "fail_idx": np.flatnonzero(fail),
        "excluded_within": int((prob.excluded & ok).sum()),
        "excluded_max_ulp": int(d[prob.excluded].max()) if prob.excluded.any() else 0,
    }
    if prob.by_abs.any():
        with np.errstate(invalid="ignore"):
            err = np.abs(got[prob.by_abs] - prob.exact[prob.by_abs])
        out["by_abs_max_error"] = float(np.nanmax(np.where(bad[prob.by_abs], np.inf, err)))
    return out


@dataclass
class Feasible:
    """Verified float32 coefficients (``find_feasible``)."""

    coefficients: tuple  # float32 values as floats, c_0 first
    margin: float  # the LP's slack before rounding (units of the row weights)
    search_candidates: int  # coefficient vectors the random search evaluated
    check: dict  # ``check`` of the exhaustive replay
    seconds: float


def _window_data(prob: Problem, family: str, scale: float):
    idx = np.flatnonzero(prob.window)
    z, m = program_parts(prob.x32[idx], family, scale)
    return {
        "idx": idx,
        "z": z.astype(F32),
        "m": m.astype(F32),
        "h": (prob.x32[idx] * F32(0.5)).astype(F32),
        "lo": prob.lo[idx],
        "hi": prob.hi[idx],
    }


def _violations(W: dict, sel, C) -> np.ndarray:
    """Normalized violations (o - hi or lo - o, over hi - lo; <= 0 inside) of the window
    inputs ``sel`` for each column of float32 coefficients C (n, k): shape (len(sel), k)."""
    z = W["z"][sel][:, None]
    C = np.asarray(C, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        p = replay.poly32(z, [row[None, :] for row in C])
        o = replay.fma32(W["m"][sel][:, None], p, W["h"][sel][:, None]).astype(F64)
        lo, hi = W["lo"][sel][:, None], W["hi"][sel][:, None]
        width = np.maximum(hi - lo, 1e-300)
        v = np.maximum(o - hi, lo - o) / width
    return np.where(np.isnan(v), np.inf, v)


def _score(v: np.ndarray):
    """(failures, total violation, worst) per column."""
    return (v > 0).sum(axis=0), np.clip(v, 0, None).sum(axis=0), v.max(axis=0)


def _ulp_steps(c: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """float32 values ``steps`` (integer array, same leading shape) ulps away from c."""
    o = rounding.to_ordered(np.asarray(c, F32), "float32")
    return rounding.from_ordered(o[:, None] + steps, "float32").astype(F32)


def _search(
    W: dict,
    c32: np.ndarray,
    seed: int = 0,
    batches: int = 40,
    batch: int = 256,
    radius: int = 2,
    active: int = 3000,
):
    """Search over float32 neighbours of the coefficients for a vector that meets every
    window input: batches of random offsets (up to ``radius`` ulps per coefficient) around
    the best vector so far, scored by (failures, total violation) on the window inputs
    closest to their interval ends; a candidate with no failure there is checked on the whole
    window. Deterministic (fixed seed). Returns (coefficients, candidates tried)."""
    rng = np.random.default_rng(seed)
    c = np.asarray(c32, F32).copy()
    n = c.size
    allsel = np.arange(W["z"].size)
    tried = 0
    v_all = _violations(W, allsel, c[:, None])[:, 0]
    if not (v_all > 0).any():
        return c, tried
    sel = np.argsort(-v_all)[: min(active, v_all.size)]
    f, tot, _ = _score(_violations(W, sel, c[:, None]))
    best = (int(f[0]), float(tot[0]))
    for _ in range(batches):
        steps = rng.integers(-radius, radius + 1, size=(n, batch))
        steps[:, 0] = 0
        C = _ulp_steps(c, steps)
        tried += batch
        f, tot, _ = _score(_violations(W, sel, C))
        order = np.lexsort((tot, f))
        for j in order[:8]:
            if f[j] > 0:
                break
            v = _violations(W, allsel, C[:, j : j + 1])[:, 0]
            if not (v > 0).any():
                return C[:, j].copy(), tried
            new = np.setdiff1d(np.flatnonzero(v > 0), sel)
            sel = np.concatenate([sel, new])
        j = order[0]
        if (int(f[j]), float(tot[j])) < best:
            c, best = C[:, j].copy(), (int(f[j]), float(tot[j]))
    return c, tried


def find_feasible(
    prob: Problem, family: str, fit_interval: float, degree: int, rounds: int = 6, seed: int = 0
):
    """Float32 coefficients whose replay meets the criterion on every non-excluded input, or
    None.

    Each round: the max-slack LP over the tight rows (slack in units of the Horner error bound
    of a reference fit plus the coefficient rounding, ``row_weights``), the coefficients rounded
    one at a time from the highest order down with the LP re-solved for the lower ones after
    each, then a seeded random search over float32 neighbours (``_search``) if some window
    inputs still fail. Inputs that still fail get their rows tightened by the observed excess
    (plus a tenth of the row's weight) for the next round. Success is decided by the
    exhaustive replay (``check``) only.
    """
    t0 = time.perf_counter()
    n = degree + 1
    r = rows(prob, family, fit_interval, "tight")
    if r.impossible.size:
        return None
    s = program_scale(family, fit_interval)
    M = cheb2mono(n)
    wu, wl = first_row_weights(r, n)
    _, a0, _ = min_widening(r, n, wu, wl)
    if a0 is None:
        return None
    cref = M @ a0
    rnd = lambda z: U32 * np.polynomial.polynomial.polyval(np.abs(z), np.abs(cref))  # noqa: E731
    hu, hl = row_weights(r, cref)
    wu, wl = hu + rnd(r.z_up), hl + rnd(r.z_lo)
    W = _window_data(prob, family, s)
    extra_u = np.zeros(r.z_up.size)
    extra_l = np.zeros(r.z_lo.size)
    margin = math.nan
    tried = 0
    for rnd_i in range(rounds):
        rr = Rows(
            "tight", r.z_up, r.ph - extra_u, r.i_up, r.z_lo, r.pl + extra_l, r.i_lo, r.impossible
        )
        s_star, a, _ = min_widening(rr, n, wu, wl, a0)
        if a is None:
            break
        if rnd_i == 0:
            margin = -s_star
        fixed = {}
        for k in range(degree, -1, -1):
            _, ak, _ = min_widening(rr, n, wu, wl, a, fixed)
            if ak is None:
                break
            a = ak
            fixed[k] = float(rounding.round_to_format(M[k] @ a, "float32"))
        c32 = rounding.round_to_format(
            np.array([fixed.get(k, M[k] @ a) for k in range(n)]), "float32"
        )
        c32, t = _search(W, c32, seed=seed + rnd_i)
        tried += t
        out = replay32(prob.x32, c32, family, s, prob.clamp)
        ck = check(prob, out)
        if ck["failures"] == 0:
            return Feasible(
                tuple(float(v) for v in c32), margin, tried, ck, time.perf_counter() - t0
            )
        fi = ck["fail_idx"]
        z, m = program_parts(prob.x32[fi], family, s)
        o = out[fi].astype(F64)
        for zi, mi, oi, hi_, lo_ in zip(z, m, o, prob.hi[fi], prob.lo[fi], strict=True):
            if mi == 0 or not np.isfinite(oi):
                continue
            if oi > hi_:
                g = np.searchsorted(r.z_up, zi)
                if g < r.z_up.size and r.z_up[g] == zi:
                    extra_u[g] += (oi - hi_) / mi + 0.1 * wu[g]
            else:
                g = np.searchsorted(r.z_lo, zi)
                if g < r.z_lo.size and r.z_lo[g] == zi:
                    extra_l[g] += (lo_ - oi) / mi + 0.1 * wl[g]
    return None
