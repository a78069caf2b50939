"""The op surface of every function, GELU's and the activation family's:
torch.ops.turbogelu.* with fake (meta) kernels, autograd and the public Python functions
(``turbogelu.family`` forwards its names here).

Importing this module imports torch and loads the compiled extension ``turbogelu._C``, whose
``TORCH_LIBRARY(turbogelu, m)`` defines the ops (kernels/common/schema.cpp; the CPU's
kernels: kernels/cpu/ops.cpp):

    gelu(Tensor x, str approximate="none", *, str backward="default") -> Tensor
    gelu.out(Tensor x, str approximate="none", *, Tensor(a!) out) -> ()
    gelu_(Tensor(a!) x, str approximate="none") -> ()
    gelu_backward(Tensor grad, Tensor x, str approximate="none", str backward="default")
    gelu_backward.out(..., *, Tensor(a!) out) -> ()

The mutating forms return nothing (PyTorch can functionalize a custom op for torch.compile
only if it does not also return what it mutates); the Python wrappers below return it.

``backward`` selects the derivative's coefficients: "direct" (a fit of GELU', the default
because it is the more accurate) or "matched" (the exact derivative of the forward
polynomial; gradcheck holds for it).

The activation family (sigmoid, tanh, SiLU, tanh softcap, SwiGLU, exp2, softplus), each a
short polynomial between clamped tails (the ``accurate`` tier, ``data/specs/<function>/``),
has these schemas::

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

import contextlib
import math

import torch

from . import _autograd, _inductor, _table
from ._checks import DTYPES as DTYPES
from ._checks import check_args as _check_args
from ._checks import check_cap as _check_cap
from ._checks import check_cap_type as _check_cap_type
from ._checks import check_dtype as _check_dtype
from ._checks import check_family_backward as _check_backward
from ._checks import check_family_like as _check_like
from ._checks import check_grad_matches, check_out, check_same_device
from ._checks import check_tier as _check_tier
from ._ext import load_library

load_library()
_ops = torch.ops.turbogelu


# ---------------------------------------------------------------- GELU: fake kernels


@torch.library.register_fake("turbogelu::gelu")
def _gelu_fake(x, approximate="none", *, backward="default", tier="accurate"):
    _check_args(approximate, backward, tier)
    _check_dtype(x, "gelu")
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::gelu.out")
def _gelu_out_fake(x, approximate="none", *, tier="accurate", out):
    check_same_device("gelu", x, out=out)
    _check_args(approximate, tier=tier)
    _check_dtype(x, "gelu")
    check_out(out, x, "gelu")


@torch.library.register_fake("turbogelu::gelu_")
def _gelu_inplace_fake(x, approximate="none", tier="accurate"):
    _check_args(approximate, tier=tier)
    _check_dtype(x, "gelu_")


def _check_backward_fake(grad, x, op="gelu_backward", **out):
    check_same_device(op, x, grad=grad, **out)
    _check_dtype(x, "gelu_backward")
    check_grad_matches(grad, x)


@torch.library.register_fake("turbogelu::gelu_backward")
def _gelu_backward_fake(grad, x, approximate="none", backward="default", tier="accurate"):
    _check_args(approximate, backward, tier)
    _check_backward_fake(grad, x)
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::gelu_backward.out")
def _gelu_backward_out_fake(
    grad, x, approximate="none", backward="default", tier="accurate", *, out
):
    _check_args(approximate, backward, tier)
    _check_backward_fake(grad, x, out=out)
    check_out(out, x, "gelu_backward")


# The ops, from the table (turbogelu/_table.py): the Plain ops (f(x)), those of them that run
# the family's fitted programs, and all.
PLAIN = _table.names(kind="Plain")
UNARY = tuple(name for name in PLAIN if name not in _table.OWN_PROGRAMS)
FUNCTIONS = _table.names()
BACKWARDS = ("default", "direct", "matched")
# "accurate" (the default: the tier's bounds, data/specs/<function>/accurate.json) or "paper"
# (the source paper's Table 2 programs, with their own measured errors; paper.json).
TIERS = _table.TIERS


# ------------------------------------------------------------ the family: fake kernels


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


# Under torch.autocast, swiglu(a, b) of two floating dtypes runs in the wider one, as PyTorch's
# silu(a) * b promotes (the mul; silu itself, like every other op here, is on no autocast
# list and runs in its input's dtype, so the others need no autocast kernel). Outside
# autocast a and b must share a dtype (the kernels' one pass; _check_gated).
def _swiglu_autocast(key: str):
    excluded = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, key))

    def kernel(a, b, *, backward="default", tier="accurate"):
        dtype = torch.promote_types(a.dtype, b.dtype)
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            return _ops.swiglu(a.to(dtype), b.to(dtype), backward=backward, tier=tier)

    return kernel


for _key in ("AutocastCPU", "AutocastCUDA"):
    torch.library.impl("turbogelu::swiglu", _key, _swiglu_autocast(_key))


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
    elif name in ("tanh", "softcap"):
        # grad * max(1 - q^2, +0) as the CPU kernels (family.h): +0 where q rounds out of
        # [-1, 1], never a negative derivative; NaN passes (|NaN| > 1 is false)
        q = y if name == "tanh" else y * _autograd._inverse32(cap)
        out = torch.where(q.abs() > 1, grad * 0.0, torch.ops.aten.tanh_backward(grad, q))
    else:
        out = grad * y * math.log(2.0)
    return out.to(dtype)


def _register_from_output(name: str) -> None:
    op = f"{name}_backward_from_output"
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


for _name in FROM_OUTPUT_FUNCTIONS:
    _register_from_output(_name)


# ------------------------------------------------------------ autograd (turbogelu/_autograd.py)


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


# softcap's default likewise differentiates from the saved result y = cap tanh(x / cap), as
# PyTorch's autograd of c * tanh(x / c) does from its saved tanh: grad * (1 - (y / cap)^2),
# one pass of three multiplies and an fma (the accuracy trade of tanh's above);
# "direct" and "matched" recompute it from x.
def softcap_from_output(grad: torch.Tensor, y: torch.Tensor, cap: float) -> torch.Tensor:
    """softcap's autograd default: grad * (1 - q^2), q = y * fl(1 / cap) (no recomputation
    from x)."""
    return _ops.softcap_backward_from_output(grad, y, cap)


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


# Every op's derivatives in reverse and forward mode and its batching rule (after the fake
# kernels, which the Functions' traces call).
_autograd.install()
# Under torch.compile, the ops' programs written into Inductor's generated code (fused with
# their neighbours), registered when Inductor loads.
_inductor.install()


# ---------------------------------------------------- public functions: GELU and the CPU switches


def _check_tensor(x, op: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"turbogelu.{op}: expected a torch.Tensor, got {type(x).__name__}")


def gelu(
    x: torch.Tensor,
    approximate: str = "none",
    *,
    backward: str = "default",
    tier: str = "accurate",
) -> torch.Tensor:
    """Polynomial GELU, a drop-in for ``torch.nn.functional.gelu(x, approximate)``.

    Autograd-aware and ``torch.compile``-friendly. ``approximate="tanh"`` uses a polynomial
    fitted to PyTorch's tanh form. ``backward`` picks the derivative used by autograd
    ("default": the spec's more accurate one; "direct", a fit of GELU'; or "matched", the
    derivative of the forward). ``tier``: "accurate" (the default) or "paper", the source
    paper's D5 program x/2 + P5(x^2) (bfloat16 coefficients, clamp 3.34, max error ~1.5e-3;
    fitted to the tanh form too for ``approximate="tanh"``; data/specs/gelu_<mode>/paper.json).
    """
    _check_tensor(x, "gelu")
    _check_args(approximate, backward, tier)  # gelu(x, None): not "failed to match any schema"
    return _autograd.call("gelu", x, approximate, backward=backward, tier=tier)


def _compiled_inplace(name: str, x: torch.Tensor, compute) -> torch.Tensor:
    """An in-place function under torch.compile: ``x.copy_(the out-of-place op)``, which
    Inductor lowers into one loop that writes x (the in-place op itself would stay an opaque
    call); the same values as the out-of-place op compiled, and the eager form's refusal of
    autograd."""
    if x.requires_grad and torch.is_grad_enabled():
        raise RuntimeError(
            f"turbogelu.{name}: the in-place / out= form does not support autograd (an input "
            "requires grad); use the functional form, or run under torch.no_grad()"
        )
    return x.copy_(compute())


def gelu_(x: torch.Tensor, approximate: str = "none", *, tier: str = "accurate") -> torch.Tensor:
    """In-place polynomial GELU (no autograd: refuses a tensor that requires grad)."""
    _check_tensor(x, "gelu_")
    _check_args(approximate, tier=tier)
    if torch.compiler.is_compiling():
        return _compiled_inplace("gelu_", x, lambda: _ops.gelu(x, approximate, tier=tier))
    _ops.gelu_(x, approximate, tier)
    return x


def gelu_op(
    x: torch.Tensor,
    approximate: str = "none",
    *,
    tier: str = "accurate",
    out: torch.Tensor | None = None,
):
    """The raw forward op (no autograd needed); writes into ``out`` when given."""
    _check_tensor(x, "gelu_op")
    _check_args(approximate, tier=tier)
    if out is None:
        return _ops.gelu(x, approximate, tier=tier)
    _ops.gelu.out(x, approximate, tier=tier, out=out)
    return out


def gelu_backward_op(
    grad: torch.Tensor,
    x: torch.Tensor,
    approximate: str = "none",
    backward: str = "default",
    *,
    tier: str = "accurate",
    out: torch.Tensor | None = None,
):
    """The raw backward op: ``grad * gelu'(x)`` by the selected derivative polynomial."""
    _check_tensor(grad, "gelu_backward_op")
    _check_tensor(x, "gelu_backward_op")
    if out is None:
        return _ops.gelu_backward(grad, x, approximate, backward, tier)
    _ops.gelu_backward.out(grad, x, approximate, backward, tier, out=out)
    return out


