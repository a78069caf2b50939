"""The lower bound of a minimum-degree case (``mindegree.py``): a proof, with exact
certificates, that no polynomial of a degree works (``prove_infeasible``), on the rows and LPs
of ``mindegree_rows.py``.

Lower bound: degree d infeasible (``prove_infeasible``)
--------------------------------------------------------
Float32 error of P: with r_j(z) = sum_{k>=j} c_k z^(k-j) (Horner's partial values), R_j the
same with |c_k|, |z|, u = 2^-24, gamma_d = d u / (1 - d u), each FMA's error is at most
u |its exact value| + 2^-150 (subnormal results), so
``|P^(z) - P(z)| <= sigma(c, z) = u sum_{j<d} |z|^j (|r_j(z)| + gamma_d R_j(z)) + eta``,
eta = d zeta^d 2^-149, zeta = max(1, max|z|) (a success has finite outputs, so nothing
overflowed). Let F_s be the real coefficient vectors with pl_i - s w_i <= P(z_i) <= ph_i + s w_i
on every row, for positive row weights w (the shape of sigma for a reference fit). A
successful c lies in F_{s(c)}, s(c) = max_i sigma(c, z_i) / w_i. Then:

1. s_lb: an exact lower bound on min{s : F_s nonempty} (LP; certificate below);
2. coefficient bounds: for every s and c in F_s, |c_k - c~_k| <= D0_k + s D1_k (LPs
   maximizing +-c_k over F_s, exact dual certificates; valid for every s by weak duality);
3. hence s(c) <= alpha + beta s(c): alpha = max_i (sigma(c~, z_i) + B_i(D0) + eta) / w_i,
   beta = max_i B_i(D1) / w_i, B_i(D) = u (1 + gamma_d) sum_{j<d} |z_i|^j
   sum_{k>=j} D_k zeta^(k-j) (from |r_j - r~_j| <= sum_{k>=j} |c_k - c~_k| |z|^(k-j));
4. if beta < 1 and alpha / (1 - beta) < s_lb, a successful c would satisfy
   s_lb <= s(c) <= alpha / (1 - beta) < s_lb: no float32 coefficient vector (indeed no real
   one) of degree d works, and neither does any lower degree (Horner over leading zero
   coefficients is the lower degree's program: fma(0, z, c) = c).

s is measured in units of w, so s_lb says how many Horner error bounds the best polynomial
misses by (alpha is ~1, beta ~1e-4..0.3 in practice). The real-arithmetic proof is step 1
on the "exact" rows: exact_s_lb > 0 means no polynomial of that degree in u^2 (resp. in u),
evaluated exactly and rounded once, meets the criterion on the window; it depends on neither
the evaluation variable nor the program.

Certificates: HiGHS (dual simplex, interior point with crossover as a fallback) finds the
optimum on float64 data scaled per row; its dual support (d + 2 rows for step 1, d + 1 for
each bound in step 2, completed from the smallest slacks at a degenerate vertex) is then
solved again in exact rational arithmetic (``fractions``) on the exact row data (the float32 z
the program computes, the exact interval ends and m), and the multipliers are checked to be
nonnegative: sum sign_i mu_i (1, z_i, .., z_i^d) = 0 (resp. = +-e_k) exactly, so the bound
follows by weak duality whatever the LP's rounding was. ``Infeasibility.certificate`` /
``exact_certificate`` list the inputs, sides and multipliers: d + 2 inputs whose intervals no
polynomial of degree d threads (tests/test_mindegree.py re-checks one from scratch).

What is proven and what is assumed: the certificates are exact; alpha and beta are float64
sums over the rows with a relative safety factor 1 + 1e-9 (their rounding error is ~1e-15);
the reference CR(x) is the project's (float64 + mpmath); z_i come from the tested float32
FMA emulation (``replay.fma32``). The float32 proof is for the stated program and scale
s = fl(2/L^2) (resp. fl(2/L)) with L = L_c; the exact proof holds for every program.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .mindegree_problem import Problem
from .mindegree_rows import (
    U32,
    Rows,
    cheb2mono,
    exact_row,
    first_row_weights,
    horner_bound,
    horner_gamma,
    linprog_highs,
    min_widening,
    row_weights,
    rows,
    scaled_rows,
)

F64 = np.float64
SAFETY = 1.0 + 1e-9


# ---------------------------------------------------------------- exact linear algebra


def _solve_exact(A: list[list[Fraction]], b: list[Fraction], guess: list[float]):
    """A solution of A w = b in rationals: Gaussian elimination, free unknowns fixed at the
    (rationalized) guess; None when inconsistent."""
    m, n = len(A), len(A[0])
    M = [row[:] + [bi] for row, bi in zip(A, b, strict=True)]
    piv_cols = []
    r = 0
    for col in range(n):
        p = next((i for i in range(r, m) if M[i][col] != 0), None)
        if p is None:
            continue
        M[r], M[p] = M[p], M[r]
        inv = 1 / M[r][col]
        M[r] = [v * inv for v in M[r]]
        for i in range(m):
            if i != r and M[i][col] != 0:
                f = M[i][col]
                M[i] = [a - f * c for a, c in zip(M[i], M[r], strict=True)]
        piv_cols.append(col)
        r += 1
        if r == m:
            break
    for i in range(r, m):
        if M[i][n] != 0 and all(M[i][j] == 0 for j in range(n)):
            return None
    w = [None] * n
    free = [j for j in range(n) if j not in piv_cols]
    for j in free:
        w[j] = Fraction(max(guess[j], 0.0))
    for i, col in enumerate(piv_cols):
        w[col] = M[i][n] - sum(M[i][j] * w[j] for j in free)
    # check
    for row, bi in zip(A, b, strict=True):
        if sum(a * wj for a, wj in zip(row, w, strict=True)) != bi:
            return None
    return w


def _candidate_supports(res, need: int, tries: int = 30):
    """Row sets to solve the dual certificate on: the LP's dual support (multipliers above
    1e-12 of the largest), completed to ``need`` rows with the rows of smallest slack when it
    is smaller (a degenerate vertex), in a few alternative ways."""
    y = -np.asarray(res.ineqlin.marginals, F64)
    slack = np.asarray(res.ineqlin.residual, F64)
    top = float(y.max()) if y.size else 0.0
    sup = [int(j) for j in np.argsort(-y) if y[j] > 1e-12 * top]
    if len(sup) >= need:
        yield sup, y
        return
    extras = [int(j) for j in np.argsort(slack) if int(j) not in set(sup)][:8]
    for q, combo in enumerate(itertools.combinations(extras, need - len(sup))):
        if q >= tries:
            return
        yield sup + list(combo), y


@dataclass
class Certificate:
    """An exact dual certificate: nonnegative multipliers on rows (input x, side)."""

    rows: list  # (input index, "upper"/"lower", exact multiplier mu[, the row's weight w])
    value: Fraction  # the certified bound
    slope: Fraction = Fraction(0)  # for coefficient bounds: base + s * slope
    ok: bool = True
    note: str = ""


def _row_list(r: Rows, sel):
    nu = r.z_up.size
    out = []
    for j in sel:
        if j < nu:
            out.append((int(r.i_up[j]), True, j))
        else:
            out.append((int(r.i_lo[j - nu]), False, j))
    return out


def _exact_rows(prob, family, fit_interval, r: Rows, rl, n, w_all):
    cols, bounds, ws = [], [], []
    for i, up, j in rl:
        z, bnd = exact_row(prob, family, fit_interval, r.kind, i, up)
        sgn = 1 if up else -1
        cols.append([sgn * z**k for k in range(n)])
        bounds.append(bnd)
        ws.append(Fraction(float(w_all[j])))
    return cols, bounds, ws


def certify_widening(prob, family, fit_interval, r: Rows, n, res, w_up, w_lo) -> Certificate:
    """Exact lower bound s_lb on the widening: every c with pl - s w <= P(z) <= ph + s w on the
    rows has s >= s_lb (weights w taken as the exact rationals of their float64 values).

    Multipliers lam >= 0 on the rows with sum_i sign_i lam_i V(z_i) / w_i = 0 (V the monomials
    1, z, .., z^d, exact) and sum lam_i = 1 give s >= sum_lower mu pl - sum_upper mu ph,
    mu = lam / w; they are solved in rationals on the LP's dual support."""
    w_all = np.concatenate([w_up, w_lo])
    for sel, y in _candidate_supports(res, n + 1):
        rl = _row_list(r, sel)
        cols, bounds, ws = _exact_rows(prob, family, fit_interval, r, rl, n, w_all)
        A = [[cols[q][k] / ws[q] for q in range(len(rl))] for k in range(n)]
        A.append([Fraction(1)] * len(rl))
        b = [Fraction(0)] * n + [Fraction(1)]
        lam = _solve_exact(A, b, [float(y[j]) for _, _, j in rl])
        if lam is None or any(v < 0 for v in lam):
            continue
        val = Fraction(0)
        for q, (_, up, _) in enumerate(rl):
            mu = lam[q] / ws[q]
            val += -mu * bounds[q] if up else mu * bounds[q]
        rows_ = [
            (i, "upper" if up else "lower", lam[q] / ws[q], ws[q])
            for q, (i, up, j) in enumerate(rl)
        ]
        return Certificate(rows_, val)
    return Certificate([], Fraction(0), ok=False, note="no exact nonnegative multipliers found")


