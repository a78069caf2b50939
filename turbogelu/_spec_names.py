"""The names the kernel specs, the kernels and the ops share: the GELU forms and the coefficient
sets of a spec.

They live in a module that imports nothing so that the op layer (``_checks.py``, ``mps.py``) and
the CLI's parser can use them without importing the lab (numpy, scipy, mpmath); the lab's spec
module re-exports them (``turbogelu.approx.spec.MODES``, ``PARTS``, ...).
"""

from __future__ import annotations

# The GELU forms, named as torch.nn.functional.gelu's ``approximate``.
MODES = ("none", "tanh")
# The two backward coefficient sets: a fit of GELU' ("direct") or the forward's own derivative.
BACKWARDS = ("direct", "matched")
# The coefficient sets of a spec file, in the order the generated code lists them.
PARTS = ("forward", "backward_direct", "backward_matched")
# The Metal kernels' coefficient-set index (their ``set`` argument): codegen writes the tables
# in this order and mps.py passes the index.
METAL_SETS = tuple((mode, part) for mode in MODES for part in PARTS)
