"""Every autograd mode PyTorch has, over every row of the table (turbogelu/_autograd.py):
forward mode (``torch.autograd.forward_ad``, ``torch.func.jvp``, ``jacfwd``), the ``torch.func``
transforms (``grad``, ``jacrev``, ``vmap``, ``hessian``), second derivatives (gradgradcheck,
reverse over reverse and forward over reverse, for every backward), PyTorch's checkers over
the backward ops, and the rest of issue 37's list: the raw op under a transform refused in
words, vmap with no per-example fallback, ``SiLU(inplace=True)`` training, autocast's
promotion of swiglu, TorchScript refused, softmax of a 0-dim tensor, and ``torch.export``
keeping the named ops.

A forward-mode tangent and a reverse-mode gradient of an elementwise op are the same product
f'(x) v computed by the same backward kernel, so they are compared bit for bit."""

from __future__ import annotations

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from conftest import assert_same_bits
from op_rows import ROWS, Row
from torch.autograd import gradcheck, gradgradcheck

import turbogelu
from turbogelu import _programs
from turbogelu import ops as tops

OPS = torch.ops.turbogelu
BACKWARDS = ("default", "direct", "matched")
# Inside every window and away from exp2's range-reduction steps at k + 1/2 (where the program
# jumps by its rounding, so a finite difference across one is meaningless).
POINTS = (-2.7, -1.3, -0.6, -0.1, 0.2, 0.9, 1.6, 3.1)


def _x(dtype=torch.float64, requires_grad=False) -> torch.Tensor:
    return torch.tensor(POINTS, dtype=dtype).requires_grad_(requires_grad)


def _f(row: Row, backward: str):
    """The row's public function of its tensor inputs (swiglu: of a and b)."""
    return lambda *xs: row.function(*xs, backward=backward)


def _inputs(row: Row, dtype=torch.float64, requires_grad=False) -> tuple:
    return row.inputs(_x(dtype, requires_grad))


def _vjp(row: Row, backward: str, xs, v) -> tuple:
    xs = tuple(t.detach().requires_grad_() for t in xs)
    return torch.autograd.grad(_f(row, backward)(*xs), xs, v)


# ------------------------------------------------------------------ forward mode


@pytest.mark.parametrize("backward", BACKWARDS)
@pytest.mark.parametrize("row", ROWS, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_forward_mode_is_the_backward_kernels_product(row, backward, dtype):
    """fwAD of the public function and of the raw op, and torch.func.jvp: the tangent of an
    elementwise op is f'(x) t, the backward op's product (the bits of reverse mode with v = t;
    swiglu: the sum of both inputs' products). Before issue 37 it was zero or None."""
    xs = _inputs(row, dtype)
    ts = tuple(torch.linspace(-1, 2, len(POINTS), dtype=dtype) * (i + 1) for i in range(len(xs)))
    want = [_vjp(row, backward, xs, t)[i] for i, t in enumerate(ts)]
    want = want[0] if len(want) == 1 else want[0] + want[1]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip(xs, ts, strict=True)]
        got = fwAD.unpack_dual(_f(row, backward)(*duals)).tangent
        raw = fwAD.unpack_dual(row.forward(duals, backward).__call__()).tangent
    assert_same_bits(got, want, f"{row} {backward} forward_ad")
    assert_same_bits(raw, want, f"{row} {backward} raw op")
    _, tangent = torch.func.jvp(_f(row, backward), xs, ts)
    assert_same_bits(tangent, want, f"{row} {backward} torch.func.jvp")


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_jacfwd_and_jacrev_agree_with_the_backward(row):
    """The Jacobians are diagonal (each row's elementwise f'(x); swiglu's per input), and
    jacfwd, jacrev and autograd give the same bits."""
    for backward in BACKWARDS:
        xs = _inputs(row)
        argnums = tuple(range(len(xs)))
        fwd = torch.func.jacfwd(_f(row, backward), argnums=argnums)(*xs)
        rev = torch.func.jacrev(_f(row, backward), argnums=argnums)(*xs)
        ones = torch.ones(len(POINTS), dtype=torch.float64)
        diag = _vjp(row, backward, xs, ones)
        off = ~torch.eye(len(POINTS), dtype=torch.bool)
        for i in argnums:
            for jac, how in ((fwd[i], "jacfwd"), (rev[i], "jacrev")):
                assert_same_bits(jac.diagonal(), diag[i], f"{row} {backward} {how}")
                assert (jac[off] == 0).all()  # +0 or -0 (f'(x) times a zero tangent)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_torch_func_grad_is_autograd(row):
    """torch.func.grad (it failed with a message about setup_context)."""
    for backward in BACKWARDS:
        xs = _inputs(row)
        got = torch.func.grad(lambda *a, bw=backward: _f(row, bw)(*a).sum())(*xs)
        want = _vjp(row, backward, xs, torch.ones(len(POINTS), dtype=torch.float64))[0]
        assert_same_bits(got, want, f"{row} {backward}")


