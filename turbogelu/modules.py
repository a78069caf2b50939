"""nn.Module drop-in for nn.GELU, and a function that swaps it into an existing model."""

from __future__ import annotations

import torch
from torch import nn

from . import ops


class GELU(nn.Module):
    """Polynomial GELU as a module: ``turbogelu.GELU(approximate)`` replaces ``nn.GELU``."""

    def __init__(self, approximate: str = "none", *, backward: str = "default") -> None:
        super().__init__()
        ops._check_args(approximate, backward)
        self.approximate = approximate
        self.backward = backward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.gelu(x, self.approximate, backward=self.backward)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}, backward={self.backward!r}"


def replace_gelu(model: nn.Module, *, backward: str = "default") -> int:
    """Replace every ``nn.GELU`` inside ``model`` (in place) by ``turbogelu.GELU`` with the same
    ``approximate``; return how many were replaced. A model that *is* an ``nn.GELU`` cannot be
    replaced in place: wrap it, or construct ``turbogelu.GELU`` directly."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"replace_gelu expects an nn.Module, got {type(model).__name__}")
    count = 0
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.GELU) and not isinstance(child, GELU):
                setattr(parent, name, GELU(child.approximate, backward=backward))
                count += 1
    return count
