"""Is a packed half-precision GELU (``__half2`` / ``__nv_bfloat162`` FMAs, issue 5's opt-in
path) within 2x PyTorch's own max |error| in that dtype?

For every finite float16 / bfloat16 input: PyTorch's error against the float64 GELU (F.gelu
forward; aten.gelu_backward with grad 1 backward), where PyTorch's result is finite, and the
error of the kernels' program, forward x * fma(x, P(z), 1/2) and backward fma(x, Q(z), 1/2),
z = fma(x*x, 2/R^2, -1), run entirely in the 16-bit format with fused multiply-adds
(``polyspec.replay(precision="target")``, the lab's exhaustive replay of packed half
arithmetic), for coefficients fitted by the lab (``family_fit.fit_polyspec``, remez +
neighbour search, in the 16-bit format) over degrees and clamps R. Prints one line per
(format, form, direction, degree, R) with the ratio to PyTorch's error.

    PYTHONPATH=. python experiments/archive/packed_half/feasibility.py     (about 30 s)
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from turbogelu.approx import family_fit, polyspec, reference

DEGREES = (3, 4, 5, 6, 8)
CLAMPS = (3.0, 3.5, 4.0)
DIRECTIONS = {"forward": "", "backward": "_grad"}  # target name suffix


def finite_inputs(dtype):
    x = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)
    x64 = x.double().numpy()
    keep = np.isfinite(x64)
    return x[torch.from_numpy(keep)], x64[keep]


def main() -> None:
    for dtype, fmt in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        x, x64 = finite_inputs(dtype)
        for mode, direction in [(m, d) for m in ("none", "tanh") for d in DIRECTIONS]:
            target = ("gelu" if mode == "none" else "gelu_tanh") + DIRECTIONS[direction]
            if direction == "forward":
                exact = reference.gelu(x64, mode)
                theirs = F.gelu(x, approximate=mode).double().numpy()
            else:
                exact = reference.gelu_grad(x64, mode)
                one = torch.ones_like(x)
                theirs = torch.ops.aten.gelu_backward(one, x, approximate=mode).double().numpy()
            ok = np.isfinite(theirs)
            terr = np.abs(theirs - exact)[ok]
            tmax, at = terr.max(), x64[ok][terr.argmax()]
            print(
                f"{fmt} {mode} {direction}: torch max |err| {tmax:.4g} at x = {at:.5g}"
                f" ({(~ok).sum()} finite inputs give a non-finite torch result)"
            )
            factor = 2 if direction == "forward" else 1
            for deg in DEGREES:
                for r in CLAMPS:
                    ps = family_fit.fit_polyspec(
                        target, "y", factor, deg, r, r, fmt, method="remez+search", replay=False
                    )
                    ps = ps.with_coefficients(ps.coefficients, program="turbogelu")
                    got = polyspec.replay(ps, x64, precision="target").astype(np.float64)
                    err = np.abs(got - exact)
                    print(
                        f"  degree {deg}, R {r}: packed max |err| {err.max():.4g} at x = "
                        f"{x64[err.argmax()]:.5g}, {err.max() / tmax:.2f} x torch"
                    )


if __name__ == "__main__":
    main()
