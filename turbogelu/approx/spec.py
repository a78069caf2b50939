"""The kernels' spec files: their names, reading and writing, the defaults they are fitted
with, and the polynomial kernels' own specs (built from a fit, measured, stored with hex floats).

Every spec file under ``data/specs`` has one schema (version 2): an envelope (``envelope``,
checked by ``check_envelope``)

    {"schema": 2, "function": <a program of the kernels' table: gelu_none, gelu_tanh,
     sigmoid, tanh, silu, softplus, exp2>, "program": "polynomial" | "cells" |
     "packed_bf16" | "exp2", "tier": "accurate" | "paper",
     "generated_by": "python -m turbogelu fit --all", "parts": [<the parts it holds>],
     "default_backward": "direct" | "matched" (where it holds both derivatives)}

then the program's own fields (its settings, bounds, cells layout, exp2's window) and one
object per part: ``forward``, ``backward_direct`` (a fit of f'), ``backward_matched`` (the
forward's own derivative), or one direction (``forward``, ``backward``) for a packed program.
Only ``python -m turbogelu fit`` writes committed specs (``fit_writes``; ``fit --all``
refits every one with its shipped settings). The files, by ``SCHEMAS`` kind, each named, read
and written here only (``spec_path``, ``load``, ``dumps``):

* ``"poly"``, ``gelu_<exact|tanh>.json``: GELU's polynomial programs: three coefficient sets
  in the kernels' form (see ``replay``), each with its clamp R, scale 2/R^2 and float32
  coefficients written as hex, plus the errors measured by replaying the kernels' float32
  arithmetic. Built here.
* ``"cells"``, ``cells/gelu_<none|tanh>.json``: the CPU's table-driven kernel (``cells.py``);
  ``"family_cells"``, ``cells/<sigmoid|tanh|silu>.json``: the family's (``family_cells.py``);
  ``"cells16"``, ``cells16/<function>_<format>.json``: a cells program sized for a 16-bit
  format, where one of lower degree keeps the format's rule (``cells16.py``).
* ``"packed"``, ``packed/gelu_<none|tanh>_<forward|backward>_bf16.json``: the packed bfloat16
  CUDA path, one PolySpec document per file (``packed.py``, ``polyspec.py``).
* ``"accurate"``, ``<function>/accurate.json``: the activation family's accurate tier, three
  PolySpec documents per file (``family_programs.py``); ``"paper"``, ``<function>/paper.json``:
  its paper tier, the source paper's Table 2 programs.
* ``"exp2"``, ``exp2/<tier>.json``: exp2's programs (``exp2_programs.py``).

The settings each kind is fitted with are in one table below (``DEFAULTS``,
``PACKED_DEFAULTS``, ``CELLS_TAILS_FROM``, ``FAMILY_DEFAULTS``); nothing else writes those numbers.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _table

# Defined where the ops can import them without numpy; the spec module's names all the same.
from .._spec_names import BACKWARDS as BACKWARDS
from .._spec_names import MODES as MODES
from .._spec_names import PARTS as PARTS
from . import fit, reference, replay, rounding
from .polyspec import JSON_INDENT, PolySpec
from .rounding import f32_hex as f32_hex  # the spec files' hex form, where it was first

F32 = np.float32
# Package data (turbogelu/_data/specs, shipped in the wheel); in the checkout a link to the
# committed data/specs, which resolve() follows, so paths name the committed files.
SPEC_DIR = (Path(__file__).resolve().parents[1] / "_data" / "specs").resolve()
# Every spec file, whatever its program, opens with one envelope (``envelope``,
# ``check_envelope``): schema, function (a program of the kernels' table: gelu_none, gelu_tanh,
# sigmoid, ..., exp2), program (PROGRAMS), tier, generated_by, the parts it holds and, where it
# holds both derivatives, the default backward; then its program's own fields and its parts.
SCHEMA_VERSION = 2
PROGRAMS = ("polynomial", "cells", "packed_bf16", "exp2")
# The one command that writes the committed specs (with their shipped settings).
FIT_ALL = "python -m turbogelu fit --all"
# A packed spec holds one direction of one form (the polynomial and cells specs hold both).
DIRECTIONS = ("forward", "backward")
# The measurement: a uniform grid of [-6, 6] with >= 1e6 points, plus every float32
# within 1e-3 of +-R (where the clamp's jump and the fit's end meet).
GRID = (-6.0, 6.0, 1_000_001)
NEAR_CLAMP = 1e-3


@dataclass(frozen=True)
class FitSettings:
    """The settings of one shipped spec's fit: clamp R (the polynomial on [-R, R]), degree
    of P, IRLS iterations and sample points on [0, R]."""

    range: float
    degree: int
    iters: int
    points: int


# The shipped specs' fit settings, by file name (gelu_<name>.json): the one place they are
# written. `python -m turbogelu fit` takes its defaults from here (`make fit` passes no
# numbers), and the notebooks and tests read them here; each committed spec's generated_by
# command is fit_command() of its row (tests/test_fit.py).
DEFAULTS = {
    "exact": FitSettings(range=4.389, degree=8, iters=35, points=20000),
    "tanh": FitSettings(range=4.25, degree=8, iters=35, points=20000),
}


@dataclass(frozen=True)
class PackedSettings:
    """The settings of one packed bfloat16 spec (``packed.py``): degree of P and clamp R (the
    fit interval too)."""

    degree: int
    range: float


# The packed specs' settings, by (mode, direction), typed from the sweep of degrees 3-8 and
# R in {3, 3.5, 4} in experiments/archive/packed_half/feasibility.log (the best fit of each
# row of its README's table): every finite bfloat16 input within issue 5's bound, 2x
# PyTorch's own error.
PACKED_DEFAULTS = {
    ("none", "forward"): PackedSettings(degree=4, range=3.0),
    ("tanh", "forward"): PackedSettings(degree=3, range=3.0),
    ("none", "backward"): PackedSettings(degree=6, range=3.5),
    ("tanh", "backward"): PackedSettings(degree=6, range=3.5),
}

# Where the cells' tails begin (``cells.design``): beyond |x| = 5 the kernel returns x or 0,
# off by at most x Phi(-x) = 1.4e-6 there.
CELLS_TAILS_FROM = 5.0


@dataclass(frozen=True)
class FamilySettings:
    """The settings of one accurate-tier program of the activation family
    (``family_programs``): degree of P, clamp L (also the fit interval), the polynomial's
    variable before normalisation (``polyspec.VARIABLES``: "u" = |x| or "y" = x^2), the operation
    order (``replay.ORDERS``), IRLS iterations and sample points on [0, L]. The direct backward
    is fitted with the same degree, clamp, variable, iterations and points, as GELU's is."""

    degree: int
    clamp: float
    variable: str
    order: str
    iters: int
    points: int


