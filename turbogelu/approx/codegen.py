"""Generate the kernels' coefficients from the committed spec files:

* ``kernels/include/turbogelu/gelu_coeffs.h`` (CPU and CUDA), every coefficient a float32 hex
  literal;
* ``kernels/include/turbogelu/family_coeffs.h``: the activation family's programs
  (``data/specs/<function>/<tier>.json``) in the shape of ``family_eval.h``, and the list of
  program shapes the kernels instantiate;
* ``kernels/mps/family_kernels.metal`` (Apple GPUs): every program of the kernels' table
  (GELU's two forms, the family's in both tiers, exp2's) evaluated as family_eval.h does,
  written out in Metal, every coefficient an *exact* decimal literal (the float32 value's full
  decimal expansion, so any compiler reads the same bits; its hex form stands beside it), with
  one generic kernel pair per kind of op (family.h's Plain, Scaled, Gated) instantiated for
  each op and tier.

So the bits the kernels use are the bits the spec's errors were measured for; a test
regenerates every file and compares (``python -m turbogelu codegen --check``).
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal
from pathlib import Path

from .. import _spec_names, _table
from . import spec as specmod

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
HEADER = KERNELS / "include" / "turbogelu" / "gelu_coeffs.h"
FAMILY_HEADER = KERNELS / "include" / "turbogelu" / "family_coeffs.h"
MODES = specmod.MODES
# C++ identifiers for the three coefficient sets of a spec.
PART_NAMES = {"forward": "forward", "backward_direct": "backward_direct",
              "backward_matched": "backward_matched"}  # fmt: skip


def _lit(hexstr: str) -> str:
    return f"{hexstr}f"


def _part(mode: str, name: str, part: dict) -> list[str]:
    e = part["errors"]
    coeffs = ", ".join(_lit(c) for c in part["coefficients"])
    return [
        f"// {name}: {part['method']}, degree {part['degree']}; float32 replay: max |err| "
        f"{e['max_abs_float32']:.3e} (at x = {e['argmax_float32']:.6g}), mean |err| on the grid "
        f"{e['mean_abs_float32_grid']:.3e}; float64 evaluation: max |err| "
        f"{e['max_abs_float64']:.3e}",
        f"inline constexpr PolyCoeffs gelu_{mode}_{PART_NAMES[name]} = {{",
        f"    {part['degree']}, {_lit(part['clamp'])}, {_lit(part['scale'])},",
        f"    {{{coeffs}}}}};",
    ]


def render(
    specs: dict[str, dict],
    packed: dict | None = None,
    cells: dict | None = None,
    sized: dict | None = None,
) -> str:
    lines = [
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from",
        "// data/specs/gelu_exact.json and data/specs/gelu_tanh.json (and data/specs/packed/,",
        "// data/specs/cells/, data/specs/cells16/).",
        "//",
        "// Polynomial GELU coefficients (poly_eval.h's PolyCoeffs, which family.h makes the",
        "// kernels' programs and family_eval.h evaluates): for |x| <= clamp,",
        "//   forward  gelu(x)  ~ x/2 + x^2 P(z),  backward gelu'(x) ~ 1/2 + x Q(z),",
        "//   z = fma(x*x, scale, -1), P(z) = sum c[k] z^k.",
        "// Errors against the exact function of each form, over the grid: uniform"
        f" [{specmod.GRID[0]}, {specmod.GRID[1]}], {specmod.GRID[2]} points,",
        f"// plus every float32 within {specmod.NEAR_CLAMP} of +-clamp.",
        "#pragma once",
        "",
        '#include "turbogelu/poly_eval.h"',
        "",
        "namespace turbogelu {",
        "namespace coeffs {",
    ]
    for mode in MODES:
        s = specs[mode]
        lines += ["", f'// approximate="{mode}": {s["generated_by"]}']
        for name in specmod.PARTS:
            lines += _part(mode, name, s[name])
        default = "true" if s["default_backward"] == "direct" else "false"
        lines += [
            "// The default backward: the more accurate of the two, as measured by the fit.",
            f"inline constexpr bool gelu_{mode}_default_backward_is_direct = {default};",
        ]
    lines += _packed_lines(packed)
    lines += _cells_lines(cells, sized)
    lines += ["", "}  // namespace coeffs", "}  // namespace turbogelu", ""]
    return "\n".join(lines)


def _packed_lines(packed: dict) -> list[str]:
    """The packed bfloat16 coefficient sets (turbogelu/approx/packed.py), if given."""
    if not packed:
        return []
    from . import packed as packed_mod

    lines = [
        "",
        "// Packed bfloat16: the opt-in CUDA path that evaluates the same program two lanes at a",
        "// time in __nv_bfloat162 arithmetic (every operation rounded to bfloat16), with its own",
        "// fits: python -m turbogelu fit --all -> data/specs/packed/*.json. Every value is a",
        "// bfloat16. Bound: max |err| over every finite bfloat16 <= 2x PyTorch's own (tests).",
    ]
    for (mode, direction), ps in packed.items():
        v = packed_mod.kernel_values(ps)
        err = ps.meta.get("exhaustive_max_abs_error_bf16_replay", float("nan"))
        coeffs = ", ".join(_lit(specmod.f32_hex(c)) for c in v["coefficients"])
        lines += [
            f'// approximate="{mode}" {direction}: {packed_mod.path(mode, direction).name},'
            f" {ps.method}, degree {ps.degree}, R {ps.clamp:g}; exhaustive bfloat16 replay:"
            f" max |err| {err:.3e}",
            f"inline constexpr PolyCoeffs gelu_{mode}_{direction}_packed_bf16 = {{",
            f"    {v['degree']}, {_lit(specmod.f32_hex(v['clamp']))},"
            f" {_lit(specmod.f32_hex(v['scale']))},",
            f"    {{{coeffs}}}}};",
        ]
    return lines


CELL_COEFFS = 4  # poly_eval.h's kCellCoeffs: a table's rows, the cubic's


def _cell_table(name: str, part: dict) -> list[str]:
    """A CellTable constant (poly_eval.h's type) from a cells spec part: its degree (the
    part's rows less one), the rows above it zero."""
    table = part["table"]
    if not 3 <= len(table) <= CELL_COEFFS:
        raise ValueError(f"{name}: {len(table)} rows; the kernels run quadratic or cubic cells")
    zeros = [specmod.f32_hex(0.0)] * len(table[0])
    rows = [*table, *[zeros] * (CELL_COEFFS - len(table))]
    text = ",\n     ".join("{" + ", ".join(_lit(v) for v in row) + "}" for row in rows)
    return [
        f"inline constexpr CellTable {name} = {{",
        f"    {len(table) - 1}, {_lit(part['scale'])}, {_lit(part['clamp'])},"
        f" {_lit(part['offset'])},",
        f"    {{{text}}}}};",
    ]


def _sized_lines(fn: str, sized: dict) -> list[str]:
    """A function's 16-bit cells programs (cells16.py), <fn>_cells_<format> for every format
    (null tables where the format runs the float32 ones)."""
    lines = []
    for fmt in FORMATS16:
        doc = sized.get((fn, fmt))
        if doc is None:
            lines += [f"inline constexpr SizedCells {fn}_cells_{fmt} = {{nullptr, nullptr}};"]
            continue
        lines += [
            f"// {fn}, {fmt}: degree {doc['degree']}, {doc['rule']}"
            f" ({doc['generated_by']}, data/specs/cells16/{fn}_{fmt}.json)",
        ]
        for name in specmod.CELLS16_PARTS:
            lines += _cell_table(f"{fn}_{name}_cells_{fmt}", doc[name])
        lines += [
            f"inline constexpr SizedCells {fn}_cells_{fmt} = "
            f"{{&{fn}_forward_cells_{fmt}, &{fn}_backward_matched_cells_{fmt}}};"
        ]
    return lines


def _cells_lines(cells: dict | None, sized: dict | None = None) -> list[str]:
    """The CPU's table-driven kernel (turbogelu/approx/cells.py), if given, with the 16-bit
    formats' own programs (``load_cells16``; none when not given)."""
    if not cells:
        return []
    sized = {} if sized is None else sized
    from . import cells as cells_mod

    lines = [
        "",
        "// Cells: the CPU's table-driven program (family_eval.h's cells_eval), a cubic in",
        f"// each of 32 cells: {cells_mod.COMMAND} -> data/specs/cells/*.json.",
        "// Errors of the float32 program over the same grid plus every float32 within",
        f"// {specmod.NEAR_CLAMP} of +-R and +-clamp.",
    ]
    for mode in cells_mod.MODES:
        s = cells[mode]
        for name in specmod.PARTS:
            part = s[name]
            e = part["errors"]
            lines += [
                f'// approximate="{mode}" {name}: max |err| {e["max_abs_float32"]:.3e}'
                f" (at x = {e['argmax_float32']:.6g}), mean |err| on the grid"
                f" {e['mean_abs_float32_grid']:.3e}",
                *_cell_table(f"gelu_{mode}_{PART_NAMES[name]}_cells", part),
            ]
        default = "true" if s["default_backward"] == "direct" else "false"
        lines += [
            f"inline constexpr bool gelu_{mode}_cells_default_backward_is_direct = {default};"
        ]
        lines += _sized_lines(f"gelu_{mode}", sized)
    return lines


def _root(spec_dir: Path | None, kind: str) -> Path | None:
    """``spec_dir`` when it holds specs of ``kind`` (its subfolder for them exists), else None:
    the committed ones."""
    if spec_dir is not None and (Path(spec_dir) / specmod.SCHEMAS[kind].folder).is_dir():
        return Path(spec_dir)
    return None


def load_cells(spec_dir: Path | None = None) -> dict:
    """The cells specs: ``spec_dir/cells`` when it exists, else the committed data/specs/cells."""
    from . import cells

    root = _root(spec_dir, "cells")
    return {mode: cells.load(specmod.spec_path(mode, "cells", root=root)) for mode in cells.MODES}


FORMATS16 = ("float16", "bfloat16")


def load_cells16(spec_dir: Path | None = None) -> dict[tuple[str, str], dict]:
    """{(kernels' function name, format): spec} of the 16-bit cells programs:
    ``spec_dir/cells16`` when it exists, else the committed data/specs/cells16."""
    from . import cells16

    root = _root(spec_dir, "cells16")
    out = {}
    for fn, fmt in cells16.SIZED:
        name = cells16.TABLE_FUNCTION.get(fn, fn)
        out[(name, fmt)] = specmod.load(
            specmod.spec_path(cells16.spec_name(fn, fmt), "cells16", root=root), "cells16"
        )
    return out


def load_specs(spec_dir: Path | None = None) -> dict[str, dict]:
    return {mode: specmod.load(specmod.spec_path(mode, root=spec_dir)) for mode in MODES}


def load_packed(spec_dir: Path | None = None) -> dict:
    """{(mode, direction): PolySpec} of the packed bfloat16 specs: ``spec_dir/packed`` when it
    exists, else the committed data/specs/packed."""
    from . import packed

    root = _root(spec_dir, "packed")
    return {(m, d): packed.load(m, d, root) for m in packed.MODES for d in packed.DIRECTIONS}


def generate(spec_dir: Path | None = None) -> str:
    return render(
        load_specs(spec_dir), load_packed(spec_dir), load_cells(spec_dir), load_cells16(spec_dir)
    )


# ---------------------------------------------------------------- Metal


def exact_decimal(hexstr: str) -> str:
    """The float32 value of a hex literal as its exact (finite) decimal expansion."""
    d = Decimal(float.fromhex(hexstr))  # float32 -> float64 is exact, so is Decimal(float64)
    text = format(d, "f")
    return text if "." in text else text + ".0"


def _metal_lit(hexstr: str) -> str:
    return f"{exact_decimal(hexstr)}f"


# The Metal sources' hand-written parts: kernels/mps/templates/ (each file's leading //! lines
# are notes for its readers, not part of the output).
TEMPLATES = KERNELS / "mps" / "templates"
_GENERATED = (
    "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from\n"
    "// {sources} (turbogelu/approx/codegen.py).\n"
)


def template(name: str) -> str:
    """kernels/mps/templates/``name`` without its leading //! lines."""
    lines = (TEMPLATES / name).read_text().splitlines(keepends=True)
    while lines and lines[0].startswith("//!"):
        lines.pop(0)
    return "".join(lines)


def _metal_head(name: str, sources: str, **fields: str) -> str:
    text = _GENERATED.format(sources=sources) + template(name)
    for key, value in fields.items():
        text = text.replace(f"@{key}@", value)
    return text


def outputs(spec_dir: Path | None = None) -> dict[Path, str]:
    """Every generated file and its text."""
    specs, family = load_specs(spec_dir), load_family(spec_dir)
    exp2_docs, gelu_paper = load_exp2(spec_dir), load_gelu_paper(spec_dir)
    sized = load_cells16(spec_dir)
    return {
        HEADER: render(specs, load_packed(spec_dir), load_cells(spec_dir), sized),
        FAMILY_HEADER: render_family(
            family, exp2_docs, load_family_cells(spec_dir), gelu_paper, sized
        ),
        FAMILY_METAL: render_family_metal(family, exp2_docs, specs, gelu_paper),
    }


def write_outputs(files: dict[Path, str]) -> None:
    """Write ``outputs``' files, each line of progress on stderr. An up-to-date file is not
    rewritten: a new mtime on the header would make `make` rebuild the extension for
    nothing."""
    for path, text in files.items():
        if path.is_file() and path.read_text() == text:
            print(f"{path} is up to date", file=sys.stderr)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}", file=sys.stderr)


