"""Coefficients representable in a format (float32, float16, bfloat16): rounded to nearest
(``rounding.round_to_format``), then improved by a deterministic search over neighbouring
representable values, on the grid error of the linear form (``linear_form.py``) or on any
error function (a replayed kernel's)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from . import rounding
from .linear_form import Basis, Target, Weight, residual_matrix, sample_points, weighted_system


def neighbours(value: float, fmt: str, k: int) -> np.ndarray:
    """The finite values of ``fmt`` within ``k`` ulps (steps) of ``value``, increasing.

    Centred on ``rounding.round_to_format(value, fmt)`` (``value`` itself when representable):
    ``2k + 1`` values, fewer at the ends of the finite range; +0 and -0 count as one value.
    """
    rounding.check_rounding_format(fmt)
    k = int(k)
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    center = rounding.round_to_format(np.array([float(value)]), fmt)
    if not np.isfinite(center[0]):
        raise ValueError(f"{value!r} does not round to a finite {fmt} value")
    o = int(rounding.to_ordered(center, fmt)[0])
    top = rounding.max_ordered(fmt)
    steps = np.arange(max(o - k, -top), min(o + k, top) + 1, dtype=np.int64)
    return rounding.from_ordered(steps, fmt) + 0.0  # -0.0 -> +0.0


@dataclass
class RoundedSearch:
    """The outcome of ``search_rounded``; unpacks as ``(coeffs, max_error)``.

    ``initial_error``: the error of the plainly rounded coefficients; ``evaluations``: the
    number of coefficient vectors whose error was computed (the start included); ``rounds``:
    the sweeps that improved the error; ``moves``: ``(kind, indices, ulp offsets, error)`` per
    improving move ('single' or 'pair'), in order.
    """

    coeffs: np.ndarray
    max_error: float
    initial_error: float
    evaluations: int
    rounds: int
    moves: list = field(default_factory=list)

    def __iter__(self) -> Iterator:
        return iter((self.coeffs, self.max_error))


def _offsets(radius: int) -> list[int]:
    out = []
    for d in range(1, radius + 1):
        out += [-d, d]
    return out


def search_rounded(
    basis: Basis | None,
    f: Target | None,
    a: float,
    b: float,
    coeffs,
    fmt: str,
    radius: int = 1,
    max_rounds: int = 100,
    error: Callable[[np.ndarray], float] | None = None,
    *,
    points: int = 4001,
    weight: Weight | None = None,
    pairs: bool = True,
) -> RoundedSearch:
    """Coefficients representable in ``fmt``, near ``coeffs``, with a small max error.

    Starts from ``rounding.round_to_format(coeffs, fmt)``, then descends greedily over
    neighbouring representable values: each round first tries, for every coefficient in turn,
    the values within ``radius`` ulps of its current value (the best strictly improving one is
    taken, coefficient by coefficient); when a whole sweep improves nothing and ``pairs`` is
    set, every pair of coefficients moved together by up to ``radius`` ulps each, taking the
    best strictly improving pair. Stops when neither improves, or after ``max_rounds`` sweeps.

    The error of a coefficient vector is ``error(c)`` when given (e.g. the max error of a
    replayed float32 / bfloat16 evaluation; ``basis`` and ``f`` may then be None), otherwise
    ``max |(f - basis @ c) / weight|`` on ``points`` Chebyshev-Lobatto points of ``[a, b]``
    in float64 (as ``max_error`` computes it; points where the basis and ``f`` vanish left
    out). Deterministic: fixed visiting order (coefficients in index order, offsets
    -1, +1, -2, +2, ...), ties keep the earlier candidate, only strict improvements count, and
    the grid errors are computed in the same order whatever the batch. Never worse than plain
    rounding (``max_error <= initial_error``).
    """
    fmt = rounding.check_rounding_format(fmt)
    c0 = rounding.round_to_format(np.asarray(coeffs, np.float64).reshape(-1), fmt)
    if not np.all(np.isfinite(c0)):
        raise ValueError(f"coefficients overflow {fmt}")
    radius = int(radius)
    if radius < 1:
        raise ValueError(f"radius must be >= 1, got {radius}")
    m = c0.size
    if error is None:
        if basis is None or f is None:
            raise ValueError("need basis and f, or an error callable")
        _, B, y = weighted_system(basis, f, weight, sample_points(a, b, points, "chebyshev"))
        if B.shape[1] != m:
            raise ValueError(f"basis has {B.shape[1]} functions, got {m} coefficients")

        def batch(C: np.ndarray) -> np.ndarray:
            return np.max(np.abs(residual_matrix(B, y, C)), axis=0)
    else:

        def batch(C: np.ndarray) -> np.ndarray:
            return np.array([float(error(C[:, j].copy())) for j in range(C.shape[1])])

    evaluations = 0

    def evaluate_all(C: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += C.shape[1]
        return batch(C)

    cur = c0.copy()
    cur_err = float(evaluate_all(cur[:, None])[0])
    initial = cur_err
    offs = _offsets(radius)
    moves: list = []
    rounds = 0

    def shifted(value: float, d: int) -> float | None:
        o = int(rounding.to_ordered(np.array([value]), fmt)[0]) + d
        if abs(o) > rounding.max_ordered(fmt):
            return None
        return float(rounding.from_ordered(np.array([o], np.int64), fmt)[0]) + 0.0

    for _ in range(max_rounds):
        improved = False
        for i in range(m):
            cands = [(d, shifted(cur[i], d)) for d in offs]
            cands = [(d, v) for d, v in cands if v is not None]
            if not cands:
                continue
            C = np.repeat(cur[:, None], len(cands), axis=1)
            C[i] = [v for _, v in cands]
            errs = evaluate_all(C)
            j = int(np.argmin(errs))
            if errs[j] < cur_err:
                cur = C[:, j].copy()
                cur_err = float(errs[j])
                moves.append(("single", (i,), (cands[j][0],), cur_err))
                improved = True
        if not improved and pairs and m >= 2:
            cols, tags = [], []
            for i in range(m):
                for k in range(i + 1, m):
                    for di in offs:
                        vi = shifted(cur[i], di)
                        if vi is None:
                            continue
                        for dk in offs:
                            vk = shifted(cur[k], dk)
                            if vk is None:
                                continue
                            col = cur.copy()
                            col[i], col[k] = vi, vk
                            cols.append(col)
                            tags.append(((i, k), (di, dk)))
            if cols:
                C = np.stack(cols, axis=1)
                errs = evaluate_all(C)
                j = int(np.argmin(errs))
                if errs[j] < cur_err:
                    cur = C[:, j].copy()
                    cur_err = float(errs[j])
                    moves.append(("pair", *tags[j], cur_err))
                    improved = True
        if not improved:
            break
        rounds += 1
    return RoundedSearch(
        coeffs=cur,
        max_error=cur_err,
        initial_error=initial,
        evaluations=evaluations,
        rounds=rounds,
        moves=moves,
    )
