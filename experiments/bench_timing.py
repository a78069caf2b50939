"""How the benchmark (``experiments.bench``) times: every variant of a part visited once per
round, in an order shuffled per round by a seeded RNG, one batch of calls each; per-call wall
and thread-CPU times kept per round and summarized as the median and the 5th and 95th
percentiles over the rounds (the method is described in full in ``experiments.bench``). Also
the process settings that keep timings steady (glibc's allocator) and a cache flush.

torch is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Sequence

from .records import quantile


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


class Progress:
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


# Untimed calls before each batch, as a fraction of the batch's calls. Measured on the AVX2
# AMD EPYC (2026-12-03, `experiments/archive/baseline_alone/settle.py`): a 1M-element bfloat16 copy
# into a preallocated output, right after 20 calls of F.gelu (40 MiB of fresh outputs through
# the caches), took 145 us on its first call, 102 on the next four, 88 on calls 5-19 and 56-59
# from call 20 on; a 100-call batch averaged 65.4 us after F.gelu, 57.2 after copies, and
# 58.1 after F.gelu with 20 untimed calls first. That order effect put the protocol's copy row
# 11-40 % above its times alone (flagged baseline_suspect in two runs). A fifth of a batch
# covers the settling at 1M elements; batches of fewer than five calls (4M elements and up,
# where the data does not stay in the cache anyway) get none.
SETTLE_FRACTION = 0.2


def time_interleaved(
    variants: Sequence[Variant],
    rounds: int,
    calls: int,
    *,
    warmup: int = 3,
    seed: int = 0,
    device: str = "cpu",
    flush: Callable[[], object] | None = None,
    progress: Progress | None = None,
    settle: float = SETTLE_FRACTION,
) -> Timings:
    """Time every variant once per round, in a per-round shuffled (seeded) order.

    ``flush`` (if given) runs before every batch, outside the timed region. Without it, each
    batch of n calls is preceded by ``int(settle * n)`` untimed calls of the same variant
    (``SETTLE_FRACTION``): a batch is then timed in the cache state its own calls leave, as
    when the variant is timed alone, not in the one the variant before it left."""
    if rounds < 1 or calls < 1:
        raise ValueError(f"rounds and calls must be >= 1, got {rounds} and {calls}")
    if not 0 <= settle <= 1:
        raise ValueError(f"settle must be in [0, 1], got {settle}")
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
                    else:
                        for _ in range(int(settle * n)):
                            v.fn()
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


# ---------------------------------------------------------------- summary


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