# ---------------------------------------------------------------- the activation family

# family_eval.h's Form of a program, from its target's reduction and factor (the forms the
# family's kernels evaluate; anything else is refused).
_FORMS = {
    ("1/2 + odd", 1): "HalfPlusOdd",
    ("odd", 1): "Odd",
    ("x/2 + even", 2): "XHalfPlusEven",
    ("x/2 + even", 0): "XHalfPlus",
    ("even", 0): "Even",
    ("1/2 + odd", 0): "HalfPlusSigned",
}
# (below, above): the asymptote beyond -clamp and +clamp (targets.ASYMPTOTES); "relu" is x
# itself above and -0.0 below, which the x/2 + even forms select by themselves.
_ASYMPTOTES = {"step": ("0.0f", "1.0f"), "sign": ("-1.0f", "1.0f"), "zero": ("0.0f", "0.0f"),
               "relu": ("-0.0f", "0.0f"), "relu+": ("0.0f", "0.0f")}  # fmt: skip


# family_eval.h's enum class Form, by name (the run-time op poly_family takes the number;
# tests/test_poly_ops.py reads the header to check them).
FORM_CODES = {
    "HalfPlusOdd": 0,
    "Odd": 1,
    "XHalfPlusEven": 2,
    "XHalfPlus": 3,
    "Even": 4,
    "Exp2Nearest": 5,
    "Exp2Floor": 6,
    "HalfPlusSigned": 7,
    "XHalfPlusNonNeg": 8,
}


