"""What only the activation family's CPU ops have (its ops' common checks, with GELU's, are
tests/test_ops.py's, over every row of the table): bit for bit the lab's replay
(``family_programs.replay_forward`` / ``replay_backward``, exp2's ``exp2_programs.replay``)
on every instruction set and 16-bit input, tiers included (the paper tier's error, the
refusals); softcap's and swiglu's errors, which scale with the cap and b; softcap's and
swiglu's special values at other caps and b (every row's are test_ops_special_values.py's);
softplus' floor at +0; swiglu's backward written over its grad; silu's ``inplace=``;
streaming stores. The polynomials are forced (on AVX-512 CPUs sigmoid's, tanh's and SiLU's
default is their cells program, which tests/test_cells.py checks the same way)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import HALF_DTYPES, assert_same_bits, load_spec
from op_rows import EXACT, exp2_float32_sample, float32_sample

import turbogelu
from turbogelu.approx import exp2_programs as ep
from turbogelu.approx import family_programs as fp
from turbogelu.approx import reference, replay

pytestmark = pytest.mark.usefixtures("poly_program")

OPS = torch.ops.turbogelu
UNARY = turbogelu.family.UNARY  # the Plain ops with fitted programs, from the table
CAPS = (50.0, 1.0, 0.3)


def _every(dtype: torch.dtype) -> torch.Tensor:
    """Every value of a 16-bit dtype (NaNs and infinities included)."""
    return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)


def _inputs(dtype: torch.dtype, fn: str = "") -> torch.Tensor:
    if dtype in HALF_DTYPES:
        return _every(dtype)
    return torch.from_numpy(exp2_float32_sample() if fn == "exp2" else float32_sample())


def _want(result32: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """The kernels compute in float32 and round once to the storage dtype."""
    return torch.from_numpy(np.ascontiguousarray(result32)).to(dtype)


def _as32(t: torch.Tensor) -> np.ndarray:
    return t.float().numpy()


STORAGE = [torch.float32, torch.float16, torch.bfloat16]
IDS = lambda d: str(d).removeprefix("torch.")  # noqa: E731


# ------------------------------------------------------------------ bits: the replay


TIERS = ("accurate", "paper")
# (op, tier) for every tier each unary op has (softplus: the accurate one only), and exp2's,
# whose program is its own (exp2_programs' replay).
UNARY_TIERS = [(fn, t) for fn in UNARY for t in turbogelu._table.op(fn).tiers]
REPLAYED = UNARY_TIERS + [("exp2", t) for t in ep.TIERS]


def _replay_forward(fn, x32, tier):
    if fn == "exp2":
        return ep.replay_tier(x32, tier)
    return fp.replay_forward(fn, x32, tier=tier)


def _replay_backward(fn, g32, x32, backward, tier):
    """grad * f'(x), one rounding of the (exact in float64) product."""
    if fn == "exp2":
        d = ep.replay_tier(x32, tier, f"backward_{backward}").astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            return (g32.astype(np.float64) * d).astype(np.float32)
    return fp.replay_backward(fn, g32, x32, backward=backward, tier=tier)


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize(("fn", "tier"), REPLAYED)
def test_forward_is_the_replay(fn, dtype, tier, isa):
    x = _inputs(dtype, fn)
    want = _want(_replay_forward(fn, _as32(x), tier), dtype)
    assert_same_bits(getattr(OPS, fn)(x, tier=tier), want, fn)


@pytest.mark.parametrize("backward", ["direct", "matched"])
@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize(("fn", "tier"), REPLAYED)
def test_backward_is_the_replay(fn, dtype, backward, tier, isa):
    """(The paper tier's sigmoid derivatives differ in degree, 4 and 2, and exp2's matched
    derivative is shorter than its direct one: the kernels run the shorter padded with
    leading zeros, which the replay of the unpadded program checks.)"""
    x = _inputs(dtype, fn)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    got = getattr(OPS, f"{fn}_backward")(g, x, backward, tier)
    want = _replay_backward(fn, _as32(g), _as32(x), backward, tier)
    assert_same_bits(got, _want(want, dtype), f"{fn} {backward}")


