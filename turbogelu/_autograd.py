"""Autograd of every op, in every mode PyTorch has: reverse mode (``backward``, ``torch.func.
grad``, ``jacrev``), forward mode (``torch.autograd.forward_ad``, ``torch.func.jvp``,
``jacfwd``) and batching (``torch.func.vmap``).

Each differentiable op has one ``autograd.Function`` here (``FUNCTIONS[name]``) with a
``setup_context``, a ``backward``, a ``jvp`` and a generated vmap rule, built from the op's
``Rule``: what it saves, and its derivative applied to a vector. For every op but the
backward ops that vector product is the same formula in both modes (f'(x) v: the backward op
on v for reverse mode and on the tangent for forward mode; softmax's Jacobian is symmetric).

Two ways in:
* The op itself, ``torch.ops.turbogelu.<name>``: its Autograd kernel (``_kernel``, installed
  in place of ``torch.library.register_autograd``, which has no forward mode: it dropped the
  tangents silently) runs the Function whenever an input requires grad or carries a tangent.
  CPU and CUDA tensors first meet a C++ kernel (kernels/common/autograd.cpp) that sends a call
  nothing differentiates straight below autograd, and the others here: an undifferentiated
  call then costs no Python. torch.compile and torch.export trace this path and keep the
  named ops.
* The public functions (``turbogelu.gelu`` ...) call the op, except under a ``torch.func``
  transform, where PyTorch runs a Python ``autograd.Function`` only if it is applied above the
  transform's dispatch (``torch.autograd.function``'s ``custom_function_call``): there they
  apply the Function directly (``call``). The op under a transform that differentiates it is
  refused with a message that names the public function.

Every functional op also has a batching rule (``torch.library.register_vmap``): the ops are
elementwise on tensors of any layout, so a batched call is one call of the op on the whole
batch (PyTorch's per-example fallback loop, and its warning, are never used).
"""

from __future__ import annotations

import math

import torch
import torch.autograd.forward_ad as fwAD

from . import _programs, _table

_ops = torch.ops.turbogelu
_lib = torch.library.Library("turbogelu", "IMPL")  # the Autograd kernels' registrations

# name -> autograd.Function of the op torch.ops.turbogelu.<name>
FUNCTIONS: dict[str, type] = {}


# ---------------------------------------------------------------- calling convention


def _schema_call(op, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The op's positional arguments (those passed by name moved into place) and keyword-only
    ones, with every default filled in (the dispatcher drops arguments equal to their
    defaults; Inductor passes some positional ones by name)."""
    pos, kw = list(args), dict(kwargs)
    for i, a in enumerate(op._schema.arguments):
        if a.kwarg_only:
            if a.name not in kw and a.has_default_value():
                kw[a.name] = a.default_value
        elif i >= len(pos):
            if a.name in kw:
                pos.append(kw.pop(a.name))
            elif a.has_default_value():
                pos.append(a.default_value)
    return tuple(pos), kw


def _tangent(t) -> torch.Tensor | None:
    return fwAD.unpack_dual(t).tangent if isinstance(t, torch.Tensor) else None


def _requires_grad(tensors) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _has_tangent(tensors) -> bool:
    # no tangent can exist outside a dual_level block (forward_ad's level is then -1)
    if getattr(fwAD, "_current_level", 0) < 0:
        return False
    return any(_tangent(t) is not None for t in tensors)


def differentiating(*tensors) -> bool:
    """Whether a call on ``tensors`` is differentiated: an input requires grad (with grad
    mode on) or carries a forward-mode tangent, or a ``torch.func`` transform is active
    (under torch.compile: requires grad only, what Dynamo traces)."""
    if _requires_grad(tensors):
        return True
    if torch.compiler.is_compiling():
        return False
    return torch._C._are_functorch_transforms_active() or _has_tangent(tensors)


class _Keywords:
    """The op's keyword arguments as one argument of a Function: a leaf to torch.func's
    pytrees (a dict would be flattened, and its in_dims would not match its tangent, None)."""

    __slots__ = ("kw",)

    def __init__(self, kw: dict):
        self.kw = kw


def call(name: str, *args, **kwargs):
    """The public functions' call of op ``name``: under a ``torch.func`` transform (not under
    torch.compile, which traces the op) its Function applied directly; otherwise the op."""
    op = getattr(_ops, name).default
    if not torch.compiler.is_compiling() and torch._C._are_functorch_transforms_active():
        pos, kw = _schema_call(op, args, kwargs)
        return FUNCTIONS[name].apply(*pos, _Keywords(kw))
    return op(*args, **kwargs)


def _differentiated(args: tuple) -> bool:
    """Whether an eager call outside torch.func transforms records a derivative (the C++
    Autograd kernel, kernels/common/autograd.cpp, asks the same of CPU and CUDA tensors)."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return _requires_grad(tensors) or _has_tangent(tensors)


