"""turbogelu.approx.replay: correctly rounded FMAs (float32, float16, bfloat16), and a bit-exact
replay of the kernels.

The spec errors (and tests/test_fit.py) are measured on the numpy replay; these tests tie the
replay to the compiled kernels bit for bit, under every CPU instruction set this machine has.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import turbogelu.ops as tops
from turbogelu.approx import replay, rounding, spec

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

F32 = np.float32
F64 = np.float64
MODES = ("none", "tanh")
ISAS = tops.cpu_isas_available()
BACKWARDS = ("direct", "matched", "default")


# ---------------------------------------------------------------- fma32


def _exact_fma(a: float, b: float, c: float) -> float:
    """a*b + c rounded once to float32, from exact rational arithmetic (IEEE zero signs)."""
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        prod_neg = np.signbit(a) != np.signbit(b)
        both_neg = prod_neg and np.signbit(c) and (a * b == 0) and (c == 0)
        return -0.0 if both_neg else 0.0
    return rounding.round_exact(q, "float32")


def _check_fma(a, b, c) -> None:
    a, b, c = (np.asarray(v, F32) for v in (a, b, c))
    got = replay.fma32(a, b, c).astype(F64)
    want = np.array(
        [_exact_fma(float(x), float(y), float(z)) for x, y, z in zip(a, b, c, strict=True)]
    )
    bad = np.flatnonzero((got != want) | (np.signbit(got) != np.signbit(want)))
    if bad.size:
        i = bad[0]
        raise AssertionError(
            f"fma32 wrong on {bad.size} of {a.size} triples, e.g. fma({a[i]!r}, {b[i]!r}, "
            f"{c[i]!r}) = {got[i]!r} ({float(got[i]).hex()}), correctly rounded {want[i]!r} "
            f"({float(want[i]).hex()})"
        )


def _random_f32(rng, n: int, lo: int = -30, hi: int = 30) -> np.ndarray:
    mant = rng.uniform(1.0, 2.0, n)
    return (rng.choice([-1.0, 1.0], n) * np.ldexp(mant, rng.integers(lo, hi, n))).astype(F32)


def _midpoint_triples(rng, n: int, lo: int = -60, hi: int = 60):
    """Triples whose float64 sum a*b + c lands exactly on a float32 midpoint.

    c is a float32 value and |a*b| = u/2 (1 -+ 2^-46) with u the float32 spacing at c, so the
    exact sum lies within u 2^-47 of the midpoint c +- u/2: far below a float64 ulp of the sum,
    so float64 rounds it onto the midpoint, and only the sign of the remainder tells the right
    float32 neighbour. Returns (a, b, c) and whether the exact sum is an exact tie.
    """
    c = _random_f32(rng, n, lo, hi)
    u = rounding.ulp_of(c.astype(F64), "float32")
    toward = rng.choice([-1.0, 1.0], n)  # midpoint above (+1) or below (-1) |c|
    kind = rng.integers(0, 3, n)  # 0: just inside, 1: just outside, 2: an exact tie
    # |p| = u/2 (1 - 2^-46) = [u/2 (1 + 2^-23)] [1 - 2^-23]; the exact tie |p| = u/2 * 1.
    a = np.where(kind == 2, u / 2, u / 2 * (1 + 2.0**-23))
    b = np.where(kind == 2, 1.0, 1 - 2.0**-23)
    # kind 0: c + sign(c) toward (u/2)(1 - 2^-46); kind 1: from the far neighbour c' = c + 2
    # * toward * half-step back by (u/2)(1 - 2^-46), which ends just past the midpoint.
    s = np.sign(c.astype(F64)) * toward
    far = c.astype(F64) + s * u
    c_used = np.where(kind == 1, far, c.astype(F64))
    sign_p = np.where(kind == 1, -s, s)
    a = (sign_p * a).astype(F32)
    b = b.astype(F32)
    # Keep c' on c's binade (so u is its spacing too) and everything float32.
    mid = c.astype(F64) + s * u / 2
    ok = (rounding.ulp_of(c_used, "float32") == u) & (rounding.ulp_of(mid, "float32") == u)
    ok &= c_used.astype(F32).astype(F64) == c_used
    return a[ok], b[ok], c_used[ok].astype(F32), (kind == 2)[ok]


def test_fma32_random_triples():
    rng = np.random.default_rng(10)
    n = 700
    a, b = _random_f32(rng, n), _random_f32(rng, n)
    c = _random_f32(rng, n)
    # Heavy cancellation: c close to -a*b.
    a2, b2 = _random_f32(rng, n), _random_f32(rng, n)
    p = a2.astype(F64) * b2.astype(F64)
    c2 = (-p * (1 + rng.uniform(-1e-6, 1e-6, n))).astype(F32)
    # Exact cancellation to zero (and signed zeros).
    a3 = _random_f32(rng, 50)
    b3 = np.ones(50, F32)
    c3 = -a3
    zeros = np.array([0.0, -0.0, 0.0, -0.0], F32)
    _check_fma(
        np.concatenate([a, a2, a3, zeros, -zeros]),
        np.concatenate([b, b2, b3, zeros[::-1], zeros]),
        np.concatenate([c, c2, c3, zeros, -zeros]),
    )


def test_fma32_double_rounding_midpoints():
    rng = np.random.default_rng(11)
    a, b, c, tie = _midpoint_triples(rng, 900)
    assert a.size > 500
    # They are what they claim: the float64 sum is a float32 midpoint...
    s = a.astype(F64) * b.astype(F64) + c.astype(F64)
    lo = rounding.round_to(s - rounding.ulp_of(s, "float32") / 4, "float32")
    hi = rounding.round_to(s + rounding.ulp_of(s, "float32") / 4, "float32")
    assert np.all((lo != hi) & (s == (lo + hi) / 2))
    # ...and rounding that float64 sum (ties to even) is wrong for about a third of them.
    naive = s.astype(F32).astype(F64)
    want = np.array(
        [_exact_fma(float(x), float(y), float(z)) for x, y, z in zip(a, b, c, strict=True)]
    )
    wrong = naive != want
    assert 0.15 < wrong.mean() < 0.5 and not np.any(wrong & tie)
    _check_fma(a, b, c)


def test_fma32_specials():
    inf, nan = np.inf, np.nan
    a = np.array([inf, inf, 0.0, 1.0, nan, 1.0, 3e38, -3e38], F32)
    b = np.array([1.0, 0.0, 5.0, 1.0, 1.0, nan, 10.0, 10.0], F32)
    c = np.array([1.0, 1.0, -inf, inf, 0.0, 0.0, 0.0, 0.0], F32)
    got = replay.fma32(a, b, c)
    want = np.array([inf, nan, -inf, inf, nan, nan, inf, -inf], F32)
    np.testing.assert_array_equal(got, want)
    # Overflow boundary: the largest float32 plus a bit less / exactly half an ulp.
    top = F32(np.finfo(F32).max)
    half = 2.0**103
    _check_fma(
        np.array([top, top, top], F32),
        np.array([1.0, 1.0, 1.0], F32),
        np.array([half * (1 - 2.0**-23), half, -half], F32),
    )
    # a*b exactly on the overflow threshold (top + half = (2^25 - 1) 2^103 = 18631 * 1801
    # 2^103) and c below the float64 sum's resolution: the exact sum is on the side of c, so
    # max (not infinity) for c < 0.
    _check_fma(
        np.array([18631.0, 18631.0, -18631.0], F32),
        np.full(3, 1801 * 2.0**103, F32),
        np.array([-(2.0**-149), 2.0**-149, 2.0**-149], F32),
    )


def test_fma32_subnormal_results():
    """Results in the float32 subnormal range, including float64 sums on their midpoints.

    A subnormal result drops more bits of the float64 sum than a normal one, so its midpoints
    (where fma32 must ask the exact remainder which way to round) lie elsewhere. (The
    kernels' own FMAs never produce subnormals: z is in [-1, 1], the Horner steps are near the
    coefficients, the last one near 1/2.)
    """
    tiny = 2.0**-149
    rng = np.random.default_rng(12)
    n = 300
    # Random subnormal c and products around its spacing.
    c = (rng.integers(-(1 << 23), 1 << 23, n) * tiny).astype(F32)
    a = (rng.uniform(-4, 4, n) * 2.0**-75).astype(F32)
    b = (rng.uniform(-4, 4, n) * 2.0**-75).astype(F32)
    # The crafted midpoint: c = (2^23 - 1) 2^-149 (odd), p = 2^-150 (1 - 2^-46); the float64
    # sum is 2^-126 - 2^-150, a float32 midpoint; the exact sum lies below it.
    k = np.arange(1, 200, dtype=F64)
    c_mid = (np.concatenate([(1 << 23) - k, k]) * tiny).astype(F32)
    a_mid = np.full(c_mid.size, 2.0**-75 * (1 + 2.0**-23), F32)
    b_mid = np.full(c_mid.size, 2.0**-75 * (1 - 2.0**-23), F32)
    _check_fma(
        np.concatenate([a, a_mid, -a_mid]),
        np.concatenate([b, b_mid, b_mid]),
        np.concatenate([c, c_mid, -c_mid]),
    )


# ---------------------------------------------------------------- fma_in: float16, bfloat16


def _midpoint_cases(fmt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a*b exactly halfway between two values of fmt, c far below: the float64 sum drops c and
    lands on the midpoint, so a float64 FMA rounded to fmt would round the wrong way for one
    sign of c (for float16 c cannot be that small, and the float64 sum is exact)."""
    f = rounding.get_format(fmt)
    a = 1.0 + 2.0 ** (1 - f.precision)  # 1 + ulp
    tiny = 2.0 ** (f.emin - f.precision + 1)  # the smallest subnormal
    cs = [tiny, -tiny, 0.0, 2.0**-60, -(2.0**-60)]
    cs = [c for c in cs if rounding.is_representable(c, fmt)]
    n = len(cs)
    return np.full(n, a), np.full(n, 1.5), np.array(cs)


