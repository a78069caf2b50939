"""The ops under torch.compile: Inductor lowerings that write each op's polynomial program into
the generated code, so that it fuses with the pointwise operations and reductions around it
(C++ on the CPU, Triton on CUDA), instead of calling the op as an opaque kernel.

Every forward op, backward op and from-output op is lowered from the kernels' own programs
(turbogelu/_programs.py reads them back from the compiled table and runs them here in
Inductor's operations, ``Inductor`` below): the same sequence of operations as
kernels/include/turbogelu/family_eval.h, with true fused multiply-adds. So the compiled code
gives the bits of the eager polynomial kernels (``use_cpu_kernel("poly")``; CUDA and Metal
run only that program), in every dtype (16-bit data widened, computed in float32 and rounded
once, as the kernels do). Where eager runs the cells program (AVX-512 CPUs by default), the
compiled code still runs the polynomial: other bits, the same bounds. softmax is lowered
around the exp2 program with Inductor's reductions (its sum in Inductor's order, within a
stated bound of the kernel's; the CPU only, where the op has a kernel). The mutating ops
(out=, in place) stay calls, but the package's in-place functions (gelu_, silu_, ...) become
``x.copy_(op(x))`` under torch.compile (ops.py), which is lowered. torch.export does not
lower: it keeps the named ops; eager keeps the hand-written kernels.

Private APIs of torch (checked on torch 2.14.1 by tests/test_inductor.py): the dictionary
``torch._inductor.lowering.user_lowerings``, ``make_pointwise`` and ``ops``, and ``ops.fma``,
which the code generators write as a fused multiply-add (C++ ``std::fma`` and
``at::vec::fmadd``, Triton ``tl.fma``; the C++ is compiled with -ffp-contract=off, so a
multiply and an add stay two roundings). Where any of them is missing or fma is not fused
for a device, the ops stay opaque calls there under torch.compile and a warning says so;
which way it went is part of torch.compile's cache tag, so that a cached graph never brings
back the other.

Importing Inductor costs seconds, so nothing here runs at ``import turbogelu``: ``install``
registers the lowerings when ``torch._inductor.lowering`` is first imported (an import hook),
or at once if it already is.
"""

from __future__ import annotations

import importlib.machinery
import struct
import sys
import warnings

import torch

from . import _programs, _table

LOWERING_MODULE = "torch._inductor.lowering"
_ops = torch.ops.turbogelu
_state: dict = {"fma": {}}  # device -> whether ops.fma is fused there (register())
# ln 2 as the from-output kernels hold it (family.h): rounded to float32, or to double
LN2 = {False: struct.unpack("f", struct.pack("f", 0.6931471805599453))[0], True: 0.6931471805599453}
# exp2's 2^m from m's bits: (mantissa bits, bias, integer type) per working type
_POW2_BITS = {False: (23, 127, torch.int32), True: (52, 1023, torch.int64)}
_MAGIC = {False: 1.5 * 2.0**23, True: 1.5 * 2.0**52}  # family_eval.h's Exp2Limits.magic


def _f32(v: float) -> float:
    """v rounded to float32 (as the kernels hold a cap)."""
    return struct.unpack("f", struct.pack("f", v))[0]


class Inductor:
    """_programs' operations in Inductor's define-by-run ``ops``, in the working type (float32,
    or float64 for float64 data)."""

    # exp2's window by selects after the program, not a clamp before it (_programs._exp2):
    # on the Sapphire Rapids Xeon the clamp at the head of the chain (Inductor's where, or its
    # NaN-propagating maximum, both through a mask-to-vector round trip) made the generated
    # float32 loop 2.9x slower (1772 us against 610 for 1M, one thread); the selects at the
    # end, as the other programs have them, cost about nothing
    select_window = True

    def __init__(self, ops, wide: bool):
        self.ops, self.wide = ops, wide
        self.dtype = torch.float64 if wide else torch.float32

    def const(self, v: float, like=None):
        return self.ops.constant(v, self.dtype)

    def __getattr__(self, name: str):
        # mul, add, fma, abs, gt, lt, where, copysign: Inductor's operations of the same name
        if name in ("mul", "add", "fma", "abs", "gt", "lt", "where", "copysign"):
            return getattr(self.ops, name)
        raise AttributeError(name)

    def clamp(self, x, lo: float, hi: float):
        # x < lo ? lo : x, then x > hi ? hi : x (poly_eval.h): NaN compares false and stays
        x = self.where(self.lt(x, self.const(lo)), self.const(lo), x)
        return self.where(self.gt(x, self.const(hi)), self.const(hi), x)

    def rint(self, t):
        magic = self.const(_MAGIC[self.wide])
        return self.ops.sub(self.ops.add(t, magic), magic), None

    def pow2(self, n, handle):
        # 2^floor(n/2) and 2^(n - floor(n/2)), both normal numbers in the window, built from
        # their exponent bits: the values of the kernels' bit split of n + magic exactly
        half = self.ops.floor(self.ops.mul(n, self.const(0.5)))
        return self._power(half), self._power(self.ops.sub(n, half))

    def _power(self, m):
        # 2^m for an integer m of the window: m + magic + bias has m + bias in its low
        # mantissa bits (exact: |m + bias| < 2^22, 2^51), shifted into the exponent field, the
        # magic's own bits shifting out. No float-to-integer conversion: Inductor writes that
        # one as a scalar loop for 16-bit data (two vectors per step), which made exp2 of
        # bfloat16 5x slower than PyTorch's
        shift, bias, itype = _POW2_BITS[self.wide]
        biased = self.ops.add(m, self.const(_MAGIC[self.wide] + bias))
        bits = self.ops.to_dtype_bitcast(biased, itype, self.dtype)
        bits = self.ops.bitwise_left_shift(bits, self.ops.constant(shift, itype))
        return self.ops.to_dtype_bitcast(bits, self.dtype, itype)


