"""The table of the activation family's ops: the one place a function is declared.

Everything that lists the functions follows from it: ``_spec_names``' FAMILY_* lists (and
through them the Metal programs and the MPS ops), ``ops.py``'s lists and registrations,
``turbogelu``'s lazy names, the lab's lists (``family_programs``, ``exp2_programs``) and, by
``python -m turbogelu codegen``, the C++ lists ``TG_FAMILY_OPS`` and ``TG_FROM_OUTPUT_OPS`` in
``kernels/include/turbogelu/family_coeffs.h`` that the kernels, dispatch and schemas expand
(``make lint`` fails when that header is stale). It imports nothing, so that the op layer and
``import turbogelu`` read it without torch or the lab.

GELU's programs are rows too (``GELU``): the kernels' table holds them beside the family's and
runs them through the same loops, evaluation and dispatch; its public op keeps its own schema
(``approximate=`` picks the row; ``turbogelu/ops.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

# The op kinds (kernels/include/turbogelu/family.h's Kind): the schema, the kernels' loop and
# the autograd formula follow from the kind.
#   Plain   f(x);               backward grad * f'(x)
#   Scaled  cap * f(x / cap);   backward grad * f'(x / cap)
#   Gated   f(a) * b;           backward (grad * b * f'(a), grad * f(a)) in one pass
KINDS = ("Plain", "Scaled", "Gated")
# The tiers (data/specs/<function>/<tier>.json): "accurate", the default, and "paper", the
# source paper's Table 2 programs.
TIERS = ("accurate", "paper")


@dataclass(frozen=True)
class Op:
    """One op of the family."""

    name: str  # torch.ops.turbogelu.<name>, turbogelu.<name>
    program: str  # the function whose programs it runs (data/specs/<program>/<tier>.json)
    kind: str  # one of KINDS
    from_output: bool  # autograd's default derivative from the saved result (PyTorch's formula)
    module: str | None  # its nn.Module in turbogelu.modules, if it has one
    # The tiers it has a program in (the paper tier only where the source paper has a program).
    tiers: tuple[str, ...] = TIERS

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"op {self.name}: kind {self.kind!r} is not one of {KINDS}")
        if not self.tiers or self.tiers[0] != "accurate" or not set(self.tiers) <= set(TIERS):
            raise ValueError(f"op {self.name}: tiers {self.tiers!r} must start with 'accurate' "
                             f"and be among {TIERS}")  # fmt: skip

    @property
    def inplace(self) -> bool:
        """Whether it has an in-place form (<name>_): every kind with one input."""
        return self.kind != "Gated"


OPS = (
    Op("sigmoid", "sigmoid", "Plain", from_output=True, module="Sigmoid"),
    Op("tanh", "tanh", "Plain", from_output=True, module="Tanh"),
    Op("silu", "silu", "Plain", from_output=False, module="SiLU"),
    Op("softcap", "tanh", "Scaled", from_output=True, module="Softcap"),
    Op("swiglu", "silu", "Gated", from_output=False, module="SwiGLU"),
    Op("exp2", "exp2", "Plain", from_output=True, module=None),
    # The source paper has no softplus program: accurate tier only.
    Op("softplus", "softplus", "Plain", from_output=False, module="Softplus", tiers=("accurate",)),
)
# GELU: one public op, gelu(x, approximate, *, backward), whose `approximate` picks one of two
# programs (data/specs/gelu_exact.json, gelu_tanh.json; cells in data/specs/cells/). Each is a
# row of the kernels' table (family.h's TG_GELU_OPS, after the family's TG_FAMILY_OPS), with
# the family's loops, element forms and program choice; the schema, fake kernel and autograd
# are GELU's own (kernels/common/schema.cpp, turbogelu/ops.py), so these rows are not in OPS.
# Both rows have a paper tier (data/specs/gelu_<mode>/paper.json): the source paper's "GELU
# D5" form, fitted to each (family_programs.PAPER_ROWS).
GELU = (
    Op("gelu_none", "gelu_none", "Plain", from_output=False, module="GELU"),
    Op("gelu_tanh", "gelu_tanh", "Plain", from_output=False, module="GELU"),
)
APPROXIMATE = {"none": "gelu_none", "tanh": "gelu_tanh"}  # gelu's argument -> its row
if set(APPROXIMATE.values()) != {o.name for o in GELU}:
    raise ValueError(f"APPROXIMATE {APPROXIMATE} must name GELU's rows {[o.name for o in GELU]}")
# exp2's programs are fitted by their own lab module (turbogelu.approx.exp2_programs); the
# other programs by turbogelu.approx.family_programs.
OWN_PROGRAMS = ("exp2",)


def op(name: str) -> Op:
    for row in OPS:
        if row.name == name:
            return row
    raise KeyError(f"no family op {name!r}; the ops are {[o.name for o in OPS]}")


def names(**where) -> tuple[str, ...]:
    """The ops' names, in the table's order, whose fields equal ``where``'s values."""
    return tuple(o.name for o in OPS if all(getattr(o, k) == v for k, v in where.items()))


def fitted_functions() -> tuple[str, ...]:
    """The functions with family_programs' programs (data/specs/<function>/), in order."""
    programs = dict.fromkeys(o.program for o in OPS)
    return tuple(p for p in programs if p not in OWN_PROGRAMS)


def program_tiers(program: str) -> tuple[str, ...]:
    """The tiers a function's programs are shipped in (its ops' tiers, which agree)."""
    tiers = {o.tiers for o in (*OPS, *GELU) if o.program == program}
    if len(tiers) != 1:
        raise ValueError(f"program {program!r}: its ops' tiers are {sorted(tiers)}")
    return tiers.pop()
