"""The approximation lab: ground truth, fits, float32 replay, specs and code generation.

Pure numpy / scipy / mpmath: nothing here imports torch or needs the compiled extension.
"""

from . import codegen, fit, reference, replay, spec

__all__ = ["codegen", "fit", "reference", "replay", "spec"]
