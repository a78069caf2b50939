"""The rows of the kernels' table (turbogelu/_table.py) as the op tests call them: GELU's two
rows (gelu_none, gelu_tanh) through ``gelu(x, approximate)``, the family's through their own
ops (softcap with a cap, swiglu on two inputs); the exact functions of the rows with an
absolute bound; a float32 sample with the specials. Shared by test_ops.py and the files that
test one subject over every row (test_ops_special_values.py, test_ops_determinism.py, ...)."""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
import torch
from conftest import APPROXIMATES, load_spec

import turbogelu
from turbogelu import _table
from turbogelu import ops as tops
from turbogelu.approx import exp2_programs as ep
from turbogelu.approx import family_programs as fp
from turbogelu.approx import reference

OPS = torch.ops.turbogelu
CAP = 3.0  # softcap's cap wherever a test needs one (test_family_ops.py sweeps caps)
# The accurate tier's bound on |op - f|, for GELU's rows and the family's alike.
BOUND = fp.ABS_BOUND


# ------------------------------------------------------------------ the rows and their calls


# exp2's window in float64, where the kernels run its steps in double (exp2_programs' docstring;
# family_eval.h): 2^-1076 rounds to +0, 2^1025 overflows.
EXP2_WINDOW_FLOAT64 = (-1076.0, 1025.0)


class Call(NamedTuple):
    """One op overload with its arguments: run it, or hand it to opcheck."""

    op: torch._ops.OpOverload
    args: tuple
    kwargs: dict

    def __call__(self):
        return self.op(*self.args, **self.kwargs)


@dataclasses.dataclass(frozen=True)
class Row:
    """A row of the table as the tests call it: ``public`` is its op (torch.ops.turbogelu.<
    public>, turbogelu.<public>) and ``args`` what the schema takes after the input(s): GELU's
    ``approximate`` (where the family takes ``tier``, left at its default "accurate" here: the
    tiers are test_family_ops.py's), softcap's cap."""

    op: _table.Op
    public: str
    args: tuple = ()

    def __str__(self) -> str:
        return self.op.name

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def gelu(self) -> bool:
        return self.public == "gelu"

    @property
    def gated(self) -> bool:
        return self.op.kind == "Gated"

    @property
    def xname(self) -> str:
        """What the op's messages call its (first) input."""
        return "a" if self.gated else "x"

    def inputs(self, x: torch.Tensor) -> tuple:
        """The op's tensors for x: x, or swiglu's (a, b) with b = 2x (requiring grad as x)."""
        if not self.gated:
            return (x,)
        return x, (x.detach() * 2).requires_grad_(x.requires_grad)

    def _op(self, suffix: str = ""):
        return getattr(OPS, self.public + suffix)

    # the ops; ``backward=None`` leaves the schema's default to it
    def forward(self, xs, backward=None) -> Call:
        kw = {} if backward is None else {"backward": backward}
        return Call(self._op().default, (*xs, *self.args), kw)

    def out(self, xs, out) -> Call:
        return Call(self._op().out, (*xs, *self.args), {"out": out})

    def inplace(self, x) -> Call:
        return Call(self._op("_").default, (x, *self.args), {})

    def backward(self, grad, xs, backward=None) -> Call:
        tail = () if backward is None else (backward,)
        return Call(self._op("_backward").default, (grad, *xs, *self.args, *tail), {})

    def backward_out(self, grad, xs, out, backward=None) -> Call:
        """``out``: a tensor, or swiglu's pair (grad_a, grad_b)."""
        tail = () if backward is None else (backward,)
        kw = {"grad_a": out[0], "grad_b": out[1]} if self.gated else {"out": out}
        return Call(self._op("_backward").out, (grad, *xs, *self.args, *tail), kw)

    # the public Python functions
    def function(self, *xs, backward="default"):
        return getattr(turbogelu, self.public)(*xs, *self.args, backward=backward)

    def function_(self, x):
        return getattr(turbogelu, f"{self.public}_")(x, *self.args)

    def module(self, **kw):
        return getattr(turbogelu, self.op.module)(*self.args, **kw)

    def raw_forward(self, *xs, out=None):
        if self.gelu:
            return turbogelu.gelu_op(*xs, *self.args, out=out)
        return tops.forward_op(self.name, *xs, *self.args, out=out)

    def raw_backward(self, grad, *xs, backward="default", out=None):
        if self.gelu:
            return turbogelu.gelu_backward_op(grad, *xs, *self.args, backward, out=out)
        return tops.backward_op(self.name, grad, *xs, *self.args, backward=backward, out=out)

    def from_output(self, grad, y):
        """Autograd's default backward from the saved result (the rows with from_output)."""
        if self.name in tops.FROM_OUTPUT:
            return tops.FROM_OUTPUT[self.name](grad, y)
        if self.name == "exp2":
            return tops.exp2_from_output(grad, y)
        return tops.softcap_from_output(grad, y, *self.args)

    def spec(self) -> dict:
        """The spec of the row's accurate program (softcap: tanh's, swiglu: SiLU's)."""
        if self.gelu:
            return load_spec(self.args[0])
        if self.op.program in _table.OWN_PROGRAMS:
            return ep.load("accurate")
        return fp.load(self.op.program)

    def clamp(self) -> float:
        """R: the program's window is |x| <= R (softcap's scaled by its cap)."""
        r = float.fromhex(self.spec()["forward"]["clamp"])
        return r * self.args[0] if self.op.kind == "Scaled" else r

    def edges(self, dtype: torch.dtype = torch.float32) -> tuple[float, float]:
        """Where the program's window ends: -R and R, or exp2's window ends (no clamp; in
        float64 the double program's, EXP2_WINDOW_FLOAT64)."""
        if self.op.program in _table.OWN_PROGRAMS:
            if dtype == torch.float64:
                return EXP2_WINDOW_FLOAT64
            lo, hi = self.spec()["window"]
            return float(lo), float(hi)
        return -self.clamp(), self.clamp()


