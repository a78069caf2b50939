"""A tag for torch.compile's on-disk caches that changes with turbogelu's Python code.

Inductor's and AOTAutograd's caches key a compiled graph by its nodes, and a custom op such
as ``turbogelu.sigmoid`` is a node whatever its Python registrations say: the autograd
formula and the fake kernels registered in ``ops.py`` are traced into the
cached forward and backward graphs but are not part of the key. After an upgrade that
changes them, a warm cache would replay the old backward (found here: a changed default
backward of sigmoid came back as the previous one, 2.5e-4 off). PyTorch's own knob for this
is ``torch.compiler.config.cache_key_tag``; importing the ops appends a tag made from the
package's Python sources to it (keeping whatever tag the user set). The kernels themselves
run from the extension at call time, so they need no tag; but the lowerings
(turbogelu/_inductor.py) write the kernels' program constants into the generated code, so the
tag also covers those constants, as the extension holds them (a rebuilt extension with new
programs and unchanged Python would otherwise replay the old ones).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def source_tag(package: Path = PACKAGE, extra: bytes = b"") -> str:
    """``turbogelu-<16 hex digits>``: a SHA-256 of the package's top-level Python files (and
    ``extra``)."""
    digest = hashlib.sha256()
    for path in sorted(package.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(extra)
    return f"turbogelu-{digest.hexdigest()[:16]}"


def programs_bytes() -> bytes:
    """Every program of the kernels' table as the extension holds it (turbogelu._programs)."""
    from . import _programs

    return repr(_programs.every_program()).encode()


def tag_compile_caches() -> str:
    """Append the tag of the sources and the extension's programs to
    torch.compiler.config.cache_key_tag (once); return the tag."""
    import torch.compiler.config as compiler_config

    tag = source_tag(extra=programs_bytes())
    current = compiler_config.cache_key_tag
    if tag not in current.split("|"):
        compiler_config.cache_key_tag = f"{current}|{tag}" if current else tag
    return tag