def cpu_isa() -> str:
    """The CPU instruction set the kernels use now: 'avx512bf16', 'avx512', 'avx2' (x86-64),
    'neonbf16', 'neon' (ARM64) or 'scalar'."""
    return _ops._cpu_isa()


def cpu_isas_available() -> list[str]:
    """Instruction sets this CPU can run, best first (TURBOGELU_CPU_ISA picks one)."""
    return list(_ops._cpu_isas())


@contextlib.contextmanager
def use_cuda_packed(on: bool = True):
    """Inside the block, bfloat16 ops on CUDA take the opt-in packed path (``__nv_bfloat162``
    arithmetic with its own fits, turbogelu/approx/packed.py: max |error| within 2x PyTorch's
    own in bfloat16, not the float32 path's bounds; ``backward=`` then picks nothing: the
    packed backward is one fit of GELU'). The activation family's ops take it in their
    ``tier="paper"`` only: the paper's Table 2 programs in ``__nv_bfloat162`` arithmetic
    (turbogelu/approx/packed_family.py: its semantics and measured errors); their accurate tier
    is unaffected. TURBOGELU_CUDA_PACKED=1 turns it on for a process. Other dtypes and devices
    are unaffected.

    Unlike the CPU switches this one is process-wide (every thread sees it while the block
    runs): autograd computes a CUDA tensor's backward on its own device thread, which a
    per-thread switch would not reach."""
    previous = _ops._set_cuda_packed(on)
    try:
        yield
    finally:
        _ops._set_cuda_packed(previous)