# The accurate tier's programs (issue 17), by function (data/specs/<function>/accurate.json),
# each the cheapest of a degree scan (``family_programs.scan``) that holds the tier. The clamp
# is the smallest round value whose asymptote costs <= 3e-5 (sigmoid: e^-10.45 = 2.9e-5;
# tanh: 2 e^-11.2 = 2.7e-5; SiLU: 13 e^-13 = 2.9e-5; softplus: e^-10.5 = 2.8e-5), the degree
# the lowest whose float32 replay stays within 3e-5 inside it with every 16-bit bound held;
# one degree less misses 3e-5 (sigmoid 4.8e-5, tanh 4.6e-5, SiLU 6.6e-5, softplus 7.5e-5;
# softplus's own is 2.97e-5). The variable is u = |x|, not x^2 as for
# GELU: these functions have poles at +-i pi (tanh: +-i pi/2) close to the real line, and
# in x^2 the pole lies just beyond the interval's end, which costs sigmoid 16, tanh 18 and
# SiLU more than 26 (float32 never within 3e-5) degrees; family_programs says more.
FAMILY_DEFAULTS = {
    "sigmoid": FamilySettings(11, 10.45, "u", "generic", iters=35, points=20000),
    "tanh": FamilySettings(12, 5.6, "u", "generic", iters=35, points=20000),
    "silu": FamilySettings(13, 13.0, "u", "turbogelu", iters=35, points=20000),
    "softplus": FamilySettings(10, 10.5, "u", "generic", iters=35, points=20000),
}


# What a kernel spec may be fitted with. Degrees: those with compiled CPU kernels
# (TG_KERNEL_DEGREES in kernels/cpu/cpu_kernels.h; a test compares). R: beyond 10 the
# window's samples lie where float32 GELU already equals its asymptote (x, or 0 below) and
# a polynomial in x^2 of degree <= 12 cannot follow the corner; the shipped specs use 4.25
# and 4.389.
KERNEL_DEGREES = range(2, 13)
MAX_RANGE = 10.0


