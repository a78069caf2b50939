"""Argument checks shared by the fake kernels (ops.py) and the MPS kernels (mps.py), with the
messages of the C++ kernels (kernels/include/turbogelu/ops_common.h)."""

from __future__ import annotations

APPROXIMATE = ("none", "tanh")
BACKWARD = ("default", "direct", "matched")


def check_args(approximate: str, backward: str = "default") -> None:
    if approximate not in APPROXIMATE:
        raise ValueError(f"turbogelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if backward not in BACKWARD:
        raise ValueError(
            f"turbogelu: backward must be 'default', 'direct' or 'matched', got {backward!r}"
        )


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


def check_grad_matches(grad, x) -> None:
    """gelu_backward's grad must have x's dtype and shape."""
    if grad.dtype != x.dtype:
        raise TypeError(
            f"turbogelu.gelu_backward: grad has dtype {grad.dtype} but x has dtype {x.dtype}"
        )
    if grad.shape != x.shape:
        raise RuntimeError(
            f"turbogelu.gelu_backward: grad has shape {list(grad.shape)} but x has shape "
            f"{list(x.shape)}"
        )
