"""Tests of the operators torch.ops.turbogelu.* and their Python wrappers (turbogelu.ops).

Layout follows pytorch/extension-cpp: ``sample_inputs`` builds the inputs every op is run on,
``reference_*`` say what the result should be, and ``torch.library.opcheck`` checks schema,
fake (meta) kernels, autograd registration and AOT dispatch over the same samples. The rest
checks semantics (shapes, layouts, special values, subnormals), gradients, determinism
(threads, instruction sets), errors and the instruction-set selection.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
import torch
from conftest import (
    APPROXIMATES,
    BACKWARDS,
    DTYPES,
    HALF_DTYPES,
    ISAS,
    ROOT,
    assert_same_bits,
    clamp_radius,
    load_spec,
    subprocess_env,
)
from torch import nn
from torch.autograd.gradcheck import GradcheckError

import turbogelu
from experiments.probes import OPS as BENCH_OPS
from turbogelu import ops as tg_ops
from turbogelu.approx import reference, replay
from turbogelu.approx import spec as spec_mod

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

OPS = torch.ops.turbogelu
AWKWARD_SIZES = [1, 9, 15, 16, 17, 41, 341, 4231]
FORWARD_ATOL = 3e-5  # |turbogelu - GELU| in float32/float64 (spec: 2.5e-5, the jump at R)
DIRECT_ATOL = 6e-4  # |direct backward - GELU'| (spec: 1.7e-4)
MATCHED_ATOL = 2.5e-3  # |matched backward - GELU'| (spec: 2.0e-3, the derivative of P)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def clone_layout(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` with the same sizes, strides and storage offset (an expanded or sliced
    view stays one), and the same requires_grad."""
    copy = torch.empty(0, dtype=t.dtype, device=t.device)
    copy.set_(t.untyped_storage().clone(), t.storage_offset(), t.size(), t.stride())
    return copy.requires_grad_(t.requires_grad)


def _clone_args(sample):
    def c(a):
        return clone_layout(a) if isinstance(a, torch.Tensor) else a

    return tuple(c(a) for a in sample.args), {k: c(v) for k, v in sample.kwargs.items()}


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense (one block of memory): then empty_like keeps the strides."""
    return torch.empty_like(t).stride() == t.stride()


def _tiny(dtype: torch.dtype) -> torch.Tensor:
    """The smallest positive subnormal of ``dtype``."""
    one = torch.ones((), dtype=torch.int64 if dtype == torch.float64 else torch.int32)
    if dtype in HALF_DTYPES:
        one = one.to(torch.int16)
    return one.view(dtype)


# ------------------------------------------------------------------ samples and references


@dataclasses.dataclass
class Sample:
    name: str
    args: tuple
    kwargs: dict


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


def sample_inputs(device, *, requires_grad=False):
    """Samples of ``gelu(x, approximate, *, backward)``: every layout in two dtypes, cycling
    through the GELU forms and backward choices."""
    g = torch.Generator().manual_seed(1234)
    samples = []
    for i, dtype in enumerate(DTYPES):
        for j, (name, x) in enumerate(_layouts(device, dtype, g)):
            if (i + j) % 2:  # each layout in two of the four dtypes
                continue
            x = x.detach().requires_grad_(requires_grad)
            ap = APPROXIMATES[(j // 2) % 2]
            bw = BACKWARDS[(i + j) % 3]
            samples.append(Sample(f"{name}-{_name(dtype)}-{ap}-{bw}", (x, ap), {"backward": bw}))
    return samples


def backward_sample_inputs(device):
    """Samples of ``gelu_backward(grad, x, approximate, backward)``: grad in x's layout, plus
    mixed layouts (x transposed with a contiguous grad and the reverse; an expanded grad)."""
    g = torch.Generator().manual_seed(99)
    samples = []
    for s in sample_inputs(device):
        x = s.args[0]
        grad = torch.randn(x.shape, generator=g, dtype=torch.float64).to(x.dtype)
        grad = torch.empty_like(x).copy_(grad) if _dense(x) else grad
        samples.append(Sample(s.name, (grad, x, s.args[1], s.kwargs["backward"]), {}))
    xt = torch.randn(6, 4, generator=g).t()
    gc = torch.randn(4, 6, generator=g)
    samples.append(Sample("x_transposed-grad_contiguous", (gc, xt, "none", "direct"), {}))
    samples.append(Sample("x_contiguous-grad_transposed", (xt, gc, "tanh", "matched"), {}))
    ones = torch.ones(1, 1).expand(4, 6)
    samples.append(Sample("grad_expanded", (ones, gc, "none", "default"), {}))
    return samples


def out_sample_inputs(device):
    """Samples of ``gelu.out``: out like x, a transposed out, a strided out."""
    samples = []
    for s in sample_inputs(device):
        x = s.args[0]
        samples.append(Sample(s.name, (x, s.args[1]), {"out": torch.empty_like(x)}))
    x = torch.randn(6, 4)
    samples.append(Sample("out_transposed", (x, "none"), {"out": torch.empty(4, 6).t()}))
    samples.append(Sample("out_step2", (x, "tanh"), {"out": torch.empty(6, 8)[:, ::2]}))
    return samples


def backward_out_sample_inputs(device):
    samples = []
    for s in backward_sample_inputs(device):
        samples.append(Sample(s.name, s.args, {"out": torch.empty_like(s.args[1])}))
    g, x = torch.randn(6, 4), torch.randn(6, 4)
    samples.append(Sample("out_transposed", (g, x), {"out": torch.empty(4, 6).t()}))
    return samples


def inplace_sample_inputs(device):
    """Samples of ``gelu_(x, approximate)`` (not the expanded one: it overlaps itself)."""
    return [
        Sample(s.name, (s.args[0], s.args[1]), {})
        for s in sample_inputs(device)
        if not s.name.startswith("expanded")
    ]


def reference_gelu(x: torch.Tensor, approximate: str) -> torch.Tensor:
    """GELU in float64 (scipy), rounded to x's dtype."""
    ref = reference.gelu(x.detach().double().cpu().numpy(), approximate)
    return torch.from_numpy(np.asarray(ref)).to(x.dtype).reshape(x.shape)


