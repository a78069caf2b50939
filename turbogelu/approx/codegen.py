"""Generate ``kernels/include/turbogelu/gelu_coeffs.h`` from the committed spec files.

The header holds every coefficient as a float32 hex literal, so the bits the kernels use are
the bits the spec's errors were measured for; a test regenerates it and compares.
"""

from __future__ import annotations

from pathlib import Path

from . import spec as specmod

HEADER = Path(__file__).resolve().parents[2] / "kernels" / "include" / "turbogelu" / "gelu_coeffs.h"
MODES = ("none", "tanh")
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


def render(specs: dict[str, dict]) -> str:
    lines = [
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from",
        "// data/specs/gelu_exact.json and data/specs/gelu_tanh.json.",
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
    lines += ["", "}  // namespace coeffs", "}  // namespace turbogelu", ""]
    return "\n".join(lines)


def load_specs(spec_dir: Path | None = None) -> dict[str, dict]:
    out = {}
    for mode in MODES:
        path = (
            specmod.spec_path(mode)
            if spec_dir is None
            else Path(spec_dir) / specmod.spec_path(mode).name
        )
        out[mode] = specmod.load(path)
    return out


def generate(spec_dir: Path | None = None) -> str:
    return render(load_specs(spec_dir))