def check_settings(range_: float, iters: int, points: int, degree: int) -> None:
    """A ValueError naming the setting for a kernel spec fit that could not be shipped."""
    if not (isinstance(range_, int | float) and 0 < range_ <= MAX_RANGE):
        raise ValueError(f"R (--range) must be in (0, {MAX_RANGE:g}], got {range_!r}")
    if degree not in KERNEL_DEGREES:
        raise ValueError(
            f"degree (--degree) must be one with compiled kernels, {KERNEL_DEGREES.start}.."
            f"{KERNEL_DEGREES.stop - 1}, got {degree}"
        )
    if iters < 1:
        raise ValueError(f"IRLS iterations (--iters) must be >= 1, got {iters}")
    need = 2 * (degree + 1)
    if points < need:
        raise ValueError(
            f"sample points (--points) must be >= {need} for degree {degree}, got {points}"
        )


def file_mode(mode: str) -> str:
    """A GELU form as the spec files name it: "exact" for mode "none" (or "exact"), else mode."""
    return "exact" if mode in ("none", "exact") else mode


def defaults(mode: str) -> FitSettings:
    """The shipped fit settings of a GELU form ("none"/"exact" or "tanh")."""
    try:
        return DEFAULTS[file_mode(mode)]
    except KeyError:
        known = list(DEFAULTS)
        raise ValueError(f"no shipped spec for gelu mode {mode!r}; known: {known}") from None


def from_hex(s: str) -> float:
    v = float.fromhex(s)
    if float(F32(v)) != v:
        raise ValueError(f"{s} is not a float32 value")
    return v


def floats_near(r: float, width: float) -> np.ndarray:
    """Every float32 in [r - width, r + width] (r > 0), both signs."""
    lo, hi = F32(r - width), F32(r + width)
    bits = np.arange(lo.view(np.int32), hi.view(np.int32) + 1, dtype=np.int32)
    pos = bits.view(F32)
    return np.concatenate([-pos, pos])


def measure(part: dict, mode: str, grad: bool) -> dict:
    """Errors of one coefficient set replayed in float32 (and its float64 evaluation)."""
    grid = np.linspace(*GRID).astype(F32)
    near = floats_near(part["clamp"], NEAR_CLAMP)
    xs = np.concatenate([grid, near])
    x64 = xs.astype(np.float64)
    if grad:
        exact = reference.gelu_grad(x64, mode)
        got32 = replay.backward32(xs, part).astype(np.float64)
        got64 = replay.backward64(x64, part)
    else:
        exact = reference.gelu(x64, mode)
        got32 = replay.forward32(xs, part).astype(np.float64)
        got64 = replay.forward64(x64, part)
    err32 = np.abs(got32 - exact)
    err64 = np.abs(got64 - exact)
    n = len(grid)
    inside = np.abs(x64) <= part["clamp"]
    return {
        "max_abs_float32": float(err32.max()),
        "mean_abs_float32_grid": rounding.exact_mean(err32[:n]),  # the same on every CPU
        "argmax_float32": float(xs[int(err32.argmax())]),
        "max_abs_float64": float(err64.max()),
        "max_abs_fit_inside_float64": float(err64[inside].max()),
        "grid": f"uniform [{GRID[0]}, {GRID[1]}], {GRID[2]} points, + float32 within "
        f"{NEAR_CLAMP} of +-R",
    }


def _part_json(part: dict, mode: str, grad: bool, method: dict) -> dict:
    coeffs32 = [float(F32(c)) for c in part["coefficients"]]
    rounded = {
        "clamp": float(F32(part["clamp"])),
        "scale": float(F32(part["scale"])),
        "coefficients": coeffs32,
    }
    return {
        **method,
        "degree": len(coeffs32) - 1,
        "clamp": f32_hex(rounded["clamp"]),
        "scale": f32_hex(rounded["scale"]),
        "coefficients": [f32_hex(c) for c in coeffs32],
        "coefficients_decimal": coeffs32,
        "fit_coefficients_float64": [float.hex(float(c)) for c in part["coefficients"]],
        "errors": measure(rounded, mode, grad),
    }


def fit_command(range_: float, iters: int, points: int, degree: int, mode: str) -> str:
    gelu_mode = file_mode(mode)
    return shlex.join(
        [
            "python",
            "-m",
            "turbogelu",
            "fit",
            "--range",
            repr(range_),
            "--iters",
            str(iters),
            "--points",
            str(points),
            "--degree",
            str(degree),
            "--gelu-mode",
            gelu_mode,
        ]
    )


