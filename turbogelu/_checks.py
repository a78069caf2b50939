"""Argument checks shared by the fake kernels (ops.py) and the MPS kernels (mps.py),
with the messages of the C++ kernels (kernels/include/turbogelu/ops_common.h)."""

from __future__ import annotations

import math

import torch

from . import _table
from ._spec_names import BACKWARDS, MODES

BACKWARD = ("default", *BACKWARDS)
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def check_dtype(t: torch.Tensor, op: str) -> None:
    if t.dtype not in DTYPES:
        raise TypeError(
            f"turbogelu.{op}: unsupported dtype {t.dtype}; supported dtypes are float32, "
            "float64, float16 and bfloat16"
        )


def check_args(approximate: str, backward: str = "default", tier: str = "accurate") -> None:
    """GELU's arguments, as ops_common.h checks them."""
    if approximate not in MODES:
        raise ValueError(f"turbogelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if backward not in BACKWARD:
        raise ValueError(
            f"turbogelu: backward must be 'default', 'direct' or 'matched', got {backward!r}"
        )
    check_tier("gelu", tier)


def check_out(out, x, op: str) -> None:
    """out must have x's dtype and shape: out= is never resized (a custom op that resized a
    mutated argument could not be functionalized)."""
    if out.dtype != x.dtype:
        raise TypeError(f"turbogelu.{op}: out has dtype {out.dtype} but x has dtype {x.dtype}")
    if out.shape != x.shape:
        raise RuntimeError(
            f"turbogelu.{op}: out has shape {list(out.shape)} but x has shape {list(x.shape)} "
            "(out= tensors are not resized)"
        )


def check_like(t, x, op: str, what: str = "grad", xname: str = "x", note: str = "") -> None:
    """``t`` (grad, b, out, ...) must have ``x``'s dtype and shape (``note`` ends the shape
    message, e.g. " (no broadcasting)")."""
    if t.dtype != x.dtype:
        raise TypeError(
            f"turbogelu.{op}: {what} has dtype {t.dtype} but {xname} has dtype {x.dtype}"
        )
    if t.shape != x.shape:
        raise RuntimeError(
            f"turbogelu.{op}: {what} has shape {list(t.shape)} but {xname} has shape "
            f"{list(x.shape)}{note}"
        )


def check_grad_matches(grad, x) -> None:
    """gelu_backward's grad must have x's dtype and shape."""
    check_like(grad, x, "gelu_backward")


def check_same_device(op: str, x, xname: str = "x", **others) -> None:
    """Every tensor of a call on x's device, as the C++ kernels require of theirs. The fake
    (meta) kernels need it too: a meta tensor beside a CPU one dispatches to them, and they
    would return an uncomputed tensor on x's device. ``xname``: what the op calls x."""
    for what, t in others.items():
        if t.device != x.device:
            raise RuntimeError(
                f"turbogelu.{op}: {what} is on {t.device} but {xname} is on {x.device} (every "
                "tensor of one call must be on one device)"
            )


# ---------------------------------------------------------------- the activation family


def check_family_backward(op: str, backward: str) -> None:
    if backward not in BACKWARD:
        raise ValueError(
            f"turbogelu.{op}: backward must be 'default', 'direct' or 'matched', got {backward!r}"
        )


def check_tier(op: str, tier: str) -> None:
    """The family's tiers: "accurate" (the default) or "paper" (ops_common.h's family_tier),
    where the op has the tier (the table's ``Op.tiers``; softplus has no paper program)."""
    if tier not in ("accurate", "paper"):
        raise ValueError(f"turbogelu.{op}: tier must be 'accurate' or 'paper', got {tier!r}")
    row = next((o for o in _table.OPS if op in (o.name, o.module)), None)
    if row is not None and tier not in row.tiers:
        raise ValueError(
            f"turbogelu.{op}: there is no {tier!r} tier for {row.name} (the source paper has "
            f"no program for it); use tier='accurate'"
        )


def check_cap_type(cap, op: str = "softcap") -> None:
    """softcap's one rule for what a cap may be, for the function and the module alike: a
    real number, a Python int or float or a numpy integer or floating scalar; not a bool, not
    a tensor (the schema would read a 0-dim one's value on the host, a device sync, and
    True as 1.0), not None. TypeError otherwise."""
    if isinstance(cap, (bool, torch.Tensor)) or not (
        isinstance(cap, (int, float))
        or (type(cap).__module__ == "numpy" and type(cap).__name__.startswith(("float", "int")))
    ):
        raise TypeError(
            f"turbogelu.{op}: cap must be a real number (a Python or numpy float or int), got "
            f"{type(cap).__name__} {cap!r}"
        )


def check_cap(cap) -> tuple[float, float]:
    """softcap's (cap, 1/cap) as the kernels use them, both rounded to float32 as
    ops_common.h's family_call does (1/cap is the float32 quotient: rounding the float64
    quotient of float32 values is the same); TypeError for what check_cap_type refuses,
    ValueError unless both are positive and finite."""
    check_cap_type(cap)
    cap = float(cap)
    ok = math.isfinite(cap)
    c32 = inv32 = 0.0
    if ok:
        c32 = float(torch.tensor(float(cap), dtype=torch.float32))
        if math.isfinite(c32) and c32 > 0:
            inv32 = float(torch.tensor(1.0 / c32, dtype=torch.float32))
    if not (ok and cap > 0 and math.isfinite(c32) and c32 > 0 and math.isfinite(inv32)):
        raise ValueError(
            "turbogelu.softcap: cap must be positive and finite (and so in float32, with its "
            f"reciprocal), got {cap!r}"
        )
    return c32, inv32


def check_family_like(t, x, op: str, what: str, xname: str) -> None:
    """A family op's second tensor (grad, b, out) must have x's (or a's) dtype and shape:
    ops_common.h's check_like, which never broadcasts."""
    check_like(t, x, op, what, xname, " (no broadcasting)")