@pytest.mark.parametrize("fmt", ["float32", "float16", "bfloat16"])
def test_fma_in_is_correctly_rounded(fmt):
    rng = np.random.default_rng(3)
    n = 3000
    e = 5 if fmt == "float16" else 12  # no overflow of float16's 65504

    def draw(lo, hi):
        return rounding.round_to(rng.standard_normal(n) * np.exp2(rng.integers(lo, hi, n)), fmt)

    a, b, c = draw(-e, e), draw(-e, e), draw(-20, 2 * e)
    c[: n // 3] = rounding.round_to(-a[: n // 3] * b[: n // 3], fmt)  # cancellation
    ma, mb, mc = _midpoint_cases(fmt)
    a, b, c = np.r_[a, ma], np.r_[b, mb], np.r_[c, mc]
    got = replay.fma_in(a, b, c, fmt)
    want = np.array(
        [
            rounding.round_exact(Fraction(x) * Fraction(y) + Fraction(z), fmt)
            for x, y, z in zip(a, b, c, strict=True)
        ]
    )
    np.testing.assert_array_equal(got, want)
    if fmt == "float32":  # and it is replay.fma32
        np.testing.assert_array_equal(got, replay.fma32(a, b, c).astype(np.float64))
    if fmt == "bfloat16":  # the cases where one float64 rounding then one bfloat16 one fails
        naive = rounding.round_to(ma * mb + mc, fmt)
        assert np.any(naive != replay.fma_in(ma, mb, mc, fmt))


def test_fma_in_overflow_threshold():
    # s exactly at max + ulp/2 with the exact sum just below it rounds to max, not infinity.
    top = rounding.max_finite("bfloat16")
    half_ulp = float(rounding.ulp_of(top, "bfloat16")) / 2
    a = np.array([top, top, -top])
    b = np.array([1.0, 1.0, 1.0])
    c = np.array([half_ulp, half_ulp * (1 - 2.0**-7), -half_ulp])
    got = replay.fma_in(a, b, c, "bfloat16")
    assert got.tolist() == [math.inf, top, -math.inf]
    got = replay.round_sum(np.array([top + half_ulp]), np.array([-(2.0**-60)]), "bfloat16")
    assert got.tolist() == [top]


# ---------------------------------------------------------------- kernel inputs


def _float32_inputs() -> np.ndarray:
    rng = np.random.default_rng(20)
    R = [spec.part_values(spec.load(spec.spec_path(m))["forward"])["clamp"] for m in MODES]
    subnormal_bits = rng.integers(1, 1 << 23, 2000).astype(np.uint32)
    parts = [
        np.linspace(-8.0, 8.0, 400_001, dtype=F64).astype(F32),  # dense grid, step 4e-5
        *[spec.floats_near(r, 1e-3) for r in R],  # every float32 within 1e-3 of +-R
        rng.uniform(-6.0, 6.0, 100_000).astype(F32),
        # every 4099th bit pattern: all exponents, NaNs with payloads, both signs
        np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(F32),
        subnormal_bits.view(F32),
        (subnormal_bits | np.uint32(0x80000000)).view(F32),
        np.array(
            [
                0.0,
                -0.0,
                np.inf,
                -np.inf,
                np.nan,
                -np.nan,
                np.finfo(F32).max,
                -np.finfo(F32).max,
                np.finfo(F32).tiny,
                -np.finfo(F32).tiny,
                1e-45,
                -1e-45,
            ],
            F32,
        ),  # fmt: skip
    ]
    return np.concatenate(parts)


X32 = _float32_inputs()


def _random_grads(n: int) -> np.ndarray:
    rng = np.random.default_rng(21)
    g = rng.normal(0.0, 3.0, n).astype(F32)
    idx = rng.integers(0, n, 64)
    g[idx] = np.resize(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-42, -1e-42, 3e38], F32), 64)
    return g