def build_spec(range_: float, iters: int, points: int, degree: int, mode: str) -> dict:
    """Fit forward and direct backward, derive the matched backward, measure all three."""
    check_settings(range_, iters, points, degree)
    method = {"method": "irls", "iters": iters, "points": points}
    fwd = fit.fit_gelu(range_, degree, iters, points, mode)
    direct = fit.fit_gelu(range_, degree, iters, points, mode, grad=True)
    matched = fit.matched_backward(fwd)
    parts = {
        "forward": _part_json(fwd, mode, False, method),
        "backward_direct": _part_json(direct, mode, True, method),
        "backward_matched": _part_json(
            matched, mode, True, {"method": "derivative of forward", "iters": 0, "points": 0}
        ),
    }
    # Ship the more accurate backward as the default (measured, not assumed).
    d = parts["backward_direct"]["errors"]["max_abs_float32"]
    m = parts["backward_matched"]["errors"]["max_abs_float32"]
    shipped = defaults(mode) == FitSettings(range_, degree, iters, points)
    command = FIT_ALL if shipped else fit_command(range_, iters, points, degree, mode)
    default = "direct" if d <= m else "matched"
    return {
        **envelope(_table.APPROXIMATE[mode], "polynomial", "accurate", command, PARTS, default),
        "approximate": mode,
        "settings": {"range": range_, "degree": degree, "iters": iters, "points": points},
        "form": {
            "forward": "x/2 + x^2 P(z) for |x| <= R; x for x > R; -0.0 for x < -R",
            "backward": "1/2 + x Q(z) for |x| <= R; 1 for x > R; 0 for x < -R",
            "z": "fma(x*x, scale, -1), scale = 2/R^2 (float32)",
        },
        **parts,
    }


# ---------------------------------------------------------------- the files


@dataclass(frozen=True)
class Schema:
    """One kind of spec file: where it lives under data/specs, its file name (a format string
    of ``mode`` and ``direction``), what errors call it, the command that writes it and the
    JSON indent of the committed files."""

    folder: str
    name: str
    label: str
    command: str
    indent: int


SCHEMAS = {
    "poly": Schema("", "gelu_{mode}.json", "spec file", "python -m turbogelu fit", 2),
    "cells": Schema(
        "cells", "gelu_{mode}.json", "cells spec", "python -m turbogelu.approx.cells", 1
    ),
    "packed": Schema(
        "packed",
        "gelu_{mode}_{direction}_bf16.json",
        "packed spec",
        "python -m turbogelu.approx.packed",
        JSON_INDENT,
    ),
    # The family's table-driven CPU programs (family_cells.py): {mode} is the function.
    "family_cells": Schema(
        "cells", "{mode}.json", "family cells spec", "python -m turbogelu.approx.family_cells", 1
    ),
    # Cells programs sized for a 16-bit format: {mode} is <function>_<format>.
    "cells16": Schema(
        "cells16", "{mode}.json", "16-bit cells spec", "python -m turbogelu.approx.cells16", 1
    ),
    # The activation family's accurate tier: {mode} is the function (sigmoid, tanh, silu).
    "accurate": Schema(
        "",
        "{mode}/accurate.json",
        "accurate-tier spec",
        "python -m turbogelu.approx.family_programs",
        2,
    ),
    # The family's paper tier: the source paper's Table 2 programs (table2.Row.same).
    "paper": Schema(
        "",
        "{mode}/paper.json",
        "paper-tier spec",
        "python -m turbogelu.approx.family_programs --tier paper",
        2,
    ),
    # exp2's programs (exp2_programs.py): {mode} is the tier.
    "exp2": Schema(
        "exp2", "{mode}.json", "exp2 spec", "python -m turbogelu.approx.exp2_programs", 2
    ),
}

# The cells' tables: one row per coefficient of the cubic, one column per cell (the kernel's
# CellTable; 32 = one vpermt2ps table).
CELLS_TABLE_SHAPE = (4, 32)


def _schema(kind: str) -> Schema:
    try:
        return SCHEMAS[kind]
    except KeyError:
        raise ValueError(f"kind must be one of {tuple(SCHEMAS)}, got {kind!r}") from None


