"""The CPU ops of every row of the kernels' table (turbogelu/_table.py), one test body for all:
GELU's two rows (gelu_none, gelu_tanh) through ``gelu(x, approximate)``, their ``approximate``
where the family passes ``tier``, and the activation family's (sigmoid, tanh, silu, softcap with
a cap, swiglu on two inputs, exp2, softplus) through their own ops. Over every row: layouts, the
fake (meta) kernels, errors, autograd's use of the backward ops, the spec's default backward;
over every row but exp2 (whose own file, test_exp2_op.py, has them): correctness and
``torch.library.opcheck`` over the samples with the out= and in-place forms, gradcheck of the
matched backward; over the rows with an absolute bound, the accuracy against the exact function
in float32 and float64. Then what only GELU has: ``approximate``, poly_gelu.

Layout follows pytorch/extension-cpp: ``sample_inputs`` builds the inputs every op is run on,
the exact functions (turbogelu.approx.reference) say what the result should be, and
``torch.library.opcheck`` checks schema, fake (meta) kernels, autograd registration and AOT
dispatch over the same samples. The rows and their calls: op_rows.py. Over every row too, by
subject: test_ops_compile.py (torch.compile), test_ops_special_values.py (special values,
subnormals), test_ops_determinism.py (threads, chunking, instruction sets). What only the
family has: test_family_ops.py (bits = the lab's replay, tiers, softplus' floor, streaming
stores) and test_family_api.py (softcap's cap, swiglu's two inputs, the default gradient from
the saved result, the modules, ``turbogelu.family``). The rest of GELU's op tests:
test_ops_layout.py (shapes, sizes, layouts), test_ops_errors.py (errors), test_ops_isa.py
(the instruction-set selection).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
import torch
from conftest import (
    BACKWARDS,
    DTYPES,
    assert_same_bits,
    layout_cases,
)
from op_references import (
    assert_close_to_reference,
    clone_layout,
    dtype_name,
    is_dense,
)
from op_rows import (
    BOUND,
    BOUNDED_ROWS,
    CLAMPED_ROWS,
    EXACT,
    EXACT_GRAD,
    GELU_ROWS,
    OPS,
    ROWS,
    SAMPLE_ROWS,
    Row,
    float32_sample,
)
from torch.autograd.gradcheck import GradcheckError

import turbogelu
from turbogelu import ops as tops
from turbogelu.approx import family_cells as fc

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py);
# gradcheck below runs the cells programs as well.
pytestmark = pytest.mark.usefixtures("poly_program")


def measured_error(row: Row, part: str) -> float:
    """The spec's measured max |error| in float32 of one part (forward, backward_direct,
    backward_matched); GELU's specs list it without the per-precision level."""
    errors = row.spec()[part]["errors"]
    return errors.get("float32", errors)["max_abs_float32"]


def backward_bound(row: Row, backward: str | None) -> float:
    """|backward - f'| <= the spec's measured error of that backward ("default": the one the
    spec names), with 1 % for inputs off the spec's grid."""
    if backward in (None, "default"):
        backward = row.spec()["default_backward"]
    return measured_error(row, f"backward_{backward}") * 1.01


def _exact(fn, x: torch.Tensor) -> torch.Tensor:
    """fn (float64, numpy) at x, as a float64 tensor of x's shape."""
    ref = fn(x.detach().double().cpu().numpy())
    return torch.from_numpy(np.asarray(ref, dtype=np.float64)).reshape(x.shape)


def _first(result):
    return result[0] if isinstance(result, tuple | list) else result


def _tensors(result) -> list:
    return list(result) if isinstance(result, tuple | list) else [result]


# ------------------------------------------------------------------ samples


@dataclasses.dataclass
class Sample:
    name: str
    row: Row
    xs: tuple  # the op's input tensors: x, or swiglu's a and b
    backward: str | None = None  # None: not passed (the schema's default)
    grad: torch.Tensor | None = None
    out: object = None  # a tensor, or swiglu_backward's pair

    def __str__(self) -> str:
        return f"{self.row}-{self.name}"


