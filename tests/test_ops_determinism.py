"""Every row of the kernels' table (op_rows.ROWS: GELU's two forms and the family) gives the
same bits for 1 and 2 threads, for any parallel chunking, run to run, and on every CPU
instruction set this machine has, forward and backward."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import BACKWARDS, DTYPES, ISAS, assert_same_bits
from op_references import AWKWARD_SIZES, dtype_name, smallest_subnormal
from op_rows import ROWS

from experiments.probes import OPS as BENCH_OPS
from turbogelu import ops as tg_ops

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

# Each row's backward choice: the three cycle over the rows, so each program's loop is run.
ROW_BACKWARD = {row.name: BACKWARDS[i % len(BACKWARDS)] for i, row in enumerate(ROWS)}


def _mixed_inputs(n, dtype, edges, seed=0):
    """Random values over about three times the row's window (edges: where it ends), with
    specials, subnormals and the edges' float32 (float64) neighbours sprinkled in."""
    g = torch.Generator().manual_seed(seed)
    scale = max(abs(e) for e in edges)
    x = (torch.randn(n, generator=g, dtype=torch.float64) * scale).to(dtype)
    for_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    r = torch.tensor(edges, dtype=for_dtype)
    up, down = torch.nextafter(r, r * 2), torch.nextafter(r, r / 2)
    nudged = torch.cat([r, up, down]).to(dtype)
    tiny = smallest_subnormal(dtype).reshape(1)
    fmax = torch.finfo(dtype).max
    special = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, fmax, -fmax], dtype=dtype)
    special = torch.cat([special, nudged, tiny, -tiny, 3 * tiny])
    pos = torch.randint(0, n, (min(n, 4 * special.numel()),), generator=g)
    x[pos] = special.repeat(4)[: pos.numel()]
    return x


def _run(row, x, grad, backwards=None):
    """The row's forward and its backwards at x, as a list (by default ROW_BACKWARD's one)."""
    xs = row.inputs(x)
    res = [row.forward(xs)()]
    for backward in backwards or [ROW_BACKWARD[row.name]]:
        bwd = row.backward(grad, xs, backward)()
        res += bwd if isinstance(bwd, tuple | list) else [bwd]
    return res


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_bitwise_identical_for_1_and_2_threads_and_run_to_run(row, dtype):
    n = (1 << 20) + 13  # split at an address that is not a multiple of the vector width
    x = _mixed_inputs(n, dtype, row.edges())
    grad = _mixed_inputs(n, dtype, (-1.0, 1.0), seed=1)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _run(row, x, grad)
        torch.set_num_threads(2)
        assert torch.get_num_threads() == 2
        two, again = _run(row, x, grad), _run(row, x, grad)
    finally:
        torch.set_num_threads(old)
    for a, b, c in zip(one, two, again, strict=True):
        assert_same_bits(a, b)
        assert_same_bits(b, c)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_bitwise_identical_for_any_parallel_chunking(row):
    """Grain 1 splits even small tensors across threads at arbitrary element boundaries."""
    x = _mixed_inputs(4231, torch.float32, row.edges())
    grad = _mixed_inputs(4231, torch.float32, (-1.0, 1.0), seed=1)
    expected = [_run(row, x[:n], grad[:n]) for n in AWKWARD_SIZES]
    old_threads = torch.get_num_threads()
    torch.set_num_threads(2)
    old_grain = BENCH_OPS._set_parallel_grain(1)
    try:
        got = [_run(row, x[:n], grad[:n]) for n in AWKWARD_SIZES]
    finally:
        BENCH_OPS._set_parallel_grain(old_grain)
        torch.set_num_threads(old_threads)
    for n, g, e in zip(AWKWARD_SIZES, got, expected, strict=True):
        for a, b in zip(g, e, strict=True):
            assert_same_bits(a, b, f"n={n}")


@pytest.mark.skipif(len(ISAS) < 2, reason="only one CPU instruction set available")
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
def test_bitwise_identical_across_isas(dtype):
    n = 4231
    inputs = {}
    for row in ROWS:  # offset by one element: no input starts on a vector boundary
        x = _mixed_inputs(n + 1, dtype, row.edges())[1:]
        inputs[row.name] = x, _mixed_inputs(n + 1, dtype, (-1.0, 1.0), seed=2)[1:]

    def run():
        res = {}
        for row in ROWS:
            x, grad = inputs[row.name]
            res[row.name] = _run(row, x, grad, BACKWARDS)
            for k in (1, 9, 17):  # short tails on their own
                res[f"{row.name}-{k}"] = _run(row, x[:k], grad[:k])
        return res

    results = {}
    for name in ISAS:
        with tg_ops.use_cpu_isa(name):
            results[name] = run()
    last = ISAS[-1]
    for name in ISAS[:-1]:
        for key, val in results[name].items():
            for a, b in zip(val, results[last][key], strict=True):
                assert_same_bits(a, b, f"{name} vs {last}: {key}")