def reference_gelu_backward(grad: torch.Tensor, x: torch.Tensor, approximate: str):
    """grad * GELU'(x) in float64, rounded to x's dtype."""
    d = reference.gelu_grad(x.detach().double().cpu().numpy(), approximate)
    d = torch.from_numpy(np.asarray(d)).reshape(x.shape)
    return (grad.detach().double() * d).to(x.dtype)


def assert_close_to_reference(actual, expected, atol_unit, scale=None):
    """|actual - expected| <= atol_unit * scale + eps(dtype) * |expected| (+ a float16/bfloat16
    rounding of the reference), elementwise, in float64."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = actual.detach().double(), expected.detach().double()
    eps = torch.finfo(actual.dtype).eps
    s = 1.0 if scale is None else scale.detach().double().abs()
    bound = atol_unit * s + eps * e.abs() + (eps * 1e-3 if actual.dtype in HALF_DTYPES else 0.0)
    err = (a - e).abs()
    bad = ~(err <= bound)
    assert not bad.any(), f"max excess {(err - bound)[bad].max().item():.3e} at {bad.nonzero()[:4]}"


def _backward_atol(backward: str, approximate: str) -> float:
    if backward == "default":
        backward = load_spec(approximate)["default_backward"]
    return MATCHED_ATOL if backward == "matched" else DIRECT_ATOL


SAMPLES = sample_inputs("cpu")
BACKWARD_SAMPLES = backward_sample_inputs("cpu")
OUT_SAMPLES = out_sample_inputs("cpu")
BACKWARD_OUT_SAMPLES = backward_out_sample_inputs("cpu")
INPLACE_SAMPLES = inplace_sample_inputs("cpu")


def _ids(samples):
    return [s.name for s in samples]


# ------------------------------------------------------------------ correctness over the samples


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids(SAMPLES))
def test_gelu_matches_reference(sample):
    x, ap = sample.args
    out = OPS.gelu(x, ap, **sample.kwargs)
    assert out.dtype == x.dtype and out.shape == x.shape
    assert_close_to_reference(out, reference_gelu(x, ap), FORWARD_ATOL)
    # turbogelu.gelu (the Python wrapper) is the same op
    assert_same_bits(turbogelu.gelu(x, ap, **sample.kwargs), out)


@pytest.mark.parametrize("sample", BACKWARD_SAMPLES, ids=_ids(BACKWARD_SAMPLES))
def test_gelu_backward_matches_reference(sample):
    grad, x, ap, bw = sample.args
    out = OPS.gelu_backward(grad, x, ap, bw)
    assert out.dtype == x.dtype and out.shape == x.shape
    expected = reference_gelu_backward(grad, x, ap)
    assert_close_to_reference(out, expected, _backward_atol(bw, ap), scale=grad)
    assert_same_bits(turbogelu.gelu_backward_op(grad, x, ap, bw), out)


@pytest.mark.parametrize("sample", OUT_SAMPLES, ids=_ids(OUT_SAMPLES))
def test_gelu_out_matches_functional(sample):
    (x, ap), kwargs = _clone_args(sample)
    out = kwargs["out"]
    strides = out.stride() if out.shape == x.shape else None
    assert OPS.gelu.out(x, ap, out=out) is None  # mutating ops return nothing (see ops.py)
    assert out.shape == x.shape
    if strides is not None:
        assert out.stride() == strides  # written in place, layout kept
    assert_same_bits(out, OPS.gelu(x, ap))
    out2 = clone_layout(sample.kwargs["out"])
    assert turbogelu.gelu_op(x, ap, out=out2).data_ptr() == out2.data_ptr()
    assert_same_bits(out2, out)


@pytest.mark.parametrize("sample", BACKWARD_OUT_SAMPLES, ids=_ids(BACKWARD_OUT_SAMPLES))
def test_gelu_backward_out_matches_functional(sample):
    args, kwargs = _clone_args(sample)
    out = kwargs["out"]
    assert OPS.gelu_backward.out(*args, out=out) is None
    assert_same_bits(out, OPS.gelu_backward(*sample.args))


@pytest.mark.parametrize("sample", INPLACE_SAMPLES, ids=_ids(INPLACE_SAMPLES))
def test_gelu_inplace_matches_functional(sample):
    (x, ap), _ = _clone_args(sample)
    expected = OPS.gelu(x, ap)
    ptr, stride, version = x.data_ptr(), x.stride(), x._version
    assert OPS.gelu_(x, ap) is None
    assert x.data_ptr() == ptr and x.stride() == stride
    assert x._version > version
    assert_same_bits(x, expected)


# ------------------------------------------------------------------ opcheck over the samples


def _opcheck_params():
    params = []
    for s in sample_inputs("cpu", requires_grad=True) + SAMPLES:
        rg = "grad" if s.args[0].requires_grad else "nograd"
        params.append(pytest.param(OPS.gelu.default, s, id=f"gelu-{rg}-{s.name}"))
    for s in OUT_SAMPLES:
        params.append(pytest.param(OPS.gelu.out, s, id=f"gelu.out-{s.name}"))
    for s in INPLACE_SAMPLES:
        params.append(pytest.param(OPS.gelu_.default, s, id=f"gelu_-{s.name}"))
    for s in BACKWARD_SAMPLES:
        params.append(pytest.param(OPS.gelu_backward.default, s, id=f"gelu_backward-{s.name}"))
    for s in BACKWARD_OUT_SAMPLES:
        params.append(pytest.param(OPS.gelu_backward.out, s, id=f"gelu_backward.out-{s.name}"))
    return params


@pytest.mark.parametrize(("op", "sample"), _opcheck_params())
def test_opcheck(op, sample):
    args, kwargs = _clone_args(sample)  # gelu_ and out= write into their arguments
    torch.library.opcheck(op, args, kwargs)


@pytest.mark.parametrize(
    ("op", "args", "kwargs"),
    [
        pytest.param(OPS.gelu_.default, (torch.randn(9),), {}, id="gelu_"),
        pytest.param(OPS.gelu.out, (torch.randn(9),), {"out": torch.empty(9)}, id="gelu.out"),
        pytest.param(
            OPS.gelu_backward.out,
            (torch.randn(9), torch.randn(9)),
            {"out": torch.empty(9)},
            id="gelu_backward.out",
        ),
    ],
)
def test_mutating_ops_can_be_functionalized(op, args, kwargs):
    """AOT dispatch (what torch.compile does) of the in-place / out= ops. Functionalization
    refuses custom ops whose outputs alias an input, which is why their schemas return
    ``()`` rather than ``Tensor(a!)``."""
    args = tuple(a.clone() for a in args)
    kwargs = {k: v.clone() for k, v in kwargs.items()}
    torch.library.opcheck(op, args, kwargs, test_utils="test_aot_dispatch_dynamic")


def test_fake_kernels_propagate_shape_and_dtype_on_meta(dtype):
    x = torch.empty(3, 5, device="meta", dtype=dtype)
    outs = [torch.empty(3, 5, device="meta", dtype=dtype) for _ in range(2)]
    assert OPS.gelu.out(x, out=outs[0]) is None
    assert OPS.gelu_backward.out(x, x, out=outs[1]) is None
    inplace = torch.empty_like(x)
    assert OPS.gelu_(inplace) is None
    for out in (
        OPS.gelu(x, "tanh", backward="matched"),
        OPS.gelu_backward(x, x, "none", "direct"),
        *outs,
        inplace,
        turbogelu.gelu(x),
    ):
        assert out.device.type == "meta" and out.shape == (3, 5) and out.dtype == dtype
    xt = torch.empty(5, 3, device="meta", dtype=dtype).t()
    assert OPS.gelu(xt).stride() == OPS.gelu(torch.ones(5, 3, dtype=dtype).t()).stride()


def test_fake_kernels_reject_what_the_kernel_rejects():
    x = torch.empty(3, device="meta")
    with pytest.raises(ValueError, match="approximate"):
        OPS.gelu(x, "foo")
    with pytest.raises(ValueError, match="backward"):
        OPS.gelu_backward(x, x, "none", "foo")
    with pytest.raises(TypeError, match="float32, float64, float16 and bfloat16"):
        OPS.gelu(torch.empty(3, device="meta", dtype=torch.int32))
    with pytest.raises(TypeError, match="dtype"):
        OPS.gelu_backward(x, torch.empty(3, device="meta", dtype=torch.float64))
    with pytest.raises(RuntimeError, match="shape"):
        OPS.gelu_backward(x, torch.empty(2, 3, device="meta"))


def test_a_meta_tensor_beside_a_cpu_tensor_is_refused():
    """A meta tensor among CPU ones dispatches to the fake kernels, which returned an
    uncomputed CPU tensor (or the meta out=, with nothing computed); every op now refuses
    tensors on two devices, whichever of them is the meta one."""
    cpu, meta = torch.randn(1000), torch.ones(1000, device="meta")
    for a, b in ((meta, cpu), (cpu, meta)):
        with pytest.raises(RuntimeError, match="one device"):
            turbogelu.gelu_backward_op(a, b)
        with pytest.raises(RuntimeError, match="one device"):
            turbogelu.gelu_backward_op(cpu, cpu, out=b if b is meta else a)
        with pytest.raises(RuntimeError, match="one device"):
            turbogelu.gelu_op(b if b is cpu else a, out=meta)
        with pytest.raises(RuntimeError, match="one device"):
            OPS.poly_gelu(b, torch.ones(9, device=a.device), 3.0, 0.1)
    # a CPU input with a meta out through the mutating form's autograd kernel as well
    with pytest.raises(RuntimeError, match="one device"):
        OPS.gelu.out(cpu, out=meta)
    # all on meta is fine (shapes only), and all on the CPU computes
    assert turbogelu.gelu_backward_op(meta, meta).device.type == "meta"
    assert turbogelu.gelu_op(cpu, out=torch.empty(1000)).device.type == "cpu"


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_out_of_the_wrong_shape_or_dtype_is_refused(device):
    """gelu.out / gelu_backward.out refuse an out of another shape (out= is never resized: a
    custom op resizing a mutated argument could not be functionalized) or dtype, on the CPU
    and in the fake kernels alike."""
    x = torch.empty(2, 3, device=device)
    for out in (torch.empty(0, device=device), torch.empty(3, 2, device=device)):
        with pytest.raises(RuntimeError, match="out has shape"):
            OPS.gelu.out(x, out=out)
        with pytest.raises(RuntimeError, match="out has shape"):
            OPS.gelu_backward.out(x, x, out=out)
    with pytest.raises(TypeError, match="out has dtype"):
        OPS.gelu.out(x, out=torch.empty(2, 3, device=device, dtype=torch.float64))
    with pytest.raises(TypeError, match="out has dtype"):
        OPS.gelu_backward.out(x, x, out=torch.empty(2, 3, device=device, dtype=torch.float64))


# ------------------------------------------------------------------ gradients


@pytest.mark.parametrize("approximate", APPROXIMATES)
def test_gradcheck_matched_backward(approximate):
    """backward='matched' is the forward's own derivative: gradcheck holds away from +-R."""
    r = clamp_radius(approximate)
    g = torch.Generator().manual_seed(7)
    x = (torch.rand(200, generator=g, dtype=torch.float64) * 2 - 1) * (r + 1.5)
    x = torch.cat([x, torch.tensor([0.0, r - 2e-3, -r + 2e-3, r + 2e-3, -r - 2e-3, 6.0, -6.0])])
    x = x[(x.abs() - r).abs() > 1e-3].clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: turbogelu.gelu(t, approximate, backward="matched"), (x,)
    )
    # and the direct fit is not the forward's derivative (so `backward` does select)
    with pytest.raises(GradcheckError):
        torch.autograd.gradcheck(lambda t: turbogelu.gelu(t, approximate, backward="direct"), (x,))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=_name)