def family_tails(ps) -> tuple[float, float]:
    """(below, above): a program's results beyond -clamp and +clamp, as the kernels hold them
    (for the x/2 forms "above" is unused: x itself)."""
    return tuple(float(v.removesuffix("f")) for v in _ASYMPTOTES[ps.tgt.asymptote_kind])


def family_form(ps) -> tuple[str, bool]:
    """The family_eval.h (Form, variable is x^2) of a PolySpec, or ValueError when the kernels
    have none: shifted, a finite clamp, float32 values; XHalfPlusEven in |x| with the
    sign-keeping order x (1/2 + x P) (in x^2 that order decides the window on x^2, which the
    family's kernels do not), the others in the generic order (for them the same sequence)."""
    form = _FORMS.get((ps.tgt.reduction, ps.factor))
    if form == "XHalfPlus" and ps.tgt.nonnegative:
        form = "XHalfPlusNonNeg"  # floored at +0
    # HalfPlusSigned floors at +0 (softplus' only): refused for a target that may be negative.
    floored = form in ("XHalfPlusNonNeg", "HalfPlusSigned")
    order = "turbogelu" if form == "XHalfPlusEven" else "generic"
    ok = (
        form is not None
        and ps.shift
        and ps.fmt in ("float32", "bfloat16", "float16")
        and math.isfinite(ps.clamp)
        and ps.program == order
        and not (form == "XHalfPlusEven" and ps.variable != "u")
        and floored == ps.tgt.nonnegative
    )
    if not ok:
        raise ValueError(f"no family kernel evaluates {ps.describe()}")
    return form, ps.variable == "y"


