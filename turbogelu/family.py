"""The activation family as ops: sigmoid, tanh, SiLU, tanh softcap and SwiGLU, each a short
polynomial between clamped tails (the ``accurate`` tier, ``data/specs/<function>/``), with fake
kernels, autograd and the public functions. The schemas (kernels/common/schema.cpp)::

    sigmoid(Tensor x, *, str backward="default", str tier="accurate") -> Tensor  (tanh, silu)
    sigmoid.out(Tensor x, *, str tier="accurate", Tensor(a!) out) -> ()
    sigmoid_(Tensor(a!) x, str tier="accurate") -> ()
    sigmoid_backward(Tensor grad, Tensor x, str backward="default", str tier="accurate")
        -> Tensor                                                       (+ .out)
    softcap(Tensor x, float cap, *, str backward="default", str tier="accurate") -> Tensor
                                       (+ .out, softcap_, softcap_backward[.out], with tier)
    swiglu(Tensor a, Tensor b, *, str backward="default", str tier="accurate") -> Tensor
    swiglu_backward(Tensor grad, Tensor a, Tensor b, str backward="default",
                    str tier="accurate") -> (Tensor grad_a, Tensor grad_b)  (+ .out)

``softcap(x, cap) = cap * tanh(x / cap)`` (x is multiplied by 1/cap rounded to float32);
``swiglu(a, b) = silu(a) * b`` with a and b of one shape and dtype (no broadcasting). The
backward ops take the forward's input, not its result, and recompute the derivative:
``backward`` picks it, "direct" (a fit of f', the default where the spec measured it the
more accurate) or "matched" (the exact derivative of the forward program: gradcheck holds).
Autograd's "default" for sigmoid, tanh, exp2 and softcap is neither: it differentiates from
the saved result, ``<fn>_backward_from_output(Tensor grad, Tensor y) -> Tensor`` (softcap's
with ``float cap`` after y; + .out; ``FROM_OUTPUT``: PyTorch's formulas, this package's kernels
on the CPU, faster than any recomputation from x).
Every op also takes ``tier``: "accurate" (the default) or "paper" (the source paper's Table 2
programs, data/specs/<function>/paper.json: fewer operations, errors of a few 1e-3).
"""

from __future__ import annotations

import math

import torch

from . import _table
from ._checks import check_cap as _check_cap
from ._checks import check_cap_type as _check_cap_type
from ._checks import check_dtype as _check_dtype
from ._checks import check_family_backward as _check_backward
from ._checks import check_family_like as _check_like
from ._checks import check_out, check_same_device
from ._checks import check_tier as _check_tier
from ._ext import load_library

load_library()
_ops = torch.ops.turbogelu
# The ops, from the table (turbogelu/_table.py): the Plain ops (f(x)), those of them that run
# the family's fitted programs, and all.
PLAIN = _table.names(kind="Plain")
UNARY = tuple(name for name in PLAIN if name not in _table.OWN_PROGRAMS)
FUNCTIONS = _table.names()
BACKWARDS = ("default", "direct", "matched")
# "accurate" (the default: the tier's bounds, data/specs/<function>/accurate.json) or "paper"
# (the source paper's Table 2 programs, with their own measured errors; paper.json).
TIERS = _table.TIERS


# ---------------------------------------------------------------- fake kernels