def test_forward_mode_of_softmax_is_its_jacobian():
    """softmax's Jacobian diag(y) - y y^T applied to a tangent, against PyTorch's softmax."""
    x = torch.randn(4, 7, generator=torch.Generator().manual_seed(2))
    t = torch.randn(4, 7, generator=torch.Generator().manual_seed(3))
    for dim in (0, 1, -1):
        got = torch.func.jvp(lambda x, d=dim: turbogelu.softmax(x, d), (x,), (t,))[1]
        want = torch.func.jvp(lambda x, d=dim: torch.softmax(x, d), (x,), (t,))[1]
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-4)  # exp2's ~1e-7 relative


# ------------------------------------------------------------------ vmap


@pytest.fixture
def no_vmap_fallback():
    """vmap fails instead of looping per example (PyTorch's fallback, with its warning)."""
    torch._C._functorch._set_vmap_fallback_enabled(False)
    try:
        yield
    finally:
        torch._C._functorch._set_vmap_fallback_enabled(True)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_vmap_runs_the_ops_batched(row, no_vmap_fallback):
    """vmap of every function, of its gradient, and of the raw forward and backward ops, at
    any batch dimension and with an unbatched second input: one call on the whole batch, the
    bits of the unbatched calls."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(3, 8, generator=gen) * 2
    xs = row.inputs(x)
    want = _f(row, "default")(*xs)
    assert_same_bits(torch.func.vmap(_f(row, "default"))(*xs), want)
    assert_same_bits(torch.func.vmap(_f(row, "default"), in_dims=1, out_dims=1)(
        *(t.t().contiguous() for t in xs)).t(), want)  # fmt: skip
    raw = torch.func.vmap(lambda *a: row.forward(a).__call__())(*xs)
    assert_same_bits(raw, want)
    g = torch.func.vmap(torch.func.grad(lambda *a: _f(row, "direct")(*a).sum()))(*xs)
    assert_same_bits(g, _vjp(row, "direct", xs, torch.ones_like(x))[0])
    grad = torch.randn(3, 8, generator=gen)
    bwd = torch.func.vmap(lambda g, *a: row.backward(g, a).__call__())(grad, *xs)
    want = row.backward(grad, xs).__call__()
    for got, w in zip(*((bwd, want) if row.gated else ((bwd,), (want,))), strict=True):
        assert_same_bits(got, w)
    if row.gated:  # b shared by every example
        got = torch.func.vmap(_f(row, "default"), in_dims=(0, None))(xs[0], xs[1][0])
        assert_same_bits(got, _f(row, "default")(xs[0], xs[1][0].expand(3, 8)))


def test_vmap_of_softmax_shifts_its_dim(no_vmap_fallback):
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1))
    for dim in (0, 1, -1):
        got = torch.func.vmap(lambda t, d=dim: turbogelu.softmax(t, d))(x)
        assert_same_bits(got, turbogelu.softmax(x, dim + 1 if dim >= 0 else dim))


# ------------------------------------------------------------------ second derivatives


@pytest.mark.parametrize("backward", BACKWARDS)
@pytest.mark.parametrize("row", ROWS, ids=str)
def test_second_derivatives(row, backward):
    """gradgradcheck (reverse over reverse and forward over reverse) of every backward: the
    derivative of the backward program, written out by turbogelu/_programs.py from the
    kernels' constants, against finite differences of the backward kernel itself. The
    polynomial program runs (the cells program's derivative is not the polynomial's); float64
    kernels run the float32 constants unrounded, _programs with the same constants, so the
    two differ by float64 rounding: gradgradcheck's default tolerances hold."""
    xs = _inputs(row, requires_grad=True)
    # The from-output default differentiates 1 - y^2 (sigmoid: y (1 - y)) with y's own
    # derivative taken as that same formula, not as the slope of the program, from which it
    # differs by the derivative's error (up to 1.6e-4 for tanh): an absolute tolerance that
    # size; every other backward meets gradgradcheck's defaults.
    atol = 1e-3 if backward == "default" and row.op.from_output else 1e-5
    with tops.use_cpu_kernel("poly"):
        assert gradgradcheck(_f(row, backward), xs, atol=atol, check_fwd_over_rev=True)


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_hessian(row):
    """torch.func.hessian (jacfwd over jacrev) of the sum: its diagonal is the program's
    second derivative, the same values reverse over reverse gives."""
    x = _x()
    f = _f(row, "direct")
    if row.gated:
        b = x * 2
        hess = torch.func.hessian(lambda a: f(a, b).sum())(x)
    else:
        hess = torch.func.hessian(lambda a: f(a).sum())(x)
    xr = x.clone().requires_grad_()
    xs = (xr, x * 2) if row.gated else (xr,)
    (g,) = torch.autograd.grad(f(*xs).sum(), xr, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), xr)
    torch.testing.assert_close(hess, torch.diag(h), rtol=0, atol=1e-15)