def load_family(spec_dir: Path | None = None) -> dict[tuple[str, str], dict]:
    """The family's specs by (function, tier): ``spec_dir/<function>/`` when it exists. A tier
    a function has no program in (``_table.program_tiers``: softplus has no paper program)
    gets the accurate tier's document, whose own "tier" says so: the kernels are compiled for
    every (op, tier) alike, and the ops refuse that tier before any kernel runs."""
    from . import family_programs

    out = {}
    for fn in family_programs.FUNCTIONS:
        root = spec_dir if spec_dir is not None and (Path(spec_dir) / fn).is_dir() else None
        shipped = _table.program_tiers(fn)
        for tier in family_programs.TIERS:
            own = tier if tier in shipped else shipped[0]
            out[(fn, tier)] = specmod.load(specmod.spec_path(fn, own, root=root), own)
    return out


def load_gelu_paper(spec_dir: Path | None = None) -> dict[tuple[str, str], dict]:
    """GELU's rows' paper-tier specs by (row, "paper"): data/specs/gelu_<mode>/paper.json
    (``spec_dir/gelu_<mode>/`` when it exists), family programs of the paper's GELU form (their
    accurate programs are GELU's own specs, ``load_specs``)."""
    out = {}
    for row in _table.GELU:
        if "paper" in row.tiers:
            fn = row.program
            root = spec_dir if spec_dir is not None and (Path(spec_dir) / fn).is_dir() else None
            out[(fn, "paper")] = specmod.load(specmod.spec_path(fn, "paper", root=root), "paper")
    return out


def _family_program(name: str, ps, errors: dict, degree: int) -> list[str]:
    """One program as a FamilyProgram of ``degree`` (>= its own: the kernels run one shape
    per direction, so a shorter program is padded with leading zero coefficients, which
    Horner's scheme passes through exactly: fma(0, z, c) = c for finite z, and z is finite
    wherever the polynomial's result is used)."""
    below, above = _ASYMPTOTES[ps.tgt.asymptote_kind]
    values = list(ps.coefficients) + [0.0] * (degree - ps.degree)
    coeffs = ", ".join(_lit(specmod.f32_hex(c)) for c in values)
    pad = f" (degree {ps.degree}, padded to {degree})" if degree != ps.degree else ""
    return [
        f"// {ps.describe()}{pad}; float32 replay: max |err| "
        f"{errors['float32']['max_abs_float32']:.3e}",
        f"inline constexpr FamilyProgram {name} = {{",
        f"    {degree}, {_lit(specmod.f32_hex(ps.clamp))}, {_lit(specmod.f32_hex(ps.scale))}, "
        f"{below}, {above},",
        f"    {{{coeffs}}}}};",
    ]


def family_shape(fn: str, tier: str, doc: dict) -> tuple[str, int, bool, str, int, bool]:
    """The kernels' shape of one (function, tier) spec, as TG_FAMILY_SHAPES lists it:
    (forward Form, degree, in x^2, derivative Form, degree, in x^2). The direct and matched
    derivative share one Form and run at the larger degree of the two (the shorter one padded
    with leading zero coefficients, _family_program)."""
    from .polyspec import PolySpec

    fwd, direct, matched = (PolySpec.from_dict(doc[name]) for name in specmod.PARTS)
    back = {family_form(direct), family_form(matched)}
    if len(back) != 1:
        raise ValueError(f"{fn} ({tier}): the direct and matched backward differ in form")
    (ff, fy), (bf, by) = family_form(fwd), back.pop()
    return ff, fwd.degree, fy, bf, max(direct.degree, matched.degree), by


def load_exp2(spec_dir: Path | None = None) -> dict[str, dict]:
    """exp2's specs by tier (data/specs/exp2/<tier>.json; ``spec_dir/exp2/`` when it exists)."""
    from . import exp2_programs

    root = Path(spec_dir) / "exp2" if spec_dir is not None else None
    root = root if root is not None and root.is_dir() else None
    return {tier: exp2_programs.load(tier, root) for tier in exp2_programs.TIERS}


def exp2_shape(doc: dict) -> tuple[str, int, bool, str, int, bool]:
    """exp2's kernel shape in one tier, as family_shape's: its form both ways, the derivatives
    at the larger of their degrees."""
    bdeg = max(doc[p]["degree"] for p in ("backward_direct", "backward_matched"))
    return doc["form"], doc["forward"]["degree"], False, doc["form"], bdeg, False


