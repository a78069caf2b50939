"""What the benchmark (``experiments.bench``) times: the protocol's methods and sizes, its
inputs (seeded, with the edge values), the switches a row runs under (program, scheme, ISA,
threads, oneDNN) and the rows themselves: the protocol's, the size sweep's and the degree
curve's, each a ``Variant`` with the labels its record carries.

torch is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence

from .bench_timing import Variant

DTYPES_QUICK = ("float32", "float16", "bfloat16")
DTYPES_ALL = (*DTYPES_QUICK, "float64")
R_EXACT = 4.389  # the exact-GELU clamp (data/specs/gelu_exact.json)
SEED_SIZE, SEED_ROUNDS, SEED_CALLS = 1 << 20, 50, 100  # the seed's protocol
SWEEP_ELEMENTS_PER_BATCH = 1 << 24  # sweep: calls per batch = clamp(this / size, 1, --calls)
INPLACE_MAX_CALLS = 16  # in place: the buffer is refilled before each batch (see sweep_variants)
DEGREES = tuple(range(2, 13))
# The methods of both directions; each adds its limits: what moving its bytes costs.
_KERNELS = (
    "turbogelu",
    "turbogelu (poly)",
    "turbogelu (Estrin)",
    "turbogelu (cells)",
    "torch exact",
    "torch approx",
    "torch exact (oneDNN off)",
    "torch.compile exact",
)
METHODS = {
    "forward": (*_KERNELS, "limit: copy", "limit: stream copy"),
    "backward": (*_KERNELS, "limit: mul", "limit: stream read2"),
}
CPU_ONLY = ("turbogelu (poly)", "turbogelu (Estrin)", "turbogelu (cells)")
CPU_ONLY += ("torch exact (oneDNN off)",)
CPU_ONLY += ("limit: stream copy",)
CPU_ONLY += ("limit: stream read2",)


class Skipped(Exception):
    """A variant that cannot run here (the reason is reported, the run goes on)."""


# ---------------------------------------------------------------- inputs


def edge_values(dtype: str, clamp: float = R_EXACT):
    """The protocol's 15 edge values in ``dtype`` (a tensor, in this order):

    +0, -0, +inf, -inf, NaN, R, -R, the next value of ``dtype`` above and below R and their
    negatives, the smallest positive and negative subnormal, and the largest finite value
    and its negative. R is the exact-GELU clamp rounded to ``dtype``; the neighbours are
    taken on the bit pattern, so they are the format's own."""
    import torch

    dt = getattr(torch, dtype)
    itype = {2: torch.int16, 4: torch.int32, 8: torch.int64}[torch.finfo(dt).bits // 8]

    def step(t, k: int):
        return (t.view(itype) + k).view(dt)

    r = torch.tensor([clamp], dtype=dt)
    up, down = step(r, 1), step(r, -1)
    tiny = torch.zeros(1, dtype=dt).view(itype).add_(1).view(dt)
    big = torch.tensor([torch.finfo(dt).max], dtype=dt)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan")], dtype=dt)
    return torch.cat([special, r, -r, up, down, -up, -down, tiny, -tiny, big, -big])


def make_inputs(dtype: str, size: int, *, edges: bool = False, seed: int = 0, device="cpu"):
    """x = randn * 3 (+ the 15 edge values at the end), g = randn; made on the CPU (seeded,
    the same on every device), then moved."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype)
    x = (torch.randn(size, generator=gen) * 3).to(dt)
    if edges:
        x = torch.cat([x, edge_values(dtype)])
    g = torch.randn(x.numel(), generator=gen).to(dt)
    return x.to(device), g.to(device)


# ---------------------------------------------------------------- switches


def _onednn_off():
    import torch

    # Only the switch: the other flags' defaults would set (and warn about) TF32 and precision.
    return torch.backends.mkldnn.flags(
        enabled=False, deterministic=None, allow_tf32=None, fp32_precision=None
    )


@contextlib.contextmanager
def _hook(name: str, value):
    """Set a ``torch.ops.turbogelu._set_*`` switch, or one of the benchmark's hooks
    (``probes.HOOKS``), for the block, then restore it (each returns the previous value)."""
    import torch

    from . import probes

    setter = getattr(probes.OPS if name in probes.HOOKS else torch.ops.turbogelu, name)
    previous = setter(value)
    try:
        yield
    finally:
        setter(previous)


def _scheme(name: str):
    """Evaluate the polynomial by ``name`` ("horner", the default, or "estrin")."""
    return _hook("_set_poly_scheme", name)


def _program(name: str):
    """Run the CPU program ``name``: "poly" (the degree-8 polynomial) or "cells" (the
    table-driven program, turbogelu/approx/cells.py), whatever this CPU's default is."""
    return _hook("_set_cpu_kernel", name)


def _cells():
    return _program("cells")


def _poly():
    return _program("poly")


@contextlib.contextmanager
def _estrin():
    """The polynomial by Estrin (the scheme switch means nothing to the cells program)."""
    with _poly(), _scheme("estrin"):
        yield


def cpu_program() -> str | None:
    """The CPU program the turbogelu ops run now ("poly" or "cells"; None on a build
    without the switch)."""
    import torch

    import turbogelu.ops  # noqa: F401

    getter = getattr(torch.ops.turbogelu, "_cpu_kernel", None)
    return None if getter is None else str(getter())


def _below_autograd():
    """Call ops below the autograd layer: turbogelu's ops carry an Autograd kernel (a C++
    check on CPU tensors, Python on others) that ``poly_gelu`` (no autograd) does not pay."""
    import torch

    return torch._C._AutoDispatchBelowAutograd()


@contextlib.contextmanager
def num_threads(n: int):
    """torch's intra-op threads set to ``n`` for the block (a row's ``threads``), then
    restored."""
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def parallel_grain(grain: int):
    """The CPU ops' parallel grain (the elements below which they run on one thread) set to
    ``grain`` for the block: ``--grain`` measures where more threads start to pay."""
    return _hook("_set_parallel_grain", grain)


@contextlib.contextmanager
def cpu_isa(name: str | None):
    """turbogelu's CPU kernels run the instruction set ``name`` for the block (None: the one
    they run now)."""
    import torch

    if name is None:
        yield
        return
    prev = torch.ops.turbogelu._set_cpu_isa(name)
    try:
        yield
    finally:
        torch.ops.turbogelu._set_cpu_isa(prev)


def _compiled(direction: str):
    """torch.compile of F.gelu (forward) or aten.gelu_backward (backward): one compiled
    function per call of this, compiled on its first call (which the caller makes before any
    timing). Raises Skipped with the reason when compilation fails here."""
    import torch
    import torch.nn.functional as F

    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):  # one entry per dtype and size
        if hasattr(cfg, name):
            setattr(cfg, name, max(getattr(cfg, name), 256))
    if direction == "forward":
        return torch.compile(F.gelu, dynamic=False)
    return torch.compile(lambda g, x: torch.ops.aten.gelu_backward(g, x), dynamic=False)


