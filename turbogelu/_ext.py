"""Loading of the compiled extension, with a clear message when it has not been built."""

from __future__ import annotations

import importlib

_loaded = None


def load_extension():
    """Import torch, then turbogelu._C (which registers torch.ops.turbogelu.*); once."""
    global _loaded
    if _loaded is None:
        import torch  # noqa: F401  (the extension links against libtorch: load it first)

        try:
            _loaded = importlib.import_module("turbogelu._C")
        except ImportError as e:
            raise ImportError(
                "turbogelu's compiled extension (turbogelu._C) is not built or does not load: "
                f"{e}. Build it with `pip install --no-build-isolation -e .` in the repository "
                "(or `make build`). The pure-Python parts (python -m turbogelu fit / codegen, "
                "turbogelu.approx) work without it."
            ) from e
    return _loaded