def _exp2_lines(tier: str, doc: dict) -> tuple[list[str], str]:
    """exp2's programs in one tier (family_eval.h's Exp2 forms read degree and c only; the
    derivatives run at the larger of their degrees, padded as _family_program does) and its
    TG_FAMILY_SHAPES entry."""
    form, fdeg, _, _, bdeg, _ = exp2_shape(doc)
    lines = ["", f"// exp2, {tier} tier: {doc['generated_by']}"]
    for part in specmod.PARTS:
        deg = fdeg if part == "forward" else bdeg
        c = doc[part]["coefficients"] + ["0x0p+0"] * (deg - doc[part]["degree"])
        err = doc[part]["errors"]["float32"]["max_ulp"]
        lines += [
            f"// {doc[part]['fit']}; float32 replay: max {err} ulp",
            f"inline constexpr FamilyProgram exp2_{tier}_{part} = {{",
            f"    {deg}, 0.0f, 0.0f, 0.0f, 0.0f,",
            f"    {{{', '.join(_lit(h) for h in c)}}}}};",
        ]
    default = "true" if doc["default_backward"] == "direct" else "false"
    lines += [f"inline constexpr bool exp2_{tier}_default_backward_is_direct = {default};"]
    lines += [f"inline constexpr bool exp2_{tier}_shipped = true;"]
    return lines, f"  X(exp2, {tier}, {form}, {fdeg}, false, {form}, {bdeg}, false)"


def render_family(
    docs: dict[tuple[str, str], dict],
    exp2_docs: dict | None = None,
    cells: dict | None = None,
    gelu_paper: dict | None = None,
    sized: dict | None = None,
) -> str:
    """family_coeffs.h from the family's specs, exp2's (``load_exp2``), the family's cells
    (``load_family_cells``), GELU's paper tier (``load_gelu_paper``) and the 16-bit cells
    (``load_cells16``; the committed ones when None). GELU's rows' accurate programs are
    family.h's, from gelu_coeffs.h."""
    from .polyspec import PolySpec

    exp2_docs = load_exp2() if exp2_docs is None else exp2_docs
    cells = load_family_cells() if cells is None else cells
    gelu_paper = load_gelu_paper() if gelu_paper is None else gelu_paper
    sized = load_cells16() if sized is None else sized
    # family.h takes every GELU row's paper programs from here.
    rows = {o.program for o in _table.GELU}
    if {fn for fn, _ in gelu_paper} != rows or {t for _, t in gelu_paper} != {"paper"}:
        raise ValueError(
            f"GELU's paper tier for {sorted(gelu_paper)}, expected every row {sorted(rows)}"
        )
    functions = list(dict.fromkeys([fn for fn, _ in docs] + ["exp2"]))
    docs = {**docs, **gelu_paper}

    lines = [
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from",
        "// data/specs/<function>/<tier>.json, data/specs/exp2/<tier>.json,",
        "// data/specs/gelu_<mode>/paper.json, data/specs/cells/<function>.json and",
        "// data/specs/cells16/<function>_<format>.json (python -m turbogelu fit --all).",
        "//",
        "// The activation family's programs in the shape of family_eval.h, each tier's (GELU's",
        "// rows: their paper tier; their accurate programs are family.h's), and",
        "// TG_FAMILY_SHAPES(X): X(function, tier, forward form, forward degree, forward in x^2,",
        "// backward form, backward degree, backward in x^2), the shapes the kernels are",
        "// compiled for.",
        "#pragma once",
        "",
        '#include "turbogelu/family_eval.h"',
        "",
        "namespace turbogelu {",
        "namespace coeffs {",
    ]
    shapes = []
    for (fn, tier), doc in docs.items():
        parts = {name: PolySpec.from_dict(doc[name]) for name in specmod.PARTS}
        ff, fdeg, fy, bf, bdeg, by = family_shape(fn, tier, doc)
        shipped, own = doc["tier"] == tier, doc["tier"]
        if shipped:
            lines += ["", f"// {fn}, {tier} tier: {doc['generated_by']}"]
            for name in specmod.PARTS:
                deg = fdeg if name == "forward" else bdeg
                program = _family_program(
                    f"{fn}_{tier}_{name}", parts[name], doc[name]["errors"], deg
                )
                lines += program
            default = "true" if doc["default_backward"] == "direct" else "false"
        else:  # the shipped tier's programs under this tier's names (load_family)
            lines += [
                "",
                f"// {fn}, {tier} tier: none shipped (the ops refuse it); the {own} tier's "
                "programs, so that every (op, tier) compiles alike",
            ]
            lines += [
                f"inline constexpr FamilyProgram {fn}_{tier}_{name} = {fn}_{own}_{name};"
                for name in specmod.PARTS
            ]
            default = f"{fn}_{own}_default_backward_is_direct"
        lines += [f"inline constexpr bool {fn}_{tier}_default_backward_is_direct = {default};"]
        lines += [f"inline constexpr bool {fn}_{tier}_shipped = {str(shipped).lower()};"]
        shapes.append(
            f"  X({fn}, {tier}, {ff}, {fdeg}, {str(fy).lower()}, {bf}, {bdeg}, {str(by).lower()})"
        )
    for tier, doc in exp2_docs.items():
        more, shape = _exp2_lines(tier, doc)
        lines += more
        shapes.append(shape)
    lines += _family_cells_lines(cells, functions, sized)
    lines += ["", "}  // namespace coeffs", "}  // namespace turbogelu", ""]
    lines += ["#define TG_FAMILY_SHAPES(X) \\", " \\\n".join(shapes), ""]
    forms = [f"X({fn}, {s['forward']['form']}, {s['backward_direct']['form']})"
             for fn, s in cells.items()]  # fmt: skip
    lines += ["// The functions with cells programs: X(function, forward form, derivative form).",
              "#define TG_FAMILY_CELLS(X) " + " ".join(forms), ""]  # fmt: skip
    return "\n".join(lines + _family_op_lists())


