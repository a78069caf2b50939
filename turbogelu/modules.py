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
    ``approximate``; return how many modules were replaced. A module registered in several
    places (one instance under two names) is replaced everywhere by one ``turbogelu.GELU``, so
    the sharing is kept and it counts once. A model that *is* an ``nn.GELU`` cannot be replaced
    in place: wrap it, or construct ``turbogelu.GELU`` directly."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"replace_gelu expects an nn.Module, got {type(model).__name__}")
    replacement: dict[int, GELU] = {}  # id(original) -> its one replacement
    for parent in model.modules():
        # _modules, not named_children(): that skips a second name of an instance it has seen.
        for name, child in list(parent._modules.items()):
            if isinstance(child, nn.GELU) and not isinstance(child, GELU):
                if id(child) not in replacement:
                    replacement[id(child)] = GELU(child.approximate, backward=backward)
                setattr(parent, name, replacement[id(child)])
    return len(replacement)