def spec_path(
    mode: str, kind: str = "poly", direction: str | None = None, *, root: str | Path | None = None
) -> Path:
    """The file of one spec: data/specs/gelu_<exact|tanh>.json (the polynomial specs name the
    exact form "exact"), cells/gelu_<none|tanh>.json, packed/gelu_<mode>_<direction>_bf16.json.
    ``root``: a folder laid out like data/specs instead of the committed one."""
    schema = _schema(kind)
    if ("{direction}" in schema.name) != (direction is not None):
        need = "needs" if direction is None else "takes no"
        raise ValueError(f"a {kind} spec path {need} a direction")
    name = schema.name.format(mode=file_mode(mode) if kind == "poly" else mode, direction=direction)
    return (SPEC_DIR if root is None else Path(root)) / schema.folder / name


def dumps(doc: dict, kind: str = "poly") -> str:
    """The text of a spec file (as the committed files are written)."""
    return json.dumps(doc, indent=_schema(kind).indent) + "\n"


def load(path: str | Path, kind: str = "poly") -> dict:
    """Read and validate a spec file of ``kind``; a missing or malformed file raises an error
    naming it."""
    schema = _schema(kind)
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{schema.label} {path} is a folder, not a file")
    if not path.is_file():
        raise FileNotFoundError(
            f"{schema.label} not found: {path} does not exist (the committed specs are made by "
            f"`{FIT_ALL}`, which runs `{schema.command}`)"
        )
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{schema.label} {path} is not valid JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ValueError(
            f"{schema.label} {path} is malformed: a JSON {type(doc).__name__}, not an object"
        )
    try:
        _CHECKS[kind](doc)
    except KeyError as e:
        raise ValueError(f"{schema.label} {path} is malformed: it has no key {e.args[0]!r}") from e
    except (TypeError, ValueError) as e:
        raise ValueError(f"{schema.label} {path} is malformed: {e!r}") from e
    return doc


def envelope(
    function: str,
    program: str,
    tier: str,
    generated_by: str,
    parts,
    default_backward: str | None = None,
) -> dict:
    """The head every spec file opens with (SCHEMA_VERSION above)."""
    doc = {
        "schema": SCHEMA_VERSION,
        "function": function,
        "program": program,
        "tier": tier,
        "generated_by": generated_by,
        "parts": list(parts),
    }
    if default_backward is not None:
        doc["default_backward"] = default_backward
    return doc


def _table_functions() -> tuple[str, ...]:
    """The programs of the kernels' table: GELU's rows, the family's functions, exp2."""
    return (*(o.program for o in _table.GELU), *dict.fromkeys(o.program for o in _table.OPS))


def check_envelope(spec: dict, program: str, tier: str | None = None) -> None:
    """The envelope of a spec of ``program`` (and ``tier``, when given): its version, names,
    the parts it says it holds (each an object) and its default backward."""
    if spec.get("schema") != SCHEMA_VERSION:
        raise ValueError(
            f"schema {spec.get('schema', spec.get('schema_version'))!r} != {SCHEMA_VERSION}: "
            f"written by an earlier turbogelu; refit it with `python -m turbogelu fit`"
        )
    if spec["program"] != program:
        raise ValueError(f"program is {spec['program']!r}, not {program!r}")
    if spec["function"] not in _table_functions():
        raise ValueError(f"function {spec['function']!r} is not one of {_table_functions()}")
    if spec["tier"] not in _table.TIERS or tier not in (None, spec["tier"]):
        raise ValueError(f"tier is {spec['tier']!r}" + (f", not {tier!r}" if tier else ""))
    if not isinstance(spec["generated_by"], str):
        raise TypeError("generated_by is not a command")
    parts = spec["parts"]
    if not parts or any(p not in (*PARTS, *DIRECTIONS) for p in parts):
        raise ValueError(f"parts {parts!r}: each one of {PARTS + DIRECTIONS}")
    for name in parts:
        if not isinstance(spec[name], dict):
            raise TypeError(f"{name} is not an object")
    if {"backward_direct", "backward_matched"} <= set(parts):
        if spec["default_backward"] not in BACKWARDS:
            raise ValueError(f"default_backward is {spec['default_backward']!r}")


