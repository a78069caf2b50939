"""Speed benchmark behind ``python -m experiments bench``: the seeds' protocol, the machine's
limits, sweeps, one long-format results file.

Parts (``--parts``, all by default):

* ``protocol``: the TurboGeLU write-up's protocol. 1,048,576 random elements (randn * 3, so
  that both the polynomial window and the clamped tails are hit) plus the 15 edge values of
  ``edge_values`` (+-0, +-inf, NaN, +-R and the neighbours of R, the smallest subnormals, the
  largest finite values), 50 timed batches of 100 calls, one thread, forward and backward,
  float32 / float16 / bfloat16; methods ``torch exact`` (``F.gelu``), ``torch approx``
  (``approximate="tanh"``), ``turbogelu`` (the default program of this CPU: ``cells`` where
  AVX-512 has two-table permutes, else ``poly``; the row's ``program`` says which), and
  beyond the seed: ``turbogelu (poly)`` and ``turbogelu (cells)`` (each program forced),
  ``turbogelu (Estrin)`` (the polynomial by Estrin), ``torch exact (oneDNN off)``,
  ``torch.compile exact`` (compiled once, before timing) and the limit rows, what moving
  the same bytes costs: ``limit: copy`` (``empty_like(x).copy_(x)``) and ``limit: stream
  copy`` (non-temporal stores) for the forward, ``limit: mul`` (``torch.mul(g, x)``) and
  ``limit: stream read2`` for the backward. The limit of a row is the faster of its limit
  rows. Then every baseline row (torch, torch.compile, limits) is timed again alone, in a
  fresh process (``check_alone``; ``--no-alone-check`` skips it, ``--quick`` does unless
  ``--alone-check``); a row more than 10% off is flagged ``baseline_suspect``.
* ``sweep``: float32 over sizes from cache- to DRAM-resident (64K, 1M, 4M, 64M, 256M; sizes
  whose tensors do not fit in ``--max-memory`` are skipped, and the output says so), output
  allocated / ``out=`` / in place, 1 thread and all threads; turbogelu, torch exact, limits.
  At 64M (``--sweep-out-sizes``) float16 and bfloat16 (``--sweep-out-dtypes``) add
  turbogelu's and the limit's ``out=`` rows, interleaved with float32's: the DRAM targets.
* ``degree``: operation count against time. Specs of GELU (forward) and GELU' (backward) of
  every compiled degree (2..12), fitted by least squares on [0, 4.389], timed through
  ``turbogelu::poly_gelu`` (the shipped templated kernels with coefficients passed at run
  time) by Horner and by Estrin, beside the shipped op's polynomial (and its default
  program, where that is another) and the limit, every row below the autograd layer.

After the parts, ``experiments.bench_targets`` evaluates the speed targets from the run's rows:
printed, and written beside ``--out`` (``results/bench_targets.json``).

Method (shared, noisy machines: the method is the point):

* Variants are interleaved in one process: each round visits every variant of a part (of a
  size, for the sweep) once, in an order shuffled per round by a seeded RNG, and times one
  batch of calls. A slow stretch of the machine hits all variants alike. Reported: median
  (p50), p5 and p95 over rounds of the time per call, wall time and this thread's CPU time
  (``time.thread_time_ns``; wall well above CPU means the thread was descheduled or waited).
* Inputs are made (seeded) before timing; every variant is warmed up; the garbage collector
  is off while timing. glibc is told to keep freed memory (``steady_malloc``) so that an
  allocating call costs the same in every process; above 32 MiB outputs are mmap'ed, and the
  sweep's allocating rows then include the page faults of a fresh output (the point of
  measuring ``out=`` beside them).
* cuda / mps: the device is synchronized before and after each batch, a cuda batch is timed
  with ``torch.cuda.Event`` (execution, not enqueue); ``--flush`` writes a buffer twice the
  size of the last-level cache before every batch (outside the timing). CPU-only rows
  (oneDNN, streaming stores, the ISA) are left out on a GPU.

Results: one row per kernel x provider x direction x dtype x size x threads x out-mode (plus
method options) appended to a JSON-lines file (``--out``, default ``results/bench.jsonl``)
with p50/p5/p95, the machine and the versions; ``experiments.bench_report`` draws the tables and
the plots from that file. torch is imported inside functions only, so importing this module
(the CLI does) does not import torch.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

from . import bench_report
from .bench_report import (  # noqa: F401  (the notebook's entry points, also from here)
    add_ratios,
    degree_table,
    load,
    plot_all,
    plot_bars,
    plot_degrees,
    plot_sweep,
    protocol_table,
    sweep_table,
)
from .bench_targets import BASELINE_TOLERANCE
from .records import describe_machine, machine_info, quantile, write_jsonl

DTYPES_QUICK = ("float32", "float16", "bfloat16")
DTYPES_ALL = (*DTYPES_QUICK, "float64")
PARTS = ("protocol", "sweep", "degree")
R_EXACT = 4.389  # the exact-GELU clamp (data/specs/gelu_exact.json)
SEED_SIZE, SEED_ROUNDS, SEED_CALLS = 1 << 20, 50, 100  # the seed's protocol
SWEEP_SIZES = (1 << 16, 1 << 20, 1 << 22, 1 << 26, 1 << 28)
# the DRAM rows of the 16-bit dtypes: turbogelu's and the limit's out= rows at these sizes
SWEEP_OUT_DTYPES, SWEEP_OUT_SIZES = ("float16", "bfloat16"), (1 << 26,)
SWEEP_ELEMENTS_PER_BATCH = 1 << 24  # sweep: calls per batch = clamp(this / size, 1, --calls)
INPLACE_MAX_CALLS = 16  # in place: the buffer is refilled before each batch (see sweep_variants)
DEGREES = tuple(range(2, 13))
DEFAULT_OUT = "results/bench.jsonl"
DEFAULT_MAX_MEMORY_GIB = 6.0
METHODS = {
    "forward": (
        "turbogelu",
        "turbogelu (poly)",
        "turbogelu (Estrin)",
        "turbogelu (cells)",
        "torch exact",
        "torch approx",
        "torch exact (oneDNN off)",
        "torch.compile exact",
        "limit: copy",
        "limit: stream copy",
    ),
    "backward": (
        "turbogelu",
        "turbogelu (poly)",
        "turbogelu (Estrin)",
        "turbogelu (cells)",
        "torch exact",
        "torch approx",
        "torch exact (oneDNN off)",
        "torch.compile exact",
        "limit: mul",
        "limit: stream read2",
    ),
}
CPU_ONLY = ("turbogelu (poly)", "turbogelu (Estrin)", "turbogelu (cells)")
CPU_ONLY += ("torch exact (oneDNN off)",)
CPU_ONLY += ("limit: stream copy",)
CPU_ONLY += ("limit: stream read2",)
GRAIN_SIZES = (4096, 8192, 16384, 32768, 65536, 131072, 262144, 1 << 20)
GRAIN_ELEMENTS_PER_BATCH = 1 << 21  # --grain: calls per batch = max(--calls, this / size)
# --grain: more threads count as faster at a size when their median is this much faster and
# they won in this share of the rounds (paired: same round, same state of the machine).
GRAIN_MIN_SPEEDUP, GRAIN_MIN_WON = 1.05, 0.75


@dataclasses.dataclass(frozen=True)
class Variant:
    """One timed thing: ``fn()`` called ``calls`` times (default: the run's) per batch, with
    ``context()`` entered around each batch, outside the timed region. ``labels`` are the
    record's columns (method, direction, dtype, size, ...)."""

    key: Hashable
    fn: Callable[[], object]
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    calls: int | None = None
    labels: dict = dataclasses.field(default_factory=dict, compare=False)


@dataclasses.dataclass
class Timings:
    """Per-call times in ns, one entry per round, keyed by ``Variant.key``."""

    wall: dict[Hashable, list[float]]
    cpu: dict[Hashable, list[float]]


class Skipped(Exception):
    """A variant that cannot run here (the reason is reported, the run goes on)."""


# ---------------------------------------------------------------- process settings


def steady_malloc() -> bool:
    """Make glibc keep freed memory instead of handing it back to the kernel.

    By default glibc serves a large block (a 4 MiB output) by mmap, or trims it off the heap
    when freed, depending on the process's allocation history (its thresholds move), so a
    call's output allocation costs either ~1 us or hundreds of us of first-touch page faults,
    and the same run on the same machine times 1M float32 at 270 or 600 us. Fixed thresholds
    (mmap at 32 MiB, no trimming below 1 GiB) give every call the steady state: memory reused
    from the heap. Returns False where this is not glibc."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_trim_threshold, 1 << 30)) and bool(
            libc.mallopt(m_mmap_threshold, 32 << 20)
        )
    except (OSError, AttributeError):
        return False


def available_memory() -> int | None:
    """MemAvailable in bytes (Linux), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


# ---------------------------------------------------------------- timing


class _Progress:
    """tqdm on an interactive stderr, else nothing (the caller prints one line per part)."""

    def __init__(self, total: int, desc: str, enabled: bool):
        self.bar = None
        if enabled and total > 0 and sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, leave=False, file=sys.stderr)
            except ImportError:
                self.bar = None
                self.simple = (desc, total)
        self.done = 0

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif getattr(self, "simple", None):
            desc, total = self.simple
            print(f"\r{desc}: {self.done}/{total}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif getattr(self, "simple", None):
            print(file=sys.stderr)


class _Clock:
    """Times one batch on ``device``: wall ns (device execution for cuda: events) and this
    thread's CPU ns."""

    def __init__(self, device: str):
        self.device = device
        self.sync = None
        self.events = None
        if device.startswith("cuda") or device == "mps":
            import torch

            if device == "mps":
                self.sync = torch.mps.synchronize
            else:
                dev = torch.device(device)
                self.sync = lambda: torch.cuda.synchronize(dev)
                self.events = (
                    torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True),
                )

    def time(self, fn: Callable[[], object], n: int) -> tuple[float, float]:
        sync, events = self.sync, self.events
        if sync is not None:
            sync()
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        if events is not None:
            events[0].record()
        for _ in range(n):
            fn()
        if events is not None:
            events[1].record()
            events[1].synchronize()
        elif sync is not None:
            sync()
        t1 = time.perf_counter_ns()
        c1 = time.thread_time_ns()
        wall = events[0].elapsed_time(events[1]) * 1e6 if events is not None else t1 - t0
        return wall, c1 - c0