# ---------------------------------------------------------------- the Functions


class Rule:
    """An op's derivative. ``tensors``: how many leading positional arguments are tensors;
    ``save`` picks what setup_context keeps (``ctx.saved``: inputs or the output) and may set
    attributes on ctx; ``vjp(ctx, *grads)`` returns one gradient per tensor input;
    ``jvp(ctx, *tangents)`` the output's tangent from the inputs' (None for an input without
    one). ``ctx.args`` holds the op's non-tensor positional arguments, ``ctx.kw`` (and
    ``save``'s ``params``) its keyword arguments."""

    tensors = 1

    def save(self, ctx, inputs, params, output):
        return inputs

    def vjp(self, ctx, *grads):
        raise NotImplementedError

    def jvp(self, ctx, *tangents):
        raise NotImplementedError


def _make_function(name: str, rule: Rule) -> type:
    op = getattr(_ops, name).default

    def forward(*args):
        *pos, kw = args
        return op(*pos, **kw.kw)

    def setup_context(ctx, inputs, output):
        *pos, kw = inputs
        ctx.args, ctx.kw = tuple(pos[rule.tensors :]), kw.kw
        saved = rule.save(ctx, tuple(pos[: rule.tensors]), kw.kw, output)
        ctx.save_for_backward(*saved)
        ctx.save_for_forward(*saved)

    def backward(ctx, *grads):
        g = rule.vjp(ctx, *grads)
        return (*g, *(None,) * (len(ctx.args) + 1))

    def jvp(ctx, *tangents):
        return rule.jvp(ctx, *tangents[: rule.tensors])

    return type(
        f"{name}_function",
        (torch.autograd.Function,),
        {
            "__doc__": f"torch.ops.turbogelu.{name} with its derivatives (turbogelu._autograd).",
            "generate_vmap_rule": True,
            "forward": staticmethod(forward),
            "setup_context": staticmethod(setup_context),
            "backward": staticmethod(backward),
            "jvp": staticmethod(jvp),
        },
    )


def _kernel(name: str, public: str):
    """The op's Autograd kernel: the Function when the call is differentiated, else the op
    below autograd."""
    op = getattr(_ops, name).default
    after = torch._C._after_autograd_keyset

    def kernel(keyset, *args, **kwargs):
        if _differentiated(args):
            if torch._C._are_functorch_transforms_active():
                raise RuntimeError(
                    f"torch.ops.turbogelu.{name} cannot be differentiated under a torch.func "
                    f"transform (grad, jacrev, jvp, jacfwd, hessian); call {public}, which "
                    "can"
                )
            pos, kw = _schema_call(op, args, kwargs)
            return FUNCTIONS[name].apply(*pos, _Keywords(kw))
        with torch._C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & after, *args, **kwargs)

    return kernel


def _register(name: str, rule: Rule, public: str) -> None:
    FUNCTIONS[name] = _make_function(name, rule)
    _lib.impl(name, _kernel(name, public), "Autograd", with_keyset=True)


