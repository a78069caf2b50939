"""``turbogelu.patch()``: route PyTorch's functional activations to this package's ops inside a
block or a decorated function, for models that call ``F.gelu`` / ``torch.sigmoid`` themselves
(Hugging Face's activation classes, a forward written by hand) rather than holding the
``torch.nn`` modules that ``replace_activations`` swaps.

It is a ``torch.overrides.TorchFunctionMode``: every call of a PyTorch function passes through
it, and it answers these (any other call, and these with arguments the ops do not compute, run
unchanged):

    torch.nn.functional.gelu(x, approximate)       -> turbogelu.gelu
    torch.nn.functional.silu(x, inplace)           -> turbogelu.silu
    torch.sigmoid, Tensor.sigmoid, F.sigmoid       -> turbogelu.sigmoid
    torch.tanh, Tensor.tanh, F.tanh                -> turbogelu.tanh
    torch.nn.functional.softplus(x) (beta 1, threshold 20) -> turbogelu.softplus

for a floating tensor (float32, float64, float16, bfloat16) with no ``out=``. Modes are per
thread: the block patches the thread it runs on (autograd's backward of a CPU tensor runs on
the calling thread; the patched forward has already chosen the ops whose backward runs).
torch.compile traces the mode (no graph break: tests/test_patch.py compiles with
``fullgraph=True``). softcap spelled ``c * tanh(x / c)`` becomes ``c * turbogelu.tanh(x / c)``
(the same polynomial; the fused op needs ``turbogelu.softcap``).
"""

from __future__ import annotations

import contextlib

import torch
from torch.overrides import TorchFunctionMode

from . import ops

F = torch.nn.functional
_FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
KINDS = ("gelu", "silu", "sigmoid", "tanh", "softplus")


def _floating(x) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype in _FLOATING


def _routes(kinds, backward: str, tier: str) -> dict:
    """{PyTorch function: the replacement taking its arguments, or returning NotImplemented
    where the op does not compute them}."""
    family = {"backward": backward, "tier": tier}

    def gelu(x, approximate="none"):
        if approximate not in ("none", "tanh"):
            return NotImplemented
        return ops.gelu(x, approximate, backward=backward, tier=tier)

    def silu(x, inplace=False):
        return ops.silu(x, inplace, **family)

    def sigmoid(x, *, out=None):
        return NotImplemented if out is not None else ops.sigmoid(x, **family)

    def tanh(x, *, out=None):
        return NotImplemented if out is not None else ops.tanh(x, **family)

    def softplus(x, beta=1.0, threshold=20.0):
        if beta != ops.SOFTPLUS_BETA or threshold != ops.SOFTPLUS_THRESHOLD:
            return NotImplemented
        return ops.softplus(x, **family)

    table = {
        "gelu": {F.gelu: gelu},
        "silu": {F.silu: silu},
        "sigmoid": {torch.sigmoid: sigmoid, torch.Tensor.sigmoid: sigmoid, F.sigmoid: sigmoid},
        "tanh": {torch.tanh: tanh, torch.Tensor.tanh: tanh, F.tanh: tanh},
        "softplus": {F.softplus: softplus},
    }
    routes = {}
    for kind in kinds:
        routes.update(table[kind])
    return routes


class _Mode(TorchFunctionMode):
    def __init__(self, routes: dict):
        super().__init__()
        self.routes = routes

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        route = self.routes.get(func)
        if route is not None and args and _floating(args[0]):
            result = route(*args, **kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)


class patch(contextlib.ContextDecorator):  # noqa: N801 (used as a function: with patch():)
    """Inside the block (or the decorated function), on this thread, PyTorch's GELU, SiLU,
    sigmoid, tanh and softplus calls run this package's ops (module docstring). ``kinds``:
    which of them (default all of ``KINDS``); ``backward`` and ``tier`` as the functions'.

        with turbogelu.patch():
            logits = model(tokens)

        @turbogelu.patch(kinds=("gelu",))
        def step(batch): ...
    """

    def __init__(self, kinds=KINDS, *, backward: str = "default", tier: str = "accurate"):
        if isinstance(kinds, str):
            kinds = (kinds,)
        bad = [k for k in kinds if k not in KINDS]
        if bad:
            raise ValueError(f"turbogelu.patch: unknown kind(s) {bad}; choose from {KINDS}")
        ops._check_backward("patch", backward)
        ops._check_tier("patch", tier)
        self.routes = _routes(tuple(kinds), backward, tier)
        self._modes: list[_Mode] = []

    def __enter__(self):
        mode = _Mode(self.routes)
        self._modes.append(mode)  # a stack: the same patch may be entered again, nested
        mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._modes.pop().__exit__(*exc)