def _family_op_lists() -> list[str]:
    """family.h's op lists from the table of functions (turbogelu/_table.py)."""
    ops = [f"  X({o.name}, {o.program}, {o.kind})" for o in _table.OPS]
    from_output = " ".join(f"X({name})" for name in _table.names(from_output=True))
    gelu = " ".join(f"X({o.name}, {o.program}, {o.kind})" for o in _table.GELU)
    return [
        "// The ops (turbogelu/_table.py), X(op, function whose programs it runs, kind), and",
        "// those whose autograd default differentiates from the saved result (family.h).",
        "#define TG_FAMILY_OPS(X) \\",
        " \\\n".join(ops),
        "#define TG_FROM_OUTPUT_OPS(X) " + from_output,
        "// GELU's programs, rows of the kernels' table after the ops above (family.h):",
        "// approximate='none' and 'tanh' of the one op gelu, whose schema is its own.",
        "#define TG_GELU_OPS(X) " + gelu,
        "",
    ]


def _family_cells_lines(cells: dict, functions: list[str], sized: dict) -> list[str]:
    """The family's table-driven CPU programs (family_cells.py): <fn>_cells_<part>, the
    16-bit formats' own (cells16.py), and <fn>_family_cells for every function (empty where
    it has none)."""
    for fn, s in cells.items():  # the kernels evaluate both derivatives in one form
        if s["backward_matched"]["form"] != s["backward_direct"]["form"]:
            raise ValueError(f"{fn} cells: the two derivatives have different forms")
    lines = [
        "",
        "// Cells: the CPU's table-driven programs for sigmoid and SiLU (family_eval.h's",
        "// cells_eval), a cubic in each of 32 cells of |x|; float32 max |err| over [-24, 24].",
    ]
    for fn, s in cells.items():
        lines += [f"// {fn}: {s['generated_by']}"]
        for name in specmod.PARTS:
            part = s[name]
            e = part["errors"]
            lines += [
                f"// {name} ({part['form']}): max |err| {e['max_abs_float32']:.3e}"
                f" (at x = {e['argmax_float32']:.6g})",
                *_cell_table(f"{fn}_cells_{name}", part),
            ]
        lines += _sized_lines(fn, sized)
    for fn in functions:
        tables = (
            f"&{fn}_cells_forward, &{fn}_cells_backward_direct, &{fn}_cells_backward_matched,"
            f" {fn}_cells_float16, {fn}_cells_bfloat16"
            if fn in cells
            else "nullptr, nullptr, nullptr, {}, {}"
        )
        lines += [f"inline constexpr FamilyCells {fn}_family_cells = {{{tables}}};"]
    return lines


def load_family_cells(spec_dir: Path | None = None) -> dict:
    """{function: cells spec}: ``spec_dir/cells`` when it exists, else the committed ones."""
    from . import family_cells

    root = _root(spec_dir, "family_cells")
    return {fn: family_cells.load(fn, root) for fn in family_cells.FUNCTIONS}


# ---------------------------------------------------------------- the kernels' table in Metal

FAMILY_METAL = KERNELS / "mps" / "family_kernels.metal"
# The programs, (function, tier, part) in the order of their index in the Metal tables (the
# backward kernels' argument d; turbogelu/mps.py passes it): the family's, exp2's, GELU's.
FAMILY_METAL_PROGRAMS = _spec_names.FAMILY_METAL_PROGRAMS
# The ops, X(op, function, kind), as family.h's TG_FAMILY_OPS.
FAMILY_OPS = _spec_names.FAMILY_OPS
FAMILY_TIERS = _spec_names.FAMILY_TIERS
# family_eval.h's Form as the Metal source names it.
_METAL_FORMS = {"HalfPlusOdd": "TG_HALF_PLUS_ODD", "Odd": "TG_ODD",
                "XHalfPlusEven": "TG_X_HALF_PLUS_EVEN", "XHalfPlus": "TG_X_HALF_PLUS",
                "Even": "TG_EVEN", "Exp2Nearest": "TG_EXP2_NEAREST",
                "Exp2Floor": "TG_EXP2_FLOOR", "HalfPlusSigned": "TG_HALF_PLUS_SIGNED",
                "XHalfPlusNonNeg": "TG_X_HALF_PLUS_NON_NEG"}  # fmt: skip
# A program's variable and window, as family_eval.h's template flags (Y, W): |x| (window
# |x| <= clamp), fl(x^2) (the same window), fl(x^2) with the window fl(x^2) <= fl(clamp^2)
# (GELU's programs, whose specs state it; the same decision, without the |x|).
METAL_VARIABLES = {(False, False): "TG_ABS", (True, False): "TG_SQUARE",
                   (True, True): "TG_SQUARE_WINDOW"}  # fmt: skip
# GELU's program shape (family.h's shapes::gelu_<mode>_accurate): forward x/2 + x^2 P
# (x above, -0.0 below), derivative 1/2 + x Q (1 above, 0 below), both in x^2 with its window.
GELU_FORMS = {"forward": ("XHalfPlusEven", ("-0.0f", "0.0f")),
              "backward": ("HalfPlusOdd", ("0.0f", "1.0f"))}  # fmt: skip


