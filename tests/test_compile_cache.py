"""turbogelu/_compile_cache.py: torch.compile's disk caches are broken by a change to the
package's Python registrations (autograd formulas, fake kernels), which they do not key."""

from __future__ import annotations

import shutil

import torch

from turbogelu import _compile_cache, ops  # noqa: F401  (ops: the import that tags)


def test_importing_the_ops_tags_the_compile_caches():
    tag = _compile_cache.source_tag(extra=_compile_cache.programs_bytes())
    assert tag.startswith("turbogelu-") and len(tag) == len("turbogelu-") + 16
    assert tag in torch.compiler.config.cache_key_tag.split("|")


def test_the_tag_follows_the_sources(tmp_path):
    copy = tmp_path / "pkg"
    copy.mkdir()
    for path in _compile_cache.PACKAGE.glob("*.py"):
        shutil.copy(path, copy / path.name)
    assert _compile_cache.source_tag(copy) == _compile_cache.source_tag()
    module = copy / "ops.py"
    module.write_text(module.read_text() + "\n# a changed registration\n")
    assert _compile_cache.source_tag(copy) != _compile_cache.source_tag()


def test_a_user_tag_is_kept():
    config = torch.compiler.config
    before = config.cache_key_tag
    try:
        config.cache_key_tag = "mine"
        tag = _compile_cache.tag_compile_caches()
        assert config.cache_key_tag == f"mine|{tag}"
        _compile_cache.tag_compile_caches()  # once only
        assert config.cache_key_tag == f"mine|{tag}"
    finally:
        config.cache_key_tag = before


def test_the_tag_follows_the_extensions_programs():
    """The lowerings write the kernels' constants into compiled code: the tag changes with
    them (a program of the table changed by one ulp here)."""
    programs = _compile_cache.programs_bytes()
    assert b"gelu_none" in programs and b"softplus" in programs
    changed = programs.replace(b"coefficients=(", b"coefficients=(1e-45 + ", 1)
    assert _compile_cache.source_tag(extra=changed) != _compile_cache.source_tag(extra=programs)
