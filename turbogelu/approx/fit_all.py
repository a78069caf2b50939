"""Every committed spec refitted by one command: ``python -m turbogelu fit --all`` (``make fit``).

The specs under ``data/specs/`` are of several kinds, each fitted by its own lab module with
its shipped settings (``spec.DEFAULTS``, ``spec.FAMILY_DEFAULTS``, the modules' constants):

======================================  ===========================================
files                                   fitted by
======================================  ===========================================
``gelu_exact.json``, ``gelu_tanh.json``  ``spec.build_spec`` (``fit --gelu-mode M``)
``cells/gelu_*.json``                   ``turbogelu.approx.cells``
``cells/<function>.json``               ``turbogelu.approx.family_cells``
``cells16/<function>_<format>.json``    ``turbogelu.approx.cells16``
``packed/*.json``                       ``turbogelu.approx.packed``
``<function>/<tier>.json``              ``turbogelu.approx.family_programs``
``gelu_<mode>/paper.json``              ``turbogelu.approx.family_programs``
``exp2/<tier>.json``                    ``turbogelu.approx.exp2_programs``
======================================  ===========================================

Every file has spec.py's one schema and names this command as its maker; only ``python -m
turbogelu fit`` writes committed specs (``spec.fit_writes``: the modules' own commands compare
or write elsewhere). ``STEPS`` runs each fit in that order, then ``codegen`` writes the
sources from the specs. Each step keeps a committed file whose refit matches it (the kernels'
values bit for bit, measured figures to the module's tolerance) and refuses, without ``--force``, to
overwrite one that differs; so ``make fit`` on a clean checkout changes no file, and a step
that would is reported and makes the command fail. ``paths`` lists the files each step owns;
``tests/test_fit_all.py`` checks that together they are every spec file, each once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import _table
from . import spec as specmod


@dataclass(frozen=True)
class Step:
    """One fitting command: what it fits, the committed files it writes, and how to run it
    (``force``: overwrite files that differ; returns the exit status)."""

    name: str
    paths: Callable[[], list[Path]]
    run: Callable[[bool], int]


def _flag(force: bool) -> list[str]:
    return ["--force"] if force else []


def _gelu(force: bool) -> int:
    """``python -m turbogelu fit --gelu-mode M`` with the shipped settings, for each form."""
    status = 0
    for mode in specmod.MODES:
        s = specmod.defaults(mode)
        doc = specmod.build_spec(s.range, s.iters, s.points, s.degree, mode)
        status |= specmod.write_reported(specmod.spec_path(mode), specmod.dumps(doc), force=force)
    return status


def _gelu_paths() -> list[Path]:
    return [specmod.spec_path(mode) for mode in specmod.MODES]


def _gelu_cells(force: bool) -> int:
    from . import cells

    return cells.main(_flag(force))


def _gelu_cells_paths() -> list[Path]:
    from . import cells

    return [cells.spec_path(mode) for mode in cells.MODES]


def _family_cells(force: bool) -> int:
    from . import family_cells

    return family_cells.main(_flag(force))


def _family_cells_paths() -> list[Path]:
    from . import family_cells

    return [family_cells.spec_path(fn) for fn in family_cells.FUNCTIONS]


def _cells16(force: bool) -> int:
    from . import cells16

    return cells16.main(_flag(force))


def _cells16_paths() -> list[Path]:
    from . import cells16

    return [cells16.spec_path(fn, fmt) for fn, fmt in cells16.SIZED]


def _packed(force: bool) -> int:
    from . import packed

    return packed.main(_flag(force))


def _packed_paths() -> list[Path]:
    from . import packed

    return [packed.path(m, d) for m in packed.MODES for d in packed.DIRECTIONS]


def _family_tiers() -> list[tuple[str, str]]:
    """(function, tier) of every family spec: each fitted function in each tier it ships, and
    GELU's rows' paper tier (their accurate programs are GELU's own specs, above)."""
    from . import family_programs

    own = [(fn, t) for fn in family_programs.FUNCTIONS for t in _table.program_tiers(fn)]
    gelu = [
        (fn, "paper")
        for fn in family_programs.PAPER_FUNCTIONS
        if fn not in family_programs.FUNCTIONS
    ]
    return own + gelu


def _family(force: bool) -> int:
    from . import family_programs

    status = 0
    for fn, tier in _family_tiers():
        status |= family_programs.main([fn, "--tier", tier, *_flag(force)])
    return status


def _family_paths() -> list[Path]:
    return [specmod.spec_path(fn, tier) for fn, tier in _family_tiers()]


def _exp2(force: bool) -> int:
    from . import exp2_programs

    status = 0
    for tier in exp2_programs.TIERS:
        status |= exp2_programs.main(["--tier", tier, *_flag(force)])
    return status


def _exp2_paths() -> list[Path]:
    from . import exp2_programs

    return [exp2_programs.spec_file(tier) for tier in exp2_programs.TIERS]


STEPS = (
    Step("GELU's kernel specs", _gelu_paths, _gelu),
    Step("GELU's cells", _gelu_cells_paths, _gelu_cells),
    Step("the family's cells", _family_cells_paths, _family_cells),
    Step("the cells sized for 16-bit formats", _cells16_paths, _cells16),
    Step("GELU's packed bfloat16 programs", _packed_paths, _packed),
    Step("the family's programs, every tier", _family_paths, _family),
    Step("exp2's programs", _exp2_paths, _exp2),
)


def committed_specs(root: Path | None = None) -> list[Path]:
    """Every spec file under ``data/specs/`` (or ``root``)."""
    root = specmod.SPEC_DIR if root is None else Path(root)
    return sorted(root.rglob("*.json"))


def run(force: bool = False, list_only: bool = False) -> int:
    """Every step in order, then codegen (``list_only``: print each step's files instead).
    The exit status is 1 when a step failed (a committed spec differs from its refit)."""
    if list_only:
        for step in STEPS:
            print(f"{step.name}:")
            for p in step.paths():
                print(f"  data/specs/{p.relative_to(specmod.SPEC_DIR)}")
        return 0
    failed = []
    with specmod.fit_writes():
        for i, step in enumerate(STEPS, 1):
            print(f"[{i}/{len(STEPS)}] {step.name}", file=sys.stderr, flush=True)
            if step.run(force) != 0:
                failed.append(step.name)
    from . import codegen

    print("[codegen] the sources from the specs", file=sys.stderr, flush=True)
    codegen.write_outputs(codegen.outputs())
    if failed:
        print(f"error: these steps did not refit their committed specs: {', '.join(failed)} "
              "(their messages above; --force overwrites)", file=sys.stderr)  # fmt: skip
        return 1
    return 0
