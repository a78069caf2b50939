import numpy as np
from scipy.special import erf, expit

def bf16(x):
    x = np.asarray(x, float)
    m, e = np.frexp(x)
    return np.ldexp(np.round(m * 256.0) / 256.0, e)

# residual r(u), asymptote a(u) (value of residual beyond clamp), u>=0
FUNCS = {
    'sigmoid': (lambda u: expit(u) - 0.5, lambda u: 0.5 + 0 * u),
    'tanh':    (lambda u: np.tanh(u), lambda u: 1.0 + 0 * u),
    'silu':    (lambda u: u * expit(u) - u / 2, lambda u: u / 2),
    'gelu':    (lambda u: 0.5 * u * erf(u / np.sqrt(2)), lambda u: u / 2),
    'dsig':    (lambda u: expit(u) * expit(-u), lambda u: 0 * u),
}

def design(u, form, k, L):
    """columns of monomials (in normalized variable t) times prefactor; returns (cols, powers_info)
    form: 'u'   : sum_{j=0..k} c_j t^j, t=u/L
          'y'   : sum_{j=0..k} c_j t^j, t=u^2/L^2
          'uy'  : u * sum_{j=0..k} c_j t^j, t=u^2/L^2   (odd in x)
          'yy'  : u^2 * sum_{j=0..k-1} c_j t^j  (even, vanishing at 0)
          'uy1' : u * sum_{j=0..k-1} c_j t^j
    """
    if form == 'u':
        t = u / L; pre = np.ones_like(u); n = k + 1
    elif form == 'y':
        t = (u / L) ** 2; pre = np.ones_like(u); n = k + 1
    elif form == 'uy':
        t = (u / L) ** 2; pre = u / L; n = k + 1
    elif form == 'yy':
        t = (u / L) ** 2; pre = (u / L) ** 2; n = k
    elif form == 'uy1':
        t = (u / L) ** 2; pre = u / L; n = k
    elif form == 'uu':   # u * poly deg k-1 in u  (p(0)=0 built in)
        t = u / L; pre = u / L; n = k
    else:
        raise ValueError(form)
    return pre[:, None] * t[:, None] ** np.arange(n)[None, :]

def mono_scale(form, k, L):
    """factor s_j so that coefficient in raw variable = c_t[j] * s_j"""
    if form == 'u':
        return L ** -np.arange(k + 1.0)
    if form == 'y':
        return L ** (-2.0 * np.arange(k + 1.0))
    if form == 'uy':
        return L ** (-1.0 - 2.0 * np.arange(k + 1.0))
    if form == 'yy':
        return L ** (-2.0 - 2.0 * np.arange(k * 1.0))
    if form == 'uy1':
        return L ** (-1.0 - 2.0 * np.arange(k * 1.0))
    if form == 'uu':
        return L ** (-1.0 - np.arange(k * 1.0))

def constrained_ls(B, r, C, d, w=None):
    """min ||W(Bc - r)|| s.t. Cc = d  via KKT"""
    if w is not None:
        B = B * w[:, None]; r = r * w
    n = B.shape[1]; m = C.shape[0]
    if m == 0:
        return np.linalg.lstsq(B, r, rcond=None)[0]
    # nullspace method
    Q, R = np.linalg.qr(C.T, mode='complete')
    R1 = R[:m, :]
    c0 = Q[:, :m] @ np.linalg.solve(R1.T, d)
    Z = Q[:, m:]
    if Z.shape[1] == 0:
        return c0
    z = np.linalg.lstsq(B @ Z, r - B @ c0, rcond=None)[0]
    return c0 + Z @ z

def constraints(func, form, k, L, ends):
    r, a = FUNCS[func]
    rows, vals = [], []
    pts = []
    if 'L' in ends: pts.append(L)
    if '0' in ends and form in ('u', 'y'): pts.append(0.0)
    for p in pts:
        rows.append(design(np.array([p]), form, k, L)[0]); vals.append(r(np.array([p]))[0])
    n = design(np.array([1.0]), form, k, L).shape[1]
    return np.array(rows).reshape(-1, n), np.array(vals)

def fit(func, form, k, L, ends='0L', nsamp=4001, obj='abs', samp='uniform'):
    r, a = FUNCS[func]
    if samp == 'uniform':
        u = np.linspace(0, L, nsamp)
    else:
        u = L * (1 - np.cos(np.linspace(0, np.pi, nsamp))) / 2
    B = design(u, form, k, L); rr = r(u)
    C, d = constraints(func, form, k, L, ends)
    w = None
    if obj == 'rel':
        full = rr + (0.5 if func == 'sigmoid' else 0)
        w = 1 / np.maximum(np.abs(rr), 1e-3)
    return constrained_ls(B, rr, C, d, w)

def coeffs_raw(ct, form, k, L, rnd='u'):
    """return function p(u) evaluator after rounding"""
    if rnd == 'none':
        cu = ct * mono_scale(form, k, L)
    elif rnd == 'u':
        cu = bf16(ct * mono_scale(form, k, L))
    elif rnd == 't':
        cu = bf16(ct) * mono_scale(form, k, L)
    return cu

