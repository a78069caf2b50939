"""The activation family's Python names, kept at ``turbogelu.family`` so that code written
against it keeps working: the ops of every function (GELU's and the family's), their fake
kernels, autograd and public functions live in one module, ``turbogelu/ops.py``, and any name
asked of this module is that module's."""

from __future__ import annotations

from . import ops as _ops_module


def __getattr__(name: str):
    try:
        return getattr(_ops_module, name)
    except AttributeError:
        raise AttributeError(f"module 'turbogelu.family' has no attribute {name!r}") from None


def __dir__():
    return dir(_ops_module)
