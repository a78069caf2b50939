"""Fitting methods of the approximation lab, all for the same linear form, in one namespace.

Every method fits coefficients ``c`` of a linear combination ``p(u) = sum_k c_k phi_k(u)`` of
basis functions on ``[a, b]`` to a target ``f(u)``, basis, target and an optional error scale
given as callables (``linear_form.py`` says how). Methods (float64, vectorized numpy / scipy):

* ``least_squares``: discrete least squares on Chebyshev-Lobatto points (see ``sample_points``
  for why not uniform points);
* ``irls``: Lawson's iteratively reweighted least squares, which tends to the discrete minimax
  fit on a dense grid (``fit._solve_irls``);
* ``endpoint_ls``: least squares subject to ``p(a) = f(a)`` and ``p(b) = f(b)`` exactly;
* ``remez``: the continuous minimax fit by the second Remez (multi-point exchange) algorithm;
* ``neighbours`` / ``search_rounded``: coefficients rounded to float32 / float16 / bfloat16
  (``rounding.round_to_format``), then improved by a deterministic search over neighbouring
  representable values;
* ``sollya_fpminimax``: an optional control, Sollya's ``fpminimax`` run as an external program
  (only when the ``sollya`` binary is installed; its figures are a cross-check, never an
  exact reference).

Each lives in the module of its kind (``least_squares.py``, ``remez.py``,
``coefficient_search.py``, ``sollya.py``, with the shared sampling and evaluation in
``linear_form.py``); this module gathers their public names, so that a caller imports one.

No torch here: the package stays pure numpy / scipy / mpmath.
"""

from __future__ import annotations

from .coefficient_search import RoundedSearch, neighbours, search_rounded
from .least_squares import endpoint_ls, irls, least_squares
from .linear_form import Basis, Target, Weight, evaluate, max_error, sample_points
from .remez import RemezResult, alternations, remez
from .sollya import (
    SOLLYA_FORMATS,
    SollyaResult,
    sollya_available,
    sollya_fpminimax,
    sollya_version,
)

__all__ = [
    "SOLLYA_FORMATS",
    "Basis",
    "RemezResult",
    "RoundedSearch",
    "SollyaResult",
    "Target",
    "Weight",
    "alternations",
    "endpoint_ls",
    "evaluate",
    "irls",
    "least_squares",
    "max_error",
    "neighbours",
    "remez",
    "sample_points",
    "search_rounded",
    "sollya_available",
    "sollya_fpminimax",
    "sollya_version",
]