# GELU's paper tier (its rows' D5 family programs, data/specs/gelu_<mode>/paper.json) through
# the one op gelu(x, approximate, tier="paper"); the accurate tier is GELU's own tests'.
GELU_PAPER = {mode: row for mode, row in turbogelu._table.APPROXIMATE.items()}


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("approximate", list(GELU_PAPER))
def test_gelu_paper_tier_is_the_replay(approximate, dtype, isa):
    doc = fp.load(GELU_PAPER[approximate], tier="paper")
    x = _inputs(dtype)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    want = fp.replay_forward("gelu", _as32(x), doc=doc)
    assert_same_bits(OPS.gelu(x, approximate, tier="paper"), _want(want, dtype), "forward")
    for backward in ("default", "direct", "matched"):
        want = fp.replay_backward("gelu", _as32(g), _as32(x), backward=backward, doc=doc)
        got = OPS.gelu_backward(g, x, approximate, backward, "paper")
        assert_same_bits(got, _want(want, dtype), backward)


@pytest.mark.parametrize("approximate", list(GELU_PAPER))
def test_gelu_paper_tier_is_the_papers_error_and_cheaper(approximate):
    """The paper's D5 form (x/2 + P5(x^2), 6 bfloat16 coefficients): fewer operations than
    GELU's accurate program, and its float32 error through the op is the spec's measured
    one, around the paper's Table 2 figure (1.06e-3 LS, 0.50e-3 minimax in real arithmetic)
    and far above the accurate tier's bound."""
    pap = fp.load(GELU_PAPER[approximate], tier="paper")
    assert pap["forward"]["degree"] == 5 and pap["forward"]["variable"] == "y"
    assert pap["forward"]["fmt"] == "bfloat16"
    # both Horner in z of x^2: the degree is the count of multiply-adds
    assert pap["forward"]["degree"] < load_spec(approximate)["forward"]["degree"]
    x = np.linspace(-12, 12, 200_001).astype(np.float32)
    got = OPS.gelu(torch.from_numpy(x), approximate, tier="paper").double().numpy()
    err = float(np.max(np.abs(got - EXACT[GELU_PAPER[approximate]](x.astype(np.float64)))))
    spec = pap["forward"]["errors"]["float32"]["max_abs_float32"]
    assert 0.5 * spec <= err <= spec * 1.01 + 1e-7
    assert 1e-4 < err < 3e-3


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
@pytest.mark.parametrize("cap", CAPS)
def test_softcap_is_the_replay(cap, dtype, tier, isa):
    x = _inputs(dtype)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(2)).to(dtype)
    want = fp.replay_forward("softcap", _as32(x), cap=cap, tier=tier)
    assert_same_bits(OPS.softcap(x, cap, tier=tier), _want(want, dtype))
    for backward in ("direct", "matched"):
        want = fp.replay_backward(
            "softcap", _as32(g), _as32(x), cap=cap, backward=backward, tier=tier
        )
        got = OPS.softcap_backward(g, x, cap, backward, tier)
        assert_same_bits(got, _want(want, dtype), backward)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_swiglu_is_the_replay(dtype, tier, isa):
    a = _inputs(dtype)
    gen = torch.Generator().manual_seed(3)
    b = (torch.randn(a.shape, generator=gen) * 3).to(dtype)
    b[:4] = torch.tensor([math.inf, -math.inf, math.nan, -0.0])
    g = torch.randn(a.shape, generator=gen).to(dtype)
    want = fp.replay_forward("swiglu", _as32(a), _as32(b), tier=tier)
    assert_same_bits(OPS.swiglu(a, b, tier=tier), _want(want, dtype))
    for backward in ("direct", "matched"):
        ga, gb = OPS.swiglu_backward(g, a, b, backward, tier)
        wa, wb = fp.replay_backward(
            "swiglu", _as32(g), _as32(a), _as32(b), backward=backward, tier=tier
        )
        assert_same_bits(ga, _want(wa, dtype), f"grad_a {backward}")
        assert_same_bits(gb, _want(wb, dtype), f"grad_b {backward}")


# ------------------------------------------------------------------ errors scaled by cap and b


def test_softcap_and_swiglu_errors_scale_with_cap_and_b():
    x = np.linspace(-300, 300, 200_001).astype(np.float32)
    for cap in CAPS:
        got = OPS.softcap(torch.from_numpy(x), cap).double().numpy()
        exact = cap * np.tanh(x.astype(np.float64) / cap)
        half_ulp = np.spacing(np.abs(got).astype(np.float32)).astype(np.float64) / 2
        # The input scaling x * fl(1/cap) rounds once more (relative 2^-24): its effect on
        # cap * tanh is at most |x| 2^-24 tanh'(x/cap), under 1e-7 * cap here.
        assert np.max(np.abs(got - exact) - half_ulp) <= fp.ABS_BOUND * cap + 1e-7 * cap
    a = np.linspace(-20, 20, 100_001).astype(np.float32)
    b = np.random.default_rng(0).normal(0, 10, a.size).astype(np.float32)
    got = OPS.swiglu(torch.from_numpy(a), torch.from_numpy(b)).double().numpy()
    exact = reference.silu(a.astype(np.float64)) * b
    half_ulp = np.spacing(np.abs(got).astype(np.float32)).astype(np.float64) / 2
    # silu(a) is within 3e-5 beyond its own rounding (half an ulp of silu(a), times |b|).
    s = np.abs(reference.silu(a.astype(np.float64))).astype(np.float32)
    slack = np.spacing(s).astype(np.float64) / 2 * np.abs(b)
    assert np.all(np.abs(got - exact) - half_ulp - slack <= fp.ABS_BOUND * np.abs(b))


