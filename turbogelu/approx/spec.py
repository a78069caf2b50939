"""Fitted GELU specs: build one from a fit, measure it, store it as JSON with hex floats.

A spec file (``data/specs/gelu_<mode>.json``) holds, for one GELU form, three coefficient
sets in the kernels' form (see ``replay``): ``forward``, ``backward_direct`` (a fit of
GELU') and ``backward_matched`` (the forward's own derivative), each with its clamp R,
scale 2/R^2 and float32 coefficients written as hex, plus the errors measured by replaying
the kernels' float32 arithmetic, and the command that recreates the file.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np

from . import fit, reference, replay

F32 = np.float32
SPEC_DIR = Path(__file__).resolve().parents[2] / "data" / "specs"
SCHEMA_VERSION = 1
PARTS = ("forward", "backward_direct", "backward_matched")
# The measurement: a uniform grid of [-6, 6] with >= 1e6 points, plus every float32
# within 1e-3 of +-R (where the clamp's jump and the fit's end meet).
GRID = (-6.0, 6.0, 1_000_001)
NEAR_CLAMP = 1e-3


def f32_hex(v: float) -> str:
    """float32 value as a C hex-float literal body, e.g. '0x1.988454p-3' (no suffix)."""
    v = float(F32(v))
    if v == 0.0:
        return "-0x0p+0" if np.signbit(v) else "0x0p+0"
    mant, exp = float.hex(v).split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}"


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
        "mean_abs_float32_grid": float(err32[:n].mean()),
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
    gelu_mode = "exact" if mode == "none" else mode
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
    return {
        "schema": SCHEMA_VERSION,
        "generated_by": fit_command(range_, iters, points, degree, mode),
        "function": "gelu",
        "approximate": mode,
        "range": range_,
        "form": {
            "forward": "x/2 + x^2 P(z) for |x| <= R; x for x > R; -0.0 for x < -R",
            "backward": "1/2 + x Q(z) for |x| <= R; 1 for x > R; 0 for x < -R",
            "z": "fma(x*x, scale, -1), scale = 2/R^2 (float32)",
        },
        "default_backward": "direct" if d <= m else "matched",
        **parts,
    }


def spec_path(mode: str) -> Path:
    return SPEC_DIR / f"gelu_{'exact' if mode == 'none' else mode}.json"


def dumps(spec: dict) -> str:
    return json.dumps(spec, indent=2) + "\n"


def load(path: str | Path) -> dict:
    """Read and validate a spec file; a missing or malformed file raises a clear error."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"spec file not found: {path} (make it with `python -m turbogelu fit`)"
        )
    try:
        spec = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"spec file {path} is not valid JSON: {e}") from e
    try:
        if spec["schema"] != SCHEMA_VERSION:
            raise ValueError(f"schema {spec['schema']} != {SCHEMA_VERSION}")
        reference.check_mode(spec["approximate"])
        for name in PARTS:
            part = spec[name]
            from_hex(part["clamp"])
            from_hex(part["scale"])
            coeffs = [from_hex(c) for c in part["coefficients"]]
            if len(coeffs) != part["degree"] + 1:
                raise ValueError(f"{name}: degree {part['degree']} but {len(coeffs)} coefficients")
        if spec["default_backward"] not in ("direct", "matched"):
            raise ValueError(f"default_backward is {spec['default_backward']!r}")
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"spec file {path} is malformed: {e!r}") from e
    return spec


def part_values(part: dict) -> dict:
    """A stored coefficient set as float values (the form ``replay`` takes)."""
    return {
        "clamp": from_hex(part["clamp"]),
        "scale": from_hex(part["scale"]),
        "coefficients": [from_hex(c) for c in part["coefficients"]],
    }
