"""Where to clamp: the polynomial's error against the tail's error as the range R moves.

A kernel evaluates the polynomial on ``|x| <= R`` and returns the asymptote beyond (GELU:
``x`` or ``-0.0``). Two errors compete:

* the tail error ``max_{u >= R} |f - asymptote|`` (GELU: ``u Phi(-u)``), which falls
  like ``exp(-R^2 / 2)`` as R grows;
* the polynomial's error on ``[0, R]`` (the window), which grows with R at a fixed degree:
  the residual has more to bend over a longer interval.

The program's max error is the larger of the two, so the best R at a degree is close to
where the two curves cross (``crossing``); a higher degree lowers the window curve and moves
the crossing to a larger R. ``scan`` fits one spec per R (fit interval = clamp = R) with a
``family_fit`` method and records both errors in real arithmetic (``family_fit.ErrorModel``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from . import family_fit, spec

SHIPPED_R = spec.DEFAULTS["exact"].range  # the exact-GELU spec's clamp


def scan(
    target: str = "gelu",
    degree: int = 8,
    ranges: Iterable[float] = (3.5, 4.0, SHIPPED_R, 5.0),
    method: str = "remez",
    fmt: str = "float32",
    progress: Callable[[str], None] | None = None,
    **opts,
) -> list[dict]:
    """One row per R: the fit's ``window_error``, ``tail_error`` and ``max_abs_error`` (their
    max), which part ``decided_by``, and the float64 fit's own error. ``opts`` go to
    ``family_fit.fit_polyspec`` (e.g. ``grid_points`` for Remez)."""
    rows = []
    for R in ranges:
        ps = family_fit.fit_polyspec(
            target,
            degree=int(degree),
            fit_interval=float(R),
            clamp=float(R),
            fmt=fmt,
            method=method,
            replay=False,
            **opts,
        )
        e = ps.meta["errors"]
        rows.append(
            {
                "target": target,
                "degree": int(degree),
                "range": float(R),
                "method": method,
                "fmt": ps.fmt,
                "window_error": float(e["window_error"]),
                "tail_error": float(e["tail_error"]),
                "max_abs_error": float(e["max_abs_error"]),
                "decided_by": e["decided_by"],
            }
        )
        if progress is not None:
            progress(f"degree {degree} R {R:g}: {e['max_abs_error']:.3e}")
    return rows


def crossing(rows: Sequence[dict]) -> dict | None:
    """Where the window error overtakes the tail error, interpolated between the two scanned
    ranges that bracket it (linearly in R, on log errors, where both curves are close to
    straight). None if the scan does not bracket a crossing. Returns ``range`` and ``error``
    (the common value there) and the bracketing ranges."""
    pts = sorted(rows, key=lambda r: r["range"])
    d = [math.log(r["window_error"]) - math.log(r["tail_error"]) for r in pts]
    for k in range(len(pts) - 1):
        if d[k] <= 0 < d[k + 1]:
            a, b = pts[k], pts[k + 1]
            t = -d[k] / (d[k + 1] - d[k])
            R = a["range"] + t * (b["range"] - a["range"])
            lt = math.log(a["tail_error"]) + t * (
                math.log(b["tail_error"]) - math.log(a["tail_error"])
            )
            return {"range": R, "error": math.exp(lt), "bracket": [a["range"], b["range"]]}
    return None


def best(rows: Sequence[dict]) -> dict:
    """The scanned row with the smallest max error (the first of equals)."""
    return min(rows, key=lambda r: r["max_abs_error"])


__all__ = ["best", "crossing", "scan"]
