"""turbogelu: fast, accurate polynomial GELU kernels for PyTorch, and the same for sigmoid,
tanh, SiLU, SwiGLU and tanh softcap.

``import turbogelu`` is cheap and needs neither torch nor the compiled extension; the torch
API below is loaded on first use (``turbogelu.gelu`` etc.), which imports torch and
``turbogelu._C`` and raises a clear error if the extension has not been built.
"""

from __future__ import annotations

import importlib

from . import _table

__version__ = "0.3.0"

# name -> module that defines it; resolved lazily by __getattr__ (PEP 562).
_LAZY = {
    "gelu": "turbogelu.ops",
    "gelu_": "turbogelu.ops",
    "gelu_op": "turbogelu.ops",
    "gelu_backward_op": "turbogelu.ops",
    "cpu_isa": "turbogelu.ops",
    "cpu_isas_available": "turbogelu.ops",
    "cpu_program": "turbogelu.ops",
    "GELU": "turbogelu.modules",
    "replace_gelu": "turbogelu.modules",
    "replace_activations": "turbogelu.modules",
    "patch": "turbogelu.patching",
}

# The activation family's functions, in-place forms and modules (turbogelu/_table.py).
for _op in _table.OPS:
    _LAZY[_op.name] = "turbogelu.ops"
    if _op.inplace:
        _LAZY[f"{_op.name}_"] = "turbogelu.ops"
    if _op.module:
        _LAZY[_op.module] = "turbogelu.modules"
_LAZY["softmax"] = "turbogelu.ops"
del _op

# Submodules reachable as attributes without importing them first (turbogelu.ops.use_cpu_kernel).
_SUBMODULES = ("ops", "family", "modules", "approx")

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"turbogelu.{name}")  # the import binds it in globals()
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'turbogelu' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