def test_the_programs_are_the_kernels():
    """turbogelu/_programs.py evaluates the kernels' own constants in their order: within
    float32 roundings of the polynomial kernels on a dense float32 sweep (a multiply and an
    add where the kernel fuses), for every row, tier and part."""
    x = torch.linspace(-14, 14, 100_001)
    with tops.use_cpu_kernel("poly"):
        for row in ROWS:
            if row.name == "swiglu" or row.op.kind == "Scaled":
                continue  # silu's and tanh's programs
            xx = x * 8 if row.name == "exp2" else x
            for tier in row.op.tiers:
                want = (
                    turbogelu.gelu_op(xx, *row.args, tier=tier)
                    if row.gelu
                    else tops.forward_op(row.name, xx, tier=tier)
                )
                got = _programs.evaluate(_programs.program(row.name, tier, "forward"), xx)
                _close(got, want, f"{row} {tier} forward")
                for part in ("direct", "matched"):
                    one = torch.ones_like(xx)
                    if row.gelu:
                        k = turbogelu.gelu_backward_op(one, xx, *row.args, part, tier=tier)
                    else:
                        k = tops.backward_op(row.name, one, xx, backward=part, tier=tier)
                    got = _programs.evaluate(_programs.program(row.name, tier, part), xx)
                    _close(got, k, f"{row} {tier} {part}")


def _close(got, want, msg):
    # 8 float32 ulps of the value (degree up to 13, rounded per step instead of fused) and
    # the absolute error of the sums' cancellation near 0 (the terms are at most ~4)
    assert ((got - want).abs() <= 8 * 2**-23 * want.abs() + 4e-6).all(), msg