def _check_poly(spec: dict) -> None:
    check_envelope(spec, "polynomial", "accurate")
    reference.check_mode(spec["approximate"])
    if spec["function"] != _table.APPROXIMATE[spec["approximate"]]:
        raise ValueError(f"function {spec['function']!r} for approximate={spec['approximate']!r}")
    for name in PARTS:
        part = spec[name]
        from_hex(part["clamp"])
        from_hex(part["scale"])
        coeffs = [from_hex(c) for c in part["coefficients"]]
        if len(coeffs) != part["degree"] + 1:
            raise ValueError(f"{name}: degree {part['degree']} but {len(coeffs)} coefficients")


def _check_cells(spec: dict) -> None:
    check_envelope(spec, "cells", "accurate")
    for name in PARTS:
        part = spec[name]
        for key in ("scale", "clamp", "offset"):
            from_hex(part[key])
        table = part["table"]
        rows, cols = CELLS_TABLE_SHAPE
        if len(table) != rows or {len(row) for row in table} != {cols}:
            raise ValueError(f"{name}.table is not {rows} rows of {cols} values")
        for row in table:
            for v in row:
                from_hex(v)


# The parts of a 16-bit cells spec: its forward and the forward's own derivative (the direct
# derivative stays the float32 cells program's).
CELLS16_PARTS = ("forward", "backward_matched")
FORMATS16 = ("bfloat16", "float16")


def _check_cells16(spec: dict) -> None:
    check_envelope(spec, "cells", "accurate")
    if spec.get("format") not in FORMATS16:
        raise ValueError(f"format is {spec.get('format')!r}, not one of {FORMATS16}")
    if tuple(spec["parts"]) != CELLS16_PARTS:
        raise ValueError(f"parts {spec['parts']!r}: a 16-bit cells spec holds {CELLS16_PARTS}")
    degree = spec["degree"]
    if not isinstance(degree, int) or not 1 <= degree < CELLS_TABLE_SHAPE[0] - 1:
        raise ValueError(f"degree {degree!r}: below the float32 program's")
    for name in CELLS16_PARTS:
        part = spec[name]
        for key in ("scale", "clamp", "offset"):
            from_hex(part[key])
        table = part["table"]
        cols = CELLS_TABLE_SHAPE[1]
        if len(table) != degree + 1 or {len(row) for row in table} != {cols}:
            raise ValueError(f"{name}.table is not {degree + 1} rows of {cols} values")
        for row in table:
            for v in row:
                from_hex(v)


def _check_packed(spec: dict) -> None:
    check_envelope(spec, "packed_bf16", "accurate")
    if len(spec["parts"]) != 1 or spec["parts"][0] not in DIRECTIONS:
        raise ValueError(f"parts {spec['parts']!r}: a packed spec holds one direction")
    PolySpec.from_dict(spec[spec["parts"][0]])  # the PolySpec document's own checks


def _check_exp2(spec: dict) -> None:
    check_envelope(spec, "exp2")
    if spec["form"] not in ("Exp2Nearest", "Exp2Floor"):
        raise ValueError(f"form is {spec['form']!r}")
    for name in PARTS:
        coeffs = [from_hex(c) for c in spec[name]["coefficients"]]
        if len(coeffs) != spec[name]["degree"] + 1:
            raise ValueError(f"{name}: degree {spec[name]['degree']}, {len(coeffs)} coefficients")


# A spec's function whose programs approximate a target of another name: GELU's row
# gelu_none (approximate='none') is targets.py's "gelu".
FUNCTION_TARGETS = {"gelu_none": "gelu"}


def _check_tier(spec: dict, tier: str) -> None:
    check_envelope(spec, "polynomial", tier)
    for name in PARTS:
        ps = PolySpec.from_dict(spec[name])
        target = FUNCTION_TARGETS.get(spec["function"], spec["function"])
        want = target + ("" if name == "forward" else "_grad")
        if ps.target != want:
            raise ValueError(f"{name} approximates {ps.target!r}, not {want!r}")


_CHECKS = {
    "poly": _check_poly,
    "cells": _check_cells,
    "family_cells": _check_cells,
    "cells16": _check_cells16,
    "packed": _check_packed,
    "accurate": lambda spec: _check_tier(spec, "accurate"),
    "paper": lambda spec: _check_tier(spec, "paper"),
    "exp2": _check_exp2,
}


def part_values(part: dict) -> dict:
    """A stored coefficient set as float values (the form ``replay`` takes)."""
    return {
        "clamp": from_hex(part["clamp"]),
        "scale": from_hex(part["scale"]),
        "coefficients": [from_hex(c) for c in part["coefficients"]],
    }


# ---------------------------------------------------------------- writing committed files

