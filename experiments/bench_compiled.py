"""The compiled rows (issue 37, item 4): PyTorch's activations and turbogelu's under
torch.compile, alone and in chains, beside their eager calls and a copy of the same bytes; and
an MLP block (Linear -> activation -> Linear) forward and backward, eager and compiled.

Every group (function, dtype; or the block) is timed interleaved in one process, one thread,
medians of the rounds (experiments.bench_timing), every compiled function compiled before the
first round. Records carry ``bench="compiled"``, ``function``, ``chain``, ``dtype``, ``size``,
``method`` and the instruction set of Inductor's generated code (``vec_isa``):

    alone     f(x)                        torch eager / torch compiled / turbogelu eager /
                                          turbogelu compiled, and "copy" (x.clone())
    bias      f(x + b)                    torch compiled, turbogelu compiled, turbogelu eager,
                                          and "no activation compiled" (x + b itself)
    residual  r + f(x)                    as bias (GELU and SiLU)
    softmax   softmax(softcap(s, 30))     rows of 1024 scores (softcap; torch's softmax, and
                                          "turbogelu softmax compiled": the package's own)
    block     Linear(1024, 4096) -> f -> Linear(4096, 1024) on 2048 tokens, forward and
              backward: torch / turbogelu, eager / compiled (GELU, float32)

SwiGLU's rows are the activation times a gate: ``silu(a) * b`` against ``turbogelu.swiglu(a,
b)``. ``experiments.bench_targets.compiled_targets`` judges them (issue 37, item 5).

    python -m experiments bench-compiled [--out results/bench_compiled.jsonl] [--quick]

(``make reproduce``'s bench step runs it; notebook 10's section "Under the compiler" shows it.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .bench_timing import Progress, Variant, summarize, time_interleaved

FUNCTIONS = ("gelu", "gelu_tanh", "sigmoid", "tanh", "silu", "softplus", "exp2", "softcap",
             "swiglu")  # fmt: skip
QUICK_FUNCTIONS = ("gelu",)  # with the alone and bias rows only (make reproduce QUICK=1)
DTYPES = ("float32", "bfloat16")
RESIDUAL_FUNCTIONS = ("gelu", "silu")
SIZE = 1 << 20
CAP = 30.0
SCORES = (1024, 1024)  # the softmax chain's scores: SIZE elements in rows of 1024
BLOCK = (2048, 1024, 4096)  # tokens, model width, hidden width
ROUNDS, CALLS = 15, 20
BLOCK_ROUNDS = 5
OUT = Path("results/bench_compiled.jsonl")


def activations(function: str):
    """(PyTorch's call, turbogelu's) of one function, as a model writes them."""
    import torch
    import torch.nn.functional as F

    import turbogelu

    table = {
        "gelu": (F.gelu, turbogelu.gelu),
        "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: turbogelu.gelu(x, "tanh")),
        "sigmoid": (torch.sigmoid, turbogelu.sigmoid),
        "tanh": (torch.tanh, turbogelu.tanh),
        "silu": (F.silu, turbogelu.silu),
        "softplus": (F.softplus, turbogelu.softplus),
        "exp2": (torch.exp2, turbogelu.exp2),
        "softcap": (lambda x: CAP * torch.tanh(x / CAP), lambda x: turbogelu.softcap(x, CAP)),
        "swiglu": (lambda a, b: F.silu(a) * b, turbogelu.swiglu),
    }
    return table[function]


def vec_isa() -> str:
    """The instruction set of Inductor's generated C++ on this machine (its own choice)."""
    from torch._inductor import cpu_vec_isa

    return str(cpu_vec_isa.pick_vec_isa()) or "scalar"


@contextlib.contextmanager
def one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _compile(fn: Callable) -> Callable:
    import torch

    return torch.compile(fn, fullgraph=True, dynamic=False)


CHAINS = ("alone", "bias", "residual", "softmax")