G32 = _random_grads(X32.size)


@functools.cache
def _spec(mode: str) -> dict:
    return spec.load(spec.spec_path(mode))


def _part(mode: str, backward: str | None) -> dict:
    s = _spec(mode)
    if backward is None:
        return spec.part_values(s["forward"])
    if backward == "default":
        backward = s["default_backward"]
    return spec.part_values(s[f"backward_{backward}"])


@functools.cache
def _replay_forward(mode: str) -> np.ndarray:
    return replay.forward32(X32, _part(mode, None))


@functools.cache
def _replay_backward(mode: str, backward: str, random_grad: bool) -> np.ndarray:
    return replay.backward32(X32, _part(mode, backward), G32 if random_grad else None)


def _assert_bits_equal(kernel: np.ndarray, replayed: np.ndarray, x: np.ndarray, what: str):
    kernel, replayed = np.asarray(kernel, F32), np.asarray(replayed, F32)
    kn, rn = np.isnan(kernel), np.isnan(replayed)
    differ = (kn != rn) | (~kn & (kernel.view(np.uint32) != replayed.view(np.uint32)))
    if np.any(differ):
        i = np.flatnonzero(differ)
        j = i[0]
        raise AssertionError(
            f"{what}: kernel and replay differ at {i.size} of {x.size} inputs, e.g. x = "
            f"{x[j]!r}: kernel {kernel[j]!r} ({float(kernel[j]).hex()}), replay "
            f"{replayed[j]!r} ({float(replayed[j]).hex()})"
        )


