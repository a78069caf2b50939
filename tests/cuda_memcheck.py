"""Every CUDA op over every tail length and every 16-byte offset, on tensors of at most 1M
elements, for ``compute-sanitizer --tool memcheck`` to watch (tests/gpu_check.sh):

    compute-sanitizer --tool memcheck python tests/cuda_memcheck.py

The kernels peel a head to out's 16-byte boundary, read inputs at another offset element by
element and finish with a tail: the sanitizer sees any access outside the inputs (each in an
allocation that ends where it does) or a 16-byte access off its boundary. Each result is also
compared bit for bit with the CPU kernels (the packed bfloat16 path, which has no CPU kernel,
with itself on an aligned copy), and the elements around each output checked untouched.
The activation family's ops (sigmoid, tanh, silu, softcap, swiglu) likewise, on fewer cases
(their loops are GELU's, kernels/cuda/elementwise.cuh, which the cases above cover): the
sizes of FAMILY_SIZES at each 16-byte phase of x, every input and output at another offset,
in place, and the gated backward's two outputs at one offset and at two different ones (its
element-wise second output); and in bfloat16 their packed path (the paper tier, switched on),
each against itself on aligned copies.
Sizes run smallest first, every dtype at each, with a line per size (``size N: ...``, so a
run killed from outside shows how far it got); at the end one line ``memcheck cases: N
passed, M failed``; exit 1 on a mismatch. ``--quick``: sizes up to 4099 only (the dry run's
test in CI). ``--budget SECONDS``: once that long has passed, start no further size and say
which were not run (``memcheck stopped at its ... budget``): the sanitizer's cost on a GPU
is not known before a run, and an unfinished run should still say what it covered.

TURBOGELU_TEST_DEVICE=cpu runs it on the CPU kernels (the dry run, where there is no GPU).
Needs only torch and the extension.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

T_START = time.monotonic()  # before torch's import, which is slow under the sanitizer

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import turbogelu.ops  # noqa: E402  (loads the extension)
from turbogelu import _table  # noqa: E402

OPS = torch.ops.turbogelu
# The family's one-input ops with fitted programs, from the table (exp2, which runs its own
# programs, is not checked here yet).
ONE_INPUT = tuple(
    o.name for o in _table.OPS if o.kind != "Gated" and o.program not in _table.OWN_PROGRAMS
)
DEVICE = os.environ.get("TURBOGELU_TEST_DEVICE", "cuda")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# Every tail and head of a 16-byte pack (up to 8 elements), a few grid-strided sizes, and
# the largest the check allows (1M elements, less an odd tail).
SIZES = (*range(1, 18), 31, 33, 255, 257, 4099, 65_537, (1 << 20) - 17)
OFFSETS = range(8)  # elements: every 16-byte phase of a 2-byte dtype, 4 of float32, 2 of float64
# Every residue mod 8 below two packs, both sides of a pack, and a grid-strided size.
FAMILY_SIZES = (1, 2, 3, 4, 5, 6, 7, 9, 15, 16, 17, 31, 33, 4099)
CAP = 2.5  # softcap's
BITS = {torch.float32: torch.int32, torch.float64: torch.int64,
        torch.float16: torch.int16, torch.bfloat16: torch.int16}  # fmt: skip


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise, any NaN equal to any NaN."""
    a, b = a.cpu().contiguous(), b.cpu().contiguous()
    nan = torch.isnan(a)
    if not torch.equal(nan, torch.isnan(b)):
        return False
    return torch.equal(a.view(BITS[a.dtype])[~nan], b.view(BITS[b.dtype])[~nan])


def at_end(t: torch.Tensor, off: int, n: int) -> torch.Tensor:
    """t[off : off + n] in an allocation of its own that ends where it does, so that the
    sanitizer sees a read past the tail (with PYTORCH_NO_CUDA_MEMORY_CACHING=1, as
    tests/gpu_check.sh runs it: the caching allocator would hide it inside its blocks)."""
    return t[: off + n].clone()[off:]


def untouched(buf: torch.Tensor, start: int, n: int) -> bool:
    """Every element of buf outside [start, start + n) still 7.0, as filled."""
    outside = torch.cat([buf[:start], buf[start + n :]]).cpu().float()
    return bool((outside == 7.0).all())


