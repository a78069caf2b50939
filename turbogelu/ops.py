"""The op surface: torch.ops.turbogelu.* with fake (meta) kernels and autograd.

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
"""

from __future__ import annotations

import contextlib
import math

import torch

# The activation family's registrations (fake kernels, autograd) come with the ops, so that
# torch.ops.turbogelu.sigmoid & co. are complete whichever module was imported; family.py
# loads the extension (_ext.load_library) and does not import this module.
from . import family as _family  # noqa: F401
from ._checks import DTYPES as DTYPES
from ._checks import check_args as _check_args
from ._checks import check_dtype as _check_dtype
from ._checks import check_grad_matches, check_out, check_same_device
from ._ext import load_library

load_library()
_ops = torch.ops.turbogelu


# ---------------------------------------------------------------- fake kernels


@torch.library.register_fake("turbogelu::gelu")
def _gelu_fake(x, approximate="none", *, backward="default"):
    _check_args(approximate, backward)
    _check_dtype(x, "gelu")
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::gelu.out")
def _gelu_out_fake(x, approximate="none", *, out):
    check_same_device("gelu", x, out=out)
    _check_args(approximate)
    _check_dtype(x, "gelu")
    check_out(out, x, "gelu")


@torch.library.register_fake("turbogelu::gelu_")
def _gelu_inplace_fake(x, approximate="none"):
    _check_args(approximate)
    _check_dtype(x, "gelu_")


def _check_backward_fake(grad, x, op="gelu_backward", **out):
    check_same_device(op, x, grad=grad, **out)
    _check_dtype(x, "gelu_backward")
    check_grad_matches(grad, x)


@torch.library.register_fake("turbogelu::gelu_backward")
def _gelu_backward_fake(grad, x, approximate="none", backward="default"):
    _check_args(approximate, backward)
    _check_backward_fake(grad, x)
    return torch.empty_like(x)


@torch.library.register_fake("turbogelu::gelu_backward.out")
def _gelu_backward_out_fake(grad, x, approximate="none", backward="default", *, out):
    _check_args(approximate, backward)
    _check_backward_fake(grad, x, out=out)
    check_out(out, x, "gelu_backward")


# ---------------------------------------------------------------- autograd


def _setup_context(ctx, inputs, keyword_only_inputs, output):
    (x, *rest) = inputs
    ctx.approximate = rest[0] if rest else "none"
    ctx.backward = keyword_only_inputs.get("backward", "default")
    ctx.save_for_backward(x)


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return _ops.gelu_backward(grad, x, ctx.approximate, ctx.backward), None


torch.library.register_autograd("turbogelu::gelu", _backward, setup_context=_setup_context)


def _backward_of_backward(ctx, grad):
    raise NotImplementedError(
        "turbogelu.gelu_backward is not differentiable (no second derivative is implemented)"
    )


def _setup_backward_context(ctx, inputs, output):
    pass


torch.library.register_autograd(
    "turbogelu::gelu_backward", _backward_of_backward, setup_context=_setup_backward_context
)


# ---------------------------------------------------------------- public functions


def _check_tensor(x, op: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"turbogelu.{op}: expected a torch.Tensor, got {type(x).__name__}")


def gelu(x: torch.Tensor, approximate: str = "none", *, backward: str = "default") -> torch.Tensor:
    """Polynomial GELU, a drop-in for ``torch.nn.functional.gelu(x, approximate)``.

    Autograd-aware and ``torch.compile``-friendly. ``approximate="tanh"`` uses a polynomial
    fitted to PyTorch's tanh form. ``backward`` picks the derivative used by autograd
    ("default" = "direct", a fit of GELU'; or "matched", the derivative of the forward).
    """
    _check_tensor(x, "gelu")
    _check_args(approximate, backward)  # gelu(x, None): not "failed to match any schema"
    return _ops.gelu(x, approximate, backward=backward)


def gelu_(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """In-place polynomial GELU (no autograd: refuses a tensor that requires grad)."""
    _check_tensor(x, "gelu_")
    _check_args(approximate)
    _ops.gelu_(x, approximate)
    return x


def gelu_op(x: torch.Tensor, approximate: str = "none", *, out: torch.Tensor | None = None):
    """The raw forward op (no autograd needed); writes into ``out`` when given."""
    _check_tensor(x, "gelu_op")
    _check_args(approximate)
    if out is None:
        return _ops.gelu(x, approximate)
    _ops.gelu.out(x, approximate, out=out)
    return out


def gelu_backward_op(
    grad: torch.Tensor,
    x: torch.Tensor,
    approximate: str = "none",
    backward: str = "default",
    *,
    out: torch.Tensor | None = None,
):
    """The raw backward op: ``grad * gelu'(x)`` by the selected derivative polynomial."""
    _check_tensor(grad, "gelu_backward_op")
    _check_tensor(x, "gelu_backward_op")
    if out is None:
        return _ops.gelu_backward(grad, x, approximate, backward)
    _ops.gelu_backward.out(grad, x, approximate, backward, out=out)
    return out


def cpu_isa() -> str:
    """The CPU instruction set the kernels use now: 'avx512bf16', 'avx512', 'avx2' or 'scalar'."""
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


def cpu_program() -> dict:
    """What the CPU ops run now and why: ``{"program": "cells" | "poly", "isa": ...,
    "reason": ..., "store": ...}`` (the instruction set as ``cpu_isa()``; the reason says
    whether the program is this ISA's default or forced, and by what; ``store`` how outputs
    are written: non-temporal stores above a size taken from the CPU's caches, or forced by
    TURBOGELU_CPU_STORE / ``use_cpu_store``)."""
    program, isa, reason, store = _ops._cpu_program()
    return {"program": program, "isa": isa, "reason": reason, "store": store}


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


# ---------------------------------------------------------------- runtime coefficients
# turbogelu::poly_gelu / poly_gelu_backward (kernels/cpu/poly_ops.cpp): the same kernels with
# a coefficient set given at run time, for any compiled degree (2 to 12), so experiments time
# fitted specs without rebuilding. Not part of the autograd surface.


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