CPU_KERNELS = ("auto", "poly", "cells")


@contextlib.contextmanager
def _switched(setter, name: str, allowed: tuple, what: str):
    """setter(name) inside the block, the previous setting restored after it; the name is
    checked first so that nothing is switched on a bad one. The CPU setters act on the
    calling thread only (kernels/cpu/dispatch.cpp): another thread keeps its own setting, or
    the process's (the environment variable's). Autograd runs a CPU tensor's backward on the
    thread that calls backward(), so call it inside the block to get the block's program."""
    if name not in allowed:
        raise ValueError(f"turbogelu.{what}: expected one of {allowed}, got {name!r}")
    previous = setter(name)
    try:
        yield
    finally:
        setter(previous)


@contextlib.contextmanager
def use_cpu_kernel(name: str):
    """Inside the block, the CPU ops run program ``name``: ``"auto"`` (the default: cells
    where the CPU has AVX-512 two-table permutes, the polynomial on AVX2 and scalar code),
    ``"poly"`` (the shipped degree-8 polynomial, the program CUDA and Metal run) or
    ``"cells"`` (a cubic in each of 32 cells, turbogelu/approx/cells.py: about 10x more
    accurate). The same choice holds for the family's sigmoid, tanh and SiLU (and softcap and
    SwiGLU through them; turbogelu/approx/family_cells.py: several times more accurate than
    their polynomials); exp2 has a polynomial only. On this thread only;
    TURBOGELU_CPU_KERNEL=auto|poly|cells sets it for the process. poly_gelu's run-time
    coefficients always take the polynomial."""
    with _switched(_ops._set_cpu_kernel, name, CPU_KERNELS, "use_cpu_kernel"):
        yield