# ------------------------------------------------------------------ IEEE semantics


def _one(fn, v, dtype=torch.float32, **kw):
    return getattr(OPS, fn)(torch.tensor([v], dtype=dtype), **kw)[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, *HALF_DTYPES], ids=IDS)
def test_softcap_and_swiglu_special_values(dtype):
    """What test_ops_special_values.py's rows do not reach: softcap at other caps, swiglu
    with special values of b, and NaN in either of swiglu's gradients."""
    inf, nan = math.inf, math.nan
    for cap in CAPS:
        x = torch.tensor([inf, -inf, nan, -0.0], dtype=dtype)
        r = OPS.softcap(x, cap)
        c = torch.tensor(cap, dtype=torch.float32).to(dtype).item()
        assert r[0].item() == c and r[1].item() == -c and torch.isnan(r[2])
        assert r[3].item() == 0 and math.copysign(1, r[3].item()) == -1.0
    a = torch.tensor([inf, -inf, nan, 1.0, 0.0], dtype=dtype)
    b = torch.tensor([2.0, 2.0, 1.0, nan, inf], dtype=dtype)
    r = OPS.swiglu(a, b)
    assert r[0].item() == inf and r[1].item() == 0.0 and torch.isnan(r[2:]).all()
    x = torch.tensor([-100.0, 100.0, 0.5, nan], dtype=dtype)
    g = torch.tensor([nan, nan, nan, 1.0], dtype=dtype)
    for backward in ("direct", "matched"):
        ga, gb = OPS.swiglu_backward(g, x, torch.ones_like(x), backward)
        assert torch.isnan(ga).all() and torch.isnan(gb).all(), backward


def test_softplus_and_its_gradient_are_never_negative():
    """softplus and its derivative (sigmoid) are positive, and in their left tails smaller than
    the tier's absolute bound: the programs floor their results at +0.0 (family_eval.h's
    XHalfPlusNonNeg and HalfPlusSigned), so no input gives a negative value or -0.0 (a
    negative step size or gradient would be wrong in sign, not only in size). Every float32
    in [-11.5, -2] and a sweep of the rest, both backwards; and that the floor is needed: the
    unfloored derivative programs do dip below 0 there (the forward, whose error there is as
    large as softplus itself, may or may not, refit by refit: the shipped one stays >= 0)."""
    lo = np.float32(-11.5).view(np.int32)
    hi = np.float32(-2.0).view(np.int32)
    x = torch.from_numpy(np.arange(hi, lo + 1, dtype=np.int32).view(np.float32))
    x = torch.cat([x, torch.linspace(-40, 40, 100_001)])
    y = OPS.softplus(x)
    assert not torch.signbit(y).any()
    for backward in ("direct", "matched"):
        d = OPS.softplus_backward(torch.ones_like(x), x, backward)
        assert not torch.signbit(d).any(), backward
    from turbogelu.approx.polyspec import PolySpec

    near_clamp = x[(x >= -11) & (x <= -10)][::8].numpy()  # where softplus' < 4.6e-5
    doc = fp.load("softplus")
    for part in ("backward_direct", "backward_matched"):
        raw = replace(PolySpec.from_dict(doc[part]).replay_program(), floor=None)
        assert (replay.run(raw, near_clamp) < 0).any(), part


# ------------------------------------------------------------------ threads, out=, tiers


def test_swiglu_backward_out_over_its_grad():
    """grad_a written over grad itself (full overlap): each block is read before it is
    written."""
    x = torch.randn(1000) * 4
    ga, gb = OPS.swiglu_backward(x, x, x * 2)
    g, gb_out = x.clone(), torch.empty_like(x)
    OPS.swiglu_backward.out(g, x, x * 2, grad_a=g, grad_b=gb_out)
    assert_same_bits(g, ga)
    assert_same_bits(gb_out, gb)