def _dtype_ok(*tensors) -> bool:
    return all(t.get_dtype() in (torch.float32, torch.float64, torch.float16, torch.bfloat16)
               for t in tensors)  # fmt: skip


def _lowering(op, build):
    """The lowering of ``op`` from ``build(B, *args, **kwargs) -> (a function of the loaded
    inputs, or a tuple of them for each output; the inputs)``, called with every argument
    (the schema's defaults filled in): the inputs widened to the working type, each function's
    value stored in the output's dtype (rounded once). None (the op stays an opaque call)
    where the arguments are not what the programs handle (a symbolic cap)."""
    from torch._inductor.lowering import make_pointwise
    from torch._inductor.virtualized import ops

    from ._autograd import _schema_call

    def lower(*args, **kwargs):
        tensors = [a for a in args if hasattr(a, "get_dtype")]
        device = tensors[0].get_device()
        kind = "cpu" if device is None else device.type
        if not _state["fma"].get(kind) or not _dtype_ok(*tensors):
            return None  # (MPS: Inductor's Metal code is not tested here; the op is called)
        B = Inductor(ops, tensors[0].get_dtype() == torch.float64)
        pos, kw = _schema_call(op, args, kwargs)
        made = build(B, *pos, **kw)
        if made is None:
            return None
        fns, inputs = made
        outs = []
        for fn in fns if isinstance(fns, tuple) else (fns,):

            def inner(*loaded, fn=fn):
                return fn(*(ops.to_dtype(v, B.dtype) for v in loaded))

            outs.append(make_pointwise(inner)(*inputs))
        return tuple(outs) if isinstance(fns, tuple) else outs[0]

    return lower


def _cap(cap):
    """(cap, 1/cap) as the kernels hold them (ops_common.h), or None for a cap that is not a
    number at compile time."""
    if not isinstance(cap, (int, float)):
        return None
    c = _f32(float(cap))
    return c, _f32(1.0 / c)


def _bit_casts_scalar(x) -> bool:
    """Whether Inductor's C++ would write exp2's bit casts (2^n from its exponent bits) as a
    loop over lanes through memory: for 16-bit data on the CPU, whose loops step two float32
    vectors at a time (torch 2.14.1: a cast of one vector the C++ compiler folds away, of two
    it does not). There, measured on the Sapphire Rapids Xeon (one thread, 1M bfloat16),
    compiled exp2 took 3.7 ms against 0.75 for PyTorch's compiled exp2 and 0.60 for the op's
    kernel, and compiled softmax 9.1 ms against 1.6 for the kernel: so exp2 and softmax of
    16-bit data stay op calls on the CPU (still under the compiler, not fused)."""
    device = x.get_device()
    on_cpu = device is None or device.type == "cpu"
    return on_cpu and x.get_dtype() in (torch.float16, torch.bfloat16)


def _kind(name: str) -> str:
    return "Plain" if name == "gelu" else _table.op(name).kind


def _forward(name: str):
    """f(x), cap f(x fl(1/cap)) or f(a) b (family_eval.h's family_forward, scaled_forward,
    gated_forward)."""
    kind, ev = _kind(name), _programs.evaluate

    def build(B, *args, backward, tier="accurate"):
        if name == "exp2" and _bit_casts_scalar(args[0]):
            return None
        if name == "gelu":  # gelu(x, approximate, *, backward, tier)
            p = _programs.program(f"gelu_{args[1]}", tier, "forward")
        else:
            p = _programs.program(name, tier, "forward")
        if kind == "Gated":
            return (lambda a, b: B.mul(ev(p, a, B, B.wide), b)), args[:2]
        if kind == "Scaled":
            caps = _cap(args[1])
            if caps is None:
                return None
            cap, inv = caps
            return (lambda x: B.mul(B.const(cap), ev(p, B.mul(x, B.const(inv)), B, B.wide))), args[
                :1
            ]
        return (lambda x: ev(p, x, B, B.wide)), args[:1]

    return build