# ---------------------------------------------------------------- replay == kernel


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
def test_forward_replay_bit_exact(isa, mode):
    with tops.use_cpu_isa(isa):
        got = torch.ops.turbogelu.gelu(torch.from_numpy(X32), mode).numpy()
    _assert_bits_equal(got, _replay_forward(mode), X32, f"gelu({mode}) under {isa}")


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("backward", BACKWARDS)
@pytest.mark.parametrize("mode", MODES)
def test_backward_replay_bit_exact(isa, backward, mode):
    x = torch.from_numpy(X32)
    with tops.use_cpu_isa(isa):
        ones = torch.ops.turbogelu.gelu_backward(torch.ones_like(x), x, mode, backward).numpy()
        rand = torch.ops.turbogelu.gelu_backward(torch.from_numpy(G32), x, mode, backward)
    what = f"gelu_backward({mode}, {backward}) under {isa}"
    _assert_bits_equal(ones, _replay_backward(mode, backward, False), X32, what + ", grad 1")
    _assert_bits_equal(rand.numpy(), _replay_backward(mode, backward, True), X32, what)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_half_precision_is_float32_rounded_once(isa, mode, dtype):
    """16-bit inputs: the float32 kernel on the widened input, rounded to nearest even."""
    fmt = "float16" if dtype == torch.float16 else "bfloat16"
    x = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)
    x64 = x.double().numpy()
    with tops.use_cpu_isa(isa):
        fwd = torch.ops.turbogelu.gelu(x, mode).double().numpy()
        bwd = torch.ops.turbogelu.gelu_backward(x.flip(0), x, mode, "default").double().numpy()
    x32 = x64.astype(F32)
    want_f = rounding.round_to(replay.forward32(x32, _part(mode, None)).astype(F64), fmt)
    g32 = x.flip(0).double().numpy().astype(F32)
    want_b = replay.backward32(x32, _part(mode, "default"), g32).astype(F64)
    want_b = rounding.round_to(want_b, fmt)
    for got, want, what in ((fwd, want_f, "forward"), (bwd, want_b, "backward")):
        same = (np.isnan(got) & np.isnan(want)) | (
            (got == want) & (np.signbit(got) == np.signbit(want))
        )
        assert np.all(same), (
            f"{fmt} {what} ({mode}, {isa}) differs from the rounded float32 replay at "
            f"{np.sum(~same)} inputs, e.g. x = {x64[~same][0]!r}: {got[~same][0]!r} vs "
            f"{want[~same][0]!r}"
        )