def _register_unary_fakes(name: str) -> None:
    @torch.library.register_fake(f"turbogelu::{name}")
    def _fake(x, *, backward="default", tier="accurate"):
        _check_tier(name, tier)
        _check_backward(name, backward)
        _check_dtype(x, name)
        return torch.empty_like(x)

    @torch.library.register_fake(f"turbogelu::{name}.out")
    def _fake_out(x, *, tier="accurate", out):
        _check_tier(name, tier)
        check_same_device(name, x, out=out)
        _check_dtype(x, name)
        check_out(out, x, name)

    @torch.library.register_fake(f"turbogelu::{name}_")
    def _fake_inplace(x, tier="accurate"):
        _check_tier(name, tier)
        _check_dtype(x, name)

    bname = f"{name}_backward"  # the tensors' errors name the op called, as the C++ does

    @torch.library.register_fake(f"turbogelu::{name}_backward")
    def _fake_backward(grad, x, backward="default", tier="accurate"):
        _check_tier(name, tier)
        _check_backward(name, backward)
        check_same_device(bname, x, grad=grad)
        _check_dtype(x, bname)
        _check_like(grad, x, bname, "grad", "x")
        return torch.empty_like(x)

    @torch.library.register_fake(f"turbogelu::{name}_backward.out")
    def _fake_backward_out(grad, x, backward="default", tier="accurate", *, out):
        _check_tier(name, tier)
        _check_backward(name, backward)
        check_same_device(bname, x, grad=grad, out=out)
        _check_dtype(x, bname)
        _check_like(grad, x, bname, "grad", "x")
        _check_like(out, x, bname, "out", "x")


for _name in PLAIN:
    _register_unary_fakes(_name)


@torch.library.register_fake("turbogelu::softcap")
def _softcap_fake(x, cap, *, backward="default", tier="accurate"):
    _check_tier("softcap", tier)
    _check_backward("softcap", backward)
    _check_cap(cap)
    _check_dtype(x, "softcap")
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::softcap.out")
def _softcap_out_fake(x, cap, *, tier="accurate", out):
    _check_tier("softcap", tier)
    check_same_device("softcap", x, out=out)
    _check_cap(cap)
    _check_dtype(x, "softcap")
    check_out(out, x, "softcap")


@torch.library.register_fake("turbogelu::softcap_")
def _softcap_inplace_fake(x, cap, tier="accurate"):
    _check_tier("softcap", tier)
    _check_cap(cap)
    _check_dtype(x, "softcap")


@torch.library.register_fake("turbogelu::softcap_backward")
def _softcap_backward_fake(grad, x, cap, backward="default", tier="accurate"):
    _check_tier("softcap", tier)
    _check_backward("softcap", backward)
    _check_cap(cap)
    check_same_device("softcap_backward", x, grad=grad)
    _check_dtype(x, "softcap_backward")
    _check_like(grad, x, "softcap_backward", "grad", "x")
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::softcap_backward.out")
def _softcap_backward_out_fake(grad, x, cap, backward="default", tier="accurate", *, out):
    _softcap_backward_fake(grad, x, cap, backward, tier)
    check_same_device("softcap_backward", x, out=out)
    _check_like(out, x, "softcap_backward", "out", "x")


def _check_gated(a, b, op: str = "swiglu", **others) -> None:
    check_same_device(op, a, xname="a", b=b, **others)
    _check_dtype(a, op)
    _check_like(b, a, op, "b", "a")
    for what, t in others.items():  # grad, and the outputs (named "out" as in C++)
        _check_like(t, a, op, "out" if what.startswith("grad_") else what, "a")


@torch.library.register_fake("turbogelu::swiglu")
def _swiglu_fake(a, b, *, backward="default", tier="accurate"):
    _check_tier("swiglu", tier)
    _check_backward("swiglu", backward)
    _check_gated(a, b)
    return torch.empty_like(a)


@torch.library.register_fake("turbogelu::swiglu.out")
def _swiglu_out_fake(a, b, *, tier="accurate", out):
    _check_tier("swiglu", tier)
    _check_gated(a, b, out=out)


@torch.library.register_fake("turbogelu::swiglu_backward")
def _swiglu_backward_fake(grad, a, b, backward="default", tier="accurate"):
    _check_tier("swiglu", tier)
    _check_backward("swiglu", backward)
    _check_gated(a, b, "swiglu_backward", grad=grad)
    return torch.empty_like(a), torch.empty_like(a)


@torch.library.register_fake("turbogelu::swiglu_backward.out")
def _swiglu_backward_out_fake(grad, a, b, backward="default", tier="accurate", *, grad_a, grad_b):
    _check_tier("swiglu", tier)
    _check_backward("swiglu", backward)
    _check_gated(a, b, "swiglu_backward", grad=grad, grad_a=grad_a, grad_b=grad_b)