def _backward(name: str):
    """grad d(x), grad d(x fl(1/cap)), or swiglu's pair (fl(grad b) d(a), grad f(a))
    (family_backward, scaled_backward, gated_backward)."""
    kind, ev = _kind(name), _programs.evaluate

    def build(B, grad, *args):
        if name == "gelu":  # (grad, x, approximate, backward, tier)
            x, approximate, part, tier = args
            d = _programs.program(f"gelu_{approximate}", tier, part)
            return (lambda g, x: B.mul(g, ev(d, x, B, B.wide))), (grad, x)
        if kind == "Gated":  # (grad, a, b, backward, tier)
            a, b, part, tier = args
            d = _programs.program(name, tier, part)
            f = _programs.program(name, tier, "forward")
            return (
                lambda g, a, b: B.mul(B.mul(g, b), ev(d, a, B, B.wide)),
                lambda g, a, b: B.mul(g, ev(f, a, B, B.wide)),
            ), (grad, a, b)
        if kind == "Scaled":  # (grad, x, cap, backward, tier)
            x, cap, part, tier = args
            caps = _cap(cap)
            if caps is None:
                return None
            d, inv = _programs.program(name, tier, part), caps[1]
            return (lambda g, x: B.mul(g, ev(d, B.mul(x, B.const(inv)), B, B.wide))), (grad, x)
        x, part, tier = args  # (grad, x, backward, tier)
        d = _programs.program(name, tier, part)
        return (lambda g, x: B.mul(g, ev(d, x, B, B.wide))), (grad, x)

    return build


def _from_output(name: str):
    """<fn>_backward_from_output(grad, y[, cap]): family.h's from_output formulas."""

    def build(B, grad, y, *args):
        # (the functions run again at code generation: every ops value is made inside them)
        if name == "sigmoid":  # fl(fl(grad fl(1 - y)) y)
            return (lambda g, y: B.mul(B.mul(g, B.fma(y, B.const(-1.0), B.const(1.0))), y)), (
                grad,
                y,
            )
        if name == "exp2":  # fl(fl(grad y) ln 2)
            return (lambda g, y: B.mul(B.mul(g, y), B.const(LN2[B.wide]))), (grad, y)
        inv = None
        if name == "softcap":
            caps = _cap(args[0])
            if caps is None:
                return None
            inv = caps[1]

        def fn(g, y):  # grad max(fma(-q, q, 1), +0), q = y or y fl(1/cap)
            q = y if inv is None else B.mul(y, B.const(inv))
            d = B.fma(B.mul(q, B.const(-1.0)), q, B.const(1.0))
            return B.mul(g, B.where(B.lt(d, B.const(0.0)), B.const(0.0), d))

        return fn, (grad, y)

    return build


def lowerings() -> dict:
    """{op overload: its lowering}: every forward, backward and from-output op."""
    builds = {"gelu": _forward("gelu"), "gelu_backward": _backward("gelu")}
    for row in _table.OPS:
        builds[row.name] = _forward(row.name)
        builds[f"{row.name}_backward"] = _backward(row.name)
        if row.from_output:
            builds[f"{row.name}_backward_from_output"] = _from_output(row.name)
    made = {
        getattr(_ops, name).default: _lowering(getattr(_ops, name).default, build)
        for name, build in builds.items()
    }
    made[_ops.softmax.default] = _softmax
    return made


# log2(e) rounded to float32, as the softmax kernels hold it (family_loops.h's kSoftmaxLog2e)
LOG2E = _f32(1.4426950408889634)