def group_variants(
    function: str, dtype: str, size: int = SIZE, chains: Sequence[str] = CHAINS
) -> list[Variant]:
    """The rows of one (function, dtype) group in ``chains`` (module docstring; "alone"
    always)."""
    import torch

    import turbogelu

    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(size, generator=gen) * 3).to(dt)
    b = (torch.randn(size, generator=gen)).to(dt)
    theirs, ours = activations(function)
    gated = function == "swiglu"
    rows: list[tuple[str, str, Callable]] = [("alone", "copy", lambda: x.clone())]
    if gated:
        rows += [
            ("alone", "torch eager", lambda: theirs(x, b)),
            ("alone", "turbogelu eager", lambda: ours(x, b)),
            ("alone", "torch compiled", _bind(_compile(theirs), x, b)),
            ("alone", "turbogelu compiled", _bind(_compile(ours), x, b)),
        ]
    else:
        rows += [
            ("alone", "torch eager", lambda: theirs(x)),
            ("alone", "turbogelu eager", lambda: ours(x)),
            ("alone", "torch compiled", _bind(_compile(theirs), x)),
            ("alone", "turbogelu compiled", _bind(_compile(ours), x)),
        ]
        made = {"bias": lambda f: lambda x, b: f(x + b)}
        if function in RESIDUAL_FUNCTIONS:
            made["residual"] = lambda f: lambda x, r: r + f(x)
        for chain, make in made.items():
            if chain not in chains:
                continue
            rows += [
                (chain, "no activation compiled", _bind(_compile(make(lambda v: v)), x, b)),
                (chain, "torch compiled", _bind(_compile(make(theirs)), x, b)),
                (chain, "turbogelu compiled", _bind(_compile(make(ours)), x, b)),
                (chain, "turbogelu eager", _bind(make(ours), x, b)),
            ]
        if function == "softcap" and "softmax" in chains:
            s = x.reshape(-1, SCORES[1])

            def softmax_of(f):
                return lambda s: torch.softmax(f(s), dim=-1)

            rows += [
                ("softmax", "no activation compiled", _bind(_compile(softmax_of(lambda v: v)), s)),
                ("softmax", "torch compiled", _bind(_compile(softmax_of(theirs)), s)),
                ("softmax", "turbogelu compiled", _bind(_compile(softmax_of(ours)), s)),
                ("softmax", "turbogelu eager", _bind(softmax_of(ours), s)),
                # the package's softmax too (lowered around the exp2 program)
                (
                    "softmax",
                    "turbogelu softmax compiled",
                    _bind(_compile(lambda s: turbogelu.softmax(ours(s), -1)), s),
                ),  # fmt: skip
            ]
    isa = vec_isa()
    calls = max(1, min(CALLS, (1 << 22) // size))
    return [
        Variant(
            ("compiled", function, chain, dtype, size, method),
            fn,
            one_thread,
            calls,
            {
                "bench": "compiled",
                "function": function,
                "chain": chain,
                "dtype": dtype,
                "size": size,
                "threads": 1,
                "method": method,
                "vec_isa": isa,
                "device": "cpu",
            },
        )  # fmt: skip
        for chain, method, fn in rows
    ]


def _bind(fn: Callable, *args) -> Callable[[], object]:
    return lambda: fn(*args)


def block_variants(dtype: str = "float32", function: str = "gelu") -> list[Variant]:
    """Linear -> f -> Linear on BLOCK's tokens and widths, a forward and a backward per call:
    PyTorch's activation and turbogelu's, eager and compiled."""
    import torch

    dt = getattr(torch, dtype)
    tokens, width, hidden = BLOCK
    torch.manual_seed(0)
    x = torch.randn(tokens, width, dtype=dt)
    theirs, ours = activations(function)
    rows = []

    class Act(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, v):
            return self.fn(v)

    for who, act in (("torch", theirs), ("turbogelu", ours)):
        torch.manual_seed(1)  # the same weights for both
        model = torch.nn.Sequential(
            torch.nn.Linear(width, hidden), Act(act), torch.nn.Linear(hidden, width)
        ).to(dt)
        for how, m in (("eager", model), ("compiled", _compile(model))):
            rows.append((f"{who} {how}", _step(m, tuple(model.parameters()), x)))
    isa = vec_isa()
    return [
        Variant(
            ("compiled", function, "block", dtype, tokens, method),
            fn,
            one_thread,
            1,
            {
                "bench": "compiled",
                "function": function,
                "chain": "block",
                "dtype": dtype,
                "size": tokens * width,
                "threads": 1,
                "method": method,
                "vec_isa": isa,
                "device": "cpu",
                "block": list(BLOCK),
            },
        )  # fmt: skip
        for method, fn in rows
    ]


def _step(model, params: tuple, x) -> Callable[[], None]:
    """One forward and backward of the block (the gradients cleared first)."""

    def step():
        for p in params:
            p.grad = None
        model(x).square().mean().backward()

    return step


def run(
    functions: Sequence[str] = FUNCTIONS,
    dtypes: Sequence[str] = DTYPES,
    *,
    rounds: int = ROUNDS,
    block: bool = True,
    block_rounds: int = BLOCK_ROUNDS,
    size: int = SIZE,
    chains: Sequence[str] = CHAINS,
    progress: bool = False,
) -> list[dict]:
    """Every group's records (module docstring), group after group."""
    import torch

    bad = sorted(set(functions) - set(FUNCTIONS))
    if bad:
        raise ValueError(f"unknown function(s) {bad}; choose from {FUNCTIONS}")
    records: list[dict] = []
    groups = [(f, d) for d in dtypes for f in functions]
    bar = Progress(len(groups) + int(block), "compiled", progress)
    try:
        for function, dtype in groups:
            # Dynamo caches compiled code per code object: the chains' lambdas (and F.gelu)
            # recur in every group and would reach its recompile limit
            torch._dynamo.reset()
            variants = group_variants(function, dtype, size, chains)
            timings = time_interleaved(variants, rounds, CALLS, warmup=2)
            records += summarize(variants, timings, CALLS)
            bar.update()
            if progress and bar.bar is None:  # no terminal: a line per group
                print(f"compiled rows: {function} {dtype} ({bar.done}/{len(groups)})",
                      file=sys.stderr, flush=True)  # fmt: skip
        if block:
            torch._dynamo.reset()
            variants = block_variants()
            timings = time_interleaved(variants, block_rounds, 1, warmup=1, settle=0)
            records += summarize(variants, timings, 1)
            bar.update()
    finally:
        bar.close()
    return records


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=OUT, help=f"JSON lines to write ({OUT})")
    p.add_argument(
        "--quick", action="store_true",
        help=f"{', '.join(QUICK_FUNCTIONS)} only, alone and in the bias chain, 5 rounds, no MLP "
        "block",
    )  # fmt: skip
    p.add_argument("--functions", nargs="+", choices=FUNCTIONS, default=None)
    p.add_argument("--no-block", action="store_true", help="leave out the MLP block")


def run_args(args: argparse.Namespace) -> int:
    """The command (``python -m experiments bench-compiled``): run, write the rows and their
    targets (``bench_targets.evaluate``), print the targets."""
    functions = args.functions or (QUICK_FUNCTIONS if args.quick else FUNCTIONS)
    block = not (args.quick or args.no_block)
    rounds = 5 if args.quick else ROUNDS
    chains = ("alone", "bias") if args.quick else CHAINS
    records = run(functions, rounds=rounds, block=block, chains=chains, progress=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    from . import bench_targets

    # the targets table of these rows, beside them (results/bench_compiled_targets.json)
    result = bench_targets.evaluate(records)
    bench_targets.write(result, bench_targets.json_path(args.out))
    print(bench_targets.render(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.bench_compiled", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_arguments(p)
    return run_args(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
