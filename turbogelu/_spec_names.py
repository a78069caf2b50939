"""The names the kernel specs, the kernels and the ops share: the GELU forms and the coefficient
sets of a spec.

They live in a module that imports nothing but the function table (``_table.py``) so that the
op layer (``_checks.py``, ``mps.py``) and the CLI's parser can use them without importing the
lab (numpy, scipy, mpmath); the lab's spec
module re-exports them (``turbogelu.approx.spec.MODES``, ``PARTS``, ...).
"""

from __future__ import annotations

from . import _table

# The GELU forms, named as torch.nn.functional.gelu's ``approximate`` (each a row of the table:
# _table.APPROXIMATE).
MODES = tuple(_table.APPROXIMATE)
# The two backward coefficient sets: a fit of GELU' ("direct") or the forward's own derivative.
BACKWARDS = ("direct", "matched")
# The coefficient sets of a spec file, in the order the generated code lists them.
PARTS = ("forward", "backward_direct", "backward_matched")

# The activation family, from its table (turbogelu/_table.py): the functions with fitted
# programs (data/specs/<function>/<tier>.json; turbogelu.approx.family_programs.FUNCTIONS),
# their tiers and the ops, X(op, function whose programs it runs, kind) as the generated
# TG_FAMILY_OPS lists them.
FAMILY_FUNCTIONS = _table.fitted_functions()
FAMILY_TIERS = _table.TIERS
FAMILY_OPS = tuple((o.name, o.program, o.kind) for o in _table.OPS)
# GELU's rows of the kernels' table, X(row, its programs, kind) (family.h's TG_GELU_OPS).
GELU_OPS = tuple((o.name, o.program, o.kind) for o in _table.GELU)
GELU_TIERS = {o.name: o.tiers for o in _table.GELU}  # each row's tiers (the paper's: its D5 form)
# exp2 (data/specs/exp2/, turbogelu.approx.exp2_programs) is a Plain op of its own programs.
# The Metal programs, (function, tier, part) in the order of their index
# (kernels/mps/family_kernels.metal's tables; mps.py passes the derivative's index to the
# backward kernels): the family's, the accurate tier's first, then the paper tier's; exp2's;
# GELU's (its rows' programs, the accurate tier's, then the paper tier's where a row has one).
FAMILY_METAL_PROGRAMS = (
    tuple((fn, tier, part) for tier in FAMILY_TIERS for fn in FAMILY_FUNCTIONS for part in PARTS)
    + tuple(("exp2", tier, part) for tier in FAMILY_TIERS for part in PARTS)
    + tuple((fn, "accurate", part) for _, fn, _ in GELU_OPS for part in PARTS)
    + tuple(
        (fn, "paper", part) for op, fn, _ in GELU_OPS if "paper" in GELU_TIERS[op] for part in PARTS
    )
)
