"""The activation family's speed benchmark (issue 17, "Speed: the paper's Table 3 on this
machine"): ``python -m experiments bench --family`` (or ``--parts ...,family``).

What is timed, per function (sigmoid, tanh, silu, softcap, swiglu), direction, dtype
(float32, float16, bfloat16), size and thread count (1 and all):

* ``torch eager``: PyTorch's native eager op, as a user writes it and as autograd runs its
  backward (the row's ``call`` says exactly what):

  ==========  ===================================  ==========================================
  function    forward                              backward (what autograd computes)
  ==========  ===================================  ==========================================
  sigmoid     ``torch.sigmoid(x)``                 ``aten.sigmoid_backward(g, y)``, y saved
  tanh        ``torch.tanh(x)``                    ``aten.tanh_backward(g, y)``, y saved
  silu        ``F.silu(x)``                        ``aten.silu_backward(g, x)``
  softcap     ``c * torch.tanh(x / c)``            ``aten.tanh_backward(g * c, t) / c``, t saved
  swiglu      ``F.silu(a) * b``                    ``(aten.silu_backward(g * b, a), g * s)``,
                                                   s = silu(a) saved
  ==========  ===================================  ==========================================

  The saved tensors (y, t, s) are made once before timing, as autograd keeps them from the
  forward; the composites' backward is the sequence of aten ops autograd's nodes call
  (MulBackward, TanhBackward, DivBackward; MulBackward, SiluBackward), which the tests check
  bit for bit against ``torch.autograd``. With ``out=`` (the DRAM sizes) every eager op
  writes into the preallocated output (a composite chains through it in place: ``div(x, c,
  out=o); tanh(o, out=o); o.mul_(c)``), so neither side pays for fresh pages.
* ``turbogelu``: ``torch.ops.turbogelu.<function>`` and ``<function>_backward`` (the
  accurate tier; the backward ops take x, not the forward's result; swiglu_backward returns
  both gradients from one pass), ``.out`` at the DRAM sizes. For sigmoid's, tanh's and
  softcap's backward (``FROM_Y``) the ``turbogelu`` row is what autograd runs by default, as
  PyTorch's does: the backward from the saved result, ``<function>_backward_from_output(g,
  y[, c])`` (timed on PyTorch's saved tensor, c t for softcap: the same bytes as ours); their
  backward op from x is the ``turbogelu from x`` row (the paper's direct fits are from x).
* the limit rows, what moving the same bytes costs (a row's limit is the fastest of them):
  unary forward: ``limit: copy`` (and ``limit: stream copy``, non-temporal stores); swiglu's
  forward and the unary backward (two inputs, one output): ``limit: mul`` (and ``limit:
  stream read2``); swiglu's backward (three inputs, two outputs): ``limit: mul + copy``,
  ``torch.mul(g, a)`` then a copy of b: two passes that read g, a and b once each and write
  two outputs, the bytes of the one-pass pair op (and ``limit: stream read2 + copy``, the
  same with streaming stores). With ``out=`` every limit row writes into the row's
  preallocated output (the streaming ones through the probes' ``.out`` forms).

Sizes: 1,048,576 and the paper's 4,194,304 elements with an allocated output, 67,108,864 with
``out=`` (``OUT_FROM``: from this size on every row writes into a preallocated output); the
paper's 268,435,456 behind ``--family-paper-size``. Each row is labelled ``residency``
"cache" or "DRAM" from the bytes its call moves (inputs and outputs) and the last-level cache
the CPU reports (``records.cpu_caches``: the figures that the kernels' store rule reads):
"cache" when they fit in half of it (the kernels stream their stores above half the cache that
would hold them), else "DRAM".

The inputs: x = randn * 3 (as GELU's protocol; also swiglu's a), g and b = randn, and
softcap's input c * x, so that its tanh sees tanh's arguments. ``SOFTCAP_CAP`` = 50.

Method: ``bench_timing``'s. Per size and dtype every row (functions x directions x threads x
methods) is timed interleaved, in a per-round shuffled order, medians over rounds;
``ELEMENTS_PER_BATCH`` elements per batch (calls per batch: that / size, at least 1, at most
``--calls``). Rows are written to ``bench.jsonl`` beside GELU's, with ``bench="family"``,
``function`` (also ``kernel``), and ``bench_report.add_ratios``' ratios within a row's group:
the PyTorch row's ``vs_turbogelu`` is PyTorch / turbogelu. ``bench_report.family_table``
draws the table with the paper's GB200 column (``PAPER_TABLE3``) and
``bench_targets.family_targets`` the issue's targets.

torch is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Sequence

from .bench_timing import Progress, Variant, available_memory, summarize, time_interleaved
from .records import cpu_caches

FUNCTIONS = ("sigmoid", "tanh", "silu", "softcap", "swiglu", "softplus")
DIRECTIONS = ("forward", "backward")
DTYPES = ("float32", "float16", "bfloat16")
# Gemma 2's attention-logit softcap (its final-logit cap is 30); experiments/llm.py's B2 task,
# the paper's tanh-softcapped attention, caps at 50 too.
SOFTCAP_CAP = 50.0
SIZES = (1 << 20, 1 << 22, 1 << 26)
QUICK_SIZES = (1 << 16, 1 << 20)
PAPER_HBM_SIZE = 1 << 28  # the paper's HBM column: --family-paper-size adds it
# The functions whose backward "turbogelu" row is autograd's default from the saved result y
# (turbogelu.ops.FROM_OUTPUT_FUNCTIONS); their backward op from x is "turbogelu from x".
FROM_Y = ("sigmoid", "tanh", "softcap")
OUT_FROM = 1 << 26  # from this size on, every row writes into a preallocated output (out=)
ELEMENTS_PER_BATCH = 1 << 22
# Rounds of the full run, sized so that the family's part of `make reproduce` stays under 8
# minutes on the 2-core build machine: a round costs about 3.6 s at 1M and 4M together and
# 13 s at 64M (all functions, directions, dtypes, 1 and 2 threads); the full run (20 and 20
# rounds, with warm-up and inputs) took 389 s there, with other work on the machine (load
# average 1.4-3). 20 DRAM rounds: bench_targets.DRAM_MIN_ROUNDS, as GELU's DRAM targets.
ROUNDS, DRAM_ROUNDS = 20, 20
QUICK_ROUNDS = 5
LLC_ASSUMED = 64 << 20  # where the CPU reports no cache size (as the kernels' store rule)

# The paper's Table 3 (../shared/seeds/003_0783a5cae37bf496.txt, "Fast Polynomial
# Transcendentals for LLMs", Table 3: "Isolated FP16 function speed on GB200. Speedup is
# native PyTorch time divided by packed polynomial CUDA time"), float16, at 4,194,304
# elements (L2-cache resident) and 268,435,456 elements (HBM resident); its backward rows
# are direct derivative fits evaluated from x, native backward from the saved forward output.
# (direction, function) -> (the paper's program, speedup at 4M, speedup at 268M). It has no
# bfloat16 or float32 column and no SwiGLU or softcap row; GELU is timed by GELU's benchmark.
PAPER_TABLE3: dict[tuple[str, str], tuple[str, float, float]] = {
    ("forward", "sigmoid"): ("D3 polynomial", 1.702, 1.249),
    ("forward", "tanh"): ("D4 polynomial", 1.187, 1.143),
    ("forward", "silu"): ("D3 polynomial", 1.536, 1.267),
    ("forward", "gelu"): ("D5 polynomial", 1.673, 1.702),
    ("backward", "sigmoid"): ("D4 direct derivative", 2.135, 1.004),
    ("backward", "tanh"): ("D4 direct derivative", 2.184, 1.003),
}
PAPER_DTYPE, PAPER_L2_SIZE = "float16", 1 << 22
PAPER_MACHINE = "GB200"


def paper_speedup(function: str, direction: str, dtype: str, size: int, residency: str):
    """The paper's Table 3 figure beside one of our rows, or None: float16 only, its 4M
    (L2) column beside our 4,194,304-element rows, its 268M (HBM) column beside our DRAM
    rows."""
    entry = PAPER_TABLE3.get((direction, function))
    if entry is None or dtype != PAPER_DTYPE:
        return None
    if size == PAPER_L2_SIZE:
        return entry[1]
    return entry[2] if residency == "DRAM" else None


# ---------------------------------------------------------------- bytes and residency

_DTYPE_SIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def streams(function: str, direction: str) -> tuple[int, int]:
    """(inputs, outputs) of the turbogelu op, in tensors of the row's size."""
    if function == "swiglu":
        return (2, 1) if direction == "forward" else (3, 2)
    return (1, 1) if direction == "forward" else (2, 1)


