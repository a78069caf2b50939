"""Generate the kernels' coefficients from the committed spec files:

* ``kernels/include/turbogelu/gelu_coeffs.h`` (CPU and CUDA), every coefficient a float32 hex
  literal;
* ``kernels/include/turbogelu/family_coeffs.h``: the activation family's programs
  (``data/specs/<function>/<tier>.json``) in the shape of ``family_eval.h``, and the list of
  program shapes the kernels instantiate;
* ``kernels/mps/gelu_kernels.metal`` (Apple GPUs), the same evaluation as poly_eval.h written
  out in Metal, every coefficient an *exact* decimal literal (the float32 value's full decimal
  expansion, so any compiler reads the same bits; its hex form stands beside it);
* ``kernels/mps/family_kernels.metal``: the family's programs of both tiers likewise,
  evaluated as family_eval.h does, with one generic kernel pair per kind of op (family.h's
  Plain, Scaled, Gated) instantiated for each op and tier.

So the bits the kernels use are the bits the spec's errors were measured for; a test
regenerates every file and compares (``python -m turbogelu codegen --check``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

from .. import _spec_names
from . import spec as specmod

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
HEADER = KERNELS / "include" / "turbogelu" / "gelu_coeffs.h"
FAMILY_HEADER = KERNELS / "include" / "turbogelu" / "family_coeffs.h"
METAL = KERNELS / "mps" / "gelu_kernels.metal"
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


def render(specs: dict[str, dict], packed: dict | None = None, cells: dict | None = None) -> str:
    lines = [
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from",
        "// data/specs/gelu_exact.json and data/specs/gelu_tanh.json (and data/specs/packed/,",
        "// data/specs/cells/).",
        "//",
        "// Polynomial GELU coefficients in the form of poly_eval.h: for |x| <= clamp,",
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
    lines += _cells_lines(cells)
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
        "// fits: python -m turbogelu.approx.packed -> data/specs/packed/*.json. Every value is a",
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


def _cell_table(name: str, part: dict) -> list[str]:
    """A CellTable constant (poly_eval.h) from a cells spec part."""
    rows = ",\n     ".join("{" + ", ".join(_lit(v) for v in row) + "}" for row in part["table"])
    return [
        f"inline constexpr CellTable {name} = {{",
        f"    {_lit(part['scale'])}, {_lit(part['clamp'])}, {_lit(part['offset'])},",
        f"    {{{rows}}}}};",
    ]


def _cells_lines(cells: dict | None) -> list[str]:
    """The CPU's table-driven kernel (turbogelu/approx/cells.py), if given."""
    if not cells:
        return []
    from . import cells as cells_mod

    lines = [
        "",
        "// Cells: the CPU's table-driven program (poly_eval.h's gelu_forward_cells), a cubic in",
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


def load_specs(spec_dir: Path | None = None) -> dict[str, dict]:
    return {mode: specmod.load(specmod.spec_path(mode, root=spec_dir)) for mode in MODES}


def load_packed(spec_dir: Path | None = None) -> dict:
    """{(mode, direction): PolySpec} of the packed bfloat16 specs: ``spec_dir/packed`` when it
    exists, else the committed data/specs/packed."""
    from . import packed

    root = _root(spec_dir, "packed")
    return {(m, d): packed.load(m, d, root) for m in packed.MODES for d in packed.DIRECTIONS}


def generate(spec_dir: Path | None = None) -> str:
    return render(load_specs(spec_dir), load_packed(spec_dir), load_cells(spec_dir))


# ---------------------------------------------------------------- Metal

# The coefficient sets of the Metal kernels, in the order of their index (the kernels' `set`
# argument; turbogelu/mps.py passes it).
METAL_SETS = specmod.METAL_SETS


def exact_decimal(hexstr: str) -> str:
    """The float32 value of a hex literal as its exact (finite) decimal expansion."""
    d = Decimal(float.fromhex(hexstr))  # float32 -> float64 is exact, so is Decimal(float64)
    text = format(d, "f")
    return text if "." in text else text + ".0"


def _metal_lit(hexstr: str) -> str:
    return f"{exact_decimal(hexstr)}f"


def render_metal(specs: dict[str, dict]) -> str:
    n = 1 + max(specs[m][p]["degree"] for m, p in METAL_SETS)
    clamps, scales, rows = [], [], []
    for i, (mode, part) in enumerate(METAL_SETS):
        s = specs[mode][part]
        # Leading zeros pad a lower degree: fma(0, z, c) = c, so Horner's result is unchanged.
        coeffs = ["0x0p+0"] * (n - 1 - s["degree"]) + list(reversed(s["coefficients"]))
        coeffs = list(reversed(coeffs))
        clamps.append(f"    {_metal_lit(s['clamp'])},  // {i}: {mode} {part}: {s['clamp']}")
        scales.append(f"    {_metal_lit(s['scale'])},  // {i}: {s['scale']}")
        rows.append(f"    {{  // {i}: approximate={mode!r}, {part} (degree {s['degree']})")
        rows += [f"        {_metal_lit(c)},  // c[{k}] = {c}" for k, c in enumerate(coeffs)]
        rows.append("    },")
    sets = ", ".join(f"{i} = {m} {p}" for i, (m, p) in enumerate(METAL_SETS))
    defaults = ", ".join(f"{m}={specs[m]['default_backward']}" for m in MODES)
    head = _METAL_HEAD.replace("@SETS@", sets).replace("@DEFAULTS@", defaults)
    head += _METAL_PRELUDE
    tables = [
        f"#define TG_N {n}  // coefficients per set (the highest degree + 1)",
        f"#define TG_SETS {len(METAL_SETS)}",
        "",
        "constant float TG_CLAMP[TG_SETS] = {",
        *clamps,
        "};",
        "constant float TG_SCALE[TG_SETS] = {",
        *scales,
        "};",
        "constant float TG_COEFFS[TG_SETS][TG_N] = {",
        *rows,
        "};",
    ]
    return head + "\n".join(tables) + "\n" + _METAL_BODY


_METAL_HEAD = """\
// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/gelu_exact.json and data/specs/gelu_tanh.json (turbogelu/approx/codegen.py).
//
// turbogelu's GELU for Apple GPUs: the evaluation of poly_eval.h (Horner) with the
// coefficients of gelu_coeffs.h, compiled at first use by torch.mps.compile_shader
// (turbogelu/mps.py). Each coefficient is the exact decimal expansion of its float32 value
// (hex beside it), so every compiler reads the same bits.
//
//   forward   gelu(x)  ~ x * (1/2 + x P(z))  for |x| <= R;  x for x > R;  -0.0 for x < -R
//   backward  gelu'(x) ~ 1/2 + x Q(z)        for |x| <= R;  1 for x > R;  0 for x < -R
//   y = x*x, z = fma(y, scale, -1); |x| <= R decided as y <= R*R (NaN stays in P: NaN).
//
// Coefficient sets (the kernels' argument s): @SETS@.
// The default backward (read by turbogelu/mps.py), per form:
// default_backward: @DEFAULTS@
// float16 and bfloat16 are computed in float32 and rounded to nearest even; there is no
// float64 on Apple GPUs.
"""

# Shared by both Metal files: the standard library and the floating-point pragmas.
_METAL_PRELUDE = """\
#include <metal_stdlib>
using namespace metal;

// Fuse exactly where fma() is written, and keep IEEE semantics for NaN, inf and -0.0
// (the default fast math may assume there is no NaN).
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif

"""

_METAL_GELU_MATH = """
// 1/2 + x P(z), and y = x*x (poly_eval.h's gelu_bracket).
inline float tg_inner(float x, long s, thread float& y) {
  y = x * x;
  const float z = fma(y, TG_SCALE[s], -1.0f);
  float p = TG_COEFFS[s][TG_N - 1];
  for (int k = TG_N - 2; k >= 0; --k) p = fma(p, z, TG_COEFFS[s][k]);
  return fma(x, p, 0.5f);
}

inline float tg_forward(float x, long s) {
  float y;
  const float inner = tg_inner(x, s, y);
  const float r = TG_CLAMP[s];
  return y > r * r ? (x > 0.0f ? x : -0.0f) : x * inner;
}

inline float tg_backward(float g, float x, long s) {
  float y;
  const float inner = tg_inner(x, s, y);
  const float r = TG_CLAMP[s];
  const float step = x > 0.0f ? 1.0f : 0.0f;
  // Always multiply: a NaN gradient stays NaN in the clamped tails.
  return g * (y > r * r ? step : inner);
}
"""

# Shared by both Metal files: loads to float and rounding stores, per storage type.
_METAL_TYPES = """
// bfloat16: Metal's bfloat (MSL 3.1+), else its bits in a ushort, rounded to nearest even as
// kernels/cpu/convert.h does.
#if __METAL_VERSION__ >= 310
typedef bfloat tg_bf16;
inline float tg_load(tg_bf16 v) { return float(v); }
inline tg_bf16 tg_store(float v, tg_bf16) { return tg_bf16(v); }
#else
typedef ushort tg_bf16;
inline float tg_load(tg_bf16 v) { return as_type<float>(uint(v) << 16); }
inline tg_bf16 tg_store(float v, tg_bf16) {
  const uint u = as_type<uint>(v);
  return tg_bf16((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
#endif
inline float tg_load(float v) { return v; }
inline float tg_store(float v, float) { return v; }
inline float tg_load(half v) { return float(v); }
inline half tg_store(float v, half) { return half(v); }
"""

_METAL_GELU_KERNELS = """
// One element per thread; the grid has n threads (or more: hence the guard).
#define TG_KERNELS(T, NAME)                                                            \\
  kernel void gelu_forward_##NAME(device const T* x [[buffer(0)]],                     \\
                                  device T* out [[buffer(1)]],                         \\
                                  constant long& n [[buffer(2)]],                      \\
                                  constant long& s [[buffer(3)]],                      \\
                                  uint i [[thread_position_in_grid]]) {                \\
    if (i < n) out[i] = tg_store(tg_forward(tg_load(x[i]), s), T());                   \\
  }                                                                                    \\
  kernel void gelu_backward_##NAME(device const T* g [[buffer(0)]],                    \\
                                   device const T* x [[buffer(1)]],                    \\
                                   device T* out [[buffer(2)]],                        \\
                                   constant long& n [[buffer(3)]],                     \\
                                   constant long& s [[buffer(4)]],                     \\
                                   uint i [[thread_position_in_grid]]) {               \\
    if (i < n) out[i] = tg_store(tg_backward(tg_load(g[i]), tg_load(x[i]), s), T());  \\
  }

TG_KERNELS(float, float)
TG_KERNELS(half, half)
TG_KERNELS(tg_bf16, bfloat)
"""
_METAL_BODY = _METAL_GELU_MATH + _METAL_TYPES + _METAL_GELU_KERNELS


def generate_metal(spec_dir: Path | None = None) -> str:
    return render_metal(load_specs(spec_dir))


def outputs(spec_dir: Path | None = None) -> dict[Path, str]:
    """Every generated file and its text."""
    specs, family = load_specs(spec_dir), load_family(spec_dir)
    return {
        HEADER: render(specs, load_packed(spec_dir), load_cells(spec_dir)),
        FAMILY_HEADER: render_family(family, load_exp2(spec_dir), load_family_cells(spec_dir)),
        METAL: render_metal(specs),
        FAMILY_METAL: render_family_metal(family, load_exp2(spec_dir)),
    }


# ---------------------------------------------------------------- the activation family

# family_eval.h's Form of a program, from its target's reduction and factor (the forms the
# family's kernels evaluate; anything else is refused).
_FORMS = {
    ("1/2 + odd", 1): "HalfPlusOdd",
    ("odd", 1): "Odd",
    ("x/2 + even", 2): "XHalfPlusEven",
    ("x/2 + even", 0): "XHalfPlus",
    ("even", 0): "Even",
}
# (below, above): the asymptote beyond -clamp and +clamp (targets.ASYMPTOTES); "relu" is x
# itself above and -0.0 below, which the x/2 + even forms select by themselves.
_ASYMPTOTES = {"step": ("0.0f", "1.0f"), "sign": ("-1.0f", "1.0f"), "zero": ("0.0f", "0.0f"),
               "relu": ("-0.0f", "0.0f")}  # fmt: skip


def family_form(ps) -> tuple[str, bool]:
    """The family_eval.h (Form, variable is x^2) of a PolySpec, or ValueError when the kernels
    have none: shifted, a finite clamp, float32 values; XHalfPlusEven in |x| with the
    sign-keeping order x (1/2 + x P) (in x^2 that order decides the window on x^2, which the
    family's kernels do not), the others in the generic order (for them the same sequence)."""
    form = _FORMS.get((ps.tgt.reduction, ps.factor))
    order = "turbogelu" if form == "XHalfPlusEven" else "generic"
    ok = (
        form is not None
        and ps.shift
        and ps.fmt in ("float32", "bfloat16", "float16")
        and math.isfinite(ps.clamp)
        and ps.program == order
        and not (form == "XHalfPlusEven" and ps.variable != "u")
    )
    if not ok:
        raise ValueError(f"no family kernel evaluates {ps.describe()}")
    return form, ps.variable == "y"


def load_family(spec_dir: Path | None = None) -> dict[tuple[str, str], dict]:
    """The family's specs by (function, tier): ``spec_dir/<function>/`` when it exists."""
    from . import family_programs

    out = {}
    for fn in family_programs.FUNCTIONS:
        root = spec_dir if spec_dir is not None and (Path(spec_dir) / fn).is_dir() else None
        for tier in family_programs.TIERS:
            out[(fn, tier)] = specmod.load(specmod.spec_path(fn, tier, root=root), tier)
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
    return lines, f"  X(exp2, {tier}, {form}, {fdeg}, false, {form}, {bdeg}, false)"


def render_family(
    docs: dict[tuple[str, str], dict], exp2_docs: dict | None = None, cells: dict | None = None
) -> str:
    """family_coeffs.h from the family's specs, exp2's (``load_exp2``) and the family's cells
    (``load_family_cells``; the committed ones when None)."""
    from .polyspec import PolySpec

    exp2_docs = load_exp2() if exp2_docs is None else exp2_docs
    cells = load_family_cells() if cells is None else cells

    lines = [
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from",
        "// data/specs/<function>/<tier>.json (python -m turbogelu.approx.family_programs) and",
        "// data/specs/exp2/<tier>.json (python -m turbogelu.approx.exp2_programs) and",
        "// data/specs/cells/<function>.json (python -m turbogelu.approx.family_cells).",
        "//",
        "// The activation family's programs in the shape of family_eval.h, each tier's, and",
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
        lines += ["", f"// {fn}, {tier} tier: {doc['generated_by']}"]
        for name in specmod.PARTS:
            deg = fdeg if name == "forward" else bdeg
            lines += _family_program(f"{fn}_{tier}_{name}", parts[name], doc[name]["errors"], deg)
        default = "true" if doc["default_backward"] == "direct" else "false"
        lines += [f"inline constexpr bool {fn}_{tier}_default_backward_is_direct = {default};"]
        shapes.append(
            f"  X({fn}, {tier}, {ff}, {fdeg}, {str(fy).lower()}, {bf}, {bdeg}, {str(by).lower()})"
        )
    for tier, doc in exp2_docs.items():
        more, shape = _exp2_lines(tier, doc)
        lines += more
        shapes.append(shape)
    functions = list(dict.fromkeys([fn for fn, _ in docs] + ["exp2"]))
    lines += _family_cells_lines(cells, functions)
    lines += ["", "}  // namespace coeffs", "}  // namespace turbogelu", ""]
    lines += ["#define TG_FAMILY_SHAPES(X) \\", " \\\n".join(shapes), ""]
    forms = [f"X({fn}, {s['forward']['form']}, {s['backward_direct']['form']})"
             for fn, s in cells.items()]  # fmt: skip
    lines += ["// The functions with cells programs: X(function, forward form, derivative form).",
              "#define TG_FAMILY_CELLS(X) " + " ".join(forms), ""]  # fmt: skip
    return "\n".join(lines)


def _family_cells_lines(cells: dict, functions: list[str]) -> list[str]:
    """The family's table-driven CPU programs (family_cells.py): <fn>_cells_<part>, and
    <fn>_family_cells for every function (empty where it has none)."""
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
    for fn in functions:
        tables = (
            f"&{fn}_cells_forward, &{fn}_cells_backward_direct, &{fn}_cells_backward_matched"
            if fn in cells
            else "nullptr, nullptr, nullptr"
        )
        lines += [f"inline constexpr FamilyCells {fn}_family_cells = {{{tables}}};"]
    return lines


def load_family_cells(spec_dir: Path | None = None) -> dict:
    """{function: cells spec}: ``spec_dir/cells`` when it exists, else the committed ones."""
    from . import family_cells

    root = _root(spec_dir, "family_cells")
    return {fn: family_cells.load(fn, root) for fn in family_cells.FUNCTIONS}


# ---------------------------------------------------------------- the family in Metal

FAMILY_METAL = KERNELS / "mps" / "family_kernels.metal"
# The family's programs, (function, tier, part) in the order of their index in the Metal
# tables (the backward kernels' argument d; turbogelu/mps.py passes it).
FAMILY_METAL_PROGRAMS = _spec_names.FAMILY_METAL_PROGRAMS
# The ops, X(op, function, kind), as family.h's TG_FAMILY_OPS.
FAMILY_OPS = _spec_names.FAMILY_OPS
FAMILY_TIERS = _spec_names.FAMILY_TIERS
# family_eval.h's Form as the Metal source names it.
_METAL_FORMS = {"HalfPlusOdd": "TG_HALF_PLUS_ODD", "Odd": "TG_ODD",
                "XHalfPlusEven": "TG_X_HALF_PLUS_EVEN", "XHalfPlus": "TG_X_HALF_PLUS",
                "Even": "TG_EVEN", "Exp2Nearest": "TG_EXP2_NEAREST",
                "Exp2Floor": "TG_EXP2_FLOOR"}  # fmt: skip


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


class _Exp2Part:
    """One exp2 program in the Metal tables' terms (its form reads only the coefficients)."""

    def __init__(self, doc: dict, part: str):
        self.form, self.degree = doc["form"], doc[part]["degree"]
        self.coefficients = [float.fromhex(h) for h in doc[part]["coefficients"]]
        self.clamp = self.scale = 0.0
        self.asymptotes = ("0.0f", "0.0f")


def render_family_metal(family: dict[tuple[str, str], dict], exp2_docs: dict | None = None) -> str:
    """The Metal source from ``load_family``'s specs and exp2's (``load_exp2``; the committed
    ones when None): every tier's programs in one set of tables, one kernel pair per (op,
    tier) and storage type."""
    from .polyspec import PolySpec

    exp2_docs = load_exp2() if exp2_docs is None else exp2_docs
    want = [(fn, tier) for tier in FAMILY_TIERS for fn in _spec_names.FAMILY_FUNCTIONS]
    if sorted(family) != sorted(want):
        raise ValueError(f"family specs for {sorted(family)}, expected {sorted(want)}")
    shapes = family_shapes(family)
    shapes.update({("exp2", tier): exp2_shape(doc) for tier, doc in exp2_docs.items()})

    def program(fn, tier, part):
        if fn == "exp2":
            return _Exp2Part(exp2_docs[tier], part)
        return PolySpec.from_dict(family[(fn, tier)][part])

    programs = [program(*key) for key in FAMILY_METAL_PROGRAMS]
    n = 1 + max(ps.degree for ps in programs)
    clamps, scales, below, above, rows = [], [], [], [], []
    for i, ((fn, tier, part), ps) in enumerate(zip(FAMILY_METAL_PROGRAMS, programs, strict=True)):
        is_exp2 = isinstance(ps, _Exp2Part)
        lo, hi = ps.asymptotes if is_exp2 else _ASYMPTOTES[ps.tgt.asymptote_kind]
        clamp, scale = specmod.f32_hex(ps.clamp), specmod.f32_hex(ps.scale)
        name = f"{fn} {tier} {part}"
        clamps.append(f"    {_metal_lit(clamp)},  // {i}: {name}: {clamp}")
        scales.append(f"    {_metal_lit(scale)},  // {i}: {scale}")
        below.append(f"    {lo},  // {i}")
        above.append(f"    {hi},  // {i}")
        form, in_y = (ps.form, False) if is_exp2 else family_form(ps)
        ff, fdeg, _, _, bdeg, _ = shapes[(fn, tier)]
        shape_degree = fdeg if part == "forward" else bdeg
        variable = ", in x^2" if in_y else ""
        rows.append(f"    {{  // {i}: {name}: {form}{variable}, degree {ps.degree}")
        coeffs = [specmod.f32_hex(c) for c in ps.coefficients]
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
    head = (
        _FAMILY_METAL_HEAD.replace("@PARTS@", ", ".join(specmod.PARTS))
        .replace("@PROGRAMS@", "\n".join(index))
        .replace("@DEFAULTS@", "\n".join(defaults))
    )
    bool_lit = {True: "true", False: "false"}
    ops = []
    for op, fn, kind in FAMILY_OPS:
        for tier in FAMILY_TIERS:
            ff, fdeg, fy, fd, bdeg, by = shapes[(fn, tier)]
            pf = FAMILY_METAL_PROGRAMS.index((fn, tier, "forward"))
            ops.append(
                f"  X({op}, {tier}, {kind.upper()}, {pf}, {_METAL_FORMS[ff]}, {fdeg + 1}, "
                f"{bool_lit[fy]}, {_METAL_FORMS[fd]}, {bdeg + 1}, {bool_lit[by]})"
            )
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
        "// The asymptotes: the result for x < -clamp and for x > clamp (the x/2 forms: unused,",
        "// -0.0 and x itself).",
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
        "// forward form, forward coefficients, forward in x^2, derivative form, derivative",
        "// coefficients, derivative in x^2), the shapes of family_coeffs.h's TG_FAMILY_SHAPES.",
        "#define TG_FAMILY_OPS(X) \\",
        " \\\n".join(ops),
    ]
    return head + _METAL_PRELUDE + "\n".join(tables) + "\n" + _FAMILY_METAL_BODY


_FAMILY_METAL_HEAD = """\
// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/<function>/<tier>.json (turbogelu/approx/codegen.py).
//
// turbogelu's activation family for Apple GPUs (sigmoid, tanh, silu, softcap, swiglu, exp2) in both
// tiers (accurate, paper): the evaluation of family_eval.h with the programs of
// family_coeffs.h, compiled at first use by torch.mps.compile_shader (turbogelu/mps.py). Each
// coefficient, clamp and scale is the exact decimal expansion of its float32 value (hex beside
// it), so every compiler reads the same bits.
//
//   u = |x|, v = u (or fl(u * u): a program in x^2), z = fma(v, scale, -1), p = P(z) by
//   Horner with fma, then the program's form:
//     HalfPlusOdd fma(x, p, 1/2), Odd x * p, XHalfPlusEven x * fma(x, p, 1/2),
//     XHalfPlus fl(x * 1/2) + p (two roundings), Even p;
//   for u > clamp the asymptote, x > 0 ? above : below (the x/2 forms: x, or -0.0 below);
//   NaN compares false and stays in the polynomial. The three kinds of op:
//     Plain   f(x);                   backward grad * f'(x)
//     Scaled  cap * f(x * inv);       backward grad * f'(x * inv)    (inv = 1/cap in float32)
//     Gated   f(a) * b;               backward ((grad * b) * f'(a), grad * f(a))
//
// Programs (the tables' index; the backward kernels' argument d), per function and tier its
// @PARTS@:
@PROGRAMS@
// Kernels: <op>_<tier>_forward_<type> and <op>_<tier>_backward_<type>, one generic kernel
// pair per kind of op instantiated for each op, tier and storage type.
// The default backward (read by turbogelu/mps.py), per tier and function:
@DEFAULTS@
// float16 and bfloat16 are computed in float32 and rounded once to nearest even; there is no
// float64 on Apple GPUs.
"""

_FAMILY_METAL_MATH = """
// family_eval.h's Form of a program.
enum tg_form {
  TG_HALF_PLUS_ODD = 0,
  TG_ODD = 1,
  TG_X_HALF_PLUS_EVEN = 2,
  TG_X_HALF_PLUS = 3,
  TG_EVEN = 4,
  TG_EXP2_NEAREST = 5,
  TG_EXP2_FLOOR = 6
};

// exp2 (family_eval.h's exp2_eval, float32): x clamped to [-151, 129] by compares (NaN
// passes), rint by the magic-number addition (Exp2Floor: of x - 1/2), f = x - n exactly,
// P(f) by Horner, and 2^n as two normal factors from k's bits, so that only the last multiply
// rounds (subnormal and infinite results included).
template <int F, int N>
inline float tg_exp2_eval(float x, int p) {
  float xc = x < -151.0f ? -151.0f : x;
  xc = xc > 129.0f ? 129.0f : xc;
  const float t = F == TG_EXP2_FLOOR ? xc - 0.5f : xc;
  const float k = t + 12582912.0f;  // 1.5 * 2^23
  const float n = k - 12582912.0f;
  const float f = fma(n, -1.0f, xc);
  float q = TG_FAMILY_COEFFS[p][N - 1];
  for (int j = N - 2; j >= 0; --j) q = fma(q, f, TG_FAMILY_COEFFS[p][j]);
  const uint i = as_type<uint>(k);
  const uint h = i >> 1;
  const float lo = as_type<float>((h << 23) + (127u << 23));
  const float hi = as_type<float>(((i - h) << 23) + (127u << 23));
  const float m = q * lo;  // exact
  return m * hi;
}

// f(x) by program p, of form F with N coefficients, its variable made from x^2 where Y
// (family_eval.h's family_eval).
//
// XHalfPlus is the one place where a product feeds a sum outside fma(): fl(x * 1/2) + p, two
// rounded operations as on the CPU. Metal >= 3.2 does not fuse them (fp contract(off) above).
// Below 3.2 there is no pragma and the compile options decide, as for every kernel here
// (torch.mps.compile_shader: fast math off); were the two fused into fma(x, 1/2, p), the bits
// would not change: x * 1/2 is exact unless |x| < 2^-125, where z rounds to -1, so p = P(-1),
// and |x / 2| < 2^-126 is under half an ulp of P(-1) (tests/test_mps_family.py checks this of
// every such program, and runs these kernels compiled with contraction).
template <int F, int N, bool Y>
inline float tg_family_eval(float x, int p) {
  if (F == TG_EXP2_NEAREST || F == TG_EXP2_FLOOR) return tg_exp2_eval<F, N>(x, p);
  const float u = fabs(x);
  float v = u;
  if (Y) v = u * u;  // rounded to float before the fma
  const float z = fma(v, TG_FAMILY_SCALE[p], -1.0f);
  float q = TG_FAMILY_COEFFS[p][N - 1];
  for (int k = N - 2; k >= 0; --k) q = fma(q, z, TG_FAMILY_COEFFS[p][k]);
  float r;
  if (F == TG_HALF_PLUS_ODD) {
    r = fma(x, q, 0.5f);
  } else if (F == TG_ODD) {
    r = x * q;
  } else if (F == TG_X_HALF_PLUS_EVEN) {
    r = x * fma(x, q, 0.5f);
  } else if (F == TG_X_HALF_PLUS) {
    const float h = x * 0.5f;
    r = h + q;
  } else {
    r = q;
  }
  const bool outside = u > TG_FAMILY_CLAMP[p];
  if (F == TG_X_HALF_PLUS_EVEN || F == TG_X_HALF_PLUS) {
    return outside ? (x > 0.0f ? x : -0.0f) : r;
  }
  return outside ? (x > 0.0f ? TG_FAMILY_ABOVE[p] : TG_FAMILY_BELOW[p]) : r;
}

// The element functions of the three kinds (family_eval.h's), over float: f is the forward
// program pf, of shape (FF, NF, YF), f' the derivative program d, of shape (FD, ND, YD).
// Always multiply by the gradient: a NaN gradient stays NaN where the derivative is 0.
template <int FF, int NF, bool YF>
inline float tg_plain_forward(float x, int pf) {
  return tg_family_eval<FF, NF, YF>(x, pf);
}
template <int FD, int ND, bool YD>
inline float tg_plain_backward(float g, float x, int d) {
  return g * tg_family_eval<FD, ND, YD>(x, d);
}
template <int FF, int NF, bool YF>
inline float tg_scaled_forward(float x, int pf, float inv, float cap) {
  return cap * tg_family_eval<FF, NF, YF>(x * inv, pf);
}
template <int FD, int ND, bool YD>
inline float tg_scaled_backward(float g, float x, int d, float inv) {
  return g * tg_family_eval<FD, ND, YD>(x * inv, d);
}
template <int FF, int NF, bool YF>
inline float tg_gated_forward(float a, float b, int pf) {
  return tg_family_eval<FF, NF, YF>(a, pf) * b;
}
struct tg_pair {
  float first, second;
};
template <int FF, int NF, bool YF, int FD, int ND, bool YD>
inline tg_pair tg_gated_backward(float g, float a, float b, int pf, int d) {
  tg_pair r;
  r.first = (g * b) * tg_family_eval<FD, ND, YD>(a, d);
  r.second = g * tg_family_eval<FF, NF, YF>(a, pf);
  return r;
}
"""

_FAMILY_METAL_KERNELS = """
// One kernel pair per op kind, instantiated per op, tier and storage type: OP##_##TIER names
// the pair, PF is its forward program, (FF, NF, YF) and (FD, ND, YD) the shapes. One element
// per thread, the grid has n threads (or more: hence the guard). Storage is widened to float
// and rounded once.
#define TG_PLAIN_KERNELS(OP, TIER, PF, FF, NF, YF, FD, ND, YD, T, NAME)                   \\
  kernel void OP##_##TIER##_forward_##NAME(device const T* x [[buffer(0)]],              \\
                                           device T* out [[buffer(1)]],                  \\
                                           constant long& n [[buffer(2)]],               \\
                                           uint i [[thread_position_in_grid]]) {         \\
    if (i < n) out[i] = tg_store(tg_plain_forward<FF, NF, YF>(tg_load(x[i]), PF), T());  \\
  }                                                                                      \\
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \\
                                            device const T* x [[buffer(1)]],             \\
                                            device T* out [[buffer(2)]],                 \\
                                            constant long& n [[buffer(3)]],              \\
                                            constant long& d [[buffer(4)]],              \\
                                            uint i [[thread_position_in_grid]]) {        \\
    if (i < n)                                                                           \\
      out[i] = tg_store(                                                                 \\
          tg_plain_backward<FD, ND, YD>(tg_load(g[i]), tg_load(x[i]), int(d)), T());     \\
  }

#define TG_SCALED_KERNELS(OP, TIER, PF, FF, NF, YF, FD, ND, YD, T, NAME)                  \\
  kernel void OP##_##TIER##_forward_##NAME(device const T* x [[buffer(0)]],              \\
                                           device T* out [[buffer(1)]],                  \\
                                           constant long& n [[buffer(2)]],               \\
                                           constant float& inv [[buffer(3)]],            \\
                                           constant float& cap [[buffer(4)]],            \\
                                           uint i [[thread_position_in_grid]]) {         \\
    if (i < n)                                                                           \\
      out[i] =                                                                           \\
          tg_store(tg_scaled_forward<FF, NF, YF>(tg_load(x[i]), PF, inv, cap), T());     \\
  }                                                                                      \\
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \\
                                            device const T* x [[buffer(1)]],             \\
                                            device T* out [[buffer(2)]],                 \\
                                            constant long& n [[buffer(3)]],              \\
                                            constant long& d [[buffer(4)]],              \\
                                            constant float& inv [[buffer(5)]],           \\
                                            uint i [[thread_position_in_grid]]) {        \\
    if (i < n)                                                                           \\
      out[i] = tg_store(                                                                 \\
          tg_scaled_backward<FD, ND, YD>(tg_load(g[i]), tg_load(x[i]), int(d), inv),     \\
          T());                                                                          \\
  }

#define TG_GATED_KERNELS(OP, TIER, PF, FF, NF, YF, FD, ND, YD, T, NAME)                   \\
  kernel void OP##_##TIER##_forward_##NAME(device const T* a [[buffer(0)]],              \\
                                           device const T* b [[buffer(1)]],              \\
                                           device T* out [[buffer(2)]],                  \\
                                           constant long& n [[buffer(3)]],               \\
                                           uint i [[thread_position_in_grid]]) {         \\
    if (i < n)                                                                           \\
      out[i] =                                                                           \\
          tg_store(tg_gated_forward<FF, NF, YF>(tg_load(a[i]), tg_load(b[i]), PF), T()); \\
  }                                                                                      \\
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \\
                                            device const T* a [[buffer(1)]],             \\
                                            device const T* b [[buffer(2)]],             \\
                                            device T* out_a [[buffer(3)]],               \\
                                            device T* out_b [[buffer(4)]],               \\
                                            constant long& n [[buffer(5)]],              \\
                                            constant long& d [[buffer(6)]],              \\
                                            uint i [[thread_position_in_grid]]) {        \\
    if (i < n) {                                                                         \\
      /* every input is read before either output is written: out_a or out_b may be */   \\
      /* one of the inputs */                                                            \\
      const tg_pair r = tg_gated_backward<FF, NF, YF, FD, ND, YD>(                       \\
          tg_load(g[i]), tg_load(a[i]), tg_load(b[i]), PF, int(d));                      \\
      out_a[i] = tg_store(r.first, T());                                                 \\
      out_b[i] = tg_store(r.second, T());                                                \\
    }                                                                                    \\
  }

// Every op in every tier for every storage type: <op>_<tier>_forward_<type>,
// <op>_<tier>_backward_<type>.
#define TG_FAMILY_KERNELS(OP, TIER, KIND, PF, FF, NF, YF, FD, ND, YD)     \\
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, YF, FD, ND, YD, float, float) \\
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, YF, FD, ND, YD, half, half)   \\
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, YF, FD, ND, YD, tg_bf16, bfloat)

TG_FAMILY_OPS(TG_FAMILY_KERNELS)
"""

_FAMILY_METAL_BODY = _FAMILY_METAL_MATH + _METAL_TYPES + _FAMILY_METAL_KERNELS


def generate_family_metal(spec_dir: Path | None = None) -> str:
    return render_family_metal(load_family(spec_dir), load_exp2(spec_dir))
