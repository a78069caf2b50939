"""Accuracy of the compiled kernels (torch.ops.turbogelu.*) against the exact functions.

* an mpmath oracle on a grid of [-8, 8], every dtype, forward and backward;
* every bfloat16 and float16 input (all 65,536 bit patterns) against the correctly rounded
  exact GELU (turbogelu.approx.rounding), under every CPU instruction set;
* the exhaustive ulp table, also for PyTorch's own F.gelu in the same dtype. Print it with

      python -m pytest tests/test_accuracy.py -k table -s

Bounds with "+ half an ulp" use the ulp of the format at the kernel's result: a 16-bit result
is the float32 value rounded once, and that rounding moves it by at most half an ulp of the
result's binade.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import turbogelu.ops as tops
from turbogelu.approx import reference, rounding

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

F64 = np.float64
MODES = ("none", "tanh")
ISAS = tops.cpu_isas_available()
DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
}
HALF = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
FWD_ABS = 3e-5  # forward: max |err| of the fit (float32 / float64 arithmetic)
BWD_ABS = 6e-4  # backward (default = direct fit, grad = 1)


def _half_ulp(result: np.ndarray, dtype) -> np.ndarray:
    if dtype not in HALF:
        return np.zeros_like(result)
    return rounding.ulp_of(result, HALF[dtype]) / 2


# ---------------------------------------------------------------- mpmath oracle on a grid

GRID = np.linspace(-8.0, 8.0, 4001)


@functools.cache
def _oracle(values: tuple, mode: str, grad: bool) -> np.ndarray:
    return reference.gelu_mp_array(np.array(values), mode, grad=grad)


def _grid_inputs(dtype) -> torch.Tensor:
    # float64 uses the float32 grid values too (so the two share one oracle evaluation).
    x = torch.from_numpy(GRID).to(torch.float32 if dtype == torch.float64 else dtype)
    return x.to(dtype)


def _worst(err, bound, x) -> str:
    i = int(np.argmax(err - bound))
    return f"worst at x = {x[i]!r}: |err| {err[i]:.4g} vs bound {bound[i]:.4g}"


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES.values()))
def test_grid_vs_mpmath(dtype, mode, isa, sized: bool = False):
    """``sized``: the forward is a program sized for the 16-bit dtype (tests/test_cells.py),
    held to the format's rule (within 1 ulp of the correctly rounded value from x = -3 up,
    the absolute bound below) instead of the float32 program's bound plus half an ulp."""
    x = _grid_inputs(dtype)
    x64 = x.double().numpy()
    key = tuple(x64.tolist())
    with tops.use_cpu_isa(isa):
        fwd = torch.ops.turbogelu.gelu(x, mode).double().numpy()
        bwd = torch.ops.turbogelu.gelu_backward(torch.ones_like(x), x, mode).double().numpy()
    exact_f = _oracle(key, mode, False)
    err_f = np.abs(fwd - exact_f)
    bound_f = FWD_ABS + _half_ulp(fwd, dtype)
    if sized:
        one = x64 >= -3
        ulps = rounding.ulp_distance(fwd, rounding.round_to(exact_f, HALF[dtype]), HALF[dtype])
        assert ulps[one].max() <= 1, f"{DTYPES[dtype]} gelu({mode}): {ulps[one].max()} ulp"
        bound_f = np.where(one, np.inf, bound_f)
    assert np.all(err_f <= bound_f), f"{DTYPES[dtype]} gelu({mode}): " + _worst(err_f, bound_f, x64)
    err_b = np.abs(bwd - _oracle(key, mode, True))
    bound_b = BWD_ABS + _half_ulp(bwd, dtype)
    assert np.all(err_b <= bound_b), f"{DTYPES[dtype]} backward({mode}): " + _worst(
        err_b, bound_b, x64
    )


# ---------------------------------------------------------------- exhaustive 16-bit


def all_inputs(dtype) -> torch.Tensor:
    """Every bit pattern of a 16-bit dtype."""
    return torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)


@functools.cache
def _exhaustive(fmt: str, mode: str):
    """Finite inputs (float64), the correctly rounded exact values, and the float64 exact."""
    dtype = torch.bfloat16 if fmt == "bfloat16" else torch.float16
    x = all_inputs(dtype)
    x64 = x.double().numpy()
    finite = np.isfinite(x64)
    cr = rounding.correctly_rounded(x64[finite], fmt, rounding.gelu_function(mode))
    return x, finite, cr, reference.gelu(x64[finite], mode)


