"""How low can the degree of GELU's direct backward go in 16-bit and still hold its bounds?

For each degree d of Q (gelu'(x) ~ 1/2 + x Q(z), the shipped direct backward's form) and a
few clamps R, fit Q as the shipped spec is fitted (``fit.fit_gelu(..., grad=True)``, 35 IRLS
iterations, 20000 points), replay the float32 kernel on every finite bfloat16 and float16
input with grad = 1, round to the format, and compare with GELU' (float64, ``reference``):

* ``max_abs_float32``: max |error| of the float32 program over the float32 grid of the
  spec's own measurement (``spec.measure``), the figure the shipped spec reports (1.67e-4 at
  degree 8);
* ``bfloat16`` / ``float16``: whether every input is within ``BWD_ABS`` + half an ulp of the
  rounded result, the bound ``tests/test_accuracy.py::test_exhaustive_backward`` holds the
  kernels to, and the worst margin.

It answers issue 13's question of whether a 16-bit backward with fewer operations than the
shipped degree 8 exists within the bounds (a lower degree costs less: ``run.sh avx2 N THREADS
backward`` times degrees 2 to 8). numpy only; about 20 seconds.

    PYTHONPATH=. .venv/bin/python experiments/archive/cpu_op_costs/backward_degrees.py
"""

from __future__ import annotations

import numpy as np

from turbogelu.approx import fit, reference, replay, report, rounding, spec

BWD_ABS = 6e-4  # tests/test_accuracy.py's backward bound (grad = 1), before half an ulp
DEGREES = range(2, 9)
# The tail's own error is about R phi(R) - Phi(-R): 5.0e-4 at R = 4 (the bound's edge), 1.1e-4
# at the shipped clamp, so the clamp scan stays in [4, 4.6], the shipped clamp among them.
CLAMPS = tuple(sorted({4.0, 4.1, 4.2, 4.3, 4.5, 4.6, spec.DEFAULTS["exact"].range}))
FORMATS = ("bfloat16", "float16")


def fit_part(degree: int, clamp: float, mode: str = "none") -> dict:
    """The direct backward fitted as the shipped spec is, coefficients rounded to float32."""
    part = fit.fit_gelu(clamp, degree, 35, 20000, mode, grad=True)
    return {
        "clamp": part["clamp"],
        "scale": part["scale"],
        "coefficients": [float(np.float32(c)) for c in part["coefficients"]],
    }


def margin16(part: dict, fmt: str, x: np.ndarray, exact: np.ndarray) -> float:
    """min over inputs of bound - |error| (negative: the bound fails somewhere)."""
    got = rounding.round_to(replay.backward32(x, part).astype(np.float64), fmt)
    bound = BWD_ABS + rounding.ulp_of(got, fmt) / 2
    return float(np.min(bound - np.abs(got - exact)))


def scan(mode: str = "none") -> list[dict]:
    inputs = {f: report.all_finite(f) for f in FORMATS}
    exact = {f: reference.gelu_grad(inputs[f].astype(np.float64), mode) for f in FORMATS}
    rows = []
    for d in DEGREES:
        for r in CLAMPS:
            part = fit_part(d, r, mode)
            row = {"degree": d, "clamp": r}
            row["max_abs_float32"] = spec.measure(part, mode, True)["max_abs_float32"]
            for f in FORMATS:
                row[f] = margin16(part, f, inputs[f], exact[f])
            rows.append(row)
    return rows


def main() -> None:
    rows = scan()
    print(f"direct backward of GELU (exact), bound {BWD_ABS} + half an ulp, grad = 1")
    print("degree  clamp   float32 max|err|   bf16 margin   f16 margin   (margin < 0: fails)")
    for row in rows:
        print(
            f"{row['degree']:6d} {row['clamp']:6.3f} {row['max_abs_float32']:14.3e}"
            f" {row['bfloat16']:13.2e} {row['float16']:12.2e}"
        )
    for f in FORMATS:
        ok = [r for r in rows if r[f] >= 0]
        least = min(ok, key=lambda r: r["degree"]) if ok else None
        print(
            f"{f}: lowest degree within the bound: "
            + (f"{least['degree']} (clamp {least['clamp']})" if least else "none up to 8")
        )


if __name__ == "__main__":
    main()
