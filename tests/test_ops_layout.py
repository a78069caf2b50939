"""Every row of the kernels' table (op_rows.ROWS: GELU's two forms and the family) over shapes,
sizes and memory layouts: any shape, sizes around the SIMD loops' tails at an unaligned start,
non-contiguous inputs and outputs, out= into itself and overlaps, in place on views. (The
layouts of layout_cases, the out= and in-place samples and opcheck: test_ops.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import BACKWARDS, assert_same_bits
from op_references import AWKWARD_SIZES, is_dense
from op_rows import ROWS

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

UNARY_ROWS = [r for r in ROWS if not r.gated]  # the rows with in-place forms


def _tensors(result) -> list:
    return list(result) if isinstance(result, tuple | list) else [result]


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0, 2), (1,), (2, 3, 4)])
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_any_shape(row, isa, dtype, shape):
    """The result has x's shape and dtype, and each element the bits of the same values laid
    out flat; the backward and out= alike."""
    x = (torch.randn(shape, dtype=torch.float64) * 3).to(dtype)
    xs = row.inputs(x)
    flat = tuple(t.reshape(-1) for t in xs)
    y = row.forward(xs)()
    assert y.shape == x.shape and y.dtype == dtype
    assert_same_bits(y.reshape(-1), row.forward(flat)())
    d = _tensors(row.backward(x, xs, "direct")())
    d_flat = _tensors(row.backward(x.reshape(-1), flat, "direct")())
    for t, t_flat in zip(d, d_flat, strict=True):
        assert t.shape == x.shape and t.dtype == dtype
        assert_same_bits(t.reshape(-1), t_flat)
    out = torch.empty(shape, dtype=dtype)
    row.out(xs, out)()
    assert_same_bits(out, y)
    if not row.gated:
        z = x.clone()
        row.inplace(z)()
        assert_same_bits(z, y)


@pytest.mark.parametrize("n", AWKWARD_SIZES)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_awkward_sizes_match_elementwise(row, isa, dtype, n):
    """Sizes around the 8/16-lane SIMD loops' tails, starting at an unaligned address: each
    element gets the same bits at any position of the loop: x alone (from storage offset 1),
    and x twice in a row, its second copy starting at element n (another place in the
    vectors, the tail another length)."""
    g = torch.Generator().manual_seed(n)
    buf = (torch.randn(n + 1, generator=g, dtype=torch.float64) * 4).to(dtype)
    gbuf = torch.randn(n + 1, generator=g, dtype=torch.float64).to(dtype)
    x, grad = buf[1:], gbuf[1:]  # storage offset 1
    backward = BACKWARDS[n % 3]
    y = row.forward(row.inputs(x))()
    d = _tensors(row.backward(grad, row.inputs(x), backward)())
    twice = torch.cat([x, x])
    y2 = row.forward(row.inputs(twice))()
    d2 = _tensors(row.backward(torch.cat([grad, grad]), row.inputs(twice), backward)())
    for half in (y2[:n], y2[n:]):
        assert_same_bits(half, y)
    for a, b in zip(d, d2, strict=True):
        assert_same_bits(b[:n], a)
        assert_same_bits(b[n:], a)
    if n <= 17:  # short tensors: each element computed alone too
        alone = torch.cat([row.forward(row.inputs(x[i : i + 1].clone()))() for i in range(n)])
        assert_same_bits(alone, y)


def _views(dtype):
    """(name, view): non-contiguous inputs of every kind."""
    g = torch.Generator().manual_seed(5)

    def randn(*shape):
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 3).to(dtype)

    return [
        ("transposed", randn(17, 9).t()),
        ("step2", randn(9, 34)[:, ::2]),
        ("step2_1d", randn(83)[::2]),
        ("expanded", randn(1, 17).expand(5, 17)),
        ("broadcast_0stride_col", randn(7, 1).expand(7, 19)),
        ("scalar_expanded", randn().expand(3, 4)),
        ("channels_last", randn(2, 3, 5, 7).to(memory_format=torch.channels_last)),
        ("channels_last_sliced", randn(2, 6, 5, 7).to(memory_format=torch.channels_last)[:, ::2]),
        ("permuted_3d", randn(3, 4, 5).permute(2, 0, 1)),
        ("offset", randn(100)[3:44]),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("which", [v[0] for v in _views(torch.float32)])
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_non_contiguous_inputs(row, dtype, which):
    (x,) = [v for name, v in _views(dtype) if name == which]
    xs = row.inputs(x)
    contiguous = tuple(t.contiguous() for t in xs)
    y = row.forward(xs)()
    assert y.shape == x.shape and y.dtype == dtype
    assert_same_bits(y.contiguous(), row.forward(contiguous)())
    if is_dense(x):  # a dense layout is kept, like PyTorch's elementwise ops keep it
        assert y.stride() == x.stride()
    grad = (torch.randn(x.shape) * 2).to(dtype)
    for gr, xx in ((grad, x), (x, grad), (x, x)):  # each in the other's layout, and shared
        d = row.backward(gr, row.inputs(xx), "direct")()
        want = row.backward(gr.contiguous(), tuple(t.contiguous() for t in row.inputs(xx)))
        for a, b in zip(_tensors(d), _tensors(want()), strict=True):
            assert_same_bits(a.contiguous(), b)


@pytest.mark.parametrize(
    "make_out",
    [
        pytest.param(lambda s: torch.empty(s[1], s[0]).t(), id="transposed"),
        pytest.param(lambda s: torch.empty(s[0], 2 * s[1])[:, ::2], id="step2"),
        pytest.param(lambda s: torch.empty(s[0] + 3, s[1])[3:], id="offset"),
    ],
)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_out_into_non_contiguous_out(row, make_out):
    """out= keeps its own strides and storage, whatever the input's layout."""
    x = torch.randn(7, 19) * 3
    for source in (x, x.t().contiguous().t()):
        out = make_out(x.shape)
        strides, ptr = out.stride(), out.data_ptr()
        row.out(row.inputs(source), out)()
        assert out.stride() == strides and out.data_ptr() == ptr
        assert_same_bits(out, row.forward(row.inputs(x))())
        outs = (make_out(x.shape), make_out(x.shape)) if row.gated else make_out(x.shape)
        row.backward_out(x, row.inputs(source), outs, "matched")()
        want = row.backward(x, row.inputs(x), "matched")()
        for a, b in zip(_tensors(outs), _tensors(want), strict=True):
            assert a.stride() == strides
            assert_same_bits(a, b)