def eval_raw(cu, form, u):
    if form == 'u':
        return np.polyval(cu[::-1], u)
    if form == 'y':
        return np.polyval(cu[::-1], u * u)
    if form in ('uy', 'uy1'):
        return u * np.polyval(cu[::-1], u * u)
    if form == 'yy':
        return u * u * np.polyval(cu[::-1], u * u)
    if form == 'uu':
        return u * np.polyval(cu[::-1], u)

H = 1.0 / 1024
UG = np.arange(0, 16 + H / 2, H)

def err_vs_clamp(func, p_u, Lc_list):
    """p_u: values of polynomial on UG. returns max error for each clamp in Lc_list"""
    r, a = FUNCS[func]
    rr = r(UG)
    ein = np.maximum.accumulate(np.abs(p_u - rr))
    tail = np.abs(a(UG) - rr)
    etail = np.maximum.accumulate(tail[::-1])[::-1]
    idx = np.round(np.asarray(Lc_list) / H).astype(int)
    nxt = np.minimum(idx + 1, len(UG) - 1)
    return np.maximum(ein[idx], etail[nxt])

from scipy.stats import norm
GATES = {'silu': lambda u: expit(u) - 0.5, 'gelu': lambda u: norm.cdf(u) - 0.5}

def fit_gate(func, k, L, weight='g', nsamp=2001, ends='0L'):
    """fit g(u) by p(u) deg k in t=u/L, p(0)=0 (if '0' in ends), p(L)=g(L); LS on g (weight='g') or on u*g ('e')"""
    g = GATES[func]
    u = np.linspace(0, L, nsamp)
    B = design(u, 'u', k, L); rr = g(u)
    rows=[design(np.array([L]),'u',k,L)[0]]; vals=[g(np.array([L]))[0]]
    if '0' in ends:
        rows.append(design(np.array([0.0]),'u',k,L)[0]); vals.append(0.0)
    w = None if weight == 'g' else u
    return constrained_ls(B, rr, np.array(rows), np.array(vals), w)

def err_vs_clamp_in(func, p_u, Lc_list, M=16.0):
    """input-clamp: for u > Lc value is p(Lc). error measured over u in [0, M]."""
    r, a = FUNCS[func]
    rr = r(UG)
    ein = np.maximum.accumulate(np.abs(p_u - rr))
    idx = np.round(np.asarray(Lc_list) / H).astype(int)
    iM = int(round(M / H))
    pc = p_u[idx]
    # residual monotone beyond Lc for sigmoid/tanh/dsig: range of r over [Lc, M] is between r(Lc) and r(M)
    rlo = np.minimum(rr[idx], rr[iM]); rhi = np.maximum(rr[idx], rr[iM])
    et = np.maximum(np.abs(pc - rlo), np.abs(pc - rhi))
    return np.maximum(ein[idx], et)

def coeffs_raw2(ct, form, k, L, rnd, func):
    """rounding modes acting on the endpoint basis:
    'a'  : free params (coeffs of t^j - t) bf16, endpoint values exact
    'ab' : free params bf16 and endpoint values bf16
    """
    r, _ = FUNCS[func]
    c = np.array(ct, float)
    if form in ('u', 'y'):
        lin = 1
        r0 = c[0]
    else:
        lin = 0
        r0 = 0.0
    rL = c.sum()
    a = bf16(c[lin + 1:])
    if rnd == 'ab':
        r0 = bf16(r0); rL = bf16(rL)
    c2 = c.copy()
    c2[lin + 1:] = a
    if lin == 1:
        c2[0] = r0
    c2[lin] = rL - r0 - a.sum()
    return c2 * mono_scale(form, k, L)

from numpy.polynomial import polynomial as PP
def t_to_z(ct):
    # p(t) with t=(z+1)/2 -> coefficients in z
    out = np.zeros(len(ct)); base = np.array([1.0])
    for j, c in enumerate(ct):
        out[:len(base)] += c * base
        base = PP.polymul(base, [0.5, 0.5])
    return out
def z_to_t(cz):
    out = np.zeros(len(cz)); base = np.array([1.0])
    for j, c in enumerate(cz):
        out[:len(base)] += c * base
        base = PP.polymul(base, [-1.0, 2.0])
    return out
def coeffs_z(ct, form, k, L):
    cz = bf16(t_to_z(ct))
    return z_to_t(cz) * mono_scale(form, k, L)

BFMASK = (bf16(UG) == UG)
def err_vs_clamp_m(func, p_u, Lc_list, measure='cont'):
    r, a = FUNCS[func]
    rr = r(UG)
    ein = np.abs(p_u - rr); tail = np.abs(a(UG) - rr)
    if measure == 'bf16':
        ein = np.where(BFMASK, ein, 0.0); tail = np.where(BFMASK, tail, 0.0)
    ein = np.maximum.accumulate(ein)
    etail = np.maximum.accumulate(tail[::-1])[::-1]
    idx = np.round(np.asarray(Lc_list) / H).astype(int)
    nxt = np.minimum(idx + 1, len(UG) - 1)
    return np.maximum(ein[idx], etail[nxt])

def round_mode(ct, form, k, L, rnd, func):
    if rnd in ('a', 'ab'): return coeffs_raw2(ct, form, k, L, rnd, func)
    if rnd == 'z': return coeffs_z(ct, form, k, L)
    return coeffs_raw(ct, form, k, L, rnd)
