"""Digests of every output bit the CPU ops give: the check that a rewrite of the kernels (issue
36's one stack) keeps every bit.

Each case is one public op (``torch.ops.turbogelu.*``, the names users' code and saved exports
call) with one setting of its arguments: the GELU forms and backwards, each family op in each
tier with each backward (and the from-output backwards), softcap at two caps, SwiGLU's two
outputs, softmax; each in float32, float64, float16 and bfloat16, each under the polynomial and
the cells program (``use_cpu_kernel``). Inputs:

* float16 / bfloat16: every one of the 65,536 bit patterns (NaN, infinities, subnormals, -0);
* float32: 2^18 patterns spread over every exponent (the top 18 bits counted, the low 14 mixed),
  then the infinities, the largest and smallest normal, the smallest subnormal and 1, each signed;
* float64: 2^16 patterns, the same way, and the same ten values.

The incoming gradient is an integer pattern (k/1024 for k in [-2046, 2046], mixed), so no
random generator (whose vectorised normal sampler may differ between CPUs) is involved. A
case's digest is the SHA-256 of its outputs' bits with every NaN written as one canonical NaN
(payloads are not part of the contract; positions are).

The CPU's instruction sets must all give the same bits (the kernels' design, tested for every
ISA by tests/test_output_digests.py), so the fixture holds one digest per case, and a machine
checks it under every instruction set it has: an AVX2 machine checks scalar and AVX2, an
AVX-512 machine the AVX-512 loops too.

Regenerate (only on purpose: a changed digest is a changed output bit):
    .venv/bin/python tests/output_digests.py --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch

from turbogelu import _table

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "output_digests.json"
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
PROGRAMS = ("poly", "cells")
FAMILY_UNARY = ("sigmoid", "tanh", "silu", "exp2", "softplus")
FROM_OUTPUT = ("sigmoid", "tanh", "exp2")  # and softcap, which takes its cap
TIERS = ("accurate", "paper")
BACKWARDS = ("default", "direct", "matched")
CAPS = (30.0, 1.5)
_INT = {torch.float32: torch.int32, torch.float64: torch.int64}
_INT.update({torch.float16: torch.int16, torch.bfloat16: torch.int16})
_UINT = {torch.float32: np.uint32, torch.float64: np.uint64}
_UINT.update({torch.float16: np.uint16, torch.bfloat16: np.uint16})
_WIDTH = {torch.float32: 32, torch.float64: 64, torch.float16: 16, torch.bfloat16: 16}


def inputs(dtype: torch.dtype) -> torch.Tensor:
    """The input bit patterns of ``dtype`` (see the module docstring), as that dtype."""
    width = _WIDTH[dtype]
    if width == 16:
        raw = np.arange(1 << 16, dtype=np.uint64)
    else:
        count = 18 if width == 32 else 16
        k = np.arange(1 << count, dtype=np.uint64)
        low = width - count
        # Knuth's multiplicative hash spreads the low bits; exact in uint64 modulo 2^64.
        mix = (k * np.uint64(2654435761)) & np.uint64((1 << low) - 1)
        raw = (k << np.uint64(low)) | mix
    bits = raw.astype(_UINT[dtype])
    x = torch.from_numpy(bits.view(np.int64 if width == 64 else f"int{width}")).view(dtype)
    if width == 16:
        return x
    # The hash leaves the infinities and the extremes out; they end the tensor (an odd tail).
    info = torch.finfo(dtype)
    specials = [float("inf"), info.max, info.tiny, info.tiny * info.eps, 1.0]
    specials = torch.tensor(specials + [-v for v in specials], dtype=dtype)
    return torch.cat([x, specials])


def gradient(like: torch.Tensor, salt: int = 0) -> torch.Tensor:
    """An incoming gradient of ``like``'s size and dtype: (k mod 4093 - 2046) / 1024 with k a
    mix of the index, rounded to the dtype (exactly specified: a float64 value of 12
    significant bits rounded to nearest even)."""
    k = np.arange(like.numel(), dtype=np.int64) * 40503 + 977 * salt
    values = ((k % 4093) - 2046).astype(np.float64) / 1024.0
    return torch.from_numpy(values).to(like.dtype)


def canonical_bits(t: torch.Tensor) -> bytes:
    """The bits of ``t`` with every NaN replaced by one positive quiet NaN."""
    t = t.detach().contiguous()
    t = torch.where(torch.isnan(t), torch.full_like(t, float("nan")).abs(), t)
    return t.view(_INT[t.dtype]).numpy().tobytes()


def digest(*outputs: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in outputs:
        h.update(canonical_bits(t))
    return h.hexdigest()


def _softmax_rows(x: torch.Tensor) -> torch.Tensor:
    """The finite inputs of ``x``, as rows of 64 (softmax's cases; NaN and infinities in a row
    are covered by tests/test_softmax_op.py)."""
    finite = x[torch.isfinite(x)]
    finite = finite[: finite.numel() // 64 * 64]
    return finite.reshape(-1, 64)


def cases(dtype: torch.dtype):
    """(name, thunk) for every case of one dtype; each thunk returns the output tensors."""
    ops = torch.ops.turbogelu
    x = inputs(dtype)
    g = gradient(x)
    b = gradient(x, salt=1)
    for mode in ("none", "tanh"):
        yield f"gelu/{mode}", lambda m=mode: (ops.gelu(x, m),)
        for bw in BACKWARDS:
            yield (
                f"gelu_backward/{mode}/{bw}",
                lambda m=mode, w=bw: (ops.gelu_backward(g, x, m, w),),
            )
    for tier in TIERS:
        for fn in FAMILY_UNARY:
            if tier not in _table.op(fn).tiers:  # softplus: accurate only
                continue
            op, op_bw = getattr(ops, fn), getattr(ops, f"{fn}_backward")
            yield f"{fn}/{tier}", lambda op=op, t=tier: (op(x, tier=t),)
            for bw in BACKWARDS:
                yield (
                    f"{fn}_backward/{tier}/{bw}",
                    lambda op=op_bw, t=tier, w=bw: (op(g, x, w, t),),
                )
            if fn in FROM_OUTPUT:
                from_output = getattr(ops, f"{fn}_backward_from_output")
                yield (
                    f"{fn}_backward_from_output/{tier}",
                    lambda op=op, fo=from_output, t=tier: (fo(g, op(x, tier=t)),),
                )
        for cap in CAPS:
            yield f"softcap/{tier}/{cap}", lambda t=tier, c=cap: (ops.softcap(x, c, tier=t),)
            for bw in BACKWARDS:
                yield (
                    f"softcap_backward/{tier}/{cap}/{bw}",
                    lambda t=tier, c=cap, w=bw: (ops.softcap_backward(g, x, c, w, t),),
                )
            yield (
                f"softcap_backward_from_output/{tier}/{cap}",
                lambda t=tier, c=cap: (
                    ops.softcap_backward_from_output(g, ops.softcap(x, c, tier=t), c),
                ),
            )
        yield f"swiglu/{tier}", lambda t=tier: (ops.swiglu(x, b, tier=t),)
        for bw in BACKWARDS:
            yield (
                f"swiglu_backward/{tier}/{bw}",
                lambda t=tier, w=bw: tuple(ops.swiglu_backward(g, x, b, w, t)),
            )
        if dtype != torch.float64:  # softmax is float32 / 16-bit only (its schema's comment)
            rows = _softmax_rows(x)
            yield f"softmax/{tier}", lambda t=tier, r=rows: (ops.softmax(r, -1, tier=t),)


def compute(dtypes=tuple(DTYPES)) -> dict[str, str]:
    """{"dtype/program/case": digest} under the instruction set in force now."""
    from turbogelu import ops as tg_ops

    out = {}
    for name in dtypes:
        for program in PROGRAMS:
            with tg_ops.use_cpu_kernel(program):
                for case, thunk in cases(DTYPES[name]):
                    out[f"{name}/{program}/{case}"] = digest(*thunk())
    return out


def compute_every_isa(dtypes=tuple(DTYPES)) -> dict[str, dict[str, str]]:
    from turbogelu import ops as tg_ops

    result = {}
    for isa in tg_ops.cpu_isas_available():
        with tg_ops.use_cpu_isa(isa):
            result[isa] = compute(dtypes)
    return result


def load() -> dict:
    return json.loads(FIXTURE.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the fixture")
    args = parser.parse_args(argv)
    per_isa = compute_every_isa()
    first, *rest = per_isa
    for isa in rest:
        differ = [k for k, v in per_isa[isa].items() if per_isa[first][k] != v]
        if differ:
            print(f"{isa} and {first} differ in {len(differ)} cases, e.g. {differ[:5]}")
            return 1
    if not args.write:
        fixture = load()["digests"]
        differ = [k for k, v in per_isa[first].items() if fixture.get(k) != v]
        print(f"{len(per_isa[first])} cases under {list(per_isa)}: {len(differ)} differ")
        return 1 if differ else 0
    FIXTURE.write_text(
        json.dumps(
            {
                "generated_by": "python tests/output_digests.py --write",
                "isas_checked_when_written": list(per_isa),
                "torch": torch.__version__,
                "digests": per_isa[first],
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {FIXTURE} ({len(per_isa[first])} cases, checked under {list(per_isa)})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