def bytes_moved(function: str, direction: str, dtype: str, size: int) -> int:
    """The bytes one call reads and writes (the op's inputs and outputs, once each)."""
    i, o = streams(function, direction)
    return (i + o) * size * _DTYPE_SIZE[dtype]


def last_level_cache(caches: dict | None = None) -> tuple[int, bool]:
    """(bytes of the largest cache the CPU reports, whether it was assumed instead)."""
    caches = cpu_caches() if caches is None else caches
    sizes = [v for v in caches.values() if v]
    return (max(sizes), False) if sizes else (LLC_ASSUMED, True)


def residency(nbytes: int, llc: int) -> str:
    """ "cache" when ``nbytes`` fit in half the last-level cache ``llc``, else "DRAM"."""
    return "cache" if nbytes <= llc // 2 else "DRAM"


# ---------------------------------------------------------------- inputs and rows


def _needs(functions: Sequence[str], directions: Sequence[str]) -> list[str]:
    """The tensors the rows of ``functions`` x ``directions`` read or write."""
    bwd = "backward" in directions
    names = ["x", "out"]
    names += ["g"] if bwd else []
    names += ["b"] if "swiglu" in functions else []
    names += ["xs"] if "softcap" in functions else []
    names += ["y_sigmoid"] if bwd and "sigmoid" in functions else []
    names += ["y_tanh"] if bwd and "tanh" in functions else []
    names += ["t_softcap", "y_softcap"] if bwd and "softcap" in functions else []
    names += ["s_swiglu", "out2"] if bwd and "swiglu" in functions else []
    return names