def family_shapes(
    family: dict[tuple[str, str], dict],
) -> dict[tuple[str, str], tuple[str, int, bool, str, int, bool]]:
    """{(function, tier): family_shape}: each program pair's shape as TG_FAMILY_SHAPES has it
    (the Metal kernels are instantiated for the shapes the CPU's are)."""
    shapes = {key: family_shape(*key, doc) for key, doc in family.items()}
    for key, (ff, _, _, fd, _, _) in shapes.items():
        if ff not in _METAL_FORMS or fd not in _METAL_FORMS:
            raise ValueError(f"{key}: the Metal source has no form {ff} / {fd}")
    return shapes


def gelu_shape(doc: dict) -> tuple[str, int, bool, str, int, bool]:
    """GELU's kernel shape for one form's spec, as family_shape's (family.h asserts as this
    does that the two derivatives share a degree)."""
    bdeg = {doc[p]["degree"] for p in ("backward_direct", "backward_matched")}
    if len(bdeg) != 1:
        raise ValueError(f"GELU's two derivatives differ in degree ({sorted(bdeg)})")
    ff, fd = GELU_FORMS["forward"][0], GELU_FORMS["backward"][0]
    return ff, doc["forward"]["degree"], True, fd, bdeg.pop(), True


class _MetalProgram:
    """One row of the Metal tables: form, variable (METAL_VARIABLES), degree, coefficients
    (hex), clamp and scale (hex), and the asymptotes below and above (Metal literals)."""

    def __init__(self, form, variable, degree, coefficients, clamp, scale, asymptotes):
        self.form, self.variable, self.degree = form, variable, degree
        self.coefficients, self.clamp, self.scale = coefficients, clamp, scale
        self.below, self.above = asymptotes

    @classmethod
    def family(cls, ps) -> _MetalProgram:
        form, in_y = family_form(ps)
        return cls(form, METAL_VARIABLES[(in_y, False)], ps.degree,
                   [specmod.f32_hex(c) for c in ps.coefficients], specmod.f32_hex(ps.clamp),
                   specmod.f32_hex(ps.scale), _ASYMPTOTES[ps.tgt.asymptote_kind])  # fmt: skip

    @classmethod
    def exp2(cls, doc: dict, part: str) -> _MetalProgram:  # its form reads only the coefficients
        p, zero = doc[part], "0x0p+0"
        return cls(doc["form"], "TG_ABS", p["degree"], p["coefficients"], zero, zero,
                   ("0.0f", "0.0f"))  # fmt: skip

    @classmethod
    def gelu(cls, doc: dict, part: str) -> _MetalProgram:
        p = doc[part]
        form, asymptotes = GELU_FORMS["forward" if part == "forward" else "backward"]
        return cls(form, "TG_SQUARE_WINDOW", p["degree"], p["coefficients"], p["clamp"],
                   p["scale"], asymptotes)  # fmt: skip


_VARIABLE_NOTES = {"TG_ABS": "", "TG_SQUARE": ", in x^2",
                   "TG_SQUARE_WINDOW": ", in x^2 (window on x^2)"}  # fmt: skip