def _bound_lp(r: Rows, n: int, s: float, w_up, w_lo, k: int, sign: int, a_ref):
    """max sign * c_k (monomial) subject to pl - s w <= P(z) <= ph + s w."""
    A, b, a_ref, eps = scaled_rows(r, n, w_up, w_lo, a_ref)
    return linprog_highs(-sign * cheb2mono(n)[k], A, b + s)


def certify_coefficient(prob, family, fit_interval, r: Rows, n, res, w_up, w_lo, k, sign):
    """Exact bound sign * c_k <= base + s * slope for every c in F_s (every s): multipliers
    mu >= 0 with sum_i sign_i mu_i V(z_i) = sign e_k give sign c_k <= sum_upper mu (ph + s w)
    - sum_lower mu (pl - s w) (weak duality; monomial coefficients c)."""
    if res.status != 0:
        return Certificate([], Fraction(0), ok=False, note=f"LP status {res.status}")
    w_all = np.concatenate([w_up, w_lo])
    for sel, y in _candidate_supports(res, n):
        rl = _row_list(r, sel)
        cols, bounds, ws = _exact_rows(prob, family, fit_interval, r, rl, n, w_all)
        A = [[cols[q][kk] for q in range(len(rl))] for kk in range(n)]
        b = [Fraction(sign if kk == k else 0) for kk in range(n)]
        mu = _solve_exact(A, b, [float(y[j]) / float(w_all[j]) for _, _, j in rl])
        if mu is None or any(v < 0 for v in mu):
            continue
        base = sum((mu[q] * bounds[q] if rl[q][1] else -mu[q] * bounds[q]) for q in range(len(rl)))
        slope = sum(mu[q] * ws[q] for q in range(len(rl)))
        rows_ = [(i, "upper" if up else "lower", mu[q]) for q, (i, up, j) in enumerate(rl)]
        return Certificate(rows_, Fraction(base), slope)
    return Certificate([], Fraction(0), ok=False, note="no exact nonnegative multipliers found")