def time_interleaved(
    variants: Sequence[Variant],
    rounds: int,
    calls: int,
    *,
    warmup: int = 3,
    seed: int = 0,
    device: str = "cpu",
    flush: Callable[[], object] | None = None,
    progress: _Progress | None = None,
) -> Timings:
    """Time every variant once per round, in a per-round shuffled (seeded) order.

    ``flush`` (if given) runs before every batch, outside the timed region."""
    if rounds < 1 or calls < 1:
        raise ValueError(f"rounds and calls must be >= 1, got {rounds} and {calls}")
    keys = [v.key for v in variants]
    if len(set(keys)) != len(keys):
        raise ValueError("variant keys must be unique")
    clock = _Clock(device)
    wall: dict[Hashable, list[float]] = {k: [] for k in keys}
    cpu: dict[Hashable, list[float]] = {k: [] for k in keys}
    for v in variants:
        with v.context():
            for _ in range(max(warmup, v.calls or calls)):
                v.fn()
    order = list(variants)
    rng = random.Random(seed)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            rng.shuffle(order)
            for v in order:
                n = v.calls or calls
                with v.context():
                    if flush is not None:
                        flush()
                    w, c = clock.time(v.fn, n)
                wall[v.key].append(w / n)
                cpu[v.key].append(c / n)
                if progress is not None:
                    progress.update()
    finally:
        if gc_was_enabled:
            gc.enable()
    return Timings(wall, cpu)