def values(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
    x[:: max(1, n // 7)] = float("nan")
    return x


def family_cases(check, base, grad, bvals, base_d, grad_d, b_d, n: int, off: int, what: str):
    """Every family op at n elements: x at `off`, grad, b and the outputs at other offsets,
    each input in an allocation ending where it does, each output's neighbours untouched."""
    goff, boff = (off + 3) % len(OFFSETS), (off + 5) % len(OFFSETS)
    x, g, b = base[off : off + n], grad[goff : goff + n], bvals[boff : boff + n]
    xd, gd, bd = at_end(base_d, off, n), at_end(grad_d, goff, n), at_end(b_d, boff, n)
    dtype = x.dtype

    def outs(*phases):
        bufs = [torch.full((p + n + 8,), 7.0, dtype=dtype, device=DEVICE) for p in phases]
        return bufs, [buf[p : p + n] for buf, p in zip(bufs, phases, strict=True)]

    for op in ONE_INPUT:
        extra = (CAP,) if op == "softcap" else ()
        fwd, bwd = getattr(OPS, op), getattr(OPS, f"{op}_backward")
        y = fwd(x, *extra)
        bufs, (o,) = outs(goff)
        fwd.out(xd, *extra, out=o)
        check(same(o, y) and untouched(bufs[0], goff, n), f"{op}.out (out at {goff}) {what}")
        whole = base_d[: off + n].clone()
        getattr(OPS, f"{op}_")(whole[off:], *extra)
        check(same(whole[off:], y) and same(whole[:off], base[:off]), f"{op}_ {what}")
        d = bwd(g, x, *extra, "default")
        bufs, (o,) = outs(boff)
        bwd.out(gd, xd, *extra, "default", out=o)
        check(same(o, d) and untouched(bufs[0], boff, n), f"{op}_backward.out {what}")
    y = OPS.swiglu(x, b)
    check(same(OPS.swiglu(xd, bd), y), f"swiglu (b at {boff}) {what}")
    ga, gb = OPS.swiglu_backward(g, x, b)
    for pa, pb in ((off, off), (goff, (goff + 1) % len(OFFSETS))):
        bufs, (oa, ob) = outs(pa, pb)
        OPS.swiglu_backward.out(gd, xd, bd, grad_a=oa, grad_b=ob)
        ok = same(oa, ga) and same(ob, gb)
        ok = ok and untouched(bufs[0], pa, n) and untouched(bufs[1], pb, n)
        check(ok, f"swiglu_backward.out (outputs at {pa}, {pb}) {what}")


def packed_family_cases(check, base_d, grad_d, b_d, n: int, off: int, what: str):
    """The family's packed bfloat16 path (the paper tier, switched on), which has no CPU
    kernel: each op with x, grad, b and the outputs at different offsets (each input in an
    allocation ending where it does) against the same op on fresh aligned copies, and each
    output's neighbours untouched."""
    goff, boff = (off + 3) % len(OFFSETS), (off + 5) % len(OFFSETS)
    xd, gd, bd = at_end(base_d, off, n), at_end(grad_d, goff, n), at_end(b_d, boff, n)
    xa, ga, ba = xd.clone(), gd.clone(), bd.clone()

    def out_at(p):
        buf = torch.full((p + n + 8,), 7.0, dtype=xd.dtype, device=DEVICE)
        return buf, buf[p : p + n]

    with turbogelu.ops.use_cuda_packed():
        for op in (o for o in ONE_INPUT if "paper" in _table.op(o).tiers):
            extra = (CAP,) if op == "softcap" else ()
            fwd, bwd = getattr(OPS, op), getattr(OPS, f"{op}_backward")
            y = fwd(xa, *extra, tier="paper")
            buf, o = out_at(goff)
            fwd.out(xd, *extra, tier="paper", out=o)
            check(same(o, y) and untouched(buf, goff, n), f"packed {op}.out {what}")
            d = bwd(ga, xa, *extra, "default", "paper")
            buf, o = out_at(boff)
            bwd.out(gd, xd, *extra, "default", "paper", out=o)
            check(same(o, d) and untouched(buf, boff, n), f"packed {op}_backward.out {what}")
        y = OPS.swiglu(xa, ba, tier="paper")
        check(same(OPS.swiglu(xd, bd, tier="paper"), y), f"packed swiglu {what}")
        ga_, gb_ = OPS.swiglu_backward(ga, xa, ba, "default", "paper")
        (bufa, oa), (bufb, ob) = out_at(goff), out_at((goff + 1) % len(OFFSETS))
        OPS.swiglu_backward.out(gd, xd, bd, "default", "paper", grad_a=oa, grad_b=ob)
        ok = same(oa, ga_) and same(ob, gb_)
        ok = ok and untouched(bufa, goff, n) and untouched(bufb, (goff + 1) % len(OFFSETS), n)
        check(ok, f"packed swiglu_backward.out {what}")


def gelu_cases(check, base, grad, base_d, grad_d, n: int, off: int, what: str):
    """GELU's five ops at n elements, x at `off` and grad (and out) at another phase, each
    input in an allocation ending where it does, each output's neighbours untouched; in
    bfloat16 also its packed path against itself on aligned copies."""
    dtype = base.dtype
    goff = (off + 3) % len(OFFSETS)
    x, g = base[off : off + n], grad[goff : goff + n]
    xd, gd = at_end(base_d, off, n), at_end(grad_d, goff, n)
    y = OPS.gelu(x)
    check(same(OPS.gelu(xd), y), f"gelu {what}")
    buf = torch.full((goff + n + 8,), 7.0, dtype=dtype, device=DEVICE)
    OPS.gelu.out(xd, out=buf[goff : goff + n])
    check(same(buf[goff : goff + n], y), f"gelu.out (out at {goff}) {what}")
    check(untouched(buf, goff, n), f"gelu.out wrote outside out {what}")
    whole = base_d[: off + n].clone()
    OPS.gelu_(whole[off:])
    check(same(whole[off:], y), f"gelu_ {what}")
    check(same(whole[:off], base[:off]), f"gelu_ wrote before x {what}")
    d = OPS.gelu_backward(g, x)
    check(same(OPS.gelu_backward(gd, xd), d), f"gelu_backward (grad at {goff}) {what}")
    buf = torch.full((off + n + 8,), 7.0, dtype=dtype, device=DEVICE)
    OPS.gelu_backward.out(gd, xd, out=buf[off : off + n])
    check(same(buf[off : off + n], d), f"gelu_backward.out {what}")
    check(untouched(buf, off, n), f"gelu_backward.out wrote outside out {what}")
    check(same(OPS.gelu_backward(xd, xd), OPS.gelu_backward(x, x)), f"grad=x {what}")
    if dtype == torch.bfloat16:
        xa, ga = xd.clone(), gd.clone()  # fresh, aligned
        with turbogelu.ops.use_cuda_packed():
            check(same(OPS.gelu(xd), OPS.gelu(xa)), f"packed gelu {what}")
            d = OPS.gelu_backward(ga, xa)
            check(same(OPS.gelu_backward(gd, xd), d), f"packed backward {what}")


def main(argv: list[str]) -> int:
    # The CPU oracle runs the polynomials, the programs CUDA runs: on an AVX-512 CPU its
    # default is cells, which differ from them by up to their error (the GPU check's first
    # run on an H200's Xeon: 6702 of 13036 cases).
    with turbogelu.ops.use_cpu_kernel("poly"):
        return run(argv)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 4099 only")
    parser.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="start no further size once this long has passed since the start (the import "
        "included); the sizes left out are named. Default: every size",
    )
    args = parser.parse_args(argv)
    sizes = [n for n in SIZES if n <= 4099] if args.quick else list(SIZES)
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("cuda_memcheck: no CUDA device")
        return 2
    passed = failed = 0

    def check(ok: bool, what: str) -> None:
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            if failed <= 20:
                print(f"MISMATCH {what}", flush=True)  # kept if the run is killed later

    top = sizes[-1] + 2 * len(OFFSETS)
    data = {}
    for dtype in DTYPES:
        host = tuple(values(top, dtype, seed) for seed in (1, 2, 3))  # x, grad, b
        data[dtype] = host, tuple(t.to(DEVICE) for t in host)
    # Sizes outermost, smallest first: the tails and heads of every dtype come before the
    # grid-strided sizes, so that a run cut short by its budget has covered the most cases.
    done = []
    for i, n in enumerate(sizes):
        for dtype in DTYPES:
            (base, grad, bvals), (base_d, grad_d, b_d) = data[dtype]
            for off in OFFSETS:
                what = f"{str(dtype)[6:]} n={n} offset={off}"
                gelu_cases(check, base, grad, base_d, grad_d, n, off, what)
                if n in FAMILY_SIZES and off < 16 // base.element_size():  # (each phase once)
                    family_cases(check, base, grad, bvals, base_d, grad_d, b_d, n, off, what)
                if dtype == torch.bfloat16 and n in FAMILY_SIZES:
                    packed_family_cases(check, base_d, grad_d, b_d, n, off, what)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        done.append(n)
        elapsed = time.monotonic() - T_START
        print(f"size {n}: {passed} passed, {failed} failed so far, {elapsed:.1f} s", flush=True)
        left = sizes[i + 1 :]
        if args.budget is not None and left and elapsed > args.budget:
            print(f"memcheck cases: {passed} passed, {failed} failed (device {DEVICE})")
            ran = f"size {n}" if len(done) == 1 else f"sizes {done[0]} to {n}"
            print(
                f"memcheck stopped at its {args.budget:.0f} s budget: {ran} run,"
                f" {', '.join(map(str, left))} not run"
            )
            return 1 if failed else 0
    print(f"memcheck cases: {passed} passed, {failed} failed (device {DEVICE})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