@pytest.mark.parametrize("approximate", APPROXIMATES)
def test_direct_backward_close_to_exact_derivative(approximate, dtype):
    r = clamp_radius(approximate)
    x = torch.linspace(-9, 9, 200_001, dtype=torch.float64)
    near_r = torch.tensor([r, -r], dtype=torch.float64)
    x = torch.cat([x, near_r, near_r + 1e-6, near_r - 1e-6]).to(dtype)
    exact = torch.from_numpy(reference.gelu_grad(x.double().numpy(), approximate))
    for bw in ("default", "direct"):
        d = OPS.gelu_backward(torch.ones_like(x), x, approximate, bw).double()
        assert (d - exact).abs().max().item() <= DIRECT_ATOL
    d = OPS.gelu_backward(torch.ones_like(x), x, approximate, "matched").double()
    assert (d - exact).abs().max().item() <= MATCHED_ATOL


@pytest.mark.parametrize("approximate", APPROXIMATES)
def test_default_backward_is_the_one_the_spec_names(approximate):
    x = torch.linspace(-6, 6, 10_001)
    g = torch.ones_like(x)
    named = load_spec(approximate)["default_backward"]
    assert named in ("direct", "matched")
    other = "matched" if named == "direct" else "direct"
    default = OPS.gelu_backward(g, x, approximate, "default")
    assert_same_bits(default, OPS.gelu_backward(g, x, approximate, named))
    assert not torch.equal(default, OPS.gelu_backward(g, x, approximate, other))