def make_flush(device: str, nbytes: int | None = None) -> Callable[[], object]:
    """A function that overwrites a buffer of ``nbytes`` (default: twice the last-level
    cache: the L2 on cuda, 2 x 32 MiB on a CPU), evicting the benchmark's data."""
    import torch

    if nbytes is None:
        if device.startswith("cuda"):
            nbytes = 2 * torch.cuda.get_device_properties(torch.device(device)).L2_cache_size
        else:
            nbytes = 64 << 20
    buf = torch.empty(max(nbytes // 4, 1), dtype=torch.float32, device=device)
    return lambda: buf.fill_(1.0)


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


# ---------------------------------------------------------------- contexts


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
    """Call ops below the autograd layer: turbogelu's ops carry a Python autograd
    registration that costs a few us per call even without gradients (about 4 us here,
    20% of a 64K call), which ``poly_gelu`` (no autograd) does not pay."""
    import torch

    return torch._C._AutoDispatchBelowAutograd()


@contextlib.contextmanager
def _num_threads(n: int):
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def _parallel_grain(grain: int):
    return _hook("_set_parallel_grain", grain)


@contextlib.contextmanager
def _cpu_isa(name: str | None):
    import torch

    if name is None:
        yield
        return
    prev = torch.ops.turbogelu._set_cpu_isa(name)
    try:
        yield
    finally:
        torch.ops.turbogelu._set_cpu_isa(prev)


def _both(a: Callable, b: Callable) -> Callable:
    @contextlib.contextmanager
    def ctx():
        with a(), b():
            yield

    return ctx


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


# ---------------------------------------------------------------- variants


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
            "limit: copy": lambda: torch.empty_like(x).copy_(x),
            "limit: stream copy": lambda: tb._stream_copy(x),
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
            "limit: mul": lambda: torch.mul(g, x),
            "limit: stream read2": lambda: tb._stream_read2(g, x),
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
        fn = fns[m]
        if m.startswith("turbogelu") and no_tg:
            skipped.append((labels, no_tg))
            continue
        if m == "torch.compile exact":
            try:
                cf = _compiled(direction)
                fn = (lambda cf=cf: cf(x)) if direction == "forward" else (lambda cf=cf: cf(g, x))
                with _num_threads(threads) if device == "cpu" else contextlib.nullcontext():
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
        ]
    else:
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    if only_out:
        rows = [r for r in rows if r[1] == "out" and r[0] != "torch exact"]

    def threads_ctx():
        return _num_threads(threads)

    @contextlib.contextmanager
    def refill():
        out.copy_(x)
        with _num_threads(threads):
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
    (``_below_autograd``; poly_gelu has no autograd registration, the shipped op has a
    Python one worth ~4 us a call), and the shipped op's row "turbogelu (poly)" runs the
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
            stack.enter_context(_num_threads(threads))
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


# ---------------------------------------------------------------- records


def summarize(variants: Sequence[Variant], timings: Timings, calls: int) -> list[dict]:
    """One record per variant: its labels, p50/p5/p95 of wall time, p50 of CPU time (us per
    call), rounds and calls. Ratios are added by ``bench_report.add_ratios``."""
    records = []
    for v in variants:
        w, c = timings.wall[v.key], timings.cpu[v.key]
        records.append(
            {
                **v.labels,
                "p50_us": statistics.median(w) / 1e3,
                "p5_us": quantile(w, 0.05) / 1e3,
                "p95_us": quantile(w, 0.95) / 1e3,
                "cpu_p50_us": statistics.median(c) / 1e3,
                "rounds": len(w),
                "calls": v.calls or calls,
            }
        )
    return records


# ---------------------------------------------------------------- runs


def _threads_ctx(device: str, threads: int):
    return _num_threads(threads) if device == "cpu" else contextlib.nullcontext()


def run_protocol(
    directions: Sequence[str],
    dtypes: Sequence[str],
    size: int,
    rounds: int,
    calls: int,
    *,
    device: str = "cpu",
    threads: int = 1,
    methods: Sequence[str] | None = None,
    flush: Callable[[], object] | None = None,
    skipped: list | None = None,
    progress: bool = False,
) -> list[dict]:
    """The protocol's records (all directions x dtypes interleaved in one timing)."""
    variants = []
    with _threads_ctx(device, threads):
        for d in directions:
            for t in dtypes:
                ms = None if methods is None else [m for m in methods if m in METHODS[d]]
                variants += make_variants(
                    d, t, size, device=device, threads=threads, methods=ms, skipped=skipped
                )
        bar = _Progress(rounds * len(variants), "protocol", progress)
        try:
            timings = time_interleaved(
                variants, rounds, calls, device=device, flush=flush, progress=bar
            )
        finally:
            bar.close()
    return summarize(variants, timings, calls)


# ---------------------------------------------------------------- baselines timed alone

# A baseline row (PyTorch's, the limits) is checked against the same call timed alone in a
# fresh process: the committed reference once had aten.gelu_backward in bfloat16 at 2377 us
# in the interleaved protocol against 780-860 us alone (one run of four on the build
# machine; not reproduced on others), and every ratio to it was 3x too flattering.
BASELINE_PROVIDERS = ("torch", "torch.compile", "limit")
ALONE_TOLERANCE = BASELINE_TOLERANCE  # |interleaved / alone - 1| above it: baseline_suspect
ALONE_ROUNDS = 10


def is_baseline(row: dict) -> bool:
    return row.get("provider") in BASELINE_PROVIDERS


def flag_baseline(row: dict, alone_p50_us: float, tolerance: float = ALONE_TOLERANCE) -> dict:
    """A copy of ``row`` with the median timed alone (``alone_p50_us``), the ratio of the
    interleaved median to it (``alone_ratio``) and ``baseline_suspect``: whether they differ
    by more than ``tolerance`` of the alone median."""
    if not alone_p50_us > 0:
        raise ValueError(f"the alone median must be positive, got {alone_p50_us!r}")
    ratio = row["p50_us"] / alone_p50_us
    return {
        **row,
        "alone_p50_us": alone_p50_us,
        "alone_ratio": ratio,
        "baseline_suspect": abs(ratio - 1.0) > tolerance,
    }


def alone_spec(row: dict, size: int, rounds: int, calls: int, **options) -> dict:
    """What a fresh process needs to time a protocol row alone: the row's direction, dtype,
    method, threads and device, the protocol's ``size`` (random elements; the 15 edge values
    are added as in the protocol), ``rounds`` x ``calls``, and ``options`` (flush, isa,
    malloc)."""
    return {
        "direction": row["direction"],
        "dtype": row["dtype"],
        "method": row["method"],
        "threads": row.get("threads", 1),
        "device": row.get("device", "cpu"),
        "size": size,
        "rounds": rounds,
        "calls": calls,
        "flush": bool(options.get("flush", False)),
        "isa": options.get("isa"),
        "malloc": options.get("malloc", "steady"),
    }


def time_alone(spec: dict) -> dict:
    """Time one protocol row by itself in this process (the child's side of
    ``check_alone``): {"p50_us", "p5_us", "p95_us", "rounds", "calls"}."""
    if spec.get("malloc", "steady") == "steady":
        steady_malloc()
    device = spec.get("device", "cpu")
    with _cpu_isa(spec.get("isa")), _threads_ctx(device, spec.get("threads", 1)):
        skipped: list = []
        variants = make_variants(
            spec["direction"],
            spec["dtype"],
            spec["size"],
            device=device,
            threads=spec.get("threads", 1),
            methods=[spec["method"]],
            skipped=skipped,
        )
        if not variants:
            reason = skipped[0][1] if skipped else "no such row here"
            raise Skipped(f"{spec['method']}: {reason}")
        flush = make_flush(device) if spec.get("flush") else None
        timings = time_interleaved(
            variants, spec["rounds"], spec["calls"], device=device, flush=flush
        )
    (rec,) = summarize(variants, timings, spec["calls"])
    return {k: rec[k] for k in ("p50_us", "p5_us", "p95_us", "rounds", "calls")}


def _alone_main(spec_json: str) -> int:
    """``python -c`` entry of the fresh process: prints ``time_alone``'s result as one JSON
    line (the last line of stdout), or {"error": ...}."""
    try:
        result = time_alone(json.loads(spec_json))
    except Exception as e:  # noqa: BLE001  (any failure is reported to the parent)
        print(json.dumps({"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}))
        return 1
    print(json.dumps(result))
    return 0


def run_alone(spec: dict, timeout: float = 600.0) -> dict:
    """Time ``spec`` in a fresh Python process (this interpreter, this environment):
    ``time_alone``'s result, or {"error": ...}."""
    code = (
        "import sys; from experiments.bench import _alone_main; sys.exit(_alone_main(sys.argv[1]))"  # noqa: E501
    )
    try:
        proc = subprocess.run(  # in the checkout, where `experiments` imports from
            [sys.executable, "-c", code, json.dumps(spec)],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


def check_alone(
    records: Sequence[dict],
    size: int,
    rounds: int = ALONE_ROUNDS,
    calls: int = SEED_CALLS,
    *,
    tolerance: float = ALONE_TOLERANCE,
    progress: bool = False,
    **options,
) -> list[dict]:
    """The protocol's records, each baseline row (``is_baseline``) re-timed alone in a fresh
    process (``run_alone``, ``rounds`` x ``calls``) and flagged by ``flag_baseline``; a row
    whose check failed gets ``alone_error`` instead. ``options``: flush, isa, malloc, as the
    protocol ran."""
    out = []
    n_todo, done = sum(is_baseline(r) for r in records), 0
    for r in records:
        if not is_baseline(r):
            out.append(dict(r))
            continue
        done += 1
        spec = alone_spec(r, size, rounds, calls, **options)
        res = run_alone(spec)
        if "error" in res:
            row = {**r, "alone_error": res["error"]}
            note = f"FAILED ({res['error']})"
        else:
            row = flag_baseline(r, res["p50_us"], tolerance)
            row["alone_rounds"] = res["rounds"]
            note = f"{r['p50_us']:.1f} us interleaved, {res['p50_us']:.1f} us alone"
            note += " SUSPECT" if row["baseline_suspect"] else ""
        if progress:
            print(
                f"alone {done}/{n_todo}: {r['direction']} {r['dtype']} {r['method']}: {note}",
                file=sys.stderr,
                flush=True,
            )
        out.append(row)
    return out


def run_sweep(
    sizes: Sequence[int],
    threads: Sequence[int],
    directions: Sequence[str],
    rounds: int,
    calls: int,
    *,
    out_dtypes: Sequence[str] = SWEEP_OUT_DTYPES,
    out_sizes: Sequence[int] = SWEEP_OUT_SIZES,
    max_memory: float = DEFAULT_MAX_MEMORY_GIB,
    skipped: list | None = None,
    progress: bool = False,
) -> list[dict]:
    """The size sweep (CPU): sizes one after the other, every variant of a size (directions x
    threads x methods x out modes) interleaved. float32 has every row; each dtype of
    ``out_dtypes`` adds turbogelu's and the limit's ``out=`` rows at the sizes of
    ``out_sizes`` (the DRAM targets of ``bench_targets``), interleaved with float32's. What
    does not fit in ``max_memory`` GiB (or 80% of the available memory) is skipped and
    reported: a whole size, or only the extra dtypes."""
    import torch

    skipped = [] if skipped is None else skipped
    avail = available_memory()
    budget = max_memory * (1 << 30)
    if avail is not None:
        budget = min(budget, 0.8 * avail)

    def over(need: int) -> str:
        return (
            f"needs {need / (1 << 30):.1f} GiB, over the budget of {budget / (1 << 30):.1f}"
            f" GiB (--max-memory {max_memory:g}, available"
            f" {'?' if avail is None else f'{avail / (1 << 30):.1f}'} GiB)"
        )

    plan = []  # (size, [dtypes]): float32 first
    for size in sizes:
        need = sweep_bytes(size)
        if need > budget:
            skipped.append(({"bench": "sweep", "size": size, "dtype": "float32"}, over(need)))
            continue
        dtypes = ["float32"]
        for dt in out_dtypes if size in out_sizes else ():
            if dt == "float32":
                continue
            extra = sweep_bytes(size, _dtype_size(dt), only_out=True)
            if need + extra > budget:
                skipped.append(({"bench": "sweep", "size": size, "dtype": dt}, over(need + extra)))
                continue
            need += extra
            dtypes.append(dt)
        plan.append((size, dtypes))

    def n_variants(dtypes):
        return len(threads) * sum(
            len(sweep_variants(d, 1024, 1, dtype=dt, only_out=dt != "float32"))
            for d in directions
            for dt in dtypes
        )

    bar = _Progress(rounds * sum(n_variants(dts) for _, dts in plan), "sweep", progress)
    records = []
    try:
        for size, dtypes in plan:
            variants = []
            for dt in dtypes:
                x, g = make_inputs(dt, size)
                inputs = (x, g, torch.empty_like(x))
                variants += [
                    v
                    for d in directions
                    for t in threads
                    for v in sweep_variants(
                        d, size, t, dtype=dt, calls=calls, inputs=inputs, only_out=dt != "float32"
                    )
                ]
            timings = time_interleaved(variants, rounds, calls, warmup=1, progress=bar)
            records += summarize(variants, timings, calls)
            del x, g, inputs, variants
            gc.collect()
    finally:
        bar.close()
    return records


def _dtype_size(dtype: str) -> int:
    return {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}[dtype]


def run_degree(
    size: int,
    rounds: int,
    calls: int,
    *,
    degrees: Sequence[int] = DEGREES,
    threads: int = 1,
    progress: bool = False,
) -> list[dict]:
    """Operation count vs time: every degree x scheme x direction interleaved."""
    variants = degree_variants(size, degrees, threads=threads)
    bar = _Progress(rounds * len(variants), "degree", progress)
    try:
        timings = time_interleaved(variants, rounds, calls, progress=bar)
    finally:
        bar.close()
    return summarize(variants, timings, calls)


def run_grain(
    sizes: Sequence[int], threads: int, rounds: int, calls: int
) -> tuple[list[dict], int | None, tuple[float, float, float]]:
    """turbogelu float32 forward, 1 thread against ``threads`` threads, grain 1.

    Returns the rows (one per size), the smallest size from which ``threads`` threads are
    ``faster`` at that size and every larger one (or None), and the control: torch's
    F.gelu at the largest size, (1 thread us, ``threads`` threads us, speedup)."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401

    tg = torch.ops.turbogelu
    variants = []
    for size in sizes:
        x, _ = make_inputs("float32", size)
        n = max(calls, GRAIN_ELEMENTS_PER_BATCH // size)
        for t in (1, threads):
            variants.append(
                Variant((size, t), lambda x=x: tg.gelu(x), lambda t=t: _num_threads(t), n)
            )
    # Control: torch's own parallel op, to tell "turbogelu is not parallel" from "the machine
    # has no second CPU to give".
    xc, _ = make_inputs("float32", sizes[-1])
    nc = max(calls, GRAIN_ELEMENTS_PER_BATCH // sizes[-1])
    for t in (1, threads):
        variants.append(
            Variant(("control", t), lambda: F.gelu(xc), lambda t=t: _num_threads(t), nc)
        )
    with _parallel_grain(1):
        timings = time_interleaved(variants, rounds, calls)
    rows = []
    for size in sizes:
        w1, wn = timings.wall[(size, 1)], timings.wall[(size, threads)]
        m1, mn = statistics.median(w1), statistics.median(wn)
        rows.append(
            {
                "size": size,
                "t1_us": m1 / 1e3,
                "tn_us": mn / 1e3,
                "t1_p5_us": quantile(w1, 0.05) / 1e3,
                "t1_p95_us": quantile(w1, 0.95) / 1e3,
                "tn_p5_us": quantile(wn, 0.05) / 1e3,
                "tn_p95_us": quantile(wn, 0.95) / 1e3,
                "speedup": m1 / mn,
                # paired: same round, so the same state of the machine
                "tn_faster_rounds": sum(a > b for a, b in zip(w1, wn, strict=True)) / len(w1),
                "calls": max(calls, GRAIN_ELEMENTS_PER_BATCH // size),
            }
        )
    crossover = None
    for r in reversed(rows):
        if not faster(r):
            break
        crossover = r["size"]
    c1 = statistics.median(timings.wall[("control", 1)])
    cn = statistics.median(timings.wall[("control", threads)])
    return rows, crossover, (c1 / 1e3, cn / 1e3, c1 / cn)


def faster(row: dict) -> bool:
    """Whether more threads are faster at this --grain row, beyond the noise."""
    return row["speedup"] >= GRAIN_MIN_SPEEDUP and row["tn_faster_rounds"] >= GRAIN_MIN_WON


def render_grain_table(rows: Sequence[dict], threads: int) -> str:
    lines = [
        f"| size | 1 thread us | {threads} threads us | speedup | {threads} threads faster in |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {bench_report.fmt_us(r['t1_us'])}"
            f" | {bench_report.fmt_us(r['tn_us'])} | {r['speedup']:.2f}"
            f" | {100 * r['tn_faster_rounds']:.0f}% of rounds |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- CLI


def _int_list(text: str) -> list[int]:
    """'65536,1M,4M,64M,256M' or '2:12' (inclusive)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            a, b = part.split(":")
            out += list(range(int(a), int(b) + 1))
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(part[-1:].upper(), 1)
        out.append(int(part[:-1]) * mult if mult > 1 else int(part))
    return out


def add_arguments(p) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run (< 1 min): the protocol at 10 rounds x 10 calls, a sweep of 64K and"
        " 1M, the degree curve at 64K",
    )
    p.add_argument(
        "--grain",
        action="store_true",
        help="only measure the parallel-grain crossover (1 thread vs all threads over sizes)",
    )
    p.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)} (all)"
    )
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N or mps")
    p.add_argument(
        "--size",
        type=int,
        default=SEED_SIZE,
        help="protocol / degree elements (default 1048576; the protocol adds 15 edge values)",
    )
    p.add_argument(
        "--rounds", type=int, default=None, help="protocol rounds (50; --quick 10; --grain 50)"
    )
    p.add_argument(
        "--calls", type=int, default=None, help="calls per timed batch (100; --quick 10; grain 20)"
    )
    p.add_argument(
        "--dtypes",
        default=None,
        help="protocol dtypes, comma-separated (default float32,float16,bfloat16)",
    )
    p.add_argument("--direction", choices=("forward", "backward", "both"), default="both")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="protocol intra-op threads (default 1; with --grain, the threads compared to 1: all)",
    )
    p.add_argument(
        "--methods", default=None, help="protocol methods, comma-separated (default all)"
    )
    p.add_argument("--no-compile", action="store_true", help="leave out torch.compile rows")
    p.add_argument(
        "--sweep-sizes", default=None, help="e.g. 64K,1M,4M,64M,256M (default; --quick 64K,1M)"
    )
    p.add_argument(
        "--sweep-threads", default="1,all", help="thread counts of the sweep (default 1,all)"
    )
    p.add_argument("--sweep-rounds", type=int, default=None, help="(20; --quick 5)")
    p.add_argument(
        "--sweep-out-dtypes",
        default=",".join(SWEEP_OUT_DTYPES),
        help="dtypes whose out= rows (turbogelu, limit) join the sweep at --sweep-out-sizes"
        " (default float16,bfloat16; 'none': float32 only)",
    )
    p.add_argument(
        "--sweep-out-sizes",
        default="64M",
        help="sizes of those rows, when in the sweep's sizes (default 64M: the DRAM targets)",
    )
    p.add_argument(
        "--alone-check",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the protocol, time each baseline row (torch, torch.compile, limits) alone"
        f" in a fresh process and flag it when its median is more than"
        f" {100 * ALONE_TOLERANCE:.0f}%% off (default: on; --quick: off). Costs a Python and"
        " torch start per row (42 rows in a full run; about 3 min on a 2-vCPU machine)",
    )
    p.add_argument(
        "--alone-rounds",
        type=int,
        default=ALONE_ROUNDS,
        help=f"rounds of each alone timing (default {ALONE_ROUNDS}; calls: the protocol's)",
    )
    p.add_argument(
        "--max-memory",
        type=float,
        default=DEFAULT_MAX_MEMORY_GIB,
        help="GiB the sweep may hold; larger sizes are skipped"
        f" (default {DEFAULT_MAX_MEMORY_GIB:g})",
    )
    p.add_argument("--degrees", default="2:12", help="degree curve, e.g. 2:12 or 4,8 (2:12)")
    p.add_argument(
        "--degree-size", type=int, default=None, help="degree curve elements (--size; quick 64K)"
    )
    p.add_argument("--degree-rounds", type=int, default=None, help="(30; --quick 5)")
    p.add_argument(
        "--isa", default=None, help="run turbogelu under this ISA (avx512bf16|avx512|avx2|scalar)"
    )
    p.add_argument(
        "--flush",
        action="store_true",
        help="protocol: overwrite 2x the last-level cache before every batch (GPU: L2)",
    )
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help=f"append the results (JSON lines) here (default {DEFAULT_OUT}; '-': do not write)",
    )
    p.add_argument("--plots", default=None, metavar="DIR", help="write the PNG figures here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--malloc",
        choices=("steady", "default"),
        default="steady",
        help="steady (default): glibc keeps freed memory, so output allocation below 32 MiB"
        " never page-faults; default: leave glibc's moving thresholds as they are",
    )


