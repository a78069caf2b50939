"""Replay of the kernels' float32 arithmetic in numpy, operation for operation.

The kernels (``kernels/include/turbogelu/poly_eval.h``) evaluate::

    y = fl(x * x)
    z = fma(y, scale, -1)                  # maps [0, R^2] onto [-1, 1]
    p = P(z)                               # Horner (or Estrin) with fused multiply-adds
    forward:  out = fl(x * fma(x, p, 1/2)) # = x/2 + x^2 p, and -0.0 stays -0.0
    backward: out = fl(g * fma(x, p, 1/2)) # = 1/2 + x q

inside the window ``y <= fl(R * R)``, and outside it ``x`` / ``-0.0`` (forward) and
``g * 1`` / ``g * 0`` (backward).
This module reproduces that sequence bit for bit, with a correctly rounded float32 FMA, so
the measured error of a spec is the error the kernel has (a test compares them bitwise).
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def fma32(a, b, c) -> np.ndarray:
    """Correctly rounded float32 fused multiply-add of float32 arrays.

    ``a*b`` is exact in float64 (24 + 24 significant bits < 53). The float64 sum ``s`` of
    that product and ``c`` can be off by half a float64 ulp, which only matters when ``s``
    lands exactly on a midpoint between two float32 values (normal or subnormal): then the
    sign of the exact remainder ``e`` (TwoSum) decides which way to round.
    """
    a = np.asarray(a, F32).astype(np.float64)
    b = np.asarray(b, F32).astype(np.float64)
    c = np.asarray(c, F32).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        p = a * b
        s = p + c
        # TwoSum: e is exactly (p + c) - s when everything is finite.
        bb = s - p
        e = (p - (s - bb)) + (c - bb)
        r = s.astype(F32)
        r64 = r.astype(np.float64)
        # The float32 neighbour of r on the side of s, and the midpoint between them (exact
        # in float64, subnormals included).
        other = np.nextafter(r, np.where(s > r64, F32(np.inf), F32(-np.inf)).astype(F32))
        mid = (r64 + other.astype(np.float64)) * 0.5
        tie = (s == mid) & (s != r64) & (e != 0) & np.isfinite(s) & np.isfinite(other)
        # The exact value lies beyond the midpoint on the side of e.
        pick_other = tie & ((e > 0) == (other.astype(np.float64) > r64))
        return np.where(pick_other, other, r).astype(F32)


def poly32(z, coeffs, scheme: str = "horner") -> np.ndarray:
    """P(z) = sum c_k z^k in float32 with FMAs, by Horner or by Estrin."""
    c = [F32(v) for v in coeffs]
    z = np.asarray(z, F32)
    if scheme == "horner":
        p = np.full_like(z, c[-1])
        for ck in reversed(c[:-1]):
            p = fma32(p, z, ck)
        return p
    if scheme != "estrin":
        raise ValueError(f"scheme must be 'horner' or 'estrin', got {scheme!r}")
    # Estrin: pair terms with z, then pairs of pairs with z^2, z^4, ... (same tree as the header).
    terms = [np.full_like(z, ck) for ck in c]
    power = z
    while len(terms) > 1:
        nxt = [fma32(terms[i + 1], power, terms[i]) for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
        if len(terms) > 1:
            power = (power * power).astype(F32)
    return terms[0]


def _inner(x, spec_part: dict, scheme: str):
    """x, the outside-window mask (fl(x*x) > fl(R*R), as the kernels decide it), 1/2 + x P(z)."""
    x = np.asarray(x, F32)
    r = F32(spec_part["clamp"])
    with np.errstate(over="ignore", invalid="ignore"):
        y = (x * x).astype(F32)
        z = fma32(y, F32(spec_part["scale"]), F32(-1.0))
        p = poly32(z, spec_part["coefficients"], scheme)
        return x, y > F32(r * r), fma32(x, p, F32(0.5))


def forward32(x, spec_part: dict, scheme: str = "horner") -> np.ndarray:
    """Kernel forward in float32: 0.5x + x^2 P(z) inside the window, x / -0.0 outside."""
    x, outside, h = _inner(x, spec_part, scheme)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (x * h).astype(F32)
    tail = np.where(x > 0, x, F32(-0.0))
    return np.where(outside, tail, out).astype(F32)


def backward32(x, spec_part: dict, grad=None, scheme: str = "horner") -> np.ndarray:
    """Kernel backward in float32: grad * (0.5 + x Q(z)) inside, grad * (1 | 0) outside."""
    x, outside, d = _inner(x, spec_part, scheme)
    d = np.where(outside, np.where(x > 0, F32(1.0), F32(0.0)), d).astype(F32)
    g = np.ones_like(x) if grad is None else np.asarray(grad, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        return (g * d).astype(F32)


def _inner64(x, spec_part: dict):
    """float64 version of _inner (same float32 coefficients; not bit-exact to the kernel)."""
    x = np.asarray(x, np.float64)
    y = x * x
    z = y * float(F32(spec_part["scale"])) - 1.0
    p = np.polynomial.polynomial.polyval(z, [float(F32(c)) for c in spec_part["coefficients"]])
    r = float(F32(spec_part["clamp"]))
    return x, y > r * r, 0.5 + x * p


def forward64(x, spec_part: dict) -> np.ndarray:
    """The same polynomial (float32 coefficients) in float64, as the float64 kernel runs it."""
    x, outside, h = _inner64(x, spec_part)
    return np.where(outside, np.where(x > 0, x, -0.0), x * h)


def backward64(x, spec_part: dict) -> np.ndarray:
    x, outside, d = _inner64(x, spec_part)
    return np.where(outside, np.where(x > 0, 1.0, 0.0), d)