def _layouts(device, dtype, generator):
    """(name, tensor): the shapes and memory layouts every op runs on."""

    def randn(*shape):
        t = torch.randn(shape, generator=generator, dtype=torch.float64) * 3
        return t.to(device=device, dtype=dtype)

    return [
        ("0dim", randn()),
        ("empty", randn(0, 3)),
        ("n17", randn(17)),
        ("2d", randn(5, 41)),
        ("transposed", randn(41, 5).t()),
        ("step2", randn(6, 34)[:, ::2]),
        ("expanded", randn(1, 9).expand(4, 9)),
        ("channels_last", randn(2, 3, 4, 5).to(memory_format=torch.channels_last)),
        ("channels_last_sliced", randn(2, 6, 4, 5).to(memory_format=torch.channels_last)[:, ::2]),
    ]


def _family_matrix(requires_grad: bool) -> torch.Tensor:
    x = torch.randn(25, 40, generator=torch.Generator().manual_seed(5)) * 4
    return x.requires_grad_(requires_grad)


def sample_inputs(device="cpu", *, requires_grad=False):
    """The forward samples. GELU's rows run every layout in two of the four dtypes, cycling
    through its two rows (approximate) and the backward choices; the family's rows one float32
    matrix each (an opcheck costs ~0.05 s, and every row runs the same C++ loops: the layouts
    are checked for every row by test_layouts_match_the_contiguous_result), and with grad also
    backward="matched": its autograd path differs from the default's (the backward op, not
    the saved result, for sigmoid, tanh and softcap)."""
    g = torch.Generator().manual_seed(1234)
    samples = []
    for i, dtype in enumerate(DTYPES):
        for j, (name, x) in enumerate(_layouts(device, dtype, g)):
            if (i + j) % 2:  # each layout in two of the four dtypes
                continue
            x = x.detach().requires_grad_(requires_grad)
            row = GELU_ROWS[(j // 2) % 2]
            bw = BACKWARDS[(i + j) % 3]
            samples.append(Sample(f"{name}-{dtype_name(dtype)}-{bw}", row, (x,), bw))
    for row in SAMPLE_ROWS:
        xs = row.inputs(_family_matrix(requires_grad))
        samples.append(Sample("matrix", row, xs))
        if requires_grad:
            samples.append(Sample("matrix-matched", row, xs, "matched"))
    return samples


def backward_sample_inputs(device="cpu"):
    """The backward samples: grad in x's layout, plus (GELU's rows) mixed layouts: x transposed
    with a contiguous grad and the reverse; an expanded grad."""
    g = torch.Generator().manual_seed(99)
    gf = torch.Generator().manual_seed(98)
    samples = []
    for s in sample_inputs(device):
        x = s.xs[0]
        gen = g if s.row.gelu else gf
        grad = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
        grad = torch.empty_like(x).copy_(grad) if is_dense(x) else grad
        samples.append(dataclasses.replace(s, grad=grad))
    none, tanh = GELU_ROWS
    xt = torch.randn(6, 4, generator=g).t()
    gc = torch.randn(4, 6, generator=g)
    ones = torch.ones(1, 1).expand(4, 6)
    samples.append(Sample("x_transposed-grad_contiguous", none, (xt,), "direct", grad=gc))
    samples.append(Sample("x_contiguous-grad_transposed", tanh, (gc,), "matched", grad=xt))
    samples.append(Sample("grad_expanded", none, (gc,), "default", grad=ones))
    return samples


def _strided_out(row: Row, x: torch.Tensor) -> Sample:
    """A strided out (written through a temporary, the storage between its elements left
    alone)."""
    return Sample("out_step2", row, row.inputs(x), out=torch.zeros(6, 8)[:, ::2])


def out_sample_inputs(device="cpu"):
    """The out= samples: out like x, a transposed out, a strided out."""
    samples = [dataclasses.replace(s, out=torch.empty_like(s.xs[0])) for s in sample_inputs(device)]
    x = torch.randn(6, 4)
    none, tanh = GELU_ROWS
    samples.append(Sample("out_transposed", none, (x,), out=torch.empty(4, 6).t()))
    samples.append(_strided_out(tanh, x))
    return samples


def strided_out_sample_inputs():
    """The family's rows' strided outs: checked for their values, not opchecked (an opcheck of
    the strided out= form is GELU's out_step2 sample's)."""
    x = torch.randn(6, 4)
    return [_strided_out(row, x) for row in SAMPLE_ROWS]


def backward_out_sample_inputs(device="cpu"):
    samples = []
    for s in backward_sample_inputs(device):
        out = torch.empty_like(s.xs[0])
        samples.append(
            dataclasses.replace(s, out=(out, torch.empty_like(out)) if s.row.gated else out)
        )
    g, x = torch.randn(6, 4), torch.randn(6, 4)
    samples.append(Sample("out_transposed", GELU_ROWS[0], (x,), grad=g, out=torch.empty(4, 6).t()))
    return samples


def inplace_sample_inputs(device="cpu"):
    """The in-place samples of the rows with an in-place form (not the expanded one: it
    overlaps itself)."""
    return [
        s for s in sample_inputs(device) if s.row.op.inplace and not s.name.startswith("expanded")
    ]


def _clone(a):
    if isinstance(a, torch.Tensor):
        return clone_layout(a)
    if isinstance(a, tuple):
        return tuple(_clone(t) for t in a)
    return a


def _cloned(sample: Sample) -> Sample:
    """A copy with the sample's tensors cloned in their layouts (the out= and in-place forms
    write into them)."""
    fields = {f.name: _clone(getattr(sample, f.name)) for f in dataclasses.fields(sample)}
    return Sample(**{**fields, "row": sample.row})


def _outside(view: torch.Tensor) -> torch.Tensor:
    """The elements of view's storage that are not view's."""
    flat = torch.empty(0, dtype=view.dtype).set_(view.untyped_storage())
    inside = torch.zeros(flat.numel(), dtype=torch.bool)
    index = torch.arange(flat.numel()).as_strided(view.size(), view.stride(), view.storage_offset())
    inside[index.flatten()] = True
    return flat[~inside]


SAMPLES = sample_inputs()
GRAD_SAMPLES = sample_inputs(requires_grad=True)
BACKWARD_SAMPLES = backward_sample_inputs()
OUT_SAMPLES = out_sample_inputs()
STRIDED_OUT_SAMPLES = strided_out_sample_inputs()
BACKWARD_OUT_SAMPLES = backward_out_sample_inputs()
INPLACE_SAMPLES = inplace_sample_inputs()


def test_every_bounded_row_has_its_exact_function():
    """GELU's rows and the family's Plain rows with fitted programs (turbogelu.family.UNARY)."""
    want = {r.name for r in GELU_ROWS} | set(tops.UNARY)
    assert set(EXACT) == set(EXACT_GRAD) == want


# ------------------------------------------------------------------ correctness over the samples


@pytest.mark.parametrize("sample", [s for s in SAMPLES if s.row.name in EXACT], ids=str)
def test_forward_matches_reference(sample):
    row, xs, x = sample.row, sample.xs, sample.xs[0]
    out = row.forward(xs, sample.backward)()
    assert out.dtype == x.dtype and out.shape == x.shape
    assert_close_to_reference(out, _exact(EXACT[row.name], x).to(x.dtype), BOUND)
    # the Python function is the same op
    assert_same_bits(row.function(*xs, backward=sample.backward or "default"), out)


@pytest.mark.parametrize("sample", [s for s in BACKWARD_SAMPLES if s.row.name in EXACT], ids=str)
def test_backward_matches_reference(sample):
    row, grad, x = sample.row, sample.grad, sample.xs[0]
    out = row.backward(grad, sample.xs, sample.backward)()
    assert out.dtype == x.dtype and out.shape == x.shape
    expected = (grad.double() * _exact(EXACT_GRAD[row.name], x)).to(x.dtype)
    assert_close_to_reference(out, expected, backward_bound(row, sample.backward), scale=grad)
    raw = row.raw_backward(grad, *sample.xs, backward=sample.backward or "default")
    assert_same_bits(raw, out)


@pytest.mark.parametrize("sample", OUT_SAMPLES + STRIDED_OUT_SAMPLES, ids=str)
def test_out_matches_functional(sample):
    s = _cloned(sample)
    row, x, out = s.row, s.xs[0], s.out
    strides = out.stride() if out.shape == x.shape else None
    assert row.out(s.xs, out)() is None  # mutating ops return nothing (see ops.py)
    assert out.shape == x.shape
    if strides is not None:
        assert out.stride() == strides  # written in place, layout kept
    assert_same_bits(out, row.forward(s.xs)())
    if not is_dense(out):  # through a temporary: the storage between its elements untouched
        assert torch.equal(_outside(out), _outside(sample.out))
    # the raw Python op returns the out it wrote
    out2 = clone_layout(sample.out)
    assert row.raw_forward(*s.xs, out=out2) is out2
    assert_same_bits(out2, out)


@pytest.mark.parametrize("sample", BACKWARD_OUT_SAMPLES, ids=str)
def test_backward_out_matches_functional(sample):
    s = _cloned(sample)
    assert s.row.backward_out(s.grad, s.xs, s.out, s.backward)() is None
    want = s.row.backward(sample.grad, sample.xs, sample.backward)()
    for got, expected in zip(_tensors(s.out), _tensors(want), strict=True):
        assert_same_bits(got, expected)


@pytest.mark.parametrize("sample", INPLACE_SAMPLES, ids=str)
def test_inplace_matches_functional(sample):
    s = _cloned(sample)
    row, x = s.row, s.xs[0]
    expected = row.forward(s.xs)()
    ptr, stride, version = x.data_ptr(), x.stride(), x._version
    assert row.inplace(x)() is None
    assert x.data_ptr() == ptr and x.stride() == stride
    assert x._version > version
    assert_same_bits(x, expected)
    # the Python function returns the tensor it wrote
    y = clone_layout(sample.xs[0])
    assert row.function_(y) is y
    assert_same_bits(y, expected)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_layouts_match_the_contiguous_result(row):
    """Every layout (contiguous, transposed, sliced, channels_last, empty, 0-d): the result
    strided as torch.empty_like(x), and bit for bit the contiguous input's."""
    for case, x in layout_cases(4).items():
        xs = (x, torch.ones_like(x) * 2) if row.gated else (x,)
        r = row.forward(xs)()
        assert r.shape == x.shape and r.stride() == torch.empty_like(x).stride(), case
        assert_same_bits(r.contiguous(), row.forward(tuple(t.contiguous() for t in xs))(), case)


# ------------------------------------------------------------------ opcheck over the samples


def _opcheck_params():
    params = []
    for s in GRAD_SAMPLES + SAMPLES:
        rg = "grad" if s.xs[0].requires_grad else "nograd"
        params.append(pytest.param(s.row.forward(s.xs, s.backward), id=f"{rg}-{s}"))
    for s in OUT_SAMPLES:
        params.append(pytest.param(s.row.out(s.xs, s.out), id=f"out-{s}"))
    for s in INPLACE_SAMPLES:
        params.append(pytest.param(s.row.inplace(s.xs[0]), id=f"inplace-{s}"))
    for s in BACKWARD_SAMPLES:
        call = s.row.backward(s.grad, s.xs, s.backward)
        params.append(pytest.param(call, id=f"backward-{s}"))
    for s in BACKWARD_OUT_SAMPLES:
        call = s.row.backward_out(s.grad, s.xs, s.out, s.backward)
        params.append(pytest.param(call, id=f"backward.out-{s}"))
    return params


@pytest.mark.parametrize("call", _opcheck_params())
def test_opcheck(call):
    args = _clone(call.args)  # the in-place and out= forms write into their arguments
    kwargs = {k: _clone(v) for k, v in call.kwargs.items()}
    torch.library.opcheck(call.op, args, kwargs)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_mutating_ops_can_be_functionalized(row):
    """The in-place / out= ops return nothing: AOT dispatch (what torch.compile does) refuses
    custom ops whose outputs alias an input, which is why their schemas return ``()`` rather
    than ``Tensor(a!)``. test_opcheck runs that dispatch (its test_aot_dispatch_dynamic) over
    every sample of these forms (exp2's: test_exp2_op.py's test_opcheck)."""
    x = torch.randn(9)
    xs = row.inputs(x)
    out = (torch.empty(9), torch.empty(9)) if row.gated else torch.empty(9)
    calls = [row.out(xs, torch.empty(9)), row.backward_out(x, xs, out)]
    calls += [row.inplace(x)] if row.op.inplace else []
    for call in calls:
        assert call.op._schema.returns == [], call.op
        assert any(a.alias_info and a.alias_info.is_write for a in call.op._schema.arguments)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_fake_kernels_propagate_shape_and_dtype_on_meta(row):
    for dtype in DTYPES:
        _check_fake_kernels(row, dtype)


def _check_fake_kernels(row: Row, dtype: torch.dtype) -> None:
    def meta(*shape):
        return torch.empty(*shape, device="meta", dtype=dtype)

    x = meta(3, 5)
    xs = row.inputs(x)
    out, gout = meta(3, 5), ((meta(3, 5), meta(3, 5)) if row.gated else meta(3, 5))
    assert row.out(xs, out)() is None
    assert row.backward_out(x, xs, gout)() is None
    results = [
        row.forward(xs, "matched")(),
        *_tensors(row.backward(x, xs, "direct")()),
        out,
        *_tensors(gout),
        row.function(*xs),
    ]
    if row.op.inplace:
        inplace = torch.empty_like(x)
        assert row.inplace(inplace)() is None
        results.append(inplace)
    for r in results:
        assert r.device.type == "meta" and r.shape == (3, 5) and r.dtype == dtype
    xt = meta(5, 3).t()
    want = row.forward(row.inputs(torch.ones(5, 3, dtype=dtype).t()))().stride()
    assert row.forward(row.inputs(xt))().stride() == want


# ------------------------------------------------------------------ errors


DEVICES = ["cpu", "meta"]  # the kernels and the fake kernels say the same


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_bad_dtypes_are_refused(row, device):
    arity = 2 if row.gated else 1
    msg = "unsupported dtype .*; supported dtypes are float32, float64, float16 and bfloat16"
    for bad in (torch.int32, torch.int64, torch.bool, torch.complex64):
        x = torch.zeros(4, dtype=bad, device=device)
        xs = (x,) * arity
        with pytest.raises(TypeError, match=rf"turbogelu\.{row.public}: {msg}"):
            row.function(*xs)
        calls = [row.forward(xs), row.out(xs, torch.empty_like(x))]
        calls += [row.inplace(x)] if row.op.inplace else []
        calls += [row.backward(x, xs)]
        for call in calls:
            with pytest.raises(TypeError, match=rf"turbogelu\.{row.public}(_|_backward)?: {msg}"):
                call()
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        row.function(*([[1.0, 2.0]] * arity))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_bad_backward_is_refused(row, device):
    x = torch.randn(8, device=device)
    xs = row.inputs(x)
    out = (x * 0, x * 0) if row.gated else x * 0
    msg = "backward must be 'default', 'direct' or 'matched'"
    calls = [row.forward(xs, "exact"), row.backward(x, xs, "exact")]
    calls += [row.backward_out(x, xs, out, "exact")]
    for call in calls:
        with pytest.raises(ValueError, match=msg):
            call()
    with pytest.raises(ValueError, match=msg):
        row.function(*xs, backward="exact")
    if row.op.module:
        with pytest.raises(ValueError, match=msg):
            row.module(backward="nope")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_mismatched_out_and_grad_are_refused(row, device):
    """out= of another shape (never resized: a custom op resizing a mutated argument could not
    be functionalized) or dtype, and a grad of another shape (no broadcasting) or dtype: each
    error names the op called (a backward op its own name, not its forward's)."""
    x = torch.randn(2, 3, device=device)
    xs = row.inputs(x)
    op, bop = rf"turbogelu\.{row.public}", rf"turbogelu\.{row.public}_backward"
    note = "no broadcasting" if row.gated else "out= tensors are not resized"

    def pair(t):
        return (t, x * 0) if row.gated else t

    for shape in ((0,), (3, 2), (7,)):
        out = torch.empty(shape, device=device)
        with pytest.raises(RuntimeError, match=rf"{op}: out has shape .*\({note}\)"):
            row.out(xs, out)()
        with pytest.raises(RuntimeError, match=rf"{bop}: out has shape"):
            row.backward_out(x, xs, pair(out))()
    wide = torch.empty(2, 3, device=device, dtype=torch.float64)
    with pytest.raises(TypeError, match=rf"{op}: out has dtype"):
        row.out(xs, wide)()
    with pytest.raises(TypeError, match=rf"{bop}: out has dtype"):
        row.backward_out(x, xs, pair(wide))()
    with pytest.raises(TypeError, match=rf"{bop}: grad has dtype"):
        row.backward(x.double(), xs)()
    for shape in ((3, 2), (3,)):
        with pytest.raises(RuntimeError, match=rf"{bop}: grad has shape"):
            row.backward(torch.randn(shape, device=device), xs)()


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_a_meta_tensor_beside_a_cpu_tensor_is_refused(row):
    """A meta tensor among CPU ones dispatches to the fake kernels, which returned an
    uncomputed CPU tensor (or the meta out=, with nothing computed); every op now refuses
    tensors on two devices, whichever of them is the meta one."""
    cpu, meta = torch.randn(1000), torch.ones(1000, device="meta")

    def outs(t):
        return (t, t.clone()) if row.gated else t

    for a, b in ((meta, cpu), (cpu, meta)):
        msg = rf"turbogelu\.{row.public}_backward: grad is on {a.device} but {row.xname} is on"
        with pytest.raises(RuntimeError, match=msg):
            row.raw_backward(a, *row.inputs(b))
    with pytest.raises(RuntimeError, match="one device"):
        row.raw_backward(cpu, *row.inputs(cpu), out=outs(meta))
    with pytest.raises(RuntimeError, match="one device"):
        row.raw_forward(*row.inputs(cpu), out=meta)
    # a CPU input with a meta out through the mutating form's autograd kernel as well
    with pytest.raises(RuntimeError, match="one device"):
        row.out(row.inputs(cpu), meta)()
    # all on meta is fine (shapes only), and all on the CPU computes
    assert _first(row.raw_backward(meta, *row.inputs(meta))).device.type == "meta"
    assert row.raw_forward(*row.inputs(cpu), out=torch.empty(1000)).device.type == "cpu"


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_mutating_forms_refuse_autograd(row):
    x = torch.randn(8, requires_grad=True)
    if row.op.inplace:
        with pytest.raises(RuntimeError, match="does not support autograd"):
            row.function_(x)
    with pytest.raises(RuntimeError, match="does not support autograd"):
        row.out(row.inputs(x), torch.empty(8))()
    if row.op.inplace:
        with torch.no_grad():
            y = x.clone()
            row.function_(y)
            assert_same_bits(y, row.function(x.detach()))


# ------------------------------------------------------------------ gradients


def _gradcheck_input(row: Row) -> torch.Tensor:
    """float64 points over the window |x| <= R + 1.5 and beside +-R, none within 1e-3 of +-R
    (where the matched derivative steps to the tail's): GELU's rows 200 uniform points, the
    family's 64 (gradcheck builds the whole Jacobian: its cost grows as the square)."""
    r = row.clamp()
    g = torch.Generator().manual_seed(7)
    n = 200 if row.gelu else 64
    x = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1) * (r + 1.5)
    x = torch.cat([x, torch.tensor([0.0, r - 2e-3, -r + 2e-3, r + 2e-3, -r - 2e-3, 6.0, -6.0])])
    if row.name == "softplus":
        # Its derivatives are floored at +0 (positive functions, family_eval.h): near the left
        # clamp, where softplus' < 5e-5, the forward polynomial's own slope dips below 0 and
        # "matched" there is the floor, not the slope; and P(|x|) has a kink at 0.
        x = x[(x >= -10) & (x.abs() > 1e-3)]
    return x[(x.abs() - r).abs() > 1e-3].clone().requires_grad_()


def _programs(row: Row) -> list[str]:
    """The CPU programs a row is checked in: the polynomial, and the family's cells where it
    has them (sigmoid's, tanh's and SiLU's, softcap and swiglu through tanh's and SiLU's): the
    family's gradcheck ran in the CPU's default program, the cells on AVX-512, and now runs in
    both on every CPU. GELU's cells have their own (test_cells.py, at points inside cells)."""
    return ["poly", "cells"] if row.op.program in fc.FUNCTIONS else ["poly"]


@pytest.mark.parametrize(
    ("row", "program"),
    [pytest.param(r, p, id=f"{r}-{p}") for r in CLAMPED_ROWS for p in _programs(r)],
)
def test_gradcheck_matched_backward(row, program):
    """backward='matched' is the forward's own derivative: gradcheck holds away from +-R (and
    the cells' edges: the seeded points miss them). The polynomials' direct fit is not (so
    ``backward`` selects); the family's cells fit f' closely enough to pass gradcheck's
    tolerance."""
    x = _gradcheck_input(row)
    xs = row.inputs(x)
    with tops.use_cpu_kernel(program):
        assert torch.autograd.gradcheck(lambda *t: row.function(*t, backward="matched"), xs)
        if program == "poly":
            with pytest.raises(GradcheckError):
                torch.autograd.gradcheck(lambda *t: row.function(*t, backward="direct"), xs)


@functools.cache
def _forward_grid(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Float32 values (so the same points in float32 and float64) and f at them in float64."""
    x = np.concatenate([np.linspace(-40, 40, 400_001), float32_sample()])
    x = x.astype(np.float32)
    x = x[np.isfinite(x)]
    return x, EXACT[name](x.astype(np.float64))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=dtype_name)
@pytest.mark.parametrize("row", BOUNDED_ROWS, ids=str)
def test_forward_is_close_to_the_exact_function(row, dtype):
    """max |op - f| <= the tier's bound beyond half a float32 ulp of the result, on a dense grid
    over the window and far beyond the clamp. float64 runs the same program (float32
    coefficients) in double: the float32 bound holds (the fit's error, not float32 rounding,
    dominates)."""
    x, exact = _forward_grid(row.name)
    got = row.forward((torch.from_numpy(x).to(dtype),))().double().numpy()
    err = np.abs(got - exact)
    if dtype == torch.float32:
        err -= np.spacing(np.abs(got).astype(np.float32)).astype(np.float64) / 2
    assert np.nanmax(err) <= BOUND


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=dtype_name)
@pytest.mark.parametrize("row", BOUNDED_ROWS, ids=str)
def test_backward_is_close_to_the_exact_derivative(row, dtype):
    """Each backward within the spec's measured error of f' (1 % for points off its grid): a
    dense grid, the points beside +-R, and the wide float32 sample."""
    r = row.clamp()
    near_r = torch.tensor([r, -r], dtype=torch.float64)
    wide = torch.from_numpy(float32_sample().astype(np.float64))
    x = torch.linspace(-9, 9, 200_001, dtype=torch.float64)
    x = torch.cat([x, near_r, near_r + 1e-6, near_r - 1e-6, wide[torch.isfinite(wide)]]).to(dtype)
    exact = _exact(EXACT_GRAD[row.name], x)
    for bw in BACKWARDS:
        d = row.backward(torch.ones_like(x), (x,), bw)().double()
        assert (d - exact).abs().max().item() <= backward_bound(row, bw), bw


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_default_backward_is_the_one_the_spec_names(row):
    x = torch.cat([torch.linspace(-6, 6, 10_001), torch.from_numpy(float32_sample(1 << 10))])
    g = torch.ones_like(x)
    xs = row.inputs(x)
    named = row.spec()["default_backward"]
    assert named in ("direct", "matched")
    other = "matched" if named == "direct" else "direct"
    default = row.backward(g, xs, "default")()
    for got, want in zip(_tensors(default), _tensors(row.backward(g, xs, named)()), strict=True):
        assert_same_bits(got, want)
    assert not torch.equal(_first(default), _first(row.backward(g, xs, other)()))


def _expected_grads(row: Row, backward: str, grad, xs, y):
    """What autograd must give: the from-output formula on the saved result for a default
    from_output row, else the backward op on the saved input(s)."""
    if backward == "default" and row.op.from_output:
        return (row.from_output(grad, y),)
    return tuple(_tensors(row.backward(grad, xs, backward)()))


@pytest.mark.parametrize("backward", BACKWARDS)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_autograd_uses_the_backward_op(row, backward):
    for dtype in DTYPES:
        g = torch.Generator().manual_seed(3)
        x = (torch.randn(4, 37, generator=g) * 3).to(dtype).requires_grad_()
        grad = torch.randn(4, 37, generator=g).to(dtype)
        xs = row.inputs(x)
        y = row.function(*xs, backward=backward)
        plain = tuple(t.detach() for t in xs)
        assert_same_bits(y.detach(), row.forward(plain)(), dtype)  # the forward ignores it
        got = torch.autograd.grad(y, xs, grad)
        want = _expected_grads(row, backward, grad, plain, y.detach())
        for a, b in zip(got, want, strict=True):
            assert_same_bits(a, b, dtype)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_autograd_non_contiguous_leaf_and_expanded_grad(row):
    x0 = torch.randn(8, 6, dtype=torch.float64) * 3
    x = x0.t().detach().requires_grad_()  # a transposed leaf
    xs = row.inputs(x)
    y = row.function(*xs)
    y.sum().backward()  # the incoming grad is an expanded 1
    plain = row.inputs(x0.t().contiguous())
    ones = torch.ones(6, 8, dtype=torch.float64)
    expected = _expected_grads(row, "default", ones, plain, y.detach().contiguous())
    assert_same_bits(x.grad.contiguous(), expected[0])


# ------------------------------------------------------------------ GELU only


def test_approximate_is_checked_by_the_fake_kernels_and_the_functions():
    """``approximate`` picks GELU's row: anything else is refused by the fake kernels as by
    the kernels (test_ops_errors.py), and by the Python functions in their own words (gelu(x,
    None) is not "failed to match any schema"; issue 36, item 8)."""
    x = torch.empty(3, device="meta")
    with pytest.raises(ValueError, match="approximate"):
        OPS.gelu(x, "foo")
    with pytest.raises(ValueError, match="approximate"):
        OPS.gelu_backward(x, x, "foo")
    for fn in (turbogelu.gelu, turbogelu.gelu_, turbogelu.ops.gelu_op):
        with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got None"):
            fn(torch.randn(3), None)


def test_poly_gelu_refuses_a_meta_tensor_beside_a_cpu_tensor():
    """poly_gelu (run-time coefficients, for the lab) refuses two devices as the ops do."""
    cpu, meta = torch.randn(1000), torch.ones(1000, device="meta")
    for a, b in ((meta, cpu), (cpu, meta)):
        with pytest.raises(RuntimeError, match="one device"):
            OPS.poly_gelu(b, torch.ones(9, device=a.device), 3.0, 0.1)