GELU_ROWS = [
    Row(next(o for o in _table.GELU if o.name == _table.APPROXIMATE[ap]), "gelu", (ap,))
    for ap in APPROXIMATES
]
FAMILY_ROWS = [Row(o, o.name, (CAP,) if o.kind == "Scaled" else ()) for o in _table.OPS]
ROWS = GELU_ROWS + FAMILY_ROWS
# The family's rows run on the samples below but exp2, whose own file runs the same forms
# (test_exp2_op.py: opcheck of each, layouts, out= and in place).
SAMPLE_ROWS = [r for r in FAMILY_ROWS if r.op.program not in _table.OWN_PROGRAMS]

# The exact functions and derivatives of the rows with an absolute bound (BOUND): GELU's and
# the family's Plain rows with fitted programs. softcap's and swiglu's bounds scale with the cap
# and b (test_family_ops.py), exp2's is relative (test_exp2_op.py).
EXACT = {
    "gelu_none": lambda x: reference.gelu(x, "none"),
    "gelu_tanh": lambda x: reference.gelu(x, "tanh"),
    "sigmoid": reference.sigmoid,
    "tanh": reference.tanh,
    "silu": reference.silu,
    "softplus": reference.softplus,
}
EXACT_GRAD = {
    "gelu_none": lambda x: reference.gelu_grad(x, "none"),
    "gelu_tanh": lambda x: reference.gelu_grad(x, "tanh"),
    "sigmoid": reference.sigmoid_grad,
    "tanh": reference.tanh_grad,
    "silu": reference.silu_grad,
    "softplus": reference.sigmoid,
}
BOUNDED_ROWS = [r for r in ROWS if r.name in EXACT]
# The rows with a clamp and a smooth program inside it (exp2's range reduction steps at
# x = k + 1/2: its gradcheck is test_exp2_op.py's).
CLAMPED_ROWS = [r for r in ROWS if r.op.program not in _table.OWN_PROGRAMS]
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40, 1e-45, 3.4e38, -3.4e38]


def float32_sample(n: int = 1 << 15, seed: int = 0) -> np.ndarray:
    """float32 inputs: specials, a dense uniform sweep over [-16, 16], and wide log-spaced
    magnitudes of both signs."""
    rng = np.random.default_rng(seed)
    mags = np.exp(rng.uniform(math.log(1e-30), math.log(1e30), n // 4))
    x = np.concatenate(
        [SPECIALS, np.linspace(-16, 16, n // 2), mags, -mags, rng.normal(0, 3, n // 4)]
    )
    return x.astype(np.float32)


EXP2_SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-45, 3.4e38, -3.4e38]


def exp2_float32_sample() -> np.ndarray:
    """Specials, a sweep over [-160, 140] (beyond the window both ways), the float32 values
    next to the boundaries of the results (subnormal at -126, zero at -150, inf at 128) and
    log-spaced magnitudes of both signs."""
    edges = []
    for e in (-126.0, -149.0, -150.0, -151.0, 128.0, 129.0, 0.5, -0.5):
        b = np.int64(np.asarray(e, np.float32).view(np.int32))
        edges.append((b + np.arange(-40, 41)).astype(np.int32).view(np.float32))
    mags = np.exp2(np.linspace(-149, 7, 4001))
    parts = [EXP2_SPECIALS, np.linspace(-160, 140, 1 << 16), *edges, mags, -mags]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)