def family_bytes(
    size: int, dtype: str, functions: Sequence[str] = FUNCTIONS, directions=DIRECTIONS
) -> int:
    """Peak bytes of one (size, dtype) group: its inputs and output buffers, and (allocating
    sizes) up to three outputs or temporaries alive at once (swiglu's eager backward)."""
    n = len(_needs(functions, directions)) + (0 if size >= OUT_FROM else 3)
    return n * size * _DTYPE_SIZE[dtype]


def make_family_inputs(
    dtype: str,
    size: int,
    functions: Sequence[str] = FUNCTIONS,
    directions: Sequence[str] = DIRECTIONS,
    *,
    cap: float = SOFTCAP_CAP,
    seed: int = 0,
) -> dict:
    """The tensors of ``_needs`` (seeded, CPU): x = randn * 3 and g = randn
    (``bench_variants.make_inputs``), b = randn (seed + 1), softcap's input xs = cap * x, the
    saved tensors of PyTorch's backward (y = sigmoid(x), tanh(x); t = tanh(xs / cap); s =
    silu(x)), computed by PyTorch in ``dtype`` as its forward would, and the output
    buffers."""
    import torch
    import torch.nn.functional as F

    from .bench_variants import make_inputs

    names = _needs(functions, directions)
    x, g = make_inputs(dtype, size, seed=seed)
    t: dict = {"x": x}
    if "g" in names:
        t["g"] = g
    del g
    if "b" in names:
        gen = torch.Generator().manual_seed(seed + 1)
        t["b"] = torch.randn(size, generator=gen).to(getattr(torch, dtype))
    if "xs" in names:
        t["xs"] = x * cap
    if "y_sigmoid" in names:
        t["y_sigmoid"] = torch.sigmoid(x)
    if "y_tanh" in names:
        t["y_tanh"] = torch.tanh(x)
    if "t_softcap" in names:
        t["t_softcap"] = torch.tanh(t["xs"] / cap)
    if "y_softcap" in names:
        t["y_softcap"] = cap * t["t_softcap"]
    if "s_swiglu" in names:
        t["s_swiglu"] = F.silu(x)
    t["out"] = torch.empty_like(x)
    if "out2" in names:
        t["out2"] = torch.empty_like(x)
    return t