def _error(msg: str) -> int:
    print(f"bench: {msg}", file=sys.stderr)
    return 2


def main(args) -> int:  # noqa: C901  (one flat sequence of the parts)
    import torch

    import turbogelu.ops  # noqa: F401

    device = args.device
    on_cpu = device == "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        return _error(f"--device {device}: CUDA is not available here")
    if device == "mps" and not torch.backends.mps.is_available():
        return _error("--device mps: MPS is not available here")
    if not (on_cpu or device.startswith("cuda") or device == "mps"):
        return _error(f"--device must be cpu, cuda[:N] or mps, got {device!r}")
    if args.isa is not None and args.isa not in torch.ops.turbogelu._cpu_isas():
        return _error(
            f"ISA {args.isa!r} not available here; choose from "
            f"{', '.join(torch.ops.turbogelu._cpu_isas())}"
        )
    dtypes = tuple(args.dtypes.split(",")) if args.dtypes else DTYPES_QUICK
    bad = [d for d in dtypes if d not in DTYPES_ALL]
    if bad:
        return _error(f"unsupported dtype(s) {bad}; choose from {DTYPES_ALL}")
    out_dtypes = tuple(
        d for d in args.sweep_out_dtypes.split(",") if d.strip() and d.strip() != "none"
    )
    bad = [d for d in out_dtypes if d not in DTYPES_ALL]
    if bad:
        return _error(f"unsupported --sweep-out-dtypes {bad}; choose from {DTYPES_ALL}")
    try:
        out_sizes = tuple(_int_list(args.sweep_out_sizes))
    except ValueError:
        return _error(f"--sweep-out-sizes: not a list of sizes: {args.sweep_out_sizes!r}")
    if args.alone_rounds < 1:
        return _error(f"--alone-rounds must be >= 1, got {args.alone_rounds}")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    if set(parts) - set(PARTS):
        return _error(f"unknown part(s) {sorted(set(parts) - set(PARTS))}; choose from {PARTS}")
    if not on_cpu:
        parts = [p for p in parts if p == "protocol"]  # the sweep and degree parts: CPU
    methods = args.methods.split(",") if args.methods else None
    if methods is not None:
        known = set(METHODS["forward"]) | set(METHODS["backward"])
        if set(methods) - known:
            return _error(f"unknown method(s) {sorted(set(methods) - known)}")
    if args.no_compile:
        methods = [
            m
            for m in (methods or {*METHODS["forward"], *METHODS["backward"]})
            if "compile" not in m
        ]
    directions = ("forward", "backward") if args.direction == "both" else (args.direction,)
    all_threads = torch.get_num_threads()
    quick = args.quick
    progress = not args.no_progress
    malloc = "steady" if args.malloc == "steady" and steady_malloc() else "default"
    run_id = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    skipped: list = []
    records: list[dict] = []
    t_start = time.perf_counter()

    with _cpu_isa(args.isa):
        info = machine_info(device)
        if args.grain and not quick:
            return _main_grain(args, info, all_threads, malloc, run_id)
        common = {
            "run": run_id,
            "date": run_id,
            "quick": quick,
            "malloc": malloc,
            "machine": info,
            "torch": info["torch"],
            "version": info["turbogelu"],
            "git": info["git"],
            "isa": info["isa"],
        }

        def save(recs: list[dict]) -> None:
            # each part's rows as soon as it ends: an interrupted run keeps what it measured
            if args.out and args.out != "-":
                write_jsonl(args.out, bench_report.add_ratios(recs), common)
                print(f"appended {len(recs)} rows to {args.out}", file=sys.stderr)

        print(describe_machine(info))
        print(
            f"run {run_id} | malloc {malloc} | parts: {', '.join(parts)}"
            + (" | QUICK (smoke-test sizes; not for the note)" if quick else "")
        )
        if "protocol" in parts:
            rounds = args.rounds or (10 if quick else SEED_ROUNDS)
            calls = args.calls or (10 if quick else SEED_CALLS)
            threads = args.threads or 1
            flush = make_flush(device) if args.flush else None
            t0 = time.perf_counter()
            if progress:
                print(f"protocol: {rounds} rounds x {calls} calls ...", file=sys.stderr)
            recs = run_protocol(
                directions,
                dtypes,
                args.size,
                rounds,
                calls,
                device=device,
                threads=threads,
                methods=methods,
                flush=flush,
                skipped=skipped,
                progress=progress,
            )
            for r in recs:
                r["flush"] = bool(args.flush)
            t_protocol = time.perf_counter() - t0
            alone = (not quick) if args.alone_check is None else args.alone_check
            if alone:
                t1 = time.perf_counter()
                n = sum(is_baseline(r) for r in recs)
                print(
                    f"alone check: {n} baseline rows, each timed alone in a fresh process"
                    f" ({args.alone_rounds} rounds x {calls} calls) ...",
                    file=sys.stderr,
                    flush=True,
                )
                recs = check_alone(
                    recs,
                    args.size,
                    args.alone_rounds,
                    calls,
                    progress=True,  # a line per row even with --no-progress: minutes long
                    flush=bool(args.flush),
                    isa=args.isa,
                    malloc=malloc,
                )
                t_alone = time.perf_counter() - t1
            records += recs
            save(recs)
            print(
                f"\n## Protocol: {args.size} random elements + 15 edge values, {rounds} batches"
                f" x {calls} calls, {threads} thread(s), {device}"
                f"{', cache flushed before each batch' if args.flush else ''}"
                f" ({t_protocol:.0f} s)\n"
            )
            print(bench_report.protocol_table(bench_report.add_ratios(recs)))
            print()
            print(bench_report.protocol_notes(recs))
            if alone:
                print(
                    f"baseline rows timed alone in fresh processes ({args.alone_rounds} rounds"
                    f" x {calls} calls each, {t_alone:.0f} s):"
                    f" {bench_report.alone_summary(recs, ALONE_TOLERANCE)}"
                )
            else:
                print("baseline rows not timed alone (--no-alone-check, or --quick)")
        if "sweep" in parts:
            sizes = (
                _int_list(args.sweep_sizes)
                if args.sweep_sizes
                else ([1 << 16, 1 << 20] if quick else list(SWEEP_SIZES))
            )
            threads_list = sorted(
                {all_threads if t == "all" else int(t) for t in args.sweep_threads.split(",")}
            )
            rounds = args.sweep_rounds or (5 if quick else 20)
            calls = args.calls or (10 if quick else SEED_CALLS)
            t0 = time.perf_counter()
            if progress:
                print(f"sweep: sizes {sizes}, threads {threads_list} ...", file=sys.stderr)
            recs = run_sweep(
                sizes,
                threads_list,
                directions,
                rounds,
                calls,
                out_dtypes=out_dtypes,
                out_sizes=out_sizes,
                max_memory=args.max_memory,
                skipped=skipped,
                progress=progress,
            )
            records += recs
            save(recs)
            extra = sorted({r["dtype"] for r in recs} - {"float32"}, key=DTYPES_ALL.index)
            also = (
                f" (and {', '.join(extra)}: turbogelu and limit out= at"
                f" {', '.join(bench_report.size_label(n) for n in out_sizes if n in sizes)})"
                if extra
                else ""
            )
            print(
                f"\n## Size sweep: float32{also}, {rounds} rounds x max(1, min({calls},"
                f" {SWEEP_ELEMENTS_PER_BATCH} / size)) calls, threads {threads_list}"
                f" ({time.perf_counter() - t0:.0f} s)\n"
            )
            print(bench_report.sweep_table(bench_report.add_ratios(recs)))
        if "degree" in parts:
            size = args.degree_size or ((1 << 16) if quick else args.size)
            rounds = args.degree_rounds or (5 if quick else 30)
            calls = args.calls or (10 if quick else 20)
            degrees = _int_list(args.degrees)
            compiled = list(torch.ops.turbogelu._poly_degrees())
            if set(degrees) - set(compiled):
                return _error(f"degrees {sorted(set(degrees) - set(compiled))} not compiled")
            t0 = time.perf_counter()
            if progress:
                print(f"degree: degrees {degrees} at {size} ...", file=sys.stderr)
            recs = run_degree(size, rounds, calls, degrees=degrees, progress=progress)
            records += recs
            save(recs)
            print(
                f"\n## Operation count vs time: poly_gelu, float32, {size} elements, 1 thread,"
                f" {rounds} rounds x {calls} calls ({time.perf_counter() - t0:.0f} s); every"
                " row called below the autograd layer, as poly_gelu (which has none)\n"
            )
            print(bench_report.degree_table(bench_report.add_ratios(recs)))

    if skipped:
        print("\nSkipped:")
        for labels, reason in skipped:
            what = " ".join(
                str(labels[k])
                for k in ("bench", "direction", "dtype", "method", "size")
                if k in labels
            )
            print(f"- {what}: {reason}")
    records = bench_report.add_ratios(records)
    if records:
        from . import bench_targets

        result = bench_targets.evaluate([{**r, **common} for r in records])
        print("\n" + bench_targets.render(result))
        if args.out and args.out != "-":
            path = bench_targets.json_path(args.out)
            bench_targets.write(result, path)
            print(f"wrote {path}", file=sys.stderr)
    elapsed = time.perf_counter() - t_start
    print(f"\ntook {elapsed:.0f} s")
    if args.plots:
        rows = [{**r, **common} for r in records]
        for path in bench_report.plot_all(rows, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def _main_grain(args, info: dict, all_threads: int, malloc: str, run_id: str) -> int:
    rounds = args.rounds or 50
    calls = args.calls or 20
    threads = args.threads or max(2, all_threads)
    t0 = time.perf_counter()
    rows, crossover, control = run_grain(GRAIN_SIZES, threads, rounds, calls)
    elapsed = time.perf_counter() - t0
    print(describe_machine(info))
    print(
        f"grain: float32 forward, grain 1, {rounds} rounds x max({calls},"
        f" {GRAIN_ELEMENTS_PER_BATCH} / size) calls, malloc {malloc}"
    )
    print()
    print(render_grain_table(rows, threads))
    print()
    if crossover is None:
        print(f"{threads} threads are not faster at the largest size measured.")
    else:
        print(f"{threads} threads are faster from {crossover} elements on.")
    print(
        f"(faster: median speedup >= {GRAIN_MIN_SPEEDUP} and faster in >="
        f" {100 * GRAIN_MIN_WON:.0f}% of rounds, at that size and every larger one)"
    )
    c1, cn, cs = control
    print(
        f"control, torch F.gelu at {GRAIN_SIZES[-1]} elements: 1 thread"
        f" {bench_report.fmt_us(c1)} us, {threads} threads {bench_report.fmt_us(cn)} us,"
        f" speedup {cs:.2f}"
    )
    if rows[-1]["speedup"] < 1.15 and cs > 1.3:
        print(
            f"WARNING: torch's own op runs faster on {threads} threads but turbogelu does"
            " not: is the extension built without OpenMP? (without -fopenmp,"
            " at::parallel_for runs serially, so the table says nothing about the grain)"
        )
    print(f"took {elapsed:.1f} s")
    if args.out and args.out != "-":
        common = {"bench": "grain", "dtype": "float32", "direction": "forward", "kernel": "gelu"}
        common |= {"provider": "turbogelu", "method": "turbogelu", "out_mode": "alloc"}
        common |= {"grain": 1, "run": run_id, "date": run_id, "malloc": malloc, "machine": info}
        common |= {"torch": info["torch"], "version": info["turbogelu"], "isa": info["isa"]}
        common |= {"device": "cpu", "program": cpu_program()}
        long = [
            {
                "size": r["size"],
                "threads": t,
                "p50_us": r[f"{c}_us"],
                "p5_us": r[f"{c}_p5_us"],
                "p95_us": r[f"{c}_p95_us"],
                "calls": r["calls"],
                "rounds": rounds,
            }
            for r in rows
            for t, c in ((1, "t1"), (threads, "tn"))
        ]
        write_jsonl(args.out, long, common)
    return 0


def run_methods(
    methods: Sequence[str],
    directions: Sequence[str] = ("forward", "backward"),
    dtypes: Sequence[str] = ("float32",),
    size: int = 1 << 20,
    rounds: int = 30,
    calls: int = 10,
    threads: int = 1,
    malloc: str = "steady",
) -> list[dict]:
    """``run_protocol`` restricted to some methods (e.g. the two polynomial schemes,
    "turbogelu (poly)" and "turbogelu (Estrin)"), timed interleaved as ever, on ``threads``
    threads (one by default, as ``--quick``: on a shared machine more threads mostly measure
    the neighbours). The notebooks use it to time a few rows without the whole table.

    ``malloc="steady"`` (the default, as the command line's) calls ``steady_malloc`` first, a
    process-wide setting, so that a notebook's timings see the same allocator as the
    benchmark's. Each row records which it was ("malloc": "steady", or "default" where it was
    not asked for or not glibc). Ratios to the limit rows also need the benchmark's 100 calls
    per batch: in batches of 10 the first call's cache misses (its data evicted by the other
    rows) made the float32 copy 140 us instead of 115 us in one process."""
    if malloc not in ("steady", "default"):
        raise ValueError(f"malloc must be 'steady' or 'default', not {malloc!r}")
    known = {m for d in directions for m in METHODS[d]}
    if not set(methods) & known:
        raise ValueError(f"no method of {list(methods)} in {sorted(known)}")
    state = "steady" if malloc == "steady" and steady_malloc() else "default"
    rows = run_protocol(directions, dtypes, size, rounds, calls, threads=threads, methods=methods)
    for r in rows:
        r["malloc"] = state
    return bench_report.add_ratios(rows)  # vs_turbogelu: each row's p50 over turbogelu's