def cpu_kernel() -> str:
    """The CPU program the ops run now: 'poly' or 'cells'."""
    return _ops._cpu_kernel()


# The dtypes and the plain ops (rows of the kernels' table) whose degrees cpu_program() gives.
_DEGREE_DTYPES = ("float32", "float16", "bfloat16", "float64")


def cpu_program() -> dict:
    """What the CPU ops run now and why: ``{"program": "cells" | "poly", "isa": ...,
    "reason": ..., "store": ..., "degrees": ...}`` (the instruction set as ``cpu_isa()``; the
    reason says whether the program is this ISA's default or forced, and by what; ``store``
    how outputs are written: non-temporal stores above a size taken from the CPU's caches, or
    forced by TURBOGELU_CPU_STORE / ``use_cpu_store``). ``degrees[op][dtype]`` is
    ``{"forward": d, "direct": d, "matched": d}``, the degrees of the accurate tier's programs
    as the kernels run them in that dtype: a cells program's per cell, else the polynomial's
    (op: a row of the kernels' table, GELU's as ``gelu_none`` and ``gelu_tanh``). A 16-bit
    dtype may run a cells program of lower degree than float32 (docs/programs.md)."""
    program, isa, reason, store = _ops._cpu_program()
    degrees = {}
    for row in (*_table.GELU, *_table.OPS):
        if row.kind != "Plain":
            continue
        degrees[row.name] = {}
        for name in _DEGREE_DTYPES:
            f, d, m = _ops._cpu_degrees(row.name, getattr(torch, name))
            degrees[row.name][name] = {"forward": f, "direct": d, "matched": m}
    return {"program": program, "isa": isa, "reason": reason, "store": store, "degrees": degrees}


CPU_STORES = ("auto", "plain", "stream")


@contextlib.contextmanager
def use_cpu_store(name: str):
    """Inside the block, CPU outputs are written with ``"plain"`` or ``"stream"``
    (non-temporal) stores, or as ``"auto"`` (the default) chooses from the bytes and the
    CPU's caches (kernels/cpu/dispatch.cpp). The bits are the same; the benchmark times
    each. On this thread only; TURBOGELU_CPU_STORE sets it for the process."""
    with _switched(_ops._set_cpu_store, name, CPU_STORES, "use_cpu_store"):
        yield


@contextlib.contextmanager
def use_cpu_isa(name: str):
    """Run the CPU kernels with one instruction set inside the block, on this thread (for
    tests, benchmarks); TURBOGELU_CPU_ISA sets it for the process."""
    previous = _ops._set_cpu_isa(name)
    try:
        yield
    finally:
        _ops._set_cpu_isa(previous)


# ------------------------------------------------------------- public functions: the family


# Every function takes ``tier``: "accurate" (the default; the bounds below) or "paper" (the
# source paper's Table 2 programs: degree 2-4, errors of a few 1e-3, data/specs/<fn>/paper.json).


