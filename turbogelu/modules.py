"""nn.Module drop-ins for nn.GELU, nn.SiLU, nn.Sigmoid, nn.Tanh and nn.Softplus (plus SwiGLU and
Softcap), and functions that swap them into an existing model."""

from __future__ import annotations

import sys

import torch
from torch import nn

from . import ops


class _Module(nn.Module):
    """What every module of this package shares: TorchScript is refused in words (its
    compiler cannot read the ops' Python wrappers, and it is deprecated in PyTorch)."""

    def __prepare_scriptable__(self):  # torch.jit.script calls it on every submodule first
        raise RuntimeError(
            f"turbogelu.{type(self).__name__} cannot be compiled by torch.jit.script "
            "(TorchScript is deprecated in PyTorch and does not read this package's Python "
            "functions); use torch.compile, or torch.export for a graph"
        )


class GELU(_Module):
    """Polynomial GELU as a module: ``turbogelu.GELU(approximate)`` replaces ``nn.GELU``
    (``backward`` and ``tier`` as ``turbogelu.gelu``'s)."""

    def __init__(
        self, approximate: str = "none", *, backward: str = "default", tier: str = "accurate"
    ) -> None:
        super().__init__()
        ops._check_args(approximate, backward, tier)
        self.approximate = approximate
        self.backward = backward
        self.tier = tier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.gelu(x, self.approximate, backward=self.backward, tier=self.tier)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}, backward={self.backward!r}, tier={self.tier!r}"


def replace_gelu(model: nn.Module, *, backward: str = "default", tier: str = "accurate") -> int:
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
                    replacement[id(child)] = GELU(child.approximate, backward=backward, tier=tier)
                setattr(parent, name, replacement[id(child)])
    return len(replacement)


class _Family(_Module):
    """A family function as a module (``backward`` and ``tier`` as the functions')."""

    def __init__(self, *, backward: str = "default", tier: str = "accurate") -> None:
        super().__init__()
        ops._check_backward(type(self).__name__, backward)
        ops._check_tier(type(self).__name__, tier)
        self.backward = backward
        self.tier = tier

    def _kw(self) -> dict:
        return {"backward": self.backward, "tier": self.tier}

    def extra_repr(self) -> str:
        return f"backward={self.backward!r}, tier={self.tier!r}"


class Sigmoid(_Family):
    """Polynomial sigmoid: ``turbogelu.Sigmoid()`` replaces ``nn.Sigmoid``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.sigmoid(x, **self._kw())


class Tanh(_Family):
    """Polynomial tanh: ``turbogelu.Tanh()`` replaces ``nn.Tanh``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.tanh(x, **self._kw())


class SiLU(_Family):
    """Polynomial SiLU: ``turbogelu.SiLU(inplace)`` replaces ``nn.SiLU``."""

    def __init__(
        self, inplace: bool = False, *, backward: str = "default", tier: str = "accurate"
    ) -> None:
        super().__init__(backward=backward, tier=tier)
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.silu(x, self.inplace, **self._kw())

    def extra_repr(self) -> str:
        return f"inplace={self.inplace}, " + super().extra_repr()


class SwiGLU(_Family):
    """``silu(a) * b`` with ``a, b = x.chunk(2, dim)``: the gate of a SwiGLU MLP whose two
    projections are computed as one (its output has half of x's size along ``dim``)."""

    def __init__(self, dim: int = -1, *, backward: str = "default", tier: str = "accurate") -> None:
        super().__init__(backward=backward, tier=tier)
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ops._check_tensor(x, "SwiGLU")
        if not -x.dim() <= self.dim < max(x.dim(), 1) or x.dim() == 0:
            raise IndexError(
                f"turbogelu.SwiGLU: dim {self.dim} is out of range for x of shape "
                f"{list(x.shape)} ({x.dim()} dimensions); x must have a dimension to split"
            )
        if x.shape[self.dim] % 2:
            raise ValueError(
                f"turbogelu.SwiGLU: dimension {self.dim} of x has odd size {x.shape[self.dim]}; "
                "it must split into two equal halves"
            )
        a, b = x.chunk(2, self.dim)
        return ops.swiglu(a, b, **self._kw())

    def extra_repr(self) -> str:
        return f"dim={self.dim}, " + super().extra_repr()


class Softcap(_Family):
    """``cap * tanh(x / cap)`` by the polynomial tanh."""

    def __init__(self, cap: float, *, backward: str = "default", tier: str = "accurate") -> None:
        super().__init__(backward=backward, tier=tier)
        ops._check_cap(cap)
        self.cap = float(cap)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.softcap(x, self.cap, **self._kw())

    def extra_repr(self) -> str:
        return f"cap={self.cap}, " + super().extra_repr()


class Softplus(_Family):
    """Polynomial softplus: ``turbogelu.Softplus()`` replaces ``nn.Softplus()`` with its
    default beta (1) and threshold (20), the only ones it computes."""

    def __init__(
        self,
        beta: float = 1.0,
        threshold: float = 20.0,
        *,
        backward: str = "default",
        tier: str = "accurate",
    ) -> None:
        super().__init__(backward=backward, tier=tier)
        ops._check_softplus_args(beta, threshold, "Softplus")
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.softplus(x, **self._kw())

    def extra_repr(self) -> str:
        return f"beta={self.beta:g}, threshold={self.threshold:g}, " + super().extra_repr()