@pytest.mark.parametrize("backward", BACKWARDS)
def test_autograd_uses_the_backward_op(dtype, approximate, backward):
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(4, 37, generator=g) * 3).to(dtype).requires_grad_()
    grad = torch.randn(4, 37, generator=g).to(dtype)
    y = turbogelu.gelu(x, approximate, backward=backward)
    assert_same_bits(y.detach(), OPS.gelu(x.detach(), approximate))  # forward ignores it
    y.backward(grad)
    assert_same_bits(x.grad, OPS.gelu_backward(grad, x.detach(), approximate, backward))


def test_autograd_non_contiguous_leaf_and_expanded_grad():
    x0 = torch.randn(8, 6, dtype=torch.float64) * 3
    x = x0.t().detach().requires_grad_()  # a transposed leaf
    turbogelu.gelu(x).sum().backward()  # the incoming grad is an expanded 1
    expected = OPS.gelu_backward(torch.ones(6, 8, dtype=torch.float64), x0.t().contiguous())
    assert_same_bits(x.grad.contiguous(), expected)


def test_double_backward_is_refused_clearly():
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    (gx,) = torch.autograd.grad(turbogelu.gelu(x).sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="not differentiable"):
        gx.sum().backward()


# ------------------------------------------------------------------ torch.compile


class _TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = turbogelu.GELU("tanh")
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = turbogelu.gelu(self.fc2(h), "none", backward="matched")
        return self.fc3(h)


def test_compile_inplace_and_out_forms(dynamo_reset):
    """The mutating forms under torch.compile (aot_eager: the same functionalization as
    inductor, without code generation). Fails today, for the reason given in
    test_mutating_ops_can_be_functionalized."""

    def f(x, out):
        y = x * 2
        turbogelu.gelu_(y)
        turbogelu.gelu_op(x, out=out)
        return y + out

    x = torch.randn(33)
    expected = f(x, torch.empty(33))
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    assert_same_bits(compiled(x, torch.empty(33)), expected)


