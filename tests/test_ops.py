"""Tests of the operators torch.ops.turbogelu.* and their Python wrappers (turbogelu.ops):
correctness, opcheck and gradients over the samples.

Layout follows pytorch/extension-cpp: ``sample_inputs`` builds the inputs every op is run on,
``reference_*`` (tests/op_references.py) say what the result should be, and
``torch.library.opcheck`` checks schema, fake (meta) kernels, autograd registration and AOT
dispatch over the same samples. The rest of the op tests, by subject: test_ops_compile.py
(torch.compile), test_ops_layout.py (shapes, sizes, layouts), test_ops_special_values.py
(special values, subnormals), test_ops_determinism.py (threads, chunking, instruction sets),
test_ops_errors.py (errors), test_ops_isa.py (the instruction-set selection).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import (
    APPROXIMATES,
    BACKWARDS,
    DTYPES,
    assert_same_bits,
    clamp_radius,
    load_spec,
)
from op_references import (
    DIRECT_ATOL,
    FORWARD_ATOL,
    MATCHED_ATOL,
    OPS,
    assert_close_to_reference,
    clone_layout,
    dtype_name,
    is_dense,
    reference_gelu,
    reference_gelu_backward,
)
from torch.autograd.gradcheck import GradcheckError

import turbogelu
from turbogelu.approx import reference

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")


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
            samples.append(
                Sample(f"{name}-{dtype_name(dtype)}-{ap}-{bw}", (x, ap), {"backward": bw})
            )
    return samples


def backward_sample_inputs(device):
    """Samples of ``gelu_backward(grad, x, approximate, backward)``: grad in x's layout, plus
    mixed layouts (x transposed with a contiguous grad and the reverse; an expanded grad)."""
    g = torch.Generator().manual_seed(99)
    samples = []
    for s in sample_inputs(device):
        x = s.args[0]
        grad = torch.randn(x.shape, generator=g, dtype=torch.float64).to(x.dtype)
        grad = torch.empty_like(x).copy_(grad) if is_dense(x) else grad
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


def _clone_args(sample):
    def c(a):
        return clone_layout(a) if isinstance(a, torch.Tensor) else a

    return tuple(c(a) for a in sample.args), {k: c(v) for k, v in sample.kwargs.items()}


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


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=dtype_name)
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