def test_the_derivative_of_a_program_is_its_slope():
    """_programs.derivative against a central difference of _programs.evaluate in float64,
    for every part of every row (where the window and exp2's steps are not crossed)."""
    x = _x()
    h = 1e-6
    for row in ROWS:
        if row.name == "swiglu" or row.op.kind == "Scaled":
            continue
        for tier in row.op.tiers:
            for part in ("forward", "direct", "matched"):
                p = _programs.program(row.name, tier, part)
                slope = (_programs.evaluate(p, x + h) - _programs.evaluate(p, x - h)) / (2 * h)
                torch.testing.assert_close(_programs.derivative(p, x), slope, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ PyTorch's checkers


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_opcheck_of_the_backward_ops_with_grad(row):
    """torch.library.opcheck of the backward ops on inputs that require grad: the Autograd
    kernel (test_autograd_registration) and the fake kernel under AOT dispatch, as the
    forward's opcheck in test_ops.py."""
    x = _x(torch.float32, requires_grad=True)
    xs = row.inputs(x)
    for backward in BACKWARDS:
        call = row.backward(torch.randn(len(POINTS), requires_grad=True), xs, backward)
        torch.library.opcheck(call.op, call.args, call.kwargs)


@pytest.mark.parametrize("row", [r for r in ROWS if r.op.from_output], ids=str)
def test_gradcheck_of_the_from_output_ops_in_both_modes(row):
    """The from-output backward ops are differentiable in grad and y (as aten's): gradcheck
    with forward mode and batched gradients."""
    y = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64, requires_grad=True)
    g = torch.randn(5, dtype=torch.float64, requires_grad=True)
    op = getattr(OPS, f"{row.name}_backward_from_output")
    fn = (lambda g, y: op(g, y, *row.args)) if row.args else op
    assert gradcheck(fn, (g, y), check_forward_ad=True, check_batched_grad=True)


# ------------------------------------------------------------------ refused in words


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_the_raw_op_under_a_transform_names_the_function(row):
    xs = _inputs(row)
    with pytest.raises(RuntimeError, match=rf"call turbogelu\.{row.public}, which can"):
        torch.func.grad(lambda *a: row.forward(a).__call__().sum())(*xs)


def test_torchscript_is_refused_in_words():
    for module in (turbogelu.GELU(), turbogelu.SiLU(), turbogelu.SwiGLU(), turbogelu.Softcap(3)):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), module)
        name = type(module).__name__
        with pytest.raises(RuntimeError, match=rf"turbogelu\.{name} cannot be compiled by torch"):
            torch.jit.script(model)


# ------------------------------------------------------------------ the rest of the list


def test_silu_inplace_trains_and_stays_in_place_without_autograd():
    """nn.SiLU(inplace=True) replaced: the out-of-place op when the call is differentiated
    (silu_ refuses autograd), in place otherwise."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.SiLU(inplace=True))
    want = model(torch.ones(2, 6))
    assert turbogelu.replace_activations(model)["silu"] == 1
    x = torch.randn(2, 6)
    loss = model(x).square().sum()
    loss.backward()
    assert model[0].weight.grad is not None and model[0].weight.grad.isfinite().all()
    torch.testing.assert_close(model(torch.ones(2, 6)), want, atol=1e-4, rtol=0)
    x = torch.randn(16)
    y = turbogelu.silu(x, inplace=True)
    assert y.data_ptr() == x.data_ptr()
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.randn(4), torch.ones(4))
        assert fwAD.unpack_dual(turbogelu.silu(d, inplace=True)).tangent is not None


def test_autocast_promotes_swiglu_as_pytorch_does():
    """Under autocast silu(a) * b of bfloat16 and float32 is float32 in PyTorch; swiglu runs
    in the wider dtype there (outside autocast the dtypes must match)."""
    gen = torch.Generator().manual_seed(4)
    a = torch.randn(64, generator=gen).bfloat16()
    b = torch.randn(64, generator=gen)
    with torch.autocast("cpu", torch.bfloat16):
        got = turbogelu.swiglu(a, b)
        assert (torch.nn.functional.silu(a) * b).dtype == got.dtype == torch.float32
        ar, br = a.float().requires_grad_(), b.clone().requires_grad_()
        turbogelu.swiglu(ar.bfloat16(), br).sum().backward()
    assert_same_bits(got, turbogelu.swiglu(a.float(), b))
    assert ar.grad is not None and br.grad is not None
    with pytest.raises(TypeError, match="b has dtype Float but a has dtype BFloat16"):
        turbogelu.swiglu(a, b)


def test_softmax_of_a_0_dim_tensor_is_torchs():
    for v in (2.0, -3.0, float("inf"), float("-inf"), float("nan")):
        x = torch.tensor(v)
        assert_same_bits(turbogelu.softmax(x), torch.softmax(x, 0))
        assert_same_bits(turbogelu.softmax(x, 0), torch.softmax(x, 0))
    with pytest.raises(IndexError, match="out of range"):
        turbogelu.softmax(torch.tensor(1.0), 1)
    x = torch.tensor(0.5, requires_grad=True)
    turbogelu.softmax(x).backward()
    assert x.grad == 0


def test_export_keeps_the_named_ops():
    """torch.export of a model calling the public functions shows torch.ops.turbogelu.*, not
    the autograd.Function (which runs only when the call is differentiated)."""

    class Model(torch.nn.Module):
        def forward(self, x):
            return turbogelu.softcap(turbogelu.gelu(x) + turbogelu.silu(x), 5.0)

    graph = torch.export.export(Model(), (torch.randn(4, 8),)).graph_module.code
    for name in ("gelu", "silu", "softcap"):
        assert f"torch.ops.turbogelu.{name}.default" in graph, graph
    assert "autograd_function" not in graph


def test_efficientnet_b0_trains_after_replacement():
    """torchvision's efficientnet_b0 holds nn.SiLU(inplace=True) (49 of them): after
    replace_activations a training step runs (it failed: the replacement called silu_, which
    refuses autograd) and moves the weights; test_family_api.py checks its logits."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.efficientnet_b0(weights=None).train()
    counts = turbogelu.replace_activations(model)
    assert counts["silu"] == 49 and all(
        m.inplace for m in model.modules() if isinstance(m, turbogelu.SiLU)
    )
    x, labels = torch.randn(2, 3, 64, 64), torch.tensor([3, 7])
    before = model.classifier[1].weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.nn.functional.cross_entropy(model(x), labels).backward()
    opt.step()
    assert model.features[0][0].weight.grad.isfinite().all()
    assert not torch.equal(model.classifier[1].weight, before)