def render_family_metal(
    family: dict[tuple[str, str], dict],
    exp2_docs: dict | None = None,
    gelu_specs: dict | None = None,
    gelu_paper: dict | None = None,
) -> str:
    """The Metal source from ``load_family``'s specs, exp2's (``load_exp2``) and GELU's
    (``load_specs``, its paper tier ``load_gelu_paper``; the committed ones when None): every
    program in one set of tables, one kernel pair per (op, tier) and storage type."""
    from .polyspec import PolySpec

    exp2_docs = load_exp2() if exp2_docs is None else exp2_docs
    gelu_specs = load_specs() if gelu_specs is None else gelu_specs
    gelu_paper = load_gelu_paper() if gelu_paper is None else gelu_paper
    want = [(fn, tier) for tier in FAMILY_TIERS for fn in _spec_names.FAMILY_FUNCTIONS]
    if sorted(family) != sorted(want):
        raise ValueError(f"family specs for {sorted(family)}, expected {sorted(want)}")
    shapes = family_shapes(family)
    shapes.update({("exp2", tier): exp2_shape(doc) for tier, doc in exp2_docs.items()})
    gelu_docs = {fn: gelu_specs[mode] for mode, fn in _table.APPROXIMATE.items()}
    shapes.update({(fn, "accurate"): gelu_shape(doc) for fn, doc in gelu_docs.items()})
    shapes.update(family_shapes(gelu_paper))
    # The paper tier's GELU programs are family programs (window on |x|, as SiLU's paper one).
    own = {**family, **gelu_paper}

    def program(fn, tier, part):
        if fn == "exp2":
            return _MetalProgram.exp2(exp2_docs[tier], part)
        if fn in gelu_docs and tier == "accurate":
            return _MetalProgram.gelu(gelu_docs[fn], part)
        return _MetalProgram.family(PolySpec.from_dict(own[(fn, tier)][part]))

    programs = [program(*key) for key in FAMILY_METAL_PROGRAMS]
    n = 1 + max(ps.degree for ps in programs)
    clamps, scales, below, above, rows = [], [], [], [], []
    for i, ((fn, tier, part), ps) in enumerate(zip(FAMILY_METAL_PROGRAMS, programs, strict=True)):
        name = f"{fn} {tier} {part}"
        clamps.append(f"    {_metal_lit(ps.clamp)},  // {i}: {name}: {ps.clamp}")
        scales.append(f"    {_metal_lit(ps.scale)},  // {i}: {ps.scale}")
        below.append(f"    {ps.below},  // {i}")
        above.append(f"    {ps.above},  // {i}")
        _, fdeg, _, _, bdeg, _ = shapes[(fn, tier)]
        shape_degree = fdeg if part == "forward" else bdeg
        note = _VARIABLE_NOTES[ps.variable]
        rows.append(f"    {{  // {i}: {name}: {ps.form}{note}, degree {ps.degree}")
        coeffs = ps.coefficients
        rows += [f"        {_metal_lit(c)},  // c[{k}] = {c}" for k, c in enumerate(coeffs)]
        # A shorter derivative runs at its pair's degree (as family_coeffs.h pads it): leading
        # zeros, which Horner passes through exactly. Beyond that the row is padding that no
        # kernel reads.
        rows += [
            f"        0.0f,  // c[{k}]: leading zero (the pair's degree {shape_degree})"
            for k in range(len(coeffs), shape_degree + 1)
        ]
        rows += ["        0.0f,"] * (n - max(len(coeffs), shape_degree + 1))
        rows.append("    },")
    index = [
        f"//   {i}-{i + 2}: {fn} {tier}"
        for i, (fn, tier, part) in enumerate(FAMILY_METAL_PROGRAMS)
        if part == specmod.PARTS[0]
    ]
    defaults = [
        f"// default_backward ({tier}): "
        + ", ".join(f"{fn}={family[(fn, tier)]['default_backward']}" for fn, t in want if t == tier)
        + f", exp2={exp2_docs[tier]['default_backward']}"
        for tier in FAMILY_TIERS
    ]
    defaults.append(
        "// default_backward (GELU, accurate): "
        + ", ".join(f"{fn}={doc['default_backward']}" for fn, doc in gelu_docs.items())
    )
    defaults.append(
        "// default_backward (GELU, paper): "
        + ", ".join(f"{fn}={doc['default_backward']}" for (fn, _), doc in gelu_paper.items())
    )
    head = _metal_head(
        "family_head.metal",
        "data/specs/<function>/<tier>.json, data/specs/exp2/<tier>.json,\n"
        "// data/specs/gelu_exact.json, data/specs/gelu_tanh.json and\n"
        "// data/specs/gelu_<mode>/paper.json",
        PARTS=", ".join(specmod.PARTS),
        PROGRAMS="\n".join(index),
        DEFAULTS="\n".join(defaults),
    )

    def op_line(op, fn, tier, kind):
        ff, fdeg, fy, fd, bdeg, by = shapes[(fn, tier)]
        window = fn in gelu_docs and tier == "accurate"  # GELU's own programs' window
        pf = FAMILY_METAL_PROGRAMS.index((fn, tier, "forward"))
        return (
            f"  X({op}, {tier}, {kind.upper()}, {pf}, {_METAL_FORMS[ff]}, {fdeg + 1}, "
            f"{METAL_VARIABLES[(fy, window)]}, {_METAL_FORMS[fd]}, {bdeg + 1}, "
            f"{METAL_VARIABLES[(by, window)]})"
        )

    ops = [op_line(op, fn, tier, kind) for op, fn, kind in FAMILY_OPS for tier in FAMILY_TIERS]
    gelu_ops = [op_line(op, fn, tier, kind) for op, fn, kind in _spec_names.GELU_OPS
                for tier in _spec_names.GELU_TIERS[op]]  # fmt: skip
    tables = [
        f"#define TG_FAMILY_N {n}  // coefficients per row (the highest degree + 1)",
        f"#define TG_FAMILY_PROGRAMS {len(programs)}",
        "",
        "constant float TG_FAMILY_CLAMP[TG_FAMILY_PROGRAMS] = {",
        *clamps,
        "};",
        "constant float TG_FAMILY_SCALE[TG_FAMILY_PROGRAMS] = {",
        *scales,
        "};",
        "// The asymptotes: the result for x < -clamp and for x > clamp (the x/2 forms: x itself",
        "// above; below -0.0 for XHalfPlusEven and XHalfPlus, this for XHalfPlusNonNeg).",
        "constant float TG_FAMILY_BELOW[TG_FAMILY_PROGRAMS] = {",
        *below,
        "};",
        "constant float TG_FAMILY_ABOVE[TG_FAMILY_PROGRAMS] = {",
        *above,
        "};",
        "constant float TG_FAMILY_COEFFS[TG_FAMILY_PROGRAMS][TG_FAMILY_N] = {",
        *rows,
        "};",
        "",
        "// The ops (family.h's TG_FAMILY_OPS) in each tier: X(op, tier, kind, forward program,",
        "// forward form, forward coefficients, forward variable, derivative form, derivative",
        "// coefficients, derivative variable), the shapes of family_coeffs.h's TG_FAMILY_SHAPES.",
        "#define TG_FAMILY_OPS(X) \\",
        " \\\n".join(ops),
        "// GELU's rows (family.h's TG_GELU_OPS), approximate='none' and 'tanh' of the op gelu,",
        "// in each tier they have.",
        "#define TG_GELU_OPS(X) \\",
        " \\\n".join(gelu_ops),
        "// Every row of the kernels' table.",
        "#define TG_KERNEL_OPS(X) TG_FAMILY_OPS(X) TG_GELU_OPS(X)",
    ]
    body = "".join(
        template(f) for f in ("family_math.metal", "types.metal", "family_kernels.metal")
    )
    return head + template("prelude.metal") + "\n".join(tables) + "\n" + body


def generate_family_metal(spec_dir: Path | None = None) -> str:
    return render_family_metal(load_family(spec_dir), load_exp2(spec_dir), load_specs(spec_dir))