def test_silu_inplace_argument_is_the_inplace_op():
    x = torch.randn(100)
    y = x.clone()
    assert turbogelu.silu(y, inplace=True) is y
    assert_same_bits(y, turbogelu.silu(x))


@pytest.mark.parametrize("fn", [fn for fn, tier in UNARY_TIERS if tier == "paper"])
def test_paper_tier_is_the_papers_error_and_cheaper(fn):
    """The paper tier runs Table 2's programs: fewer operations than the accurate tier, and its
    float32 error through the op is the spec's measured error (not the accurate tier's)."""
    acc, pap = fp.load(fn), fp.load(fn, tier="paper")
    assert pap["forward"]["errors"]["op_count"] < acc["forward"]["errors"]["op_count"]
    x = np.linspace(-12, 12, 200_001).astype(np.float32)
    # getattr, not OPS.__getattr__: calling the namespace's __getattr__ makes a new packet,
    # whose overloads are new objects that Inductor's lowerings (keyed by the old) miss
    got = getattr(OPS, fn)(torch.from_numpy(x), tier="paper").double().numpy()
    err = float(np.max(np.abs(got - EXACT[fn](x.astype(np.float64)))))
    spec = pap["forward"]["errors"]["float32"]["max_abs_float32"]
    assert 0.5 * spec <= err <= spec * 1.01 + 1e-7
    assert err > 10 * fp.ABS_BOUND


def test_tier_errors():
    x = torch.randn(4)
    with pytest.raises(ValueError, match="tier must be 'accurate' or 'paper'"):
        OPS.sigmoid(x, tier="fast")
    with pytest.raises(ValueError, match="tier must be 'accurate' or 'paper'"):
        OPS.sigmoid(x.to("meta"), tier="fast")
    with pytest.raises(ValueError, match="tier must be"):
        turbogelu.Tanh(tier="exact")


def test_a_tier_an_op_lacks_is_refused():
    """softplus has no paper tier (the source paper has no softplus program): the function, the
    module, the op, its backward and its fake kernel all refuse it by name."""
    x = torch.randn(4)
    refusal = "no 'paper' tier for softplus"
    for call in (
        lambda: turbogelu.softplus(x, tier="paper"),
        lambda: turbogelu.Softplus(tier="paper"),
        lambda: OPS.softplus(x, tier="paper"),
        lambda: OPS.softplus(x.to("meta"), tier="paper"),
        lambda: OPS.softplus_backward(x, x, "default", "paper"),
        lambda: turbogelu.softplus_(x.clone(), "paper"),
    ):
        with pytest.raises(ValueError, match=refusal):
            call()


@pytest.mark.parametrize("dtype", STORAGE, ids=IDS)
def test_streaming_stores_give_the_plain_bits(dtype, isa):
    """The family's loops with non-temporal stores (blocks written straight from the
    registers, two lines at a time), outputs at every offset in a cache line:
    the bits of plain stores, forward and backward, unary and gated (its backward's two
    outputs too)."""
    import turbogelu.ops as tops

    gen = torch.Generator().manual_seed(5)
    base = (torch.randn(5_000, generator=gen) * 4).to(dtype)
    gbase = torch.randn(5_000, generator=gen).to(dtype)
    for offset in range(0, 64 // base.element_size() + 1, 5):
        for n in (33, 4_000):
            x, g = base[offset : offset + n], gbase[offset : offset + n]
            out = {}
            for store in ("plain", "stream"):
                with tops.use_cpu_store(store):
                    got = []
                    for fn in UNARY:
                        o = torch.empty(n + offset, dtype=dtype)[offset:]  # misaligned output
                        getattr(OPS, fn).out(x, out=o)
                        ob = torch.empty(n + offset, dtype=dtype)[offset:]
                        getattr(OPS, f"{fn}_backward").out(g, x, out=ob)
                        got += [o, ob]
                    o = torch.empty(n + offset, dtype=dtype)[offset:]
                    OPS.swiglu.out(x, g, out=o)
                    # the gated backward's two outputs at one offset in a line (streamed),
                    # and at two different ones (plain stores)
                    pair = []
                    for shift in (0, 1):
                        oa = torch.empty(n + offset, dtype=dtype)[offset:]
                        ob = torch.empty(n + offset + shift, dtype=dtype)[offset + shift :]
                        OPS.swiglu_backward.out(g, x, g * 2, grad_a=oa, grad_b=ob)
                        pair += [oa, ob]
                    out[store] = [*got, o, *pair]
            for a, b in zip(out["plain"], out["stream"], strict=True):
                assert_same_bits(a, b, f"{isa} offset {offset} n {n}")
