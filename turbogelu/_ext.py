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


_library_ready = False


def load_library() -> None:
    """What the op module (ops.py) needs before it registers fakes and autograd:
    the extension, the Apple GPU kernels (Metal, compiled at first use: mps.py) and the tag
    that keys torch.compile's disk caches by this package's Python registrations
    (_compile_cache.py); once."""
    global _library_ready
    if not _library_ready:
        from . import mps
        from ._compile_cache import tag_compile_caches

        load_extension()
        mps.register()
        tag_compile_caches()
        _library_ready = True