def test_compile_channels_last_conv_backward(dynamo_reset):
    """A channels_last conv followed by turbogelu.GELU, compiled (inductor), trained one step.
    Fails today: autograd hands gelu_backward a contiguous grad with a channels_last x; the
    CPU kernel then returns a contiguous result while the fake kernel says channels_last, and
    inductor's stride assertion stops the backward."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), turbogelu.GELU())
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last).requires_grad_()
    model(x).sum().backward()
    eager = x.grad.clone()
    x.grad = None
    compiled = torch.compile(model, fullgraph=True)
    compiled(x).sum().backward()
    torch.testing.assert_close(x.grad, eager, rtol=1e-4, atol=1e-5)


def test_compile_fullgraph_matches_eager(dynamo_reset):
    torch.manual_seed(0)
    model = _TinyMLP()
    x = torch.randn(8, 16)
    x_eager = x.clone().requires_grad_()
    x_comp = x.clone().requires_grad_()

    compiled = torch.compile(model, fullgraph=True)  # a graph break would raise
    y_comp = compiled(x_comp)
    y_eager = model(x_eager)
    torch.testing.assert_close(y_comp, y_eager, rtol=1e-5, atol=1e-6)

    y_eager.square().sum().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    y_comp.square().sum().backward()
    for p, ge in zip(model.parameters(), eager_grads, strict=True):
        torch.testing.assert_close(p.grad, ge, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(x_comp.grad, x_eager.grad, rtol=1e-4, atol=1e-6)
    assert not torch._dynamo.utils.counters["graph_break"]


# ------------------------------------------------------------------ shapes, sizes, layouts


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (3, 0, 2), (1,), (2, 3, 4)])
def test_any_shape(isa, dtype, shape):
    x = (torch.randn(shape, dtype=torch.float64) * 3).to(dtype)
    y = OPS.gelu(x, "none")
    assert y.shape == x.shape and y.dtype == dtype
    assert_close_to_reference(y, reference_gelu(x, "none"), FORWARD_ATOL)
    d = OPS.gelu_backward(x, x, "tanh", "default")
    assert d.shape == x.shape and d.dtype == dtype
    out = torch.empty(shape, dtype=dtype)
    OPS.gelu.out(x, "none", out=out)
    assert_same_bits(out, y)
    assert turbogelu.gelu_(x.clone(), "none").shape == x.shape


@pytest.mark.parametrize("n", AWKWARD_SIZES)
def test_awkward_sizes_match_elementwise(isa, dtype, n):
    """Sizes around the 8/16-lane SIMD loops' tails, starting at an unaligned address: each
    element gets the bits it gets when computed alone."""
    g = torch.Generator().manual_seed(n)
    buf = (torch.randn(n + 1, generator=g, dtype=torch.float64) * 4).to(dtype)
    gbuf = torch.randn(n + 1, generator=g, dtype=torch.float64).to(dtype)
    x, grad = buf[1:], gbuf[1:]  # storage offset 1
    ap = APPROXIMATES[n % 2]
    y = OPS.gelu(x, ap)
    d = OPS.gelu_backward(grad, x, ap, "default")
    y_each = torch.cat([OPS.gelu(x[i : i + 1].clone(), ap) for i in range(n)])
    d_each = torch.cat(
        [OPS.gelu_backward(grad[i : i + 1].clone(), x[i : i + 1].clone(), ap) for i in range(n)]
    )
    assert_same_bits(y, y_each)
    assert_same_bits(d, d_each)
    if dtype != torch.float64:  # the kernels' float32 arithmetic, replayed in numpy
        spec = load_spec(ap)
        fwd = spec_mod.part_values(spec["forward"])
        bwd = spec_mod.part_values(spec["backward_" + spec["default_backward"]])
        xf = x.float().numpy()
        y32 = torch.from_numpy(replay.forward32(xf, fwd)).to(dtype)
        d32 = replay.backward32(xf, bwd, grad.float().numpy())
        assert_same_bits(y, y32)
        assert_same_bits(d, torch.from_numpy(d32).to(dtype))


def _views(dtype):
    """(name, view, base): non-contiguous inputs of every kind."""
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
def test_non_contiguous_inputs(dtype, which):
    (x,) = [v for name, v in _views(dtype) if name == which]
    xc = x.contiguous()
    y = OPS.gelu(x, "tanh")
    assert y.shape == x.shape and y.dtype == dtype
    assert_same_bits(y.contiguous(), OPS.gelu(xc, "tanh"))
    if _dense(x):  # a dense layout is kept, like F.gelu keeps it
        assert y.stride() == x.stride()
    grad = (torch.randn(x.shape) * 2).to(dtype)
    for gr, xx in ((grad, x), (x, grad), (x, x)):
        d = OPS.gelu_backward(gr, xx, "none", "direct")
        assert_same_bits(d.contiguous(), OPS.gelu_backward(gr.contiguous(), xx.contiguous()))


@pytest.mark.parametrize(
    "make_out",
    [
        pytest.param(lambda s: torch.empty(s[1], s[0]).t(), id="transposed"),
        pytest.param(lambda s: torch.empty(s[0], 2 * s[1])[:, ::2], id="step2"),
        pytest.param(lambda s: torch.empty(s[0] + 3, s[1])[3:], id="offset"),
    ],
)
def test_out_into_non_contiguous_out(make_out):
    x = torch.randn(7, 19) * 3
    for source in (x, x.t().contiguous().t()):
        out = make_out(x.shape)
        strides, ptr = out.stride(), out.data_ptr()
        OPS.gelu.out(source, "none", out=out)
        assert out.stride() == strides and out.data_ptr() == ptr
        assert_same_bits(out, OPS.gelu(x, "none"))
        out = make_out(x.shape)
        OPS.gelu_backward.out(x, source, "tanh", "matched", out=out)
        assert out.stride() == strides
        assert_same_bits(out, OPS.gelu_backward(x, x, "tanh", "matched"))


def test_out_into_itself_and_overlap_errors():
    x = torch.randn(50) * 3
    expected = OPS.gelu(x)
    y = x.clone()
    OPS.gelu.out(y, out=y)  # out is x: each element read, then written
    assert_same_bits(y, expected)
    # out is x's memory in another layout: refused, as ATen refuses torch.sin(x, out=x.t())
    sq = torch.randn(9, 9)
    with pytest.raises(RuntimeError, match="single memory location"):
        OPS.gelu.out(sq, out=sq.t())
    # the backward written into grad's own memory
    g, xb = torch.randn(33), torch.randn(33) * 3
    expected = OPS.gelu_backward(g, xb, "tanh")
    OPS.gelu_backward.out(g, xb, "tanh", out=g)
    assert_same_bits(g, expected)
    base = torch.randn(10)
    with pytest.raises(RuntimeError, match="single memory location"):
        OPS.gelu.out(base[:-1], out=base[1:])  # partial overlap
    with pytest.raises(RuntimeError, match="single memory location"):
        OPS.gelu_(torch.randn(1, 4).expand(3, 4))  # out overlaps itself


def test_inplace_on_views_touches_only_the_view():
    base = torch.randn(6, 10) * 3
    for index in (np.s_[:, ::2], np.s_[1:4, 2:7], np.s_[::3]):
        b = base.clone()
        expected = base.clone()
        expected[index] = OPS.gelu(base[index], "tanh")
        turbogelu.gelu_(b[index], "tanh")
        assert_same_bits(b, expected)
    t = base.clone().t()  # a dense non-contiguous tensor: written in place directly
    turbogelu.gelu_(t)
    assert_same_bits(t, OPS.gelu(base.t()))


# ------------------------------------------------------------------ special values


def _special_inputs(dtype):
    fi = torch.finfo(dtype)
    big = -1e30 if fi.max > 1e30 else -fi.max
    vals = [math.nan, math.inf, -math.inf, 0.0, -0.0, -5.0, -100.0, big, fi.max, -fi.max, 5.0]
    return vals


@pytest.mark.parametrize("length", [1, 37])
def test_special_values_forward(isa, dtype, approximate, length):
    vals = _special_inputs(dtype)
    if length == 1:
        pairs = [(v, OPS.gelu(torch.tensor([v], dtype=dtype), approximate).item()) for v in vals]
    else:  # the specials at body and tail positions of the SIMD loop
        x = torch.tensor(vals * 4, dtype=dtype)[:length]
        pairs = list(zip(x.tolist(), OPS.gelu(x, approximate).tolist(), strict=True))
    fmax = torch.finfo(dtype).max
    for v, y in pairs:
        if math.isnan(v):
            assert math.isnan(y)
        elif v > clamp_radius(approximate):  # +inf, 5, max: x itself
            assert y == v
        elif v < -clamp_radius(approximate):  # -inf, -5, -1e30, -max: -0.0
            assert y == 0.0 and math.copysign(1.0, y) < 0, (v, y)
        else:  # +-0.0 keep their sign
            assert y == 0.0 and math.copysign(1.0, y) == math.copysign(1.0, v), (v, y)
    assert OPS.gelu(torch.tensor([fmax], dtype=dtype)).item() == fmax


def test_float16_max_and_signed_zeros_exactly():
    h = torch.tensor([65504.0, -65504.0, 0.0, -0.0], dtype=torch.float16)
    y = OPS.gelu(h)
    assert y.tolist() == [65504.0, 0.0, 0.0, 0.0]
    assert torch.signbit(y).tolist() == [False, True, False, True]


def test_special_values_backward(isa, dtype, approximate):
    nan, inf = math.nan, math.inf
    #         (grad, x, expected)
    cases = [
        (1.0, nan, nan),
        (nan, 0.0, nan),
        (nan, 1.0, nan),
        (nan, -5.0, nan),  # NaN grad stays NaN in the clamped negative tail
        (nan, -100.0, nan),
        (nan, 5.0, nan),  # ... and in the positive tail
        (nan, inf, nan),
        (nan, -inf, nan),
        (2.0, inf, 2.0),
        (-3.0, 100.0, -3.0),
        (2.0, -inf, 0.0),
        (2.0, -100.0, 0.0),
        (1.0, 0.0, 0.5),
        (1.0, -0.0, 0.5),
        (inf, -5.0, nan),  # grad * 0 is always multiplied: inf * 0
    ]
    grad = torch.tensor([c[0] for c in cases] * 3, dtype=dtype)
    x = torch.tensor([c[1] for c in cases] * 3, dtype=dtype)
    d = OPS.gelu_backward(grad, x, approximate, "default").tolist()
    for i, got in enumerate(d):
        g, xv, want = cases[i % len(cases)]
        if math.isnan(want):
            assert math.isnan(got), (g, xv, got)
        else:
            assert got == want, (g, xv, got)
    # autograd: a NaN upstream gradient reaches x.grad in the tails too
    xr = torch.tensor([-5.0, 5.0, 0.5], dtype=dtype, requires_grad=True)
    turbogelu.gelu(xr, approximate).backward(torch.full((3,), nan, dtype=dtype))
    assert torch.isnan(xr.grad).all()


SUBNORMAL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.mark.parametrize("dtype", SUBNORMAL_DTYPES, ids=_name)
def test_subnormal_inputs(isa, dtype, approximate):
    """gelu(x) ~ x/2 for subnormal x: within 1 ulp of the correctly rounded value, sign kept."""
    tiny = _tiny(dtype)
    s = tiny.item()
    largest = torch.tensor(torch.finfo(dtype).smallest_normal, dtype=dtype) - tiny
    pos = torch.stack([tiny * k for k in (1, 2, 3, 5, 7, 101)] + [largest, largest / 2])
    assert (pos > 0).all() and (pos < torch.finfo(dtype).smallest_normal).all()
    x = torch.cat([pos, -pos])
    y = OPS.gelu(x, approximate)
    with mpmath.workdps(60):
        for xv, yv in zip(x.tolist(), y.tolist(), strict=True):
            exact = reference.gelu_mp(mpmath.mpf(xv), approximate, dps=60)
            k = int(mpmath.nint(exact / mpmath.mpf(s)))  # correctly rounded, in units of s
            got = mpmath.mpf(yv) / mpmath.mpf(s)
            assert abs(got - k) <= 1, (xv, yv, k)
            assert math.copysign(1.0, yv) == math.copysign(1.0, xv), (xv, yv)
    d = OPS.gelu_backward(torch.ones_like(x), x, approximate)
    assert (d.double() - 0.5).abs().max().item() <= 1e-6  # GELU'(0) = 1/2


def test_infinities_whatever_pytorch_returns():
    """gelu(+inf) = +inf and gelu(-inf) = -0.0 in every dtype and form, on the vectorized path
    (64 elements) and alone; the derivative is 1 and 0. PyTorch's own CPU F.gelu on +-inf
    depends on the CPU and build (float16 +inf gives inf on an AMD Zen 4, NaN on a Sapphire
    Rapids Xeon): notebook 04 records it per machine; no test asserts it."""
    for dtype in DTYPES:
        for ap in APPROXIMATES:
            for n in (1, 64):
                inf = torch.full((n,), math.inf, dtype=dtype)
                ours_pos, ours_neg = OPS.gelu(inf, ap), OPS.gelu(-inf, ap)
                assert (ours_pos == math.inf).all(), (dtype, ap, n)
                assert (ours_neg == 0).all() and torch.signbit(ours_neg).all(), (dtype, ap, n)
                one = torch.ones_like(inf)
                assert (OPS.gelu_backward(one, inf, ap) == 1).all(), (dtype, ap, n)
                assert (OPS.gelu_backward(one, -inf, ap) == 0).all(), (dtype, ap, n)


def test_op_tests_pass_where_pytorch_gives_nan_at_infinity():
    """The op and module tests, run again with PyTorch's float16 F.gelu made to return NaN at
    +-inf (as it does on a Sapphire Rapids Xeon; tests/nan_gelu_at_inf.py): nothing here may
    lean on what PyTorch returns there. The opcheck samples (which never call F.gelu) are
    left out for time."""
    tests = ROOT / "tests"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "nan_gelu_at_inf", "-p",
         "no:cacheprovider", "tests/test_ops.py", "tests/test_module.py", "-k",
         "not pytorch_gives_nan and not opcheck"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
        env=subprocess_env(PYTHONPATH=str(tests)),
    )  # fmt: skip
    tail = r.stdout[-3000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    assert "F.gelu imitates NaN at +-inf in float16" in r.stdout, tail
    assert " passed" in r.stdout and " failed" not in r.stdout, tail


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
    tiny = _tiny(dtype).reshape(1)
    fmax = torch.finfo(dtype).max
    special = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, fmax, -fmax], dtype=dtype)
    special = torch.cat([special, nudged, tiny, -tiny, 3 * tiny])
    pos = torch.randint(0, n, (min(n, 4 * special.numel()),), generator=g)
    x[pos] = special.repeat(4)[: pos.numel()]
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
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
@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
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


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "bad_dtype", [torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64]
)
def test_unsupported_dtypes_raise_type_error(bad_dtype):
    x = torch.ones(4, dtype=bad_dtype)
    match = "supported dtypes are float32, float64, float16 and bfloat16"
    calls = [
        lambda: OPS.gelu(x),
        lambda: turbogelu.gelu(x),
        lambda: OPS.gelu_(x.clone()),
        lambda: OPS.gelu.out(x, out=torch.empty_like(x)),
        lambda: OPS.gelu_backward(x, x),
        lambda: OPS.gelu_backward.out(x, x, out=torch.empty_like(x)),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=match):
            call()


def test_complex_requiring_grad_raises_type_error():
    x = torch.ones(3, dtype=torch.complex64, requires_grad=True)
    with pytest.raises(TypeError, match="bfloat16"):
        turbogelu.gelu(x)


def test_bad_approximate_and_backward_raise_value_error():
    x = torch.randn(5)
    for call in (
        lambda: OPS.gelu(x, "foo"),
        lambda: turbogelu.gelu(x, "exact"),
        lambda: OPS.gelu_(x.clone(), "foo"),
        lambda: OPS.gelu.out(x, "foo", out=torch.empty(5)),
        lambda: OPS.gelu_backward(x, x, "foo"),
        lambda: OPS.gelu_backward.out(x, x, "foo", out=torch.empty(5)),
        lambda: turbogelu.GELU("foo"),
    ):
        with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
            call()
    for call in (
        lambda: OPS.gelu(x, backward="foo"),
        lambda: turbogelu.gelu(x, backward="Matched"),
        lambda: OPS.gelu_backward(x, x, "none", "foo"),
        lambda: OPS.gelu_backward.out(x, x, "none", "foo", out=torch.empty(5)),
        lambda: turbogelu.GELU(backward="foo"),
    ):
        with pytest.raises(ValueError, match="backward must be"):
            call()
    # the empty tensor does not skip the checks
    with pytest.raises(ValueError):
        OPS.gelu(torch.empty(0), "foo")


def test_backward_dtype_and_shape_mismatch():
    x = torch.randn(2, 3)
    with pytest.raises(TypeError, match="grad has dtype"):
        OPS.gelu_backward(x.double(), x)
    with pytest.raises(TypeError, match="grad has dtype"):
        OPS.gelu_backward.out(x.half(), x, out=torch.empty(2, 3))
    with pytest.raises(RuntimeError, match="shape"):
        OPS.gelu_backward(torch.randn(3), x)  # no broadcasting
    with pytest.raises(RuntimeError, match="shape"):
        OPS.gelu_backward(torch.randn(3, 2), x)


def test_out_with_wrong_dtype_raises_type_error():
    x = torch.randn(4)
    with pytest.raises(TypeError, match="out has dtype"):
        OPS.gelu.out(x, out=torch.empty(4, dtype=torch.float64))
    with pytest.raises(TypeError, match="out has dtype"):
        turbogelu.gelu_op(x, out=torch.empty(4, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="out has dtype"):
        turbogelu.gelu_backward_op(x, x, out=torch.empty(4, dtype=torch.float16))


@pytest.mark.parametrize("bad", [[1.0, 2.0], 1.5, np.ones(3, dtype=np.float32), None])
def test_non_tensor_raises_type_error(bad):
    x = torch.ones(3)
    for call in (
        lambda: turbogelu.gelu(bad),
        lambda: turbogelu.gelu_(bad),
        lambda: turbogelu.gelu_op(bad),
        lambda: turbogelu.gelu_backward_op(bad, x),
        lambda: turbogelu.gelu_backward_op(x, bad),
        lambda: turbogelu.GELU()(bad),
    ):
        with pytest.raises(TypeError, match="expected a torch.Tensor"):
            call()


def test_inplace_on_tensor_requiring_grad_is_refused():
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_(x)
    y = x * 2  # a non-leaf
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_(y)


def test_out_forms_refuse_tensors_requiring_grad():
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_op(x, out=torch.empty(4))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_op(x.detach(), out=torch.empty(4, requires_grad=True))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_backward_op(x, x.detach(), out=torch.empty(4))
    with pytest.raises(RuntimeError, match="autograd"):
        turbogelu.gelu_backward_op(x.detach(), x, out=torch.empty(4))


def test_inplace_and_out_forms_bump_the_version_counter():
    """Overwriting a tensor that another op saved for backward is caught at backward time."""
    for write in (
        lambda t: turbogelu.gelu_(t),
        lambda t: turbogelu.gelu_op(torch.randn(5), out=t),
        lambda t: turbogelu.gelu_backward_op(torch.randn(5), torch.randn(5), out=t),
    ):
        w = torch.randn(5, requires_grad=True)
        x = torch.randn(5)
        y = w * x  # saves x
        version = x._version
        write(x)
        assert x._version > version
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_inplace_and_out_forms_work_under_no_grad():
    x0 = torch.randn(6) * 3
    x = x0.clone().requires_grad_()
    out = torch.empty(6)
    dout = torch.empty(6)
    with torch.no_grad():
        turbogelu.gelu_op(x, out=out)
        turbogelu.gelu_backward_op(x, x, out=dout)
        turbogelu.gelu_(x)
    assert_same_bits(out, OPS.gelu(x0))
    assert_same_bits(dout, OPS.gelu_backward(x0, x0))
    assert_same_bits(x.detach(), OPS.gelu(x0))
    # under no_grad the version counter is still bumped for a tensor saved elsewhere
    w = torch.randn(6, requires_grad=True)
    b = torch.randn(6)
    y = w * b
    with torch.no_grad():
        turbogelu.gelu_(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ------------------------------------------------------------------ instruction sets


def test_isa_introspection():
    assert ISAS[-1] == "scalar"
    assert set(ISAS) <= {"avx512bf16", "avx512", "avx2", "scalar"}
    assert turbogelu.cpu_isa() in ISAS
    assert turbogelu.cpu_isas_available() == ISAS


def test_unknown_isa_raises_value_error():
    before = turbogelu.cpu_isa()
    for name in ("sse9", "AVX2", "", "auto "):
        with pytest.raises(ValueError, match="choose auto, avx512bf16, avx512, avx2 or scalar"):
            OPS._set_cpu_isa(name)
    assert turbogelu.cpu_isa() == before


def test_unavailable_isa_raises():
    missing = [n for n in ("avx512bf16", "avx512", "avx2") if n not in ISAS]
    if not missing:
        pytest.skip("every instruction set is available here")
    with pytest.raises(RuntimeError, match="not available"):
        OPS._set_cpu_isa(missing[0])


@pytest.mark.parametrize("program", ["poly", "cells"])
def test_bfloat16_blocks_with_subnormals_match_every_isa(program):
    # The avx512bf16 store converts with vcvtne2ps2bf16, which flushes subnormals: a block
    # of 32 values that holds one must take the integer rounding instead. Put a subnormal
    # (input, or an output from the smallest normals) at each position of a block, with
    # ordinary values around it, and require the bits of every other instruction set.
    gen = torch.Generator().manual_seed(7)
    base = (3 * torch.randn(32 * 40, generator=gen)).to(torch.bfloat16)
    tiny = torch.tensor([2.0**-130, -(2.0**-133), 2.0**-126, -(2.0**-126)]).to(torch.bfloat16)
    for j in range(32):
        base[32 * j + j] = tiny[j % 4]  # block j: position j
    x = torch.cat([base, base[5:]])  # and again, shifted across block edges
    g = torch.randn(x.shape, generator=gen).to(torch.bfloat16)
    got = {}
    with tg_ops.use_cpu_kernel(program):
        for isa in ISAS:
            with tg_ops.use_cpu_isa(isa):
                got[isa] = (OPS.gelu(x), OPS.gelu_backward(g, x))
    ref_f, ref_b = got["scalar"]
    assert (ref_f.float().abs() < 2.0**-126).sum() >= 16  # subnormal results do occur
    for isa, (f, b) in got.items():
        assert torch.equal(f.view(torch.int16), ref_f.view(torch.int16)), isa
        assert torch.equal(b.view(torch.int16), ref_b.view(torch.int16)), isa


def test_use_cpu_isa_restores_after_an_error():
    before = turbogelu.cpu_isa()
    with pytest.raises(ZeroDivisionError):
        with tg_ops.use_cpu_isa("scalar"):
            assert turbogelu.cpu_isa() == "scalar"
            1 / 0  # noqa: B018
    assert turbogelu.cpu_isa() == before
    with tg_ops.use_cpu_isa("auto"):
        assert turbogelu.cpu_isa() == ISAS[0]


_CHILD = """
import torch, turbogelu
x = torch.linspace(-6, 6, 101)
try:
    y = turbogelu.gelu(x)
