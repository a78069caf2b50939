"""The turbogelu ops give the same bits for 1 and 2 threads, for any parallel chunking, run to
run, and on every CPU instruction set this machine has."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import (
    APPROXIMATES,
    BACKWARDS,
    DTYPES,
    ISAS,
    assert_same_bits,
    clamp_radius,
)
from op_references import (
    AWKWARD_SIZES,
    OPS,
    dtype_name,
    smallest_subnormal,
)

from experiments.probes import OPS as BENCH_OPS
from turbogelu import ops as tg_ops

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")


# ------------------------------------------------------------------ determinism


def _mixed_inputs(n, dtype, seed=0):
    """Random values over [-8, 8] with specials and values next to +-R sprinkled in."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
    r = torch.tensor([clamp_radius("none"), clamp_radius("tanh")], dtype=torch.float64)
    for_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    r = r.to(for_dtype)  # R and its neighbours, as float32 (float64 for float64)
    up, down = torch.nextafter(r, r * 2), torch.nextafter(r, r / 2)
    nudged = torch.cat([r, -r, up, -up, down, -down]).to(dtype)
    tiny = smallest_subnormal(dtype).reshape(1)
    fmax = torch.finfo(dtype).max
    special = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, fmax, -fmax], dtype=dtype)
    special = torch.cat([special, nudged, tiny, -tiny, 3 * tiny])
    pos = torch.randint(0, n, (min(n, 4 * special.numel()),), generator=g)
    x[pos] = special.repeat(4)[: pos.numel()]
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
def test_bitwise_identical_for_1_and_2_threads_and_run_to_run(dtype):
    n = (1 << 20) + 13  # split at an address that is not a multiple of the vector width
    x = _mixed_inputs(n, dtype)
    grad = _mixed_inputs(n, dtype, seed=1)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        y1, d1 = OPS.gelu(x, "none"), OPS.gelu_backward(grad, x, "tanh", "matched")
        torch.set_num_threads(2)
        assert torch.get_num_threads() == 2
        y2, d2 = OPS.gelu(x, "none"), OPS.gelu_backward(grad, x, "tanh", "matched")
        y3, d3 = OPS.gelu(x, "none"), OPS.gelu_backward(grad, x, "tanh", "matched")
    finally:
        torch.set_num_threads(old)
    assert_same_bits(y1, y2)
    assert_same_bits(d1, d2)
    assert_same_bits(y2, y3)
    assert_same_bits(d2, d3)


def test_bitwise_identical_for_any_parallel_chunking():
    """Grain 1 splits even small tensors across threads at arbitrary element boundaries."""
    old_threads = torch.get_num_threads()
    x = _mixed_inputs(4231, torch.float32)
    expected = [OPS.gelu(x[:n]) for n in AWKWARD_SIZES]
    torch.set_num_threads(2)
    old_grain = BENCH_OPS._set_parallel_grain(1)
    try:
        got = [OPS.gelu(x[:n]) for n in AWKWARD_SIZES]
    finally:
        BENCH_OPS._set_parallel_grain(old_grain)
        torch.set_num_threads(old_threads)
    for g, e in zip(got, expected, strict=True):
        assert_same_bits(g, e)


@pytest.mark.skipif(len(ISAS) < 2, reason="only one CPU instruction set available")
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
def test_bitwise_identical_across_isas(dtype):
    n = 4231
    buf = _mixed_inputs(n + 1, dtype)
    gbuf = _mixed_inputs(n + 1, dtype, seed=2)
    x, grad = buf[1:], gbuf[1:]

    def run():
        res = {}
        for ap in APPROXIMATES:
            res[f"fwd-{ap}"] = OPS.gelu(x, ap)
            for k in (1, 9, 17):  # short tails on their own
                res[f"fwd-{ap}-{k}"] = OPS.gelu(x[:k], ap)
            for bw in BACKWARDS:
                res[f"bwd-{ap}-{bw}"] = OPS.gelu_backward(grad, x, ap, bw)
        return res

    results = {}
    for name in ISAS:
        with tg_ops.use_cpu_isa(name):
            results[name] = run()
    for name in ISAS[:-1]:
        for key, val in results[name].items():
            assert_same_bits(val, results[ISAS[-1]][key], f"{name} vs {ISAS[-1]}: {key}")