def sigmoid(x: torch.Tensor, *, backward: str = "default", tier: str = "accurate") -> torch.Tensor:
    """Polynomial sigmoid, a drop-in for ``torch.sigmoid``: float32 within 3e-5 of the exact
    function everywhere; bfloat16 and float16 within 1 ulp of the correctly rounded value for
    x >= -3 (below, within 3e-5 beyond half an ulp). Autograd-aware: by default the gradient
    is PyTorch's ``grad * y * (1 - y)`` on the saved result y (FROM_OUTPUT); ``backward=
    "direct"`` or ``"matched"`` recompute the derivative from x as gelu's do."""
    _check_tensor(x, "sigmoid")
    return _autograd.call("sigmoid", x, backward=backward, tier=tier)


def tanh(x: torch.Tensor, *, backward: str = "default", tier: str = "accurate") -> torch.Tensor:
    """Polynomial tanh, a drop-in for ``torch.tanh``: float32 within 3e-5 everywhere; every
    bfloat16 and float16 input within 1 ulp of the correctly rounded value. The default
    gradient is ``grad * (1 - y^2)`` on the saved result, as sigmoid's."""
    _check_tensor(x, "tanh")
    return _autograd.call("tanh", x, backward=backward, tier=tier)


def silu(
    x: torch.Tensor, inplace: bool = False, *, backward: str = "default", tier: str = "accurate"
) -> torch.Tensor:
    """Polynomial SiLU, a drop-in for ``torch.nn.functional.silu(x, inplace)`` (bounds as
    sigmoid's). ``inplace=True`` writes into x, unless the call is differentiated (x requires
    grad, carries a forward-mode tangent, or runs under a ``torch.func`` transform): then the
    result is a new tensor, as the out-of-place op computes it, so that ``SiLU(inplace=True)``
    trains (``silu_`` itself refuses autograd)."""
    _check_tensor(x, "silu")
    if inplace and not _autograd.differentiating(x):
        return silu_(x, tier=tier)
    return _autograd.call("silu", x, backward=backward, tier=tier)


def softcap(
    x: torch.Tensor, cap: float, *, backward: str = "default", tier: str = "accurate"
) -> torch.Tensor:
    """``cap * tanh(x / cap)`` (Gemma 2's logit soft-capping) by the polynomial tanh: float32
    within 3e-5 * cap; ``cap`` a positive finite float. The default gradient is ``grad * (1 -
    (y / cap)^2)`` on the saved result y, as PyTorch's autograd of the composite computes it;
    ``backward="direct"`` or ``"matched"`` recompute it from x."""
    _check_tensor(x, "softcap")
    _check_cap_type(cap)
    return _autograd.call("softcap", x, float(cap), backward=backward, tier=tier)


def swiglu(
    a: torch.Tensor, b: torch.Tensor, *, backward: str = "default", tier: str = "accurate"
) -> torch.Tensor:
    """``silu(a) * b`` in one pass (its backward gives both gradients in one pass); a and b of
    one shape and dtype. float32 within 3e-5 * |b| beyond the rounding of the result."""
    _check_tensor(a, "swiglu")
    _check_tensor(b, "swiglu")
    return _autograd.call("swiglu", a, b, backward=backward, tier=tier)


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
    _check_tensor(x, "exp2")
    return _autograd.call("exp2", x, backward=backward, tier=tier)


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
    _check_tensor(x, "softplus")
    _check_softplus_args(beta, threshold)
    return _autograd.call("softplus", x, backward=backward, tier=tier)


def softmax(x: torch.Tensor, dim: int = -1, *, tier: str = "accurate") -> torch.Tensor:
    """Softmax along ``dim`` by this package's exp2 (CPU; float32, float16, bfloat16, computed
    in float32): the row's max subtracted, t = (x - max) * log2(e), exp2(t) in the ``tier``
    asked for and summed in float32, then scaled by 1 / sum. A contiguous result; a NaN makes
    its row NaN (as torch.softmax). Autograd: (grad - sum(grad * y)) * y from the result."""
    _check_tensor(x, "softmax")
    if x.dim() == 0:  # as torch.softmax: a scalar's softmax along its only "dimension"
        if not -1 <= dim <= 0:
            raise IndexError(f"turbogelu.softmax: dim {dim} is out of range for a 0-dim tensor")
        return softmax(x.reshape(1), 0, tier=tier).reshape(())
    return _autograd.call("softmax", x, dim, tier=tier)


