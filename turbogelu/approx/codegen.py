"""Generate the kernels' coefficients from the committed spec files:

* ``kernels/include/turbogelu/gelu_coeffs.h`` (CPU and CUDA), every coefficient a float32 hex
  literal;
* ``kernels/include/turbogelu/family_coeffs.h``: the activation family's programs
  (``data/specs/<function>/<tier>.json``) in the shape of ``family_eval.h``, and the list of
  program shapes the kernels instantiate;
* ``kernels/mps/gelu_kernels.metal`` (Apple GPUs), the same evaluation as poly_eval.h written
  out in Metal, every coefficient an *exact* decimal literal (the float32 value's full decimal
  expansion, so any compiler reads the same bits; its hex form stands beside it).

So the bits the kernels use are the bits the spec's errors were measured for; a test
regenerates both files and compares (``python -m turbogelu codegen --check``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

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
            rows = ",\n     ".join(
                "{" + ", ".join(_lit(v) for v in row) + "}" for row in part["table"]
            )
            lines += [
                f'// approximate="{mode}" {name}: max |err| {e["max_abs_float32"]:.3e}'
                f" (at x = {e['argmax_float32']:.6g}), mean |err| on the grid"
                f" {e['mean_abs_float32_grid']:.3e}",
                f"inline constexpr CellTable gelu_{mode}_{PART_NAMES[name]}_cells = {{",
                f"    {_lit(part['scale'])}, {_lit(part['clamp'])}, {_lit(part['offset'])},",
                f"    {{{rows}}}}};",
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
#include <metal_stdlib>
using namespace metal;

// Fuse exactly where fma() is written, and keep IEEE semantics for NaN, inf and -0.0
// (the default fast math may assume there is no NaN).
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif

"""

_METAL_BODY = """
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


def generate_metal(spec_dir: Path | None = None) -> str:
    return render_metal(load_specs(spec_dir))


def outputs(spec_dir: Path | None = None) -> dict[Path, str]:
    """Every generated file and its text."""
    specs = load_specs(spec_dir)
    return {
        HEADER: render(specs, load_packed(spec_dir), load_cells(spec_dir)),
        FAMILY_HEADER: render_family(load_family(spec_dir)),
        METAL: render_metal(specs),
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


def render_family(docs: dict[tuple[str, str], dict]) -> str:
    from .polyspec import PolySpec

    lines = [
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from",
        "// data/specs/<function>/<tier>.json (python -m turbogelu.approx.family_programs).",
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
        fwd, direct, matched = (parts[n] for n in specmod.PARTS)
        back = {family_form(direct), family_form(matched)}
        if len(back) != 1:
            raise ValueError(f"{fn} ({tier}): the direct and matched backward differ in form")
        bdeg = max(direct.degree, matched.degree)
        lines += ["", f"// {fn}, {tier} tier: {doc['generated_by']}"]
        for name in specmod.PARTS:
            deg = fwd.degree if name == "forward" else bdeg
            lines += _family_program(f"{fn}_{tier}_{name}", parts[name], doc[name]["errors"], deg)
        default = "true" if doc["default_backward"] == "direct" else "false"
        lines += [f"inline constexpr bool {fn}_{tier}_default_backward_is_direct = {default};"]
        (ff, fy), (bf, by) = family_form(fwd), back.pop()
        shapes.append(
            f"  X({fn}, {tier}, {ff}, {fwd.degree}, {str(fy).lower()}, {bf}, {bdeg}, "
            f"{str(by).lower()})"
        )
    lines += ["", "}  // namespace coeffs", "}  // namespace turbogelu", ""]
    lines += ["#define TG_FAMILY_SHAPES(X) \\", " \\\n".join(shapes), ""]
    return "\n".join(lines)