# ------------------------------------------------------------------ the C++ Autograd kernel


def _python_autograd_frames(call) -> int:
    """How many Python frames of turbogelu/_autograd.py a call enters."""
    import sys

    frames = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.endswith("_autograd.py"):
            frames.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return len(frames)


def test_the_functional_ops_have_the_cpp_autograd_kernel():
    """kernels/common/autograd.cpp registers its kernel for CPU and CUDA tensors on exactly the
    ops that have a Python Function (a functional op added to one list and not the other
    would either pay the Python layer on every call or have no derivative in C++'s path)."""
    from turbogelu import _autograd

    names = {
        n.split("::", 1)[1]
        for n in torch._C._dispatch_get_all_op_names()
        if n.startswith("turbogelu::")
    }
    for key in ("AutogradCPU", "AutogradCUDA"):
        with_kernel = {
            n
            for n in names
            if torch._C._dispatch_has_kernel_for_dispatch_key(f"turbogelu::{n}", key)
        }
        assert with_kernel == set(_autograd.FUNCTIONS), key


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_an_undifferentiated_call_runs_no_python_autograd(row):
    """The op called on CPU tensors that nothing differentiates goes below autograd in C++
    (no frame of turbogelu/_autograd.py), with the bits of the call below autograd; a call
    on an input that requires grad, or carries a tangent, reaches the Python Function."""
    xs = _inputs(row, torch.float32)
    y = row.forward(xs)()
    with torch._C._AutoDispatchBelowAutograd():
        below = row.forward(xs)()
    assert_same_bits(y, below)
    assert _python_autograd_frames(row.forward(xs)) == 0
    with torch.no_grad():
        assert _python_autograd_frames(row.forward(_inputs(row, torch.float32, True))) == 0
    g = torch.ones_like(xs[0])
    assert _python_autograd_frames(row.backward(g, xs)) == 0

    grad = _inputs(row, torch.float32, True)
    assert _python_autograd_frames(row.forward(grad)) > 0
    assert row.forward(grad)().grad_fn is not None
    with fwAD.dual_level():
        dual = tuple(fwAD.make_dual(t, torch.ones_like(t)) for t in xs)
        assert _python_autograd_frames(row.forward(dual)) > 0
        assert fwAD.unpack_dual(row.forward(dual)()).tangent is not None