# ---------------------------------------------------------------- backward from the result
# <fn>_backward_from_output(grad, y) for sigmoid, tanh and exp2, and softcap_backward_from_
# output(grad, y, cap): autograd's default backward of these, from the saved result y = f(x)
# by PyTorch's formulas, each step rounded in float32 (float64 in float64; 16-bit data is
# widened and the result rounded once; kernels/include/turbogelu/family.h's from_output):
#   sigmoid  grad * (1 - y) * y      tanh  grad * fma(-y, y, 1)      exp2  grad * y * ln 2
#   softcap  q = y * fl(1 / cap), grad * fma(-q, q, 1)
# The CPU runs the family's kernels (loops, stores and thread split as every family op's);
# CUDA and MPS run PyTorch's ops, which compute the same formulas.
FROM_OUTPUT_FUNCTIONS = _table.names(from_output=True)


def _from_output_elsewhere(name: str, grad, y, cap: float = 1.0):
    """The formula by PyTorch's ops (a device without this package's from-output kernels).
    16-bit inputs are computed in float32 and rounded once, as the CPU kernels do: in the
    16-bit dtypes themselves every product would round (exp2's grad * y * ln 2 twice,
    softcap's y / cap before the derivative), and the results would be an ulp or two off the
    CPU's in a quarter of the elements."""
    dtype = y.dtype
    if dtype in (torch.float16, torch.bfloat16):
        grad, y = grad.float(), y.float()
    if name == "sigmoid":
        out = torch.ops.aten.sigmoid_backward(grad, y)
    elif name == "tanh":
        out = torch.ops.aten.tanh_backward(grad, y)
    elif name == "softcap":
        out = torch.ops.aten.tanh_backward(grad, y * (1.0 / cap))
    else:
        out = grad * y * math.log(2.0)
    return out.to(dtype)


def _from_output_dy(name: str, gg, grad, y, cap: float):
    """d/dy of the from-output formula times the incoming gradient gg (PyTorch's derivatives
    of sigmoid_backward and tanh_backward; softcap's is tanh's in q = y / cap)."""
    if name == "sigmoid":
        return gg * grad * (1 - 2 * y)
    if name == "tanh":
        return gg * grad * (-2 * y)
    if name == "softcap":
        return gg * grad * (-2 * y / (cap * cap))
    return gg * grad * math.log(2.0)


def _register_from_output(name: str) -> None:
    op = f"{name}_backward_from_output"
    opfn = getattr(_ops, op)
    scaled = name == "softcap"

    def check(grad, y, cap, **outs):
        check_same_device(op, y, grad=grad, **outs)
        _check_dtype(y, op)
        _check_like(grad, y, op, "grad", "y")
        for what, t in outs.items():
            _check_like(t, y, op, what, "y")
        if scaled:
            _check_cap(cap)

    def run(grad, y, cap, out=None):
        check(grad, y, cap, **({} if out is None else {"out": out}))
        r = _from_output_elsewhere(name, grad, y, cap)
        if out is None:
            return r
        out.copy_(r)

    # The schemas' forms: (grad, y) and (grad, y, cap); fake kernels check and shape only.
    if scaled:

        def fake(grad, y, cap):
            check(grad, y, cap)
            return torch.empty_like(y)

        def fake_out(grad, y, cap, *, out):
            check(grad, y, cap, out=out)

        def elsewhere(grad, y, cap):
            return run(grad, y, cap)

        def elsewhere_out(grad, y, cap, *, out):
            run(grad, y, cap, out)

    else:

        def fake(grad, y):
            check(grad, y, 1.0)
            return torch.empty_like(y)

        def fake_out(grad, y, *, out):
            check(grad, y, 1.0, out=out)

        def elsewhere(grad, y):
            return run(grad, y, 1.0)

        def elsewhere_out(grad, y, *, out):
            run(grad, y, 1.0, out)

    torch.library.register_fake(f"turbogelu::{op}")(fake)
    torch.library.register_fake(f"turbogelu::{op}.out")(fake_out)
    for key in ("CUDA", "MPS"):
        torch.library.impl(f"turbogelu::{op}", key, elsewhere)
        torch.library.impl(f"turbogelu::{op}.out", key, elsewhere_out)

    # Differentiable, as PyTorch's sigmoid_backward and tanh_backward are (second
    # derivatives through y's own backward): d/dgrad is the op itself on the incoming
    # gradient, d/dy _from_output_dy's.
    def setup(ctx, inputs, output):
        ctx.cap = inputs[2] if scaled else 1.0
        ctx.save_for_backward(inputs[0], inputs[1])

    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        dgrad = opfn(gg, y, ctx.cap) if scaled else opfn(gg, y)
        dy = _from_output_dy(name, gg, grad, y, ctx.cap)
        return (dgrad, dy, None) if scaled else (dgrad, dy)

    torch.library.register_autograd(f"turbogelu::{op}", backward, setup_context=setup)


