"""The approximation lab: ground truth, fits, float32 replay, specs and code generation.

Pure numpy / scipy / mpmath: nothing here imports torch or needs the compiled extension.
"""

from . import (
    codegen,
    exp2,
    family_fit,
    fit,
    methods,
    mindegree,
    polyspec,
    reference,
    replay,
    report,
    rounding,
    search,
    spec,
    targets,
)

__all__ = [
    "codegen",
    "exp2",
    "family_fit",
    "fit",
    "methods",
    "mindegree",
    "polyspec",
    "reference",
    "replay",
    "report",
    "rounding",
    "search",
    "spec",
    "targets",
]