def _add(*terms):
    """The sum of the terms that are not None (None if all are)."""
    present = [t for t in terms if t is not None]
    if not present:
        return None
    total = present[0]
    for t in present[1:]:
        total = total + t
    return total


# ---------------------------------------------------------------- the forward ops


class Pointwise(Rule):
    """f(x) (GELU, the Plain family ops) and cap * f(x / cap) (softcap): f'(x) v by the backward
    op on v, from x, or from the saved result y where the default is the from-output formula
    (``from_output(v, y, *args)``)."""

    def __init__(self, name: str, from_output: bool = False, backward_args=None):
        self.name, self.from_output = name, from_output
        # (ctx.args, ctx.kw) -> the backward op's arguments after (grad, x)
        self.backward_args = backward_args or _family_backward_args

    def save(self, ctx, inputs, params, output):
        ctx.from_output = self.from_output and params.get("backward") == "default"
        return (output,) if ctx.from_output else inputs

    def vjp(self, ctx, v):
        (saved,) = ctx.saved_tensors
        if ctx.from_output:
            return (call(f"{self.name}_backward_from_output", v, saved, *ctx.args),)
        return (call(f"{self.name}_backward", v, saved, *self.backward_args(ctx.args, ctx.kw)),)

    def jvp(self, ctx, t):
        return None if t is None else self.vjp(ctx, t)[0]


def _family_backward_args(args, kw):
    return (*args, kw["backward"], kw["tier"])


class SwiGLU(Rule):
    """silu(a) * b: both gradients in one pass of the backward op; a tangent is the sum of the
    two inputs' contributions."""

    tensors = 2

    def vjp(self, ctx, v):
        a, b = ctx.saved_tensors
        return tuple(call("swiglu_backward", v, a, b, ctx.kw["backward"], ctx.kw["tier"]))

    def jvp(self, ctx, ta, tb):
        a, b = ctx.saved_tensors
        args = (ctx.kw["backward"], ctx.kw["tier"])
        da = None if ta is None else call("swiglu_backward", ta, a, b, *args)[0]
        db = None if tb is None else call("swiglu_backward", tb, a, b, *args)[1]
        return _add(da, db)


class Softmax(Rule):
    """y = softmax(x): J v = y (v - sum(v y)) along dim, for either mode (J is symmetric); in
    float32 and rounded once, as the forward and PyTorch's own softmax backward (in bfloat16
    each of the three steps would round)."""

    def save(self, ctx, inputs, params, output):
        return (output,)

    def vjp(self, ctx, v):
        (y,) = ctx.saved_tensors
        dim = ctx.args[0]
        v32, y32 = v.float(), y.float()
        return (((v32 - (v32 * y32).sum(dim, keepdim=True)) * y32).to(y.dtype),)

    def jvp(self, ctx, t):
        return None if t is None else self.vjp(ctx, t)[0]


# ---------------------------------------------------------------- the backward ops


def _inverse32(cap: float) -> torch.Tensor:
    """1 / cap as the kernels hold it (ops_common.h): cap rounded to float32, then a float32
    division; a 0-dim tensor (a float of the trace where torch.compile makes cap symbolic)."""
    return torch.reciprocal(torch.full((), cap, dtype=torch.float32))