# What a refit must reproduce. Under MEASURED_KEYS a refit may differ in the last digits: the
# errors are float64 maxima and sums over ~1e6 points of a float64 reference that goes through
# numpy's vector math (exp, tanh, exp2: numpy's SIMD loops or SVML on one CPU, libm on another,
# a few ulps apart) and scipy's, and the float64 fit itself is a LAPACK solve; there floats (and
# hex floats) compare to a relative MEASURED_RTOL. The smallest such figures (exp2's max
# relative error, 1.5e-7; make reproduce's rounding errors, 1.6e-7, through a BLAS sum) are
# differences of values <= ~2 whose last bits differ by a few ulps (<= ~2e-15): about 1e-8 of
# them (measured: up to 1.6e-9 under .ci/run's imitation of another CPU; LAPACK fits: 1.3e-12
# between the AVX2 EPYC and the Xeon). 1e-7 holds them with a margin of 10 and stays far below
# the 4 digits any text shows; the kernels' bits are held elsewhere, bit for bit. Wall times
# (UNCOMPARED_KEYS) are not compared. Everything else - the float32 values the kernels use
# (coefficients, clamp, scale, as hex), degrees, settings, commands - must be identical (a
# cells table, an LP's solution, is compared by cells.refit_differences).
MEASURED_KEYS = frozenset({"errors", "fit_coefficients_float64", "meta"})
UNCOMPARED_KEYS = frozenset({"seconds"})
MEASURED_RTOL = 1e-7


class Differs(ValueError):
    """A committed spec file differs from what a command would write over it."""

    def __init__(self, path: Path, diffs: list[str], limit: int = 20):
        self.path, self.diffs = Path(path), diffs
        lines = [f"  {d}" for d in diffs[:limit]]
        if len(diffs) > limit:
            lines.append(f"  ... and {len(diffs) - limit} more")
        super().__init__(
            f"{path} is committed and differs from this fit (committed -> new):\n"
            + "\n".join(lines)
            + "\nnot written: --force overwrites it, --out writes the fit elsewhere"
        )


def _number(v) -> float | None:
    """A JSON float or a hex-float string as a float; None for anything else."""
    if isinstance(v, float):
        return v
    if isinstance(v, str) and v.lstrip("-").startswith("0x"):
        try:
            return float.fromhex(v)
        except ValueError:
            return None
    return None