def _inplace(name: str):
    op = getattr(_ops, f"{name}_")

    def fn(x: torch.Tensor, tier: str = "accurate") -> torch.Tensor:
        _check_tensor(x, f"{name}_")
        if torch.compiler.is_compiling():
            return _compiled_inplace(f"{name}_", x, lambda: getattr(_ops, name)(x, tier=tier))
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
    _check_tensor(x, "softcap_")
    _check_cap_type(cap, "softcap_")
    if torch.compiler.is_compiling():
        return _compiled_inplace("softcap_", x, lambda: _ops.softcap(x, float(cap), tier=tier))
    _ops.softcap_(x, float(cap), tier)
    return x


def _check_tensors(name: str, args: tuple, op: str, grad: bool = False) -> None:
    """The raw ops' tensor arguments (grad, then x, or swiglu's a and b) are tensors: a clear
    error here, not the dispatcher's "failed to match any schema"."""
    count = (2 if _table.op(name).kind == "Gated" else 1) + grad
    for t in args[:count]:
        _check_tensor(t, op)


def forward_op(name: str, *args, out: torch.Tensor | None = None, tier: str = "accurate", **kw):
    """The raw forward op ``name`` (no autograd needed; ``out=`` writes into out)."""
    if name not in FUNCTIONS:
        raise ValueError(f"turbogelu.forward_op: name must be one of {FUNCTIONS}, got {name!r}")
    _check_tensors(name, args, "forward_op")
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
    _check_tensors(name, (grad, *args), "backward_op", grad=True)
    op = getattr(_ops, f"{name}_backward")
    if out is None:
        return op(grad, *args, backward, tier)
    if name == "swiglu":
        op.out(grad, *args, backward, tier, grad_a=out[0], grad_b=out[1])
    else:
        op.out(grad, *args, backward, tier, out=out)
    return out


# ---------------------------------------------------------------- runtime coefficients
# turbogelu::poly_gelu / poly_gelu_backward (kernels/cpu/poly_ops.cpp): the same kernels with
# a coefficient set given at run time, for any compiled degree (2 to 12), so experiments time
# fitted specs without rebuilding; poly_family the float32 forward of the family's other forms
# (the sweep's times). Not part of the autograd surface.


def _check_poly_fake(coeffs, clamp, scale, op: str) -> None:
    if coeffs.dtype != torch.float32 or coeffs.dim() != 1:
        raise TypeError(f"turbogelu.{op}: coeffs must be a 1-D float32 tensor")
    if not (math.isfinite(clamp) and clamp > 0 and math.isfinite(scale)):
        raise ValueError(f"turbogelu.{op}: clamp must be positive and finite, scale finite")


@torch.library.register_fake("turbogelu::poly_gelu")
def _poly_gelu_fake(x, coeffs, clamp, scale):
    check_same_device("poly_gelu", x, coeffs=coeffs)
    _check_poly_fake(coeffs, clamp, scale, "poly_gelu")
    _check_dtype(x, "poly_gelu")
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::poly_gelu_backward")
def _poly_gelu_backward_fake(grad, x, coeffs, clamp, scale):
    check_same_device("poly_gelu_backward", x, coeffs=coeffs)
    _check_poly_fake(coeffs, clamp, scale, "poly_gelu_backward")
    _check_backward_fake(grad, x, "poly_gelu_backward")
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::poly_family")
def _poly_family_fake(x, coeffs, form, in_y, clamp, scale, below, above):
    check_same_device("poly_family", x, coeffs=coeffs)
    _check_poly_fake(coeffs, clamp, scale, "poly_family")
    if x.dtype != torch.float32:
        raise TypeError(f"turbogelu.poly_family: x must be float32, got {x.dtype}")
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def poly_degrees() -> list[int]:
    """Degrees of P with compiled kernels (what ``poly_gelu`` accepts)."""
    return list(_ops._poly_degrees())