def _softmax(x, dim=-1, *, tier="accurate"):
    """softmax(x, dim) as the CPU kernel computes it (family_loops.h), in float32: m = amax
    along dim, e = exp2(fl(fl(x - m) log2(e))) by the exp2 op's program, s = the sum of e,
    y = e fl(1/s), rounded once to x's dtype. Built from Inductor's own lowerings (the
    reductions and the broadcasting arithmetic) around the exp2 program, so that it fuses
    with what produces the scores (a softcap) and what consumes them. Not the kernel's bits:
    Inductor sums in its own order (the kernel's is fixed; tests/test_inductor.py bounds the
    difference). None (the op is called) where the kernel would refuse (float64, 0-dim)
    or a dimension is empty, and for 16-bit data (_bit_casts_scalar)."""
    from torch._inductor.lowering import lowerings, make_pointwise, to_dtype
    from torch._inductor.virtualized import ops

    aten = torch.ops.aten
    dtype, device = x.get_dtype(), x.get_device()
    kind = "cpu" if device is None else device.type
    size = x.get_size()
    # the CPU only: elsewhere the eager op refuses (no kernel), so compiled code does too
    if kind != "cpu" or not _state["fma"].get(kind) or not size or _bit_casts_scalar(x):
        return None
    if dtype not in (torch.float32, torch.float16, torch.bfloat16) or any(
        isinstance(n, int) and n == 0 for n in size
    ):
        return None
    d = dim % len(size)
    B = Inductor(ops, False)
    p = _programs.program("exp2", tier, "forward")
    xf = to_dtype(x, torch.float32) if dtype != torch.float32 else x
    m = lowerings[aten.amax.default](xf, [d], True)
    t = lowerings[aten.mul.Tensor](lowerings[aten.sub.Tensor](xf, m), LOG2E)
    e = make_pointwise(lambda v: _programs.evaluate(p, v, B, False))(t)
    s = lowerings[aten.sum.dim_IntList](e, [d], True)
    y = lowerings[aten.mul.Tensor](e, lowerings[aten.reciprocal.default](s))
    return y if dtype == torch.float32 else to_dtype(y, dtype)


# ---------------------------------------------------------------- fused multiply-adds


def fused_fma(common) -> dict[str, bool]:
    """{"cpu": ..., "cuda": ...}: whether Inductor's code generators write ops.fma as a fused
    multiply-add, from its table of pointwise spellings (torch 2.14.1: C++ std::fma, its
    vectors at::vec's fmadd, Triton tl.fma; ``codegen.common.pointwise_overrides_data``,
    loaded with the lowering module). Without it the compiled programs would not be the
    kernels'."""
    data = getattr(common, "pointwise_overrides_data", {}).get("fma")

    def spelled(backend: str) -> str:
        f = getattr(data, backend, None)
        return f("a", "b", "c") if callable(f) else ""

    return {
        "cpu": spelled("cpp").startswith("std::fma(") and "fmadd(" in spelled("cppvec"),
        "cuda": spelled("triton").startswith(("tl.fma(", "libdevice.fma(")),
    }


# ---------------------------------------------------------------- registration


def register(lowering_module, common=None) -> bool:
    """Puts the lowerings into Inductor's user_lowerings, for the devices whose fma is fused,
    and adds that state to torch.compile's cache tag (so that a graph compiled with the ops
    opaque and one with them lowered never share a cache entry). False, with a warning (the
    ops stay opaque calls under torch.compile), where this torch lacks what they need."""
    try:
        user = lowering_module.user_lowerings
        lowering_module.make_pointwise  # noqa: B018 (checked here, used at compile time)
        if common is None:
            from torch._inductor.codegen import common
    except (AttributeError, ImportError) as e:
        _warn(f"lacks what the fused lowerings need ({e})")
        return False
    fused = fused_fma(common)
    _state["fma"] = fused
    for device, ok in fused.items():
        if not ok:
            _warn(f"does not write a fused multiply-add for {device}", device)
    import torch.compiler.config as compiler_config

    tag = "turbogelu-lowered-" + "-".join(f"{d}{int(ok)}" for d, ok in sorted(fused.items()))
    parts = [p for p in compiler_config.cache_key_tag.split("|") if p]
    parts = [p for p in parts if not p.startswith("turbogelu-lowered-")] + [tag]
    compiler_config.cache_key_tag = "|".join(parts)
    if not any(fused.values()):
        return False
    user.update(lowerings())
    return True


def lowered_on(device: str) -> bool:
    """Whether the ops are lowered under torch.compile for ``device`` ("cpu", "cuda") in this
    process (after Inductor has loaded)."""
    return bool(_state["fma"].get(device))


def _warn(what: str, device: str | None = None) -> None:
    where = "" if device is None else f" on {device}"
    warnings.warn(
        f"turbogelu: torch {torch.__version__}'s Inductor {what}; under torch.compile the ops "
        f"stay opaque calls{where}",
        RuntimeWarning,
        stacklevel=3,
    )


class _AfterImport:
    """A meta path finder that runs ``register`` right after Inductor's lowering module is
    first imported (and then removes itself)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != LOWERING_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module):
            exec_module(module)
            register(module)

        spec.loader.exec_module = exec_and_register
        return spec


def install() -> None:
    """Registers the lowerings now if Inductor is loaded, else when it loads."""
    module = sys.modules.get(LOWERING_MODULE)
    if module is not None:
        register(module)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