def _softplus_replacement(m: nn.Softplus, bw: str) -> Softplus | None:
    """An nn.Softplus with the defaults; None (left as it is) for any other beta or threshold."""
    if m.beta != ops.SOFTPLUS_BETA or m.threshold != ops.SOFTPLUS_THRESHOLD:
        return None
    return Softplus(backward=bw)


# kind -> (the torch module it replaces, a function making the replacement from it, or None
# where this package does not compute that module's settings)
_REPLACEMENTS = {
    "gelu": (nn.GELU, lambda m, bw: GELU(m.approximate, backward=bw)),
    "silu": (nn.SiLU, lambda m, bw: SiLU(m.inplace, backward=bw)),
    "sigmoid": (nn.Sigmoid, lambda m, bw: Sigmoid(backward=bw)),
    "tanh": (nn.Tanh, lambda m, bw: Tanh(backward=bw)),
    "softplus": (nn.Softplus, _softplus_replacement),
}
KINDS = tuple(_REPLACEMENTS)

# Hugging Face transformers' activation classes (transformers/activations.py) and the GELU form
# each computes: GELUActivation is F.gelu (or its erf formula), GELUTanh (PytorchGELUTanh) F.gelu
# with approximate="tanh" (or its formula), NewGELU, FastGELU and AccurateGELU write the tanh
# formula out (FastGELU's sqrt(2/pi) to ten digits: the same function in float32); SiLUActivation
# is F.silu. Not matched: QuickGELU (x sigmoid(1.702 x)) and ClippedGELU, other functions.
TRANSFORMERS_GELU = {
    "GELUActivation": "none",
    "GELUTanh": "tanh",
    "PytorchGELUTanh": "tanh",
    "NewGELUActivation": "tanh",
    "FastGELUActivation": "tanh",
    "AccurateGELUActivation": "tanh",
}


def _transformers_replacements() -> dict[str, list]:
    """{kind: [(class, make)]} for transformers' activation classes, when transformers'
    activations module is loaded (a model built from it has loaded it; nothing is imported
    here, so replace_activations stays cheap without it)."""
    acts = sys.modules.get("transformers.activations")
    if acts is None:
        return {}
    gelu = [
        (getattr(acts, name), lambda m, bw, ap=ap: GELU(ap, backward=bw))
        for name, ap in TRANSFORMERS_GELU.items()
        if hasattr(acts, name)
    ]
    silu = [(acts.SiLUActivation, lambda m, bw: SiLU(backward=bw))]
    return {"gelu": gelu, "silu": silu if hasattr(acts, "SiLUActivation") else []}


def replace_activations(
    model: nn.Module, kinds=KINDS, *, backward: str = "default"
) -> dict[str, int]:
    """Replace every ``nn.GELU``, ``nn.SiLU``, ``nn.Sigmoid``, ``nn.Tanh`` and ``nn.Softplus``
    of the given ``kinds`` inside ``model`` (in place) by this package's module; return how
    many modules of each kind were replaced (shared instances count once and stay shared, as
    in ``replace_gelu``). An ``nn.Softplus`` with a beta or threshold other than the defaults
    is left as it is (not counted). Hugging Face transformers' GELU and SiLU activation
    classes count as "gelu" and "silu" (``TRANSFORMERS_GELU``: each to the GELU form it
    computes) when transformers is loaded. Only module types are matched, never functional
    calls (``torch.sigmoid`` inside a forward: ``turbogelu.patch()`` reaches those) or
    subclasses of this package's modules."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"replace_activations expects an nn.Module, got {type(model).__name__}")
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, (tuple, list, set, frozenset)):
        raise TypeError(
            f"replace_activations: kinds must be a kind or a sequence of kinds from {KINDS}, "
            f"got {type(kinds).__name__} {kinds!r}"
        )
    bad = [k for k in kinds if k not in _REPLACEMENTS]
    if bad:
        raise ValueError(f"replace_activations: unknown kind(s) {bad}; choose from {KINDS}")
    ops._check_backward("replace_activations", backward)
    ours = (GELU, SiLU, Sigmoid, Tanh, Softplus)
    hf = _transformers_replacements()
    matchers = [
        (kind, *pair) for kind in kinds for pair in [_REPLACEMENTS[kind], *hf.get(kind, [])]
    ]
    counts = {k: 0 for k in kinds}
    replacement: dict[int, nn.Module] = {}
    for parent in model.modules():
        for name, child in list(parent._modules.items()):
            if child is None or isinstance(child, ours):
                continue
            for kind, cls, make in matchers:
                if isinstance(child, cls):
                    if id(child) not in replacement:
                        new = make(child, backward)
                        if new is None:
                            break
                        replacement[id(child)] = new
                        counts[kind] += 1
                    setattr(parent, name, replacement[id(child)])
                    break
    return counts
