"""The approximation lab: ground truth, fits, float32 replay, specs and code generation.

Pure numpy / scipy / mpmath: nothing here imports torch or needs the compiled extension.
"""

from . import (
    codegen,
    coefficient_search,
    exp2,
    family_fit,
    fit,
    least_squares,
    linear_form,
    methods,
    mindegree,
    polyspec,
    reference,
    remez,
    replay,
    report,
    rounding,
    search,
    sollya,
    spec,
    targets,
)

__all__ = [
    "codegen",
    "coefficient_search",
    "exp2",
    "family_fit",
    "fit",
    "least_squares",
    "linear_form",
    "methods",
    "mindegree",
    "polyspec",
    "reference",
    "remez",
    "replay",
    "report",
    "rounding",
    "search",
    "sollya",
    "spec",
    "targets",
]