def _calls(function: str, direction: str, t: dict, out_mode: str, cap: float) -> list:
    """[(method, call text, fn)] of one (function, direction) at one output mode."""
    import torch
    import torch.nn.functional as F

    import turbogelu.ops  # noqa: F401  (the ops, fake kernels and autograd)

    from . import probes

    tg, tb, aten = torch.ops.turbogelu, probes.OPS, torch.ops.aten
    x, out = t["x"], t["out"]
    c = cap
    rows = []
    if direction == "forward":
        if function in ("sigmoid", "tanh"):
            native = getattr(torch, function)
            ours = getattr(tg, function)
            if out_mode == "out":
                rows += [
                    ("torch eager", f"torch.{function}(x, out=out)",
                     lambda: native(x, out=out)),
                    ("turbogelu", f"turbogelu.{function}.out(x, out=out)",
                     lambda: ours.out(x, out=out)),
                ]  # fmt: skip
            else:
                rows += [
                    ("torch eager", f"torch.{function}(x)", lambda: native(x)),
                    ("turbogelu", f"turbogelu.{function}(x)", lambda: ours(x)),
                ]
        elif function == "silu":
            if out_mode == "out":
                rows += [
                    ("torch eager", "aten.silu.out(x, out=out)", lambda: aten.silu.out(x, out=out)),
                    ("turbogelu", "turbogelu.silu.out(x, out=out)",
                     lambda: tg.silu.out(x, out=out)),
                ]  # fmt: skip
            else:
                rows += [
                    ("torch eager", "F.silu(x)", lambda: F.silu(x)),
                    ("turbogelu", "turbogelu.silu(x)", lambda: tg.silu(x)),
                ]
        elif function == "softplus":  # F.softplus's defaults: beta 1, threshold 20
            if out_mode == "out":
                rows += [
                    ("torch eager", "aten.softplus.out(x, 1, 20, out=out)",
                     lambda: aten.softplus.out(x, 1.0, 20.0, out=out)),
                    ("turbogelu", "turbogelu.softplus.out(x, out=out)",
                     lambda: tg.softplus.out(x, out=out)),
                ]  # fmt: skip
            else:
                rows += [
                    ("torch eager", "F.softplus(x)", lambda: F.softplus(x)),
                    ("turbogelu", "turbogelu.softplus(x)", lambda: tg.softplus(x)),
                ]
        elif function == "softcap":
            xs = t["xs"]
            if out_mode == "out":

                def native_sc():
                    torch.div(xs, c, out=out)
                    torch.tanh(out, out=out)
                    out.mul_(c)

                rows += [
                    ("torch eager", "div(x, c, out=o); tanh(o, out=o); o.mul_(c)", native_sc),
                    ("turbogelu", "turbogelu.softcap.out(x, c, out=out)",
                     lambda: tg.softcap.out(xs, c, out=out)),
                ]  # fmt: skip
            else:
                rows += [
                    ("torch eager", "c * torch.tanh(x / c)", lambda: c * torch.tanh(xs / c)),
                    ("turbogelu", "turbogelu.softcap(x, c)", lambda: tg.softcap(xs, c)),
                ]
            x = xs  # the limit rows move softcap's input
        elif function == "swiglu":
            b = t["b"]
            if out_mode == "out":

                def native_sw():
                    aten.silu.out(x, out=out)
                    out.mul_(b)

                rows += [
                    ("torch eager", "aten.silu.out(a, out=o); o.mul_(b)", native_sw),
                    ("turbogelu", "turbogelu.swiglu.out(a, b, out=out)",
                     lambda: tg.swiglu.out(x, b, out=out)),
                    ("limit: mul", "torch.mul(a, b, out=out)", lambda: torch.mul(x, b, out=out)),
                    ("limit: stream read2", "turbogelu_bench._stream_read2.out(a, b, out=out)",
                     lambda: tb._stream_read2.out(x, b, out=out)),
                ]  # fmt: skip
            else:
                rows += [
                    ("torch eager", "F.silu(a) * b", lambda: F.silu(x) * b),
                    ("turbogelu", "turbogelu.swiglu(a, b)", lambda: tg.swiglu(x, b)),
                    ("limit: mul", "torch.mul(a, b)", lambda: torch.mul(x, b)),
                    ("limit: stream read2", "turbogelu_bench._stream_read2(a, b)",
                     lambda: tb._stream_read2(x, b)),
                ]  # fmt: skip
            return rows
        else:
            raise ValueError(f"unknown function {function!r}; the family: {FUNCTIONS}")
        xl = x
        if out_mode == "out":
            rows += [
                ("limit: copy", "out.copy_(x)", lambda: out.copy_(xl)),
                ("limit: stream copy", "turbogelu_bench._stream_copy.out(x, out=out)",
                 lambda: tb._stream_copy.out(xl, out=out)),
            ]  # fmt: skip
        else:
            rows += [
                ("limit: copy", "torch.empty_like(x).copy_(x)",
                 lambda: torch.empty_like(xl).copy_(xl)),
                ("limit: stream copy", "turbogelu_bench._stream_copy(x)",
                 lambda: tb._stream_copy(xl)),
            ]  # fmt: skip
        return rows
    if direction != "backward":
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    g = t["g"]
    if function in ("sigmoid", "tanh", "silu"):
        saved = x if function == "silu" else t[f"y_{function}"]
        sname = "x" if function == "silu" else f"{function}(x)"
        native = getattr(aten, f"{function}_backward")
        ours = getattr(tg, f"{function}_backward")
        # sigmoid and tanh: "turbogelu" is what autograd runs by default, the backward from
        # the saved result (FROM_OUTPUT; timed on PyTorch's y, the same bytes as ours);
        # "turbogelu from x" the backward op, which recomputes the derivative from x.
        from_x = "turbogelu" if function == "silu" else "turbogelu from x"
        if out_mode == "out":
            rows += [
                ("torch eager", f"aten.{function}_backward.grad_input(g, {sname}, grad_input=out)",
                 lambda: native.grad_input(g, saved, grad_input=out)),
                (from_x, f"turbogelu.{function}_backward.out(g, x, out=out)",
                 lambda: ours.out(g, x, out=out)),
            ]  # fmt: skip
        else:
            rows += [
                ("torch eager", f"aten.{function}_backward(g, {sname})",
                 lambda: native(g, saved)),
                (from_x, f"turbogelu.{function}_backward(g, x)", lambda: ours(g, x)),
            ]  # fmt: skip
        if function != "silu":
            from_y = getattr(tg, f"{function}_backward_from_output")
            if out_mode == "out":
                rows.append(
                    ("turbogelu",
                     f"turbogelu.{function}_backward_from_output.out(g, {sname}, out=out)",
                     lambda: from_y.out(g, saved, out=out))
                )  # fmt: skip
            else:
                rows.append(
                    ("turbogelu", f"turbogelu.{function}_backward_from_output(g, {sname})",
                     lambda: from_y(g, saved))
                )  # fmt: skip
        xl = x
    elif function == "softplus":
        # PyTorch's backward and ours both recompute sigmoid(x) from x
        if out_mode == "out":
            rows += [
                ("torch eager", "aten.softplus_backward.grad_input(g, x, 1, 20, grad_input=out)",
                 lambda: aten.softplus_backward.grad_input(g, x, 1.0, 20.0, grad_input=out)),
                ("turbogelu", "turbogelu.softplus_backward.out(g, x, out=out)",
                 lambda: tg.softplus_backward.out(g, x, out=out)),
            ]  # fmt: skip
        else:
            rows += [
                (
                    "torch eager",
                    "aten.softplus_backward(g, x, 1, 20)",
                    lambda: aten.softplus_backward(g, x, 1.0, 20.0),
                ),
                (
                    "turbogelu",
                    "turbogelu.softplus_backward(g, x)",
                    lambda: tg.softplus_backward(g, x),
                ),
            ]
        xl = x
    elif function == "softcap":
        xs, ts, ys = t["xs"], t["t_softcap"], t["y_softcap"]
        from_y = tg.softcap_backward_from_output
        if out_mode == "out":

            def native_scb():
                torch.mul(g, c, out=out)
                aten.tanh_backward.grad_input(out, ts, grad_input=out)
                out.div_(c)

            rows += [
                ("torch eager",
                 "mul(g, c, out=o); tanh_backward.grad_input(o, t, grad_input=o); o.div_(c)",
                 native_scb),
                ("turbogelu", "turbogelu.softcap_backward_from_output.out(g, y, c, out=out)",
                 lambda: from_y.out(g, ys, c, out=out)),
                ("turbogelu from x", "turbogelu.softcap_backward.out(g, x, c, out=out)",
                 lambda: tg.softcap_backward.out(g, xs, c, out=out)),
            ]  # fmt: skip
        else:
            rows += [
                ("torch eager", "aten.tanh_backward(g * c, tanh(x / c)) / c",
                 lambda: aten.tanh_backward(g * c, ts) / c),
                ("turbogelu", "turbogelu.softcap_backward_from_output(g, y, c)",
                 lambda: from_y(g, ys, c)),
                ("turbogelu from x", "turbogelu.softcap_backward(g, x, c)",
                 lambda: tg.softcap_backward(g, xs, c)),
            ]  # fmt: skip
        xl = xs
    elif function == "swiglu":
        b, s, out2 = t["b"], t["s_swiglu"], t["out2"]
        if out_mode == "out":

            def native_swb():
                torch.mul(g, b, out=out)
                aten.silu_backward.grad_input(out, x, grad_input=out)
                torch.mul(g, s, out=out2)

            def limit_swb():
                torch.mul(g, x, out=out)
                out2.copy_(b)

            def limit_swb_stream():
                tb._stream_read2.out(g, x, out=out)
                tb._stream_copy.out(b, out=out2)

            rows += [
                ("torch eager",
                 "mul(g, b, out=oa); silu_backward.grad_input(oa, a, grad_input=oa);"
                 " mul(g, silu(a), out=ob)", native_swb),
                ("turbogelu", "turbogelu.swiglu_backward.out(g, a, b, grad_a=oa, grad_b=ob)",
                 lambda: tg.swiglu_backward.out(g, x, b, grad_a=out, grad_b=out2)),
                ("limit: mul + copy", "mul(g, a, out=oa); ob.copy_(b)", limit_swb),
                ("limit: stream read2 + copy",
                 "_stream_read2.out(g, a, out=oa); _stream_copy.out(b, out=ob)", limit_swb_stream),
            ]  # fmt: skip
        else:
            rows += [
                ("torch eager", "(aten.silu_backward(g * b, a), g * silu(a))",
                 lambda: (aten.silu_backward(g * b, x), g * s)),
                ("turbogelu", "turbogelu.swiglu_backward(g, a, b)",
                 lambda: tg.swiglu_backward(g, x, b)),
                ("limit: mul + copy", "(torch.mul(g, a), torch.empty_like(b).copy_(b))",
                 lambda: (torch.mul(g, x), torch.empty_like(b).copy_(b))),
                ("limit: stream read2 + copy",
                 "(_stream_read2(g, a), _stream_copy(b))",
                 lambda: (tb._stream_read2(g, x), tb._stream_copy(b))),
            ]  # fmt: skip
        return rows
    else:
        raise ValueError(f"unknown function {function!r}; the family: {FUNCTIONS}")
    if out_mode == "out":
        rows += [
            ("limit: mul", "torch.mul(g, x, out=out)", lambda: torch.mul(g, xl, out=out)),
            ("limit: stream read2", "turbogelu_bench._stream_read2.out(g, x, out=out)",
             lambda: tb._stream_read2.out(g, xl, out=out)),
        ]  # fmt: skip
    else:
        rows += [
            ("limit: mul", "torch.mul(g, x)", lambda: torch.mul(g, xl)),
            ("limit: stream read2", "turbogelu_bench._stream_read2(g, x)",
             lambda: tb._stream_read2(g, xl)),
        ]  # fmt: skip
    return rows