def _turbogelu_on(device: str) -> str | None:
    """None when turbogelu has kernels for ``device``, else why not."""
    import torch

    import turbogelu.ops  # noqa: F401

    if device == "cpu":
        return None
    try:
        torch.ops.turbogelu.gelu(torch.zeros(8, device=device))
        return None
    except (RuntimeError, NotImplementedError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"turbogelu has no {device} kernel in this build ({first[:120]})"


def cpu_threads(device: str, threads: int):
    """``num_threads`` on the CPU; nothing on a GPU, whose rows torch's CPU threads do not
    run."""
    return num_threads(threads) if device == "cpu" else contextlib.nullcontext()


# ---------------------------------------------------------------- variants


# the protocol's limit rows that write into a preallocated output (make_variants)
LIMITS_INTO_OUT = ("limit: copy", "limit: mul", "limit: stream copy", "limit: stream read2")


def _into(out, op, *args):
    """``op(*args, out=out)`` for an out= op that returns nothing; returns ``out`` (the
    protocol's rows return what they computed)."""
    op(*args, out=out)
    return out


def _labels(**kw) -> dict:
    kw.setdefault("kernel", "gelu")
    kw.setdefault("out_mode", "alloc")
    return kw


def _provider(method: str) -> str:
    if method.startswith("limit"):
        return "limit"
    if method.startswith("torch.compile"):
        return "torch.compile"
    return "torch" if method.startswith("torch") else "turbogelu"


def make_variants(
    direction: str,
    dtype: str,
    size: int,
    *,
    device: str = "cpu",
    threads: int = 1,
    methods: Sequence[str] | None = None,
    edges: bool = True,
    skipped: list | None = None,
    seed: int = 0,
) -> list[Variant]:
    """The protocol's rows of one (direction, dtype) group, keyed (direction, dtype, method).

    ``methods``: a subset of ``METHODS[direction]`` (default all that run on ``device``).
    Methods that cannot run (no turbogelu kernel for the device, torch.compile failing) are
    left out and ``(labels, reason)`` is appended to ``skipped``."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401  (loads the extension)

    if direction not in METHODS:
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    wanted = list(METHODS[direction] if methods is None else methods)
    unknown = set(wanted) - set(METHODS[direction])
    if unknown:
        raise ValueError(f"unknown method(s) {sorted(unknown)} for {direction}")
    if device != "cpu":
        wanted = [m for m in wanted if m not in CPU_ONLY]
    x, g = make_inputs(dtype, size, edges=edges, seed=seed, device=device)
    n = x.numel()
    tg = torch.ops.turbogelu
    tb = torch.ops.turbogelu_bench  # the probes (experiments/probes.py)
    aten = torch.ops.aten
    skipped = [] if skipped is None else skipped
    no_tg = _turbogelu_on(device)
    # The limit rows write into one preallocated output, so that they time moving the bytes
    # and nothing else. Allocated in the timed region, a copy's output was one of two heap
    # blocks in turn in some processes and one block in others (glibc's choice depends on
    # the heap's history), so at 1M elements on a CPU whose L3 holds x and one output but not
    # two, the same copy took 160 or 350 us: the interleaved row and its alone timings
    # disagreed by 2x (the only baseline_suspect rows of the AVX2 machine's reference run).
    limit_out = torch.empty_like(x)
    if direction == "forward":
        fns = {
            "turbogelu": lambda: tg.gelu(x),
            "turbogelu (poly)": lambda: tg.gelu(x),
            "turbogelu (Estrin)": lambda: tg.gelu(x),
            "turbogelu (cells)": lambda: tg.gelu(x),
            "torch exact": lambda: F.gelu(x),
            "torch approx": lambda: F.gelu(x, approximate="tanh"),
            "torch exact (oneDNN off)": lambda: F.gelu(x),
            "torch.compile exact": None,
            "limit: copy": lambda: limit_out.copy_(x),
            "limit: stream copy": lambda: _into(limit_out, tb._stream_copy.out, x),
        }
    else:
        fns = {
            "turbogelu": lambda: tg.gelu_backward(g, x),
            "turbogelu (poly)": lambda: tg.gelu_backward(g, x),
            "turbogelu (Estrin)": lambda: tg.gelu_backward(g, x),
            "turbogelu (cells)": lambda: tg.gelu_backward(g, x),
            "torch exact": lambda: aten.gelu_backward(g, x),
            "torch approx": lambda: aten.gelu_backward(g, x, approximate="tanh"),
            "torch exact (oneDNN off)": lambda: aten.gelu_backward(g, x),
            "torch.compile exact": None,
            "limit: mul": lambda: torch.mul(g, x, out=limit_out),
            "limit: stream read2": lambda: _into(limit_out, tb._stream_read2.out, g, x),
        }
    assert tuple(fns) == METHODS[direction]
    variants = []
    for m in wanted:
        context = _method_context(m)
        program = scheme = None
        if m.startswith("turbogelu"):
            # the program that runs, asked inside the row's context (CUDA and Metal: poly)
            with context():
                program = cpu_program() if device == "cpu" else "poly"
            scheme = "estrin" if "Estrin" in m else "horner" if program == "poly" else None
        labels = _labels(
            bench="protocol",
            provider=_provider(m),
            method=m,
            direction=direction,
            dtype=dtype,
            size=n,
            threads=threads,
            device=device,
            program=program,
            scheme=scheme,
            onednn=False if "oneDNN off" in m else None,
        )
        if m in LIMITS_INTO_OUT:  # grouped with the protocol's rows (out_mode "alloc") all the same
            labels["preallocated_output"] = True
        fn = fns[m]
        if m.startswith("turbogelu") and no_tg:
            skipped.append((labels, no_tg))
            continue
        if m == "torch.compile exact":
            try:
                cf = _compiled(direction)
                fn = (lambda cf=cf: cf(x)) if direction == "forward" else (lambda cf=cf: cf(g, x))
                with num_threads(threads) if device == "cpu" else contextlib.nullcontext():
                    fn()  # compiles here, outside any timing
            except Exception as e:  # noqa: BLE001  (any failure of the compiler: skip the row)
                reason = f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
                skipped.append((labels, reason))
                continue
        variants.append(Variant((direction, dtype, m), fn, context, labels=labels))
    return variants


def _method_context(method: str) -> Callable[[], contextlib.AbstractContextManager]:
    """The switches a protocol row runs under. "turbogelu" runs the default program of this
    CPU (cells where AVX-512 has two-table permutes, else poly; TURBOGELU_CPU_KERNEL forces
    one); "(poly)", "(cells)" and "(Estrin)" (poly by Estrin) force theirs."""
    return {
        "torch exact (oneDNN off)": _onednn_off,
        "turbogelu (poly)": _poly,
        "turbogelu (Estrin)": _estrin,
        "turbogelu (cells)": _cells,
    }.get(method, contextlib.nullcontext)


def sweep_variants(
    direction: str,
    size: int,
    threads: int,
    *,
    dtype: str = "float32",
    calls: int = 100,
    inputs: tuple | None = None,
    only_out: bool = False,
) -> list[Variant]:
    """The size sweep's rows at one size and thread count (CPU): turbogelu and torch exact
    with an allocated output, ``out=`` and (forward, turbogelu) in place, and the limits.
    ``only_out``: only turbogelu's and the limit's ``out=`` rows (the 16-bit DRAM rows).

    In place: the buffer is refilled from x before every batch (outside the timing) and a
    batch has at most ``INPLACE_MAX_CALLS`` calls, so the values stay those of x (repeated
    GELU would drive them towards subnormals). ``inputs``: (x, g, out) to share between
    calls (the memory of a 256M sweep), else made here."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401

    if inputs is None:
        x, g = make_inputs(dtype, size)
        inputs = (x, g, torch.empty_like(x))
    x, g, out = inputs
    tg = torch.ops.turbogelu
    tb = torch.ops.turbogelu_bench  # the probes (experiments/probes.py)
    aten = torch.ops.aten
    n_calls = max(1, min(calls, SWEEP_ELEMENTS_PER_BATCH // size))
    if direction == "forward":
        rows = [
            ("turbogelu", "alloc", lambda: tg.gelu(x)),
            ("turbogelu", "out", lambda: tg.gelu.out(x, out=out)),
            ("turbogelu", "inplace", lambda: tg.gelu_(out)),
            ("torch exact", "alloc", lambda: F.gelu(x)),
            ("torch exact", "out", lambda: aten.gelu.out(x, out=out)),
            ("limit: copy", "alloc", lambda: torch.empty_like(x).copy_(x)),
            ("limit: copy", "out", lambda: out.copy_(x)),
            ("limit: stream copy", "alloc", lambda: tb._stream_copy(x)),
            ("limit: stream copy", "out", lambda: tb._stream_copy.out(x, out=out)),
        ]
    elif direction == "backward":
        rows = [
            ("turbogelu", "alloc", lambda: tg.gelu_backward(g, x)),
            ("turbogelu", "out", lambda: tg.gelu_backward.out(g, x, out=out)),
            ("torch exact", "alloc", lambda: aten.gelu_backward(g, x)),
            ("torch exact", "out", lambda: aten.gelu_backward.grad_input(g, x, grad_input=out)),
            ("limit: mul", "alloc", lambda: torch.mul(g, x)),
            ("limit: mul", "out", lambda: torch.mul(g, x, out=out)),
            ("limit: stream read2", "alloc", lambda: tb._stream_read2(g, x)),
            ("limit: stream read2", "out", lambda: tb._stream_read2.out(g, x, out=out)),
        ]
    else:
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    if only_out:
        rows = [r for r in rows if r[1] == "out" and r[0] != "torch exact"]

    def threads_ctx():
        return num_threads(threads)

    @contextlib.contextmanager
    def refill():
        out.copy_(x)
        with num_threads(threads):
            yield

    program = cpu_program()  # turbogelu's rows: the default program of this CPU
    variants = []
    for method, mode, fn in rows:
        inplace = mode == "inplace"
        tg_row = method == "turbogelu"
        labels = _labels(
            bench="sweep",
            provider=_provider(method),
            method=method,
            direction=direction,
            dtype=dtype,
            size=size,
            threads=threads,
            device="cpu",
            out_mode=mode,
            program=program if tg_row else None,
            scheme="horner" if tg_row and program == "poly" else None,
        )
        variants.append(
            Variant(
                ("sweep", direction, dtype, size, threads, method, mode),
                fn,
                refill if inplace else threads_ctx,
                min(n_calls, INPLACE_MAX_CALLS) if inplace else n_calls,
                labels,
            )
        )
    return variants


def sweep_bytes(size: int, dtype_size: int = 4, only_out: bool = False) -> int:
    """Peak bytes of ``sweep_variants`` at a size: x, g, the out= buffer and (unless
    ``only_out``) one fresh output (the allocating calls free theirs before the next one)."""
    return (3 if only_out else 4) * size * dtype_size


def fitted_specs(degrees: Sequence[int] = DEGREES, clamp: float = R_EXACT) -> dict:
    """{(direction, degree): PolySpec}: least-squares fits of GELU (forward, x/2 + x^2 P(z))
    and of GELU' (backward, 1/2 + x Q(z)) on [0, clamp], float32 coefficients (ms each)."""
    from turbogelu.approx import family_fit

    specs = {}
    for d in degrees:
        for direction, target in (("forward", "gelu"), ("backward", "gelu_grad")):
            specs[(direction, d)] = family_fit.fit_polyspec(
                target, degree=d, fit_interval=clamp, clamp=clamp, fmt="float32", method="ls"
            )
    return specs


def degree_variants(
    size: int, degrees: Sequence[int] = DEGREES, schemes=("horner", "estrin"), threads: int = 1
) -> list[Variant]:
    """poly_gelu / poly_gelu_backward with a fitted spec of every degree, by each scheme, at
    one size (float32), beside the shipped op and the limits.

    Like is compared with like: every row is called below the autograd layer
    (``_below_autograd``; poly_gelu has no autograd registration, the shipped op has
    one), and the shipped op's row "turbogelu (poly)" runs the
    polynomial (degree 8, Horner), so it differs from the degree-8 Horner point only by its
    coefficients. Where this CPU's default program is another one (cells), it is timed too,
    as "turbogelu" with its ``program``."""
    import torch

    from turbogelu import ops

    x, g = make_inputs("float32", size)
    specs = fitted_specs(degrees)
    tg = torch.ops.turbogelu
    variants = []

    def ctx_for(scheme, program=None):
        def ctx():
            stack = contextlib.ExitStack()
            stack.enter_context(_below_autograd())
            if program is not None:
                stack.enter_context(_program(program))
            stack.enter_context(_scheme(scheme))
            stack.enter_context(num_threads(threads))
            return stack

        return ctx

    for (direction, d), ps in specs.items():
        coeffs, clamp, scale = ops.poly_args(ps)
        if direction == "forward":
            fn = lambda c=coeffs, r=clamp, s=scale: tg.poly_gelu(x, c, r, s)  # noqa: E731
        else:
            fn = lambda c=coeffs, r=clamp, s=scale: tg.poly_gelu_backward(g, x, c, r, s)  # noqa: E731
        err = ps.meta.get("errors", {}).get("max_abs_error")
        kernel_form = dataclasses.replace(ps, program="turbogelu")
        for scheme in schemes:
            labels = _labels(
                bench="degree",
                provider="turbogelu",
                method=f"poly_gelu degree {d}",
                direction=direction,
                dtype="float32",
                size=size,
                threads=threads,
                device="cpu",
                program="poly",
                scheme=scheme,
                degree=d,
                op_count=kernel_form.op_count(scheme)["total"],
                max_abs_error=err,
                autograd=False,
            )
            variants.append(
                Variant(("degree", direction, d, scheme), fn, ctx_for(scheme), None, labels)
            )
    default = cpu_program()
    fixed = [
        ("forward", "turbogelu (poly)", "poly", lambda: tg.gelu(x)),
        ("backward", "turbogelu (poly)", "poly", lambda: tg.gelu_backward(g, x)),
        ("forward", "limit: copy", None, lambda: torch.empty_like(x).copy_(x)),
        ("backward", "limit: mul", None, lambda: torch.mul(g, x)),
    ]
    if default not in (None, "poly"):
        fixed += [
            ("forward", "turbogelu", default, lambda: tg.gelu(x)),
            ("backward", "turbogelu", default, lambda: tg.gelu_backward(g, x)),
        ]
    for direction, method, program, fn in fixed:
        poly = program == "poly"
        labels = _labels(
            bench="degree",
            provider=_provider(method),
            method=method,
            direction=direction,
            dtype="float32",
            size=size,
            threads=threads,
            device="cpu",
            program=program,
            scheme="horner" if poly else None,
            degree=8 if poly else None,
            autograd=False,
        )
        ctx = ctx_for("horner", program if method.startswith("turbogelu") else None)
        variants.append(Variant(("degree", direction, method), fn, ctx, None, labels))
    return variants