except Exception as e:
    print("ERROR", type(e).__name__, e)
else:
    print("ISA", turbogelu.cpu_isa(), float(y.double().sum()))
"""


ENV_VALUES = ["avx2", "scalar", "bogus", None]  # None: the variable unset (auto)


@pytest.fixture(scope="module")
def isa_env_children():
    """{TURBOGELU_CPU_ISA value: the output of a child interpreter started with it}; two
    children at a time (each imports torch: seconds)."""
    results = {}
    for i in range(0, len(ENV_VALUES), 2):
        procs = {
            v: subprocess.Popen(
                [sys.executable, "-c", _CHILD],
                env=subprocess_env(**({} if v is None else {"TURBOGELU_CPU_ISA": v})),
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for v in ENV_VALUES[i : i + 2]
        }
        results.update({v: p.communicate(timeout=120)[0] for v, p in procs.items()})
    return results


@pytest.mark.parametrize("name", ["avx2", "scalar", None], ids=["avx2", "scalar", "unset"])
def test_env_var_selects_isa(isa_env_children, name):
    if name is not None and name not in ISAS:
        pytest.skip(f"{name} not available on this CPU")
    out = isa_env_children[name]
    expected = ISAS[0] if name is None else name
    line = [ln for ln in out.splitlines() if ln.startswith(("ISA", "ERROR"))]
    assert line and line[0].split()[:2] == ["ISA", expected], out
    checksum = float(line[0].split()[2])
    assert checksum == pytest.approx(float(OPS.gelu(torch.linspace(-6, 6, 101)).double().sum()))


def test_env_var_bogus_gives_a_clear_error(isa_env_children):
    out = isa_env_children["bogus"]
    assert "ERROR ValueError" in out, out
    assert "'bogus'" in out and "auto, avx512bf16, avx512, avx2 or scalar" in out, out