def _kernel_forward(x: torch.Tensor, mode: str, isa: str | None = None) -> np.ndarray:
    if isa is None:
        return torch.ops.turbogelu.gelu(x, mode).double().numpy()
    with tops.use_cpu_isa(isa):
        return torch.ops.turbogelu.gelu(x, mode).double().numpy()


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", ["bfloat16", "float16"])
def test_exhaustive_forward(fmt, mode, isa):
    x, finite, cr, exact = _exhaustive(fmt, mode)
    got = _kernel_forward(x, mode, isa)[finite]
    xs = x.double().numpy()[finite]
    assert not np.any(np.isnan(got)), "NaN for a finite input"
    ulps = rounding.ulp_distance(got, cr, fmt)
    if fmt == "bfloat16":
        limits = [("x >= -3", xs >= -3, 1)]
    else:
        limits = [("x >= 0", xs >= 0, 1), ("-3 <= x < 0", (xs >= -3) & (xs < 0), 8)]
    failures = []
    for label, m, lim in limits:
        if np.any(ulps[m] > lim):
            i = np.flatnonzero(m)[np.argmax(ulps[m])]
            failures.append(
                f"{label}: {np.sum(ulps[m] > lim)} inputs over {lim} ulp, worst {ulps[i]} ulp at "
                f"x = {xs[i]!r} (turbogelu {got[i]!r}, correctly rounded {cr[i]!r})"
            )
    tail = xs < -3
    err = np.abs(got - exact)
    bound = FWD_ABS + rounding.ulp_of(got, fmt) / 2
    if np.any(err[tail] > bound[tail]):
        i = np.flatnonzero(tail)[np.argmax((err - bound)[tail])]
        failures.append(f"x < -3: |err| {err[i]:.4g} > {bound[i]:.4g} at x = {xs[i]!r}")
    assert not failures, f"{fmt} gelu({mode}) under {isa}:\n" + "\n".join(failures)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", list(HALF), ids=list(HALF.values()))
def test_exhaustive_backward(dtype, mode):
    x = all_inputs(dtype)
    x64 = x.double().numpy()
    finite = np.isfinite(x64)
    got = torch.ops.turbogelu.gelu_backward(torch.ones_like(x), x, mode).double().numpy()[finite]
    exact = reference.gelu_grad(x64[finite], mode)
    err = np.abs(got - exact)
    bound = BWD_ABS + rounding.ulp_of(got, HALF[dtype]) / 2
    bad = err > bound
    assert not np.any(bad), f"{HALF[dtype]} backward({mode}): " + _worst(err, bound, x64[finite])


# ---------------------------------------------------------------- the table


def exhaustive_table(mode: str = "none") -> tuple[list[dict], str]:
    """ulp errors against the correctly rounded exact GELU of form ``mode``, every finite
    bfloat16 / float16 input: turbogelu and PyTorch's F.gelu (both forms) in that dtype."""
    rows = []
    for fmt in ("bfloat16", "float16"):
        x, finite, cr, _ = _exhaustive(fmt, mode)
        outputs = {
            f"turbogelu ({mode})": _kernel_forward(x, mode),
            "torch F.gelu (none)": F.gelu(x).double().numpy(),
            "torch F.gelu (tanh)": F.gelu(x, approximate="tanh").double().numpy(),
        }
        outputs = {k: v[finite] for k, v in outputs.items()}
        rows += rounding.region_table(x.double().numpy()[finite], outputs, cr, fmt)
    title = (
        f"Every finite input, ulp error against the correctly rounded exact GELU "
        f"(approximate={mode!r} form)"
    )
    return rows, rounding.format_table(rows, title)


@pytest.mark.parametrize("mode", MODES)
def test_exhaustive_table(mode):
    rows, text = exhaustive_table(mode)
    print("\n" + text)
    assert len(rows) == 2 * 3 * 3
    for fmt, n in (("bfloat16", (1 << 16) - 2 - 2 * 127), ("float16", (1 << 16) - 2 - 2 * 1023)):
        for impl in {r["impl"] for r in rows}:
            assert sum(r["count"] for r in rows if r["format"] == fmt and r["impl"] == impl) == n
    ours = {(r["format"], r["region"]): r for r in rows if r["impl"].startswith("turbogelu")}
    assert ours[("bfloat16", "x >= 0")]["max_ulp"] <= 1
    assert ours[("float16", "x >= 0")]["max_ulp"] <= 1