def _round_up(q: Fraction) -> float:
    """The smallest float64 >= q."""
    f = float(q)
    return float(np.nextafter(f, np.inf)) if Fraction(f) < q else f


def _inflate(v: float) -> float:
    """v pushed up by a relative SAFETY margin (for float64 sums of ~1e-15 relative error)."""
    return v + abs(v) * (SAFETY - 1.0) + 1e-300


@dataclass
class Infeasibility:
    """The evidence that degree ``degree`` is infeasible (see the module docstring)."""

    degree: int
    rows: int
    s_star: float  # min widening (float32 rows, units of w) found by the LP
    s_lb: float  # its exact certified lower bound (float of the rational)
    certificate_ok: bool
    alpha: float = math.nan
    beta: float = math.nan
    proven: bool = False  # float32 program: no coefficients work
    exact_s_lb: float = math.nan  # real arithmetic rows: certified min widening
    exact_proven: bool = False  # real arithmetic: infeasible
    certificate: list = field(default_factory=list)  # (x, side, mu, w): the s_lb certificate
    exact_certificate: list = field(default_factory=list)  # the same for real arithmetic
    note: str = ""
    seconds: float = 0.0


def prove_infeasible(prob: Problem, family: str, fit_interval: float, degree: int) -> Infeasibility:
    """Try to prove that no P of ``degree`` works (float32 program and real arithmetic)."""
    t0 = time.perf_counter()
    n = degree + 1
    r = rows(prob, family, fit_interval, "float32")
    if r.impossible.size:
        return Infeasibility(
            degree,
            r.n,
            math.inf,
            math.inf,
            True,
            0.0,
            0.0,
            True,
            certificate=[(float(prob.x[i]), "m = 0", None, None) for i in r.impossible[:5]],
            note="inputs no polynomial serves",
            seconds=time.perf_counter() - t0,
        )
    wu, wl = first_row_weights(r, n)
    s0, a0, res0 = min_widening(r, n, wu, wl)
    if a0 is None:
        return Infeasibility(
            degree, r.n, math.nan, math.nan, False, note=f"LP status {res0.status}"
        )
    cref = cheb2mono(n) @ a0
    wu, wl = row_weights(r, cref)
    s_star, a, res = min_widening(r, n, wu, wl, a0)
    cert = certify_widening(prob, family, fit_interval, r, n, res, wu, wl)
    ev = Infeasibility(
        degree,
        r.n,
        s_star,
        float(cert.value),
        cert.ok,
        certificate=[(float(prob.x[i]), side, mu, w) for i, side, mu, w in cert.rows],
        note=cert.note,
    )
    # real arithmetic
    re = rows(prob, family, fit_interval, "exact")
    eu, el = row_weights(re, cref)
    se, ae, rese = min_widening(re, n, eu, el, a0)
    if ae is not None:
        ce = certify_widening(prob, family, fit_interval, re, n, rese, eu, el)
        if ce.ok:
            ev.exact_certificate = [(float(prob.x[i]), side, mu) for i, side, mu, _ in ce.rows]
            ev.exact_s_lb = float(ce.value)
            ev.exact_proven = ce.value > 0
    if not (cert.ok and cert.value > 0):
        ev.seconds = time.perf_counter() - t0
        return ev
    cref = cheb2mono(n) @ a
    if degree == 0:  # no rounding in P: alpha = beta = 0
        ev.alpha, ev.beta, ev.proven = 0.0, 0.0, True
        ev.seconds = time.perf_counter() - t0
        return ev
    s2 = 1.5 * s_star
    D0 = np.zeros(n)
    D1 = np.zeros(n)
    for k in range(n):
        parts = []
        for sign in (1, -1):
            res_k = _bound_lp(r, n, s2, wu, wl, k, sign, a)
            ck = certify_coefficient(prob, family, fit_interval, r, n, res_k, wu, wl, k, sign)
            if not ck.ok:
                ev.note = f"coefficient bound c_{k} ({'+' if sign > 0 else '-'}): {ck.note}"
                ev.seconds = time.perf_counter() - t0
                return ev
            parts.append(ck)
        ref = Fraction(float(cref[k]))
        D0[k] = _round_up(max(parts[0].value - ref, parts[1].value + ref))
        D1[k] = _round_up(max(parts[0].slope, parts[1].slope))
    zu, zl = r.z_up, r.z_lo
    zeta = max(1.0, float(np.max(np.abs(np.concatenate([zu, zl])))))
    eta = degree * zeta**degree * 2.0**-149
    base_u = horner_bound(cref, zu, D0, zeta) + eta
    base_l = horner_bound(cref, zl, D0, zeta) + eta
    g = horner_gamma(degree)
    pw = lambda z: np.abs(z)[None, :] ** np.arange(degree)[:, None]  # noqa: E731
    tail1 = np.array([sum(D1[kk] * zeta ** (kk - j) for kk in range(j, n)) for j in range(degree)])
    slope_u = U32 * (1 + g) * np.sum(pw(zu) * tail1[:, None], axis=0)
    slope_l = U32 * (1 + g) * np.sum(pw(zl) * tail1[:, None], axis=0)
    alpha = _inflate(float(max(np.max(base_u / wu), np.max(base_l / wl))))
    beta = _inflate(float(max(np.max(slope_u / wu), np.max(slope_l / wl))))
    ev.alpha, ev.beta = alpha, beta
    ev.proven = beta < 1 and Fraction(alpha) / (1 - Fraction(beta)) < cert.value
    ev.seconds = time.perf_counter() - t0
    return ev