def _work(t: torch.Tensor) -> torch.Tensor:
    """16-bit data in float32, as the kernels compute it."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


class Backward(Rule):
    """The backward ops, grad * d(x) with d the derivative program (direct or matched), and
    swiglu's pair (grad * b * d(a), grad * s(a)). Linear in grad, so their derivative there is
    the op itself on the incoming vector; in x it needs d', the derivative of the program d
    itself, which turbogelu/_programs.py computes with PyTorch's operations from the
    kernels' own constants (differentiable again in turn). On an AVX-512 CPU the backward op
    may run a cells program (``use_cpu_kernel``) while d' is the polynomial's: both
    approximate f'' within the derivatives' error."""

    def __init__(self, name: str, kind: str = "Plain"):
        self.name, self.kind = name, kind
        self.tensors = 3 if kind == "Gated" else 2

    def _program(self, ctx):
        """(the derivative program d, the factor x is scaled by before it: softcap's 1/cap)."""
        args = ctx.args
        if self.name == "gelu_backward":  # (approximate, backward, tier)
            return _programs.program(f"gelu_{args[0]}", args[2], args[1]), None
        row = self.name.removesuffix("_backward")
        if self.kind == "Scaled":  # (cap, backward, tier)
            return _programs.program(row, args[2], args[1]), _inverse32(args[0])
        return _programs.program(row, args[1], args[0]), None  # (backward, tier)

    def _d(self, ctx, x, second: bool):
        """d(x * inv) (second=False) or its derivative in x, inv d'(x * inv), in x's working
        dtype (inv: softcap's 1/cap, None for the others)."""
        prog, inv = self._program(ctx)
        z = _work(x) if inv is None else _work(x) * inv
        if not second:
            return _programs.evaluate(prog, z)
        d = _programs.derivative(prog, z)
        return d if inv is None else d * inv

    def _op(self, ctx, v):
        return call(self.name, v, *ctx.saved_tensors[1:], *ctx.args, **ctx.kw)

    def vjp(self, ctx, *vs):
        if self.kind == "Gated":
            return self._gated_vjp(ctx, *vs)
        grad, x = ctx.saved_tensors
        (v,) = vs
        dgrad = self._op(ctx, v) if ctx.needs_input_grad[0] else None
        dx = None
        if ctx.needs_input_grad[1]:
            dx = (_work(v) * _work(grad) * self._d(ctx, x, True)).to(x.dtype)
        return dgrad, dx

    def _gated_vjp(self, ctx, va, vb):
        # (ga, gb) = (g b s'(a), g s(a)): d/dg = va b s' + vb s (the op), d/da = g (va b s'' +
        # vb s'), d/db = va g s'
        g, a, b = ctx.saved_tensors
        dg = None
        if ctx.needs_input_grad[0]:
            dg = _add(self._op(ctx, va)[0], self._op(ctx, vb)[1])
        da = db = None
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            g32, va32, vb32 = _work(g), _work(va), _work(vb)
            s1 = self._d(ctx, a, False)
            if ctx.needs_input_grad[1]:
                s2 = self._d(ctx, a, True)
                da = (g32 * (va32 * _work(b) * s2 + vb32 * s1)).to(a.dtype)
            if ctx.needs_input_grad[2]:
                db = (va32 * g32 * s1).to(b.dtype)
        return dg, da, db

    def jvp(self, ctx, tg, *tx):
        if self.kind == "Gated":
            return self._gated_jvp(ctx, tg, *tx)
        grad, x = ctx.saved_tensors
        (t,) = tx
        by_x = None
        if t is not None:
            by_x = (_work(grad) * self._d(ctx, x, True) * _work(t)).to(x.dtype)
        return _add(None if tg is None else self._op(ctx, tg), by_x)

    def _gated_jvp(self, ctx, tg, ta, tb):
        # d ga = tg b s' + g tb s' + g b s'' ta,  d gb = tg s + g s' ta
        g, a, b = ctx.saved_tensors
        by_g = (None, None) if tg is None else self._op(ctx, tg)
        g32, b32 = _work(g), _work(b)
        s1 = self._d(ctx, a, False)
        ga = [by_g[0]]
        gb = [by_g[1]]
        if tb is not None:
            ga.append((g32 * _work(tb) * s1).to(a.dtype))
        if ta is not None:
            ga.append((g32 * b32 * self._d(ctx, a, True) * _work(ta)).to(a.dtype))
            gb.append((g32 * s1 * _work(ta)).to(a.dtype))
        return _add(*ga), _add(*gb)