@pytest.mark.parametrize("row", UNARY_ROWS, ids=str)
def test_out_into_itself_and_overlap_errors(row):
    x = torch.randn(50) * 3
    expected = row.forward((x,))()
    y = x.clone()
    row.out((y,), y)()  # out is x: each element read, then written
    assert_same_bits(y, expected)
    # out is x's memory in another layout: refused, as ATen refuses torch.sin(x, out=x.t())
    sq = torch.randn(9, 9)
    with pytest.raises(RuntimeError, match="single memory location"):
        row.out((sq,), sq.t())()
    # the backward written into grad's own memory
    g, xb = torch.randn(33), torch.randn(33) * 3
    expected = row.backward(g, (xb,), "direct")()
    row.backward_out(g, (xb,), g, "direct")()
    assert_same_bits(g, expected)
    base = torch.randn(10)
    with pytest.raises(RuntimeError, match="single memory location"):
        row.out((base[:-1],), base[1:])()  # partial overlap
    with pytest.raises(RuntimeError, match="single memory location"):
        row.inplace(torch.randn(1, 4).expand(3, 4))()  # out overlaps itself


@pytest.mark.parametrize("row", UNARY_ROWS, ids=str)
def test_inplace_on_views_touches_only_the_view(row):
    base = torch.randn(6, 10) * 3
    for index in (np.s_[:, ::2], np.s_[1:4, 2:7], np.s_[::3]):
        b = base.clone()
        expected = base.clone()
        expected[index] = row.forward((base[index],))()
        row.inplace(b[index])()
        assert_same_bits(b, expected)
    t = base.clone().t()  # a dense non-contiguous tensor: written in place directly
    row.inplace(t)()
    assert_same_bits(t, row.forward((base.t(),))())