def test_isas_listed():
    assert ISAS[-1] == "scalar"
    assert tops.cpu_isa() in ISAS


# ---------------------------------------------------------------- Estrin


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("part", ["forward", "backward_direct", "backward_matched"])
def test_estrin_close_to_horner(mode, part):
    coeffs = spec.part_values(_spec(mode)[part])
    z = np.linspace(-1.0, 1.0, 200_001, dtype=F64).astype(F32)
    h = replay.poly32(z, coeffs["coefficients"], "horner").astype(F64)
    e = replay.poly32(z, coeffs["coefficients"], "estrin").astype(F64)
    d = rounding.ulp_distance(h, e, "float32")
    assert d.max() <= 4, f"{part} ({mode}): Estrin and Horner differ by up to {d.max()} ulps"
    assert np.any(d > 0)  # a different order of roundings: not secretly the same code
    # The outputs: near -R the result is a small difference (1/2 + x P is ~Phi(x)), so its own
    # ulps say little; measure in ulps of the bracket's terms (|x|/2 forward, 1/2 backward).
    x = np.linspace(-6.0, 6.0, 100_001, dtype=F64).astype(F32)
    if part == "forward":
        fh = replay.forward32(x, coeffs).astype(F64)
        fe = replay.forward32(x, coeffs, scheme="estrin").astype(F64)
        scale = np.maximum(np.abs(fh), np.abs(x.astype(F64)) / 2)
    else:
        fh = replay.backward32(x, coeffs).astype(F64)
        fe = replay.backward32(x, coeffs, scheme="estrin").astype(F64)
        scale = np.maximum(np.abs(fh), 0.5)
    ulps = np.abs(fh - fe) / rounding.ulp_of(scale, "float32")
    assert ulps.max() <= 8, f"{part} ({mode}): outputs differ by {ulps.max()} ulps of the terms"
    assert np.abs(fh - fe).max() < 1e-6
    with pytest.raises(ValueError, match="scheme"):
        replay.poly32(z[:4], coeffs["coefficients"], "clenshaw")


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", MODES)
def test_estrin_kernel_replay_bit_exact(isa, mode):
    """The kernels' Estrin tree (selected by the benchmark hook) is the replay's Estrin tree."""
    x = torch.from_numpy(X32)
    previous = torch.ops.turbogelu_bench._set_poly_scheme("estrin")
    try:
        with tops.use_cpu_isa(isa):
            fwd = torch.ops.turbogelu.gelu(x, mode).numpy()
            bwd = torch.ops.turbogelu.gelu_backward(torch.ones_like(x), x, mode, "direct").numpy()
    finally:
        torch.ops.turbogelu_bench._set_poly_scheme(previous)
    want_fwd = replay.forward32(X32, _part(mode, None), scheme="estrin")
    want_bwd = replay.backward32(X32, _part(mode, "direct"), scheme="estrin")
    _assert_bits_equal(fwd, want_fwd, X32, f"Estrin gelu({mode}) under {isa}")
    _assert_bits_equal(bwd, want_bwd, X32, f"Estrin gelu_backward({mode}) under {isa}")


def test_poly_scheme_hook_rejects_unknown_names():
    with pytest.raises(ValueError, match="horner"):
        torch.ops.turbogelu_bench._set_poly_scheme("clenshaw")