for _name in FROM_OUTPUT_FUNCTIONS:
    _register_from_output(_name)


# ---------------------------------------------------------------- autograd


def _not_differentiable(op: str):
    def backward(ctx, *grads):
        raise NotImplementedError(
            f"turbogelu.{op}_backward is not differentiable (no second derivative is implemented)"
        )

    return backward


def _no_context(ctx, inputs, output):
    pass


# Autograd's default backward of sigmoid and tanh differentiates from the saved result y, as
# PyTorch's own does (the <fn>_backward_from_output ops above: PyTorch's formula, this
# package's kernels on the CPU): grad * (1 - y) * y and grad * (1 - y^2) are two multiplies
# an element, which no derivative recomputed from x (degree 11 and 12 in the accurate tier)
# can match on a CPU, and in float32 they are also the more accurate (y's error of at most
# 3e-5 becomes at most |1 - 2y| or 2|y| times it). "direct" and "matched" recompute the
# derivative from x (the backward ops); in bfloat16 and float16 "direct" is the more
# accurate, as it does not inherit the rounding of y (tests/test_family_api.py measures both).
FROM_OUTPUT = {
    "sigmoid": _ops.sigmoid_backward_from_output,
    "tanh": _ops.tanh_backward_from_output,
}


def exp2_from_output(grad: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """exp2's autograd default, from the saved result as sigmoid's and tanh's: d/dx 2^x =
    ln 2 * 2^x, grad * y * ln 2 (two multiplies, rounded once in 16-bit; no recomputation
    from x)."""
    return _ops.exp2_backward_from_output(grad, y)


def _register_unary_autograd(name: str, from_output=None) -> None:
    backward_op = getattr(_ops, f"{name}_backward")

    def setup(ctx, inputs, keyword_only_inputs, output):
        ctx.backward = keyword_only_inputs.get("backward", "default")
        ctx.tier = keyword_only_inputs.get("tier", "accurate")
        ctx.from_output = from_output is not None and ctx.backward == "default"
        ctx.save_for_backward(output if ctx.from_output else inputs[0])

    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        if ctx.from_output:
            return from_output(grad, saved)
        return backward_op(grad, saved, ctx.backward, ctx.tier)

    torch.library.register_autograd(f"turbogelu::{name}", backward, setup_context=setup)
    torch.library.register_autograd(
        f"turbogelu::{name}_backward", _not_differentiable(name), setup_context=_no_context
    )


for _name in PLAIN:
    _from_output = getattr(_ops, f"{_name}_backward_from_output", None)
    _register_unary_autograd(_name, _from_output if _table.op(_name).from_output else None)


# softcap's default likewise differentiates from the saved result y = cap tanh(x / cap), as
# PyTorch's autograd of c * tanh(x / c) does from its saved tanh: grad * (1 - (y / cap)^2),
# one pass of three multiplies and an fma (the accuracy trade of tanh's above);
# "direct" and "matched" recompute it from x.
def softcap_from_output(grad: torch.Tensor, y: torch.Tensor, cap: float) -> torch.Tensor:
    """softcap's autograd default: grad * (1 - q^2), q = y * fl(1 / cap) (no recomputation
    from x)."""
    return _ops.softcap_backward_from_output(grad, y, cap)


def _softcap_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.cap = inputs[1]
    ctx.backward = keyword_only_inputs.get("backward", "default")
    ctx.tier = keyword_only_inputs.get("tier", "accurate")
    ctx.save_for_backward(output if ctx.backward == "default" else inputs[0])


def _softcap_backward(ctx, grad):
    (saved,) = ctx.saved_tensors
    if ctx.backward == "default":
        return softcap_from_output(grad, saved, ctx.cap), None
    return _ops.softcap_backward(grad, saved, ctx.cap, ctx.backward, ctx.tier), None


torch.library.register_autograd(
    "turbogelu::softcap", _softcap_backward, setup_context=_softcap_setup
)
torch.library.register_autograd(
    "turbogelu::softcap_backward", _not_differentiable("softcap"), setup_context=_no_context
)


def _swiglu_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.backward = keyword_only_inputs.get("backward", "default")
    ctx.tier = keyword_only_inputs.get("tier", "accurate")
    ctx.save_for_backward(inputs[0], inputs[1])


def _swiglu_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return tuple(_ops.swiglu_backward(grad, a, b, ctx.backward, ctx.tier))


torch.library.register_autograd("turbogelu::swiglu", _swiglu_backward, setup_context=_swiglu_setup)
torch.library.register_autograd(
    "turbogelu::swiglu_backward", _not_differentiable("swiglu"), setup_context=_no_context
)


# ---------------------------------------------------------------- softmax (CPU)
# softmax(x, dim, *, tier) by exp2 (kernels/cpu/ops.cpp's softmax_cpu): CPU only; the
# result is contiguous. Its backward is (grad - sum(grad * y)) * y on the saved result, in
# PyTorch's ops.


def _check_softmax(x, dim, tier) -> None:
    _check_tier("softmax", tier)
    _check_dtype(x, "softmax")
    if x.dtype == torch.float64:
        raise TypeError(
            "turbogelu.softmax: float64 is not supported (the exp2 program is float32's; "
            "use torch.softmax)"
        )
    if x.dim() == 0:
        raise RuntimeError("turbogelu.softmax: x must have at least one dimension")
    if not -x.dim() <= dim < x.dim():
        raise IndexError(f"turbogelu.softmax: dim {dim} is out of range for {x.dim()} dimensions")


@torch.library.register_fake("turbogelu::softmax")
def _softmax_fake(x, dim=-1, *, tier="accurate"):
    _check_softmax(x, dim, tier)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _softmax_elsewhere(x, dim=-1, *, tier="accurate"):
    raise NotImplementedError(
        f"turbogelu.softmax: only the CPU has a kernel (x is on {x.device.type}); "
        "use torch.softmax there"
    )


for _key in ("CUDA", "MPS"):
    torch.library.impl("turbogelu::softmax", _key, _softmax_elsewhere)


def _softmax_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.dim = inputs[1] if len(inputs) > 1 else -1
    ctx.save_for_backward(output)


def _softmax_backward(ctx, grad):
    # in float32 and rounded once, as the forward and PyTorch's own softmax backward do (in
    # bfloat16 each of the three steps would round)
    (y,) = ctx.saved_tensors
    g32, y32 = grad.float(), y.float()
    return ((g32 - (g32 * y32).sum(ctx.dim, keepdim=True)) * y32).to(y.dtype), None


torch.library.register_autograd(
    "turbogelu::softmax", _softmax_backward, setup_context=_softmax_setup
)


# ---------------------------------------------------------------- public functions


def _tensor(x, op: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"turbogelu.{op}: expected a torch.Tensor, got {type(x).__name__}")


# Every function takes ``tier``: "accurate" (the default; the bounds below) or "paper" (the
# source paper's Table 2 programs: degree 2-4, errors of a few 1e-3, data/specs/<fn>/paper.json).


def sigmoid(x: torch.Tensor, *, backward: str = "default", tier: str = "accurate") -> torch.Tensor:
    """Polynomial sigmoid, a drop-in for ``torch.sigmoid``: float32 within 3e-5 of the exact
    function everywhere; bfloat16 and float16 within 1 ulp of the correctly rounded value for
    x >= -3 (below, within 3e-5 beyond half an ulp). Autograd-aware: by default the gradient
    is PyTorch's ``grad * y * (1 - y)`` on the saved result y (FROM_OUTPUT); ``backward=
    "direct"`` or ``"matched"`` recompute the derivative from x as gelu's do."""
    _tensor(x, "sigmoid")
    return _ops.sigmoid(x, backward=backward, tier=tier)


def tanh(x: torch.Tensor, *, backward: str = "default", tier: str = "accurate") -> torch.Tensor:
    """Polynomial tanh, a drop-in for ``torch.tanh``: float32 within 3e-5 everywhere; every
    bfloat16 and float16 input within 1 ulp of the correctly rounded value. The default
    gradient is ``grad * (1 - y^2)`` on the saved result, as sigmoid's."""
    _tensor(x, "tanh")
    return _ops.tanh(x, backward=backward, tier=tier)


def silu(
    x: torch.Tensor, inplace: bool = False, *, backward: str = "default", tier: str = "accurate"
) -> torch.Tensor:
    """Polynomial SiLU, a drop-in for ``torch.nn.functional.silu(x, inplace)`` (bounds as
    sigmoid's). ``inplace=True`` writes into x (no autograd, as ``silu_``)."""
    _tensor(x, "silu")
    if inplace:
        return silu_(x, tier=tier)
    return _ops.silu(x, backward=backward, tier=tier)


def softcap(
    x: torch.Tensor, cap: float, *, backward: str = "default", tier: str = "accurate"
) -> torch.Tensor:
    """``cap * tanh(x / cap)`` (Gemma 2's logit soft-capping) by the polynomial tanh: float32
    within 3e-5 * cap; ``cap`` a positive finite float. The default gradient is ``grad * (1 -
    (y / cap)^2)`` on the saved result y, as PyTorch's autograd of the composite computes it;
    ``backward="direct"`` or ``"matched"`` recompute it from x."""
    _tensor(x, "softcap")
    _check_cap_type(cap)
    return _ops.softcap(x, float(cap), backward=backward, tier=tier)


def swiglu(
    a: torch.Tensor, b: torch.Tensor, *, backward: str = "default", tier: str = "accurate"
) -> torch.Tensor:
    """``silu(a) * b`` in one pass (its backward gives both gradients in one pass); a and b of
    one shape and dtype. float32 within 3e-5 * |b| beyond the rounding of the result."""
    _tensor(a, "swiglu")
    _tensor(b, "swiglu")
    return _ops.swiglu(a, b, backward=backward, tier=tier)


def exp2(x: torch.Tensor, *, backward: str = "default", tier: str = "accurate") -> torch.Tensor:
    """2^x, a drop-in for ``torch.exp2``: range reduction x = n + f, a polynomial for 2^f and
    2^n in the exponent bits, rounded once (turbogelu/approx/exp2_programs.py). ``tier=
    "accurate"``: float32 within 2 ulp of the correctly rounded value on every input measured,
    subnormal results included (data/specs/exp2/accurate.json counts them per ulp), overflow to
    inf where the correctly rounded 2^x overflows; every bfloat16 input correctly rounded;
    ``"paper"``: the source paper's D2 fraction (max relative error ~2.7e-3). IEEE: NaN ->
    NaN, -inf -> +0, +inf -> inf, +-0 -> 1. The default gradient is ``grad * y * ln 2`` on the
    saved result y; ``backward="direct"`` or ``"matched"`` recompute it from x (the matched one
    is the program's own derivative)."""
    _tensor(x, "exp2")
    return _ops.exp2(x, backward=backward, tier=tier)


# F.softplus's defaults, the only ones this program computes.
SOFTPLUS_BETA, SOFTPLUS_THRESHOLD = 1.0, 20.0


def _check_softplus_args(beta, threshold, op: str = "softplus") -> None:
    if beta != SOFTPLUS_BETA or threshold != SOFTPLUS_THRESHOLD:
        raise ValueError(
            f"turbogelu.{op}: only beta={SOFTPLUS_BETA:g} and threshold={SOFTPLUS_THRESHOLD:g} "
            f"(torch.nn.functional.softplus's defaults) are supported, got beta={beta!r}, "
            f"threshold={threshold!r}; use torch.nn.functional.softplus for others"
        )


def softplus(
    x: torch.Tensor,
    beta: float = 1.0,
    threshold: float = 20.0,
    *,
    backward: str = "default",
    tier: str = "accurate",
) -> torch.Tensor:
    """Polynomial softplus log(1 + e^x), a drop-in for ``torch.nn.functional.softplus`` with its
    defaults (beta 1, threshold 20; other values are refused): x/2 + P(|x|) inside its clamp,
    x above and +0.0 below. float32 within 3e-5 of the exact function beyond half an ulp of
    the result (so relatively ever tighter as softplus grows like x); bfloat16 and float16
    within 1 ulp of the correctly rounded value for x >= -3 (below, within 3e-5 beyond half
    an ulp). Only the accurate tier: the source paper has no softplus program, so
    ``tier="paper"`` is refused. The gradient is ``grad * sigmoid(x)`` by a fitted program
    (``backward="direct"``, the default) or the program's own derivative (``"matched"``)."""
    _tensor(x, "softplus")
    _check_softplus_args(beta, threshold)
    return _ops.softplus(x, backward=backward, tier=tier)


def softmax(x: torch.Tensor, dim: int = -1, *, tier: str = "accurate") -> torch.Tensor:
    """Softmax along ``dim`` by this package's exp2 (CPU; float32, float16, bfloat16, computed
    in float32): the row's max subtracted, t = (x - max) * log2(e), exp2(t) in the ``tier``
    asked for and summed in float32, then scaled by 1 / sum. A contiguous result; a NaN makes
    its row NaN (as torch.softmax). Autograd: (grad - sum(grad * y)) * y from the result."""
    _tensor(x, "softmax")
    return _ops.softmax(x, dim, tier=tier)


def _inplace(name: str):
    op = getattr(_ops, f"{name}_")

    def fn(x: torch.Tensor, tier: str = "accurate") -> torch.Tensor:
        _tensor(x, f"{name}_")
        op(x, tier)
        return x

    fn.__name__ = fn.__qualname__ = f"{name}_"
    fn.__doc__ = f"In-place polynomial {name} (no autograd: refuses a tensor that requires grad)."
    return fn


sigmoid_ = _inplace("sigmoid")
tanh_ = _inplace("tanh")
silu_ = _inplace("silu")
exp2_ = _inplace("exp2")
softplus_ = _inplace("softplus")


def softcap_(x: torch.Tensor, cap: float, tier: str = "accurate") -> torch.Tensor:
    """In-place softcap (no autograd)."""
    _tensor(x, "softcap_")
    _check_cap_type(cap, "softcap_")
    _ops.softcap_(x, float(cap), tier)
    return x


def forward_op(name: str, *args, out: torch.Tensor | None = None, tier: str = "accurate", **kw):
    """The raw forward op ``name`` (no autograd needed; ``out=`` writes into out)."""
    if name not in FUNCTIONS:
        raise ValueError(f"turbogelu.forward_op: name must be one of {FUNCTIONS}, got {name!r}")
    op = getattr(_ops, name)
    if out is None:
        return op(*args, tier=tier, **kw)
    op.out(*args, tier=tier, out=out)
    return out


def backward_op(
    name: str, grad, *args, backward: str = "default", tier: str = "accurate", out=None
):
    """The raw backward op ``name``: ``grad * f'(x)`` (softcap: args are x, cap; swiglu: a, b,
    returning (grad_a, grad_b); ``out`` is then a pair)."""
    if name not in FUNCTIONS:
        raise ValueError(f"turbogelu.backward_op: name must be one of {FUNCTIONS}, got {name!r}")
    op = getattr(_ops, f"{name}_backward")
    if out is None:
        return op(grad, *args, backward, tier)
    if name == "swiglu":
        op.out(grad, *args, backward, tier, grad_a=out[0], grad_b=out[1])
    else:
        op.out(grad, *args, backward, tier, out=out)
    return out