def _provider(method: str) -> str:
    if method.startswith("limit"):
        return "limit"
    return "torch" if method.startswith("torch") else "turbogelu"


# The functions whose accurate tier has a cells program on the CPU (softcap through tanh's,
# SwiGLU through SiLU's; turbogelu/approx/family_cells.py): it runs where the CPU program is
# "cells", by default on AVX-512.
CELLS_FUNCTIONS = ("sigmoid", "tanh", "silu", "softcap", "swiglu")


def _cpu_program(function: str, program: str | None) -> str | None:
    """The CPU program a turbogelu row runs: "cells" or "poly" (None: no program)."""
    if program != "accurate":
        return None
    from turbogelu import ops as tops

    cells = function in CELLS_FUNCTIONS and tops.cpu_kernel() == "cells"
    return "cells" if cells else "poly"


def _program(function: str, direction: str, method: str) -> str | None:
    """What a turbogelu row runs: the accurate tier's programs, or (sigmoid's and tanh's
    default backward) none, the formula on the saved result."""
    if not method.startswith("turbogelu"):
        return None
    if method == "turbogelu" and direction == "backward" and function in FROM_Y:
        return "from y"
    return "accurate"


@contextlib.contextmanager
def _threads(n: int):
    from .bench_variants import num_threads

    with num_threads(n):
        yield