def poly_args(spec) -> tuple[torch.Tensor, float, float]:
    """``(coeffs, clamp, scale)`` for ``poly_gelu`` from a ``turbogelu.approx.PolySpec``.

    The kernels compute ``x * fma(x, P(z), 1/2)`` (forward) and ``fma(x, P(z), 1/2)``
    (backward) with ``z = fma(x*x, scale, -1)``: the PolySpec forms with variable "y", shift,
    and factor 2 for an "x/2 + even" target (GELU) or factor 1 for a "1/2 + odd" one (GELU').
    The result is ``polyspec.replay(spec.with program "turbogelu", precision="float32")``.
    """
    red = spec.tgt.reduction
    want = {"x/2 + even": 2, "1/2 + odd": 1}.get(red)
    if spec.variable != "y" or not spec.shift or spec.factor != want:
        raise ValueError(
            "turbogelu.poly_args: the kernels evaluate x/2 + x^2 P(z) or 1/2 + x P(z) with "
            "z = x^2 * scale - 1 (variable 'y', shift, factor 2 or 1); got " + spec.describe()
        )
    if not math.isfinite(spec.clamp):
        raise ValueError("turbogelu.poly_args: the spec needs a finite clamp")
    coeffs = torch.tensor(spec.coefficients, dtype=torch.float64).to(torch.float32)
    return coeffs, float(spec.clamp), float(spec.scale)


def poly_gelu(x: torch.Tensor, spec) -> torch.Tensor:
    """The forward kernel with ``spec``'s coefficients (a GELU-like "x/2 + even" PolySpec)."""
    return _ops.poly_gelu(x, *poly_args(spec))


def poly_gelu_backward(grad: torch.Tensor, x: torch.Tensor, spec) -> torch.Tensor:
    """The backward kernel, ``grad * (1/2 + x P(z))``, with a "1/2 + odd" spec's coefficients."""
    return _ops.poly_gelu_backward(grad, x, *poly_args(spec))


def program_args(spec) -> tuple:
    """``(coeffs, form, in_y, clamp, scale, below, above)`` for ``poly_family`` from a
    ``turbogelu.approx.PolySpec`` of any function whose form the family's kernels evaluate
    (``codegen.family_form``: a ValueError naming the spec otherwise). The result is
    ``polyspec.replay(spec)`` in float32 (the kernels' order, FMAs fused)."""
    from .approx import codegen

    if spec.target == "exp2_frac":
        return _exp2_args(spec)
    form, in_y = codegen.family_form(spec)
    if form == "XHalfPlusEven" and in_y:  # family_form refuses it; GELU's form: poly_gelu
        raise ValueError(f"turbogelu.program_args: {spec.describe()} is GELU's form: poly_gelu")
    coeffs = torch.tensor(spec.coefficients, dtype=torch.float64).to(torch.float32)
    below, above = codegen.family_tails(spec)
    return (coeffs, codegen.FORM_CODES[form], in_y, float(spec.clamp), float(spec.scale),
            below, above)  # fmt: skip


def _exp2_args(spec) -> tuple:
    """``program_args`` of an exp2 fraction spec: 2^x = 2^n P(f) with n = rint(x - 1/2) and
    f = x - n in [0, 1] (family_eval.h's Exp2Floor), P in f itself: the spec must be fitted
    on [0, 1] without the shifted variable (``shift=False``)."""
    from .approx import codegen

    if spec.shift or spec.variable != "u" or spec.factor != 0 or spec.fit_interval != 1.0:
        raise ValueError(
            "turbogelu.program_args: the exp2 kernels evaluate P(f) for f in [0, 1] in f itself "
            f"(variable 'u', factor 0, no shift, fit interval 1); got {spec.describe()}"
        )
    coeffs = torch.tensor(spec.coefficients, dtype=torch.float64).to(torch.float32)
    return (coeffs, codegen.FORM_CODES["Exp2Floor"], False, 1.0, 0.0, 0.0, 0.0)


def poly_family(x: torch.Tensor, spec) -> torch.Tensor:
    """The float32 forward of ``spec`` (a PolySpec of the family's forms, ``program_args``)
    through the CPU kernels' element function and loop, coefficients given at run time."""
    return _ops.poly_family(x, *program_args(spec))
