"""The packed bfloat16 specs: the coefficients of the opt-in CUDA path that evaluates the
kernels' program two lanes at a time in ``__nv_bfloat162`` arithmetic (issue 5).

    forward   x * fma(x, P(z), 1/2),  backward  fma(x, Q(z), 1/2),  z = fma(x*x, 2/R^2, -1),
    every operation rounded to bfloat16 (fused multiply-adds), the window y <= fl(R*R).

Bound (issue 5): max |error| over every finite bfloat16 input <= 2x PyTorch's own max |error| in
bfloat16, which equals the error of the exact function correctly rounded to bfloat16 (the tests
use that, machine-independent, form). ``experiments/archive/packed_half`` measured which degrees and
clamps meet it (float16 cannot, with this program); ``spec.PACKED_DEFAULTS`` holds the degree
and clamp taken for each.
Each spec is fitted by the lab (``family_fit.fit_polyspec``, remez + neighbour search,
coefficients in bfloat16), stored as PolySpec JSON under ``data/specs/packed/``, and generated
into gelu_coeffs.h by ``python -m turbogelu codegen``. Exhaustive errors: ``exhaustive_error``,
the lab's replay of packed bfloat16 arithmetic (``polyspec.replay(precision="target")``).

    python -m turbogelu.approx.packed --check    # refit and compare with the committed ones

(the committed specs are written only by ``python -m turbogelu fit --all``, ``make fit``, which
runs this fit; a spec file holds the envelope of spec.envelope, then its direction's PolySpec).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .. import _table
from . import family_fit, polyspec, reference, rounding
from . import spec as specmod
from .polyspec import PolySpec

MODES = specmod.MODES
DIRECTIONS = specmod.DIRECTIONS
FMT = "bfloat16"


def target(mode: str, direction: str) -> str:
    return rounding.gelu_function(mode, grad=direction == "backward")


def path(mode: str, direction: str, root: str | Path | None = None) -> Path:
    return specmod.spec_path(mode, "packed", direction, root=root)


def fit(mode: str, direction: str) -> PolySpec:
    settings = specmod.PACKED_DEFAULTS[(mode, direction)]
    degree, r = settings.degree, settings.range
    factor = 2 if direction == "forward" else 1
    ps = family_fit.fit_polyspec(
        target(mode, direction), "y", factor, degree, r, r, FMT, method="remez+search",
        replay=False,
    )  # fmt: skip
    meta = dict(ps.meta)
    meta["exhaustive_max_abs_error_bf16_replay"] = exhaustive_error(
        ps.with_coefficients(ps.coefficients, program="turbogelu"), mode, direction
    )
    return ps.with_coefficients(ps.coefficients, program="turbogelu", meta=meta)


def load(mode: str, direction: str, root: str | Path | None = None) -> PolySpec:
    doc = specmod.load(path(mode, direction, root), "packed")
    if doc["parts"] != [direction] or doc["function"] != _table.APPROXIMATE[mode]:
        raise ValueError(f"{path(mode, direction, root)} holds {doc['function']} {doc['parts']}")
    return PolySpec.from_dict(doc[direction])


def document(ps: PolySpec, mode: str, direction: str) -> dict:
    """A packed spec file's document: the envelope, then the PolySpec of its direction."""
    head = specmod.envelope(
        _table.APPROXIMATE[mode], "packed_bf16", "accurate", specmod.FIT_ALL, [direction]
    )
    return {**head, direction: ps.to_dict()}


def dumps(ps: PolySpec, mode: str, direction: str) -> str:
    return specmod.dumps(document(ps, mode, direction), "packed")


def finite_inputs() -> np.ndarray:
    """Every finite bfloat16 value, as float64."""
    bits = np.arange(1 << 16, dtype=np.uint32) << 16
    x = bits.view(np.float32)
    return x[np.isfinite(x)].astype(np.float64)


def exact(x: np.ndarray, mode: str, direction: str) -> np.ndarray:
    return reference.gelu(x, mode) if direction == "forward" else reference.gelu_grad(x, mode)


def replay(ps: PolySpec, x: np.ndarray) -> np.ndarray:
    """The packed kernel's bfloat16 results (as float64) for bfloat16 inputs x."""
    return polyspec.replay(ps, x, precision="target").astype(np.float64)


def exhaustive_error(ps: PolySpec, mode: str, direction: str) -> float:
    x = finite_inputs()
    return float(np.max(np.abs(replay(ps, x) - exact(x, mode, direction))))


def kernel_values(ps: PolySpec) -> dict:
    """clamp, scale and coefficients as the kernel gets them (bfloat16 values)."""
    scale = float(rounding.round_to(np.float64(ps.scale), FMT))
    return {"degree": ps.degree, "clamp": ps.clamp, "scale": scale, "coefficients": ps.coefficients}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m turbogelu.approx.packed", description=__doc__)
    p.add_argument("--check", action="store_true", help="fail if a committed spec differs")
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite a committed spec (data/specs/packed) that differs (`fit --all` only)",
    )
    args = p.parse_args(argv)
    stale = []
    for mode in MODES:
        for direction in DIRECTIONS:
            ps = fit(mode, direction)
            err = ps.meta["exhaustive_max_abs_error_bf16_replay"]
            print(f"{mode} {direction}: degree {ps.degree}, R {ps.clamp}: max |err| {err:.4g}")
            target_path = path(mode, direction)
            text = dumps(ps, mode, direction)
            if args.check:  # the coefficients bit for bit, measured figures to a tolerance
                diffs = specmod.file_differences(target_path, text)
                for d in diffs[:20]:
                    print(f"  {d}", file=sys.stderr)
                if diffs:
                    stale.append(target_path)
                continue
            # A committed file: left as it is when the refit matches (its wall time aside),
            # kept and reported when it differs.
            try:
                outcome = specmod.write_checked(target_path, text, force=args.force)
            except specmod.Differs as exc:
                print(f"error: {exc}", file=sys.stderr)
                stale.append(target_path)
                continue
            print(specmod.describe_write(target_path, outcome))
    if args.check:
        for s in stale:
            print(f"{s} differs from the refit", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