class FromOutput(Rule):
    """grad * f'(y) from the saved result (sigmoid, tanh, exp2, softcap): differentiable in grad
    (the op itself) and in y (``dy``, PyTorch's derivatives of sigmoid_backward and
    tanh_backward; softcap's is tanh's in q = y / cap)."""

    tensors = 2

    def __init__(self, name: str):
        self.name, self.op = name, f"{name}_backward_from_output"

    def _dy(self, ctx, v):
        grad, y = ctx.saved_tensors
        cap = ctx.args[0] if ctx.args else 1.0
        if self.name == "sigmoid":
            return v * grad * (1 - 2 * y)
        if self.name == "tanh":
            return v * grad * (-2 * y)
        if self.name == "softcap":
            return v * grad * (-2 * y / (cap * cap))
        return v * grad * math.log(2.0)

    def vjp(self, ctx, v):
        _, y = ctx.saved_tensors
        return call(self.op, v, y, *ctx.args), self._dy(ctx, v)

    def jvp(self, ctx, tg, ty):
        _, y = ctx.saved_tensors
        return _add(
            None if tg is None else call(self.op, tg, y, *ctx.args),
            None if ty is None else self._dy(ctx, ty),
        )


# ---------------------------------------------------------------- batching rules


def _batching_rule(op, tensors: int, dim_arg: bool = False):
    """vmap of an elementwise op on ``tensors`` tensor inputs of one shape: with one input (or
    all batched at the same dimension) the op runs on the batched tensor as it is and the
    output keeps the batch dimension; otherwise the batch dimensions move to the front and an
    unbatched input is expanded (a view). ``dim_arg``: the op's next argument is a dimension
    of the unbatched tensor (softmax), shifted past the batch dimension at the front."""

    def rule(info, in_dims, *args, **kwargs):
        ts, rest, dims = args[:tensors], list(args[tensors:]), in_dims[:tensors]
        if len(set(dims)) == 1 and not dim_arg:
            out, at = op(*ts, *rest, **kwargs), dims[0]
        else:
            ts = [
                t.movedim(d, 0) if d is not None else t.expand(info.batch_size, *t.shape)
                for t, d in zip(ts, dims, strict=True)
            ]
            if dim_arg and rest and rest[0] >= 0:  # (the dispatcher drops a default -1)
                rest[0] += 1
            out, at = op(*ts, *rest, **kwargs), 0
        return out, (tuple(at for _ in out) if isinstance(out, (tuple, list)) else at)

    return rule


def _vmap(name: str, tensors: int, dim_arg: bool = False) -> None:
    op = getattr(_ops, name).default
    torch.library.register_vmap(op, _batching_rule(op, tensors, dim_arg), lib=_lib)


# ---------------------------------------------------------------- registration


def install() -> None:
    """Registers every op's Function, Autograd kernel and batching rule (ops.py calls it once,
    after the fake kernels)."""
    _register(
        "gelu",
        Pointwise("gelu", backward_args=lambda args, kw: (*args, kw["backward"], kw["tier"])),
        "turbogelu.gelu",
    )
    for row in _table.OPS:
        name = row.name
        public = f"turbogelu.{name}"
        if row.kind == "Gated":
            _register(name, SwiGLU(), public)
        else:
            _register(name, Pointwise(name, row.from_output), public)
        _register(f"{name}_backward", Backward(f"{name}_backward", row.kind), public)
        _vmap(name, 2 if row.kind == "Gated" else 1)
        _vmap(f"{name}_backward", 3 if row.kind == "Gated" else 2)
        if row.from_output:
            _register(f"{name}_backward_from_output", FromOutput(name), public)
            _vmap(f"{name}_backward_from_output", 2)
    _register("gelu_backward", Backward("gelu_backward"), "turbogelu.gelu")
    _vmap("gelu", 1)
    _vmap("gelu_backward", 2)
    _register("softmax", Softmax(), "turbogelu.softmax")
    _vmap("softmax", 1, dim_arg=True)