def family_variants(
    function: str,
    direction: str,
    dtype: str,
    size: int,
    threads: int,
    inputs: dict,
    *,
    calls: int = 100,
    cap: float = SOFTCAP_CAP,
    llc: int | None = None,
) -> list[Variant]:
    """The rows of one (function, direction, dtype, size, threads) group: PyTorch's eager
    op, turbogelu's and the limit rows, with an allocated output below ``OUT_FROM`` elements
    and ``out=`` from there on, keyed ("family", function, direction, dtype, size, threads,
    method)."""
    if function not in FUNCTIONS:
        raise ValueError(f"unknown function {function!r}; the family: {FUNCTIONS}")
    if llc is None:
        llc = last_level_cache()[0]
    out_mode = "out" if size >= OUT_FROM else "alloc"
    nbytes = bytes_moved(function, direction, dtype, size)
    where = residency(nbytes, llc)
    n_calls = max(1, min(calls, ELEMENTS_PER_BATCH // size))
    variants = []
    for method, call, fn in _calls(function, direction, inputs, out_mode, cap):
        labels = {
            "bench": "family",
            "function": function,
            "kernel": function,
            "provider": _provider(method),
            "method": method,
            "call": call,
            "direction": direction,
            "dtype": dtype,
            "size": size,
            "threads": threads,
            "device": "cpu",
            "out_mode": out_mode,
            "program": _program(function, direction, method),
            "cpu_program": _cpu_program(function, _program(function, direction, method)),
            "residency": where,
            "bytes_moved": nbytes,
            "llc_bytes": llc,
        }
        if function == "softcap":
            labels["cap"] = cap
        key = ("family", function, direction, dtype, size, threads, method)
        variants.append(
            Variant(key, fn, lambda threads=threads: _threads(threads), n_calls, labels)
        )
    return variants


def run_family(
    functions: Sequence[str] = FUNCTIONS,
    directions: Sequence[str] = DIRECTIONS,
    dtypes: Sequence[str] = DTYPES,
    sizes: Sequence[int] = SIZES,
    threads: Sequence[int] = (1,),
    *,
    rounds: int = ROUNDS,
    dram_rounds: int = DRAM_ROUNDS,
    calls: int = 100,
    cap: float = SOFTCAP_CAP,
    max_memory: float = 6.0,
    skipped: list | None = None,
    progress: bool = False,
) -> list[dict]:
    """The family's rows: sizes one after the other, dtypes one after the other within a
    size, every row of a (size, dtype) interleaved (``rounds`` rounds below ``OUT_FROM``
    elements, ``dram_rounds`` from there on). What does not fit in ``max_memory`` GiB (or
    80% of the available memory) is skipped and ``(labels, reason)`` appended to
    ``skipped``."""
    bad = sorted(set(functions) - set(FUNCTIONS))
    if bad:
        raise ValueError(f"unknown function(s) {bad}; the family: {', '.join(FUNCTIONS)}")
    skipped = [] if skipped is None else skipped
    avail = available_memory()
    budget = max_memory * (1 << 30)
    if avail is not None:
        budget = min(budget, 0.8 * avail)
    llc = last_level_cache()[0]
    plan = []
    for size in sizes:
        for dt in dtypes:
            need = family_bytes(size, dt, functions, directions)
            if need > budget:
                reason = (
                    f"needs {need / (1 << 30):.1f} GiB, over the budget of"
                    f" {budget / (1 << 30):.1f} GiB (--max-memory {max_memory:g})"
                )
                skipped.append(({"bench": "family", "size": size, "dtype": dt}, reason))
                continue
            plan.append((size, dt))

    total = 0
    for size, _dt in plan:
        r = dram_rounds if size >= OUT_FROM else rounds
        total += r * len(threads) * len(functions) * len(directions) * _n_methods(size)
    bar = Progress(total, "family", progress)
    records: list[dict] = []
    try:
        for size, dt in plan:
            inputs = make_family_inputs(dt, size, functions, directions, cap=cap)
            variants = [
                v
                for f in functions
                for d in directions
                for n in threads
                for v in family_variants(f, d, dt, size, n, inputs, calls=calls, cap=cap, llc=llc)
            ]
            r = dram_rounds if size >= OUT_FROM else rounds
            timings = time_interleaved(variants, r, calls, warmup=1, progress=bar)
            records += summarize(variants, timings, calls)
            del inputs, variants, timings
            gc.collect()
    finally:
        bar.close()
    return records


def _n_methods(size: int) -> int:
    """How many rows ``_calls`` makes for a group (for the progress bar): PyTorch's,
    turbogelu's and two limit rows, plain and streaming (a few groups add a row)."""
    return 4