def _show(v) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(old, new, rtol: float = MEASURED_RTOL, *, _path="", _measured=False) -> list[str]:
    """Where the parsed JSON document ``new`` differs from ``old``: one "path: old -> new"
    line per differing value (MEASURED_KEYS, UNCOMPARED_KEYS and MEASURED_RTOL above say which
    values may differ by how much)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in [*old, *(k for k in new if k not in old)]:
            if key in UNCOMPARED_KEYS:
                continue
            where = f"{_path}.{key}" if _path else str(key)
            if key not in new or key not in old:
                a = _show(old[key]) if key in old else "(absent)"
                b = _show(new[key]) if key in new else "(absent)"
                out.append(f"{where}: {a} -> {b}")
            else:
                measured = _measured or key in MEASURED_KEYS
                out += differences(old[key], new[key], rtol, _path=where, _measured=measured)
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{_path}: {len(old)} values -> {len(new)} values"]
        out = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            out += differences(a, b, rtol, _path=f"{_path}[{i}]", _measured=_measured)
        return out
    if type(old) is type(new) and old == new:
        return []
    a, b = _number(old), _number(new)
    if _measured and a is not None and b is not None and math.isclose(a, b, rel_tol=rtol):
        return []
    return [f"{_path}: {_show(old)} -> {_show(new)}"]


def file_differences(path: str | Path, text: str, compare=None) -> list[str]:
    """``differences`` (or ``compare``, a function of the two parsed documents, committed
    first) between the spec file at ``path`` and the JSON document ``text`` (a refit): what a
    ``--check`` and a refit test report. Never the files' text: the measured figures' last
    digits belong to the machine (MEASURED_KEYS above)."""
    path = Path(path)
    if not path.is_file():
        return [f"{path}: (absent)"]
    old = path.read_text()
    if old == text:
        return []
    try:
        return (compare or differences)(json.loads(old), json.loads(text))
    except json.JSONDecodeError:
        return [f"{path}: (not valid JSON)"]


def is_committed(path: str | Path) -> bool:
    """Whether ``path`` lies under data/specs (the committed specs and their subfolders)."""
    return Path(path).resolve().is_relative_to(SPEC_DIR.resolve())


class NotTheFitCommand(Differs):
    """A committed spec that only ``python -m turbogelu fit`` may write."""

    def __init__(self, path: Path, diffs: list[str]):
        super().__init__(path, diffs)
        self.args = (
            f"{path} is a committed spec, written only by `{FIT_ALL}` (make fit); this command "
            f"left it as it is ({len(diffs)} differences; --out writes the fit elsewhere)",
        )


# Whether `python -m turbogelu fit` is running (fit_writes): the one entry point that writes
# committed specs. The lab modules' own commands (python -m turbogelu.approx.cells, ...) only
# compare their refit with them, or write it elsewhere (--out).
_FIT_WRITES = False


@contextlib.contextmanager
def fit_writes():
    """Within it, write_checked may write committed specs (`python -m turbogelu fit`)."""
    global _FIT_WRITES
    before, _FIT_WRITES = _FIT_WRITES, True
    try:
        yield
    finally:
        _FIT_WRITES = before


def write_checked(path: str | Path, text: str, *, force: bool = False, compare=None) -> str:
    """Write the JSON document ``text`` to ``path``, except over a committed spec file: one that
    ``differences`` (or ``compare``: ``file_differences``) finds equal is left untouched, one
    that differs raises ``Differs`` (naming every difference) unless ``force``, and outside
    ``fit_writes`` (not `python -m turbogelu fit`) ``NotTheFitCommand``, as does a new
    committed file. Returns "written", "unchanged" or "overwritten"."""
    path = Path(path)
    if is_committed(path) and not path.is_file() and not _FIT_WRITES:
        raise NotTheFitCommand(path, [f"{path}: (absent)"])
    if path.is_file() and is_committed(path):
        diffs = file_differences(path, text, compare)
        if not diffs:
            return "unchanged"
        if not _FIT_WRITES:
            raise NotTheFitCommand(path, diffs)
        if not force:
            raise Differs(path, diffs)
        path.write_text(text)
        return "overwritten"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return "written"


def write_reported(path: str | Path, text: str, *, force: bool = False) -> int:
    """``write_checked`` for a fitting command: its line (or the differences that stopped it)
    on stderr, and the command's exit status (1 when a committed spec differs)."""
    try:
        outcome = write_checked(path, text, force=force)
    except Differs as e:
        print(e, file=sys.stderr)
        return 1
    print(describe_write(path, outcome), file=sys.stderr)
    return 0


def describe_write(path: str | Path, outcome: str) -> str:
    """The line a command prints after ``write_checked``."""
    if outcome == "unchanged":
        return (
            f"{path}: unchanged (the fit matches it: the kernels' values bit for bit, measured "
            f"figures to a relative {MEASURED_RTOL:g})"
        )
    return f"{'overwrote' if outcome == 'overwritten' else 'wrote'} {path}"


# ---------------------------------------------------------------- the shipped kernels as PolySpecs


@functools.cache
def turbogelu_form(mode: str = "none", part: str = "forward", path: str | None = None):
    """A shipped kernel spec (data/specs/gelu_<mode>.json) as a PolySpec.

    Forward: target gelu / gelu_tanh, x/2 + u^2 P(z); backward parts: gelu_grad /
    gelu_tanh_grad, 1/2 + sign(x) u Q(z) = 1/2 + x Q(z). Both with z = fma(x*x, 2/R^2, -1),
    fit interval = clamp = R, float32, program "turbogelu". The stored scale must equal the
    PolySpec's fl(2 / R^2) (checked).
    """
    p = Path(path) if path is not None else spec_path(mode)
    data = load(p)
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    vals = part_values(data[part])
    grad = part != "forward"
    ps = PolySpec(
        target=rounding.gelu_function(data["approximate"], grad),
        variable="y",
        factor=1 if grad else 2,
        shift=True,
        degree=len(vals["coefficients"]) - 1,
        fit_interval=vals["clamp"],
        clamp=vals["clamp"],
        fmt="float32",
        coefficients=tuple(vals["coefficients"]),
        method=data[part]["method"],
        program="turbogelu",
        meta={"source": p.name, "part": part, "generated_by": data["generated_by"]},
    )
    if ps.scale != vals["scale"]:
        raise ValueError(f"{p}: stored scale {vals['scale']!r} != fl(2/R^2) = {ps.scale!r}")
    return ps
