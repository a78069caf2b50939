"""Every output bit of the CPU ops against the committed digests (tests/output_digests.py), under
every instruction set this CPU has: the check that a rewrite of the kernels keeps every bit.

A failure here means an output bit changed. If that is intended (a new program, a refit), say
so in the commit and regenerate with ``python tests/output_digests.py --write``."""

from __future__ import annotations

import pytest
import torch
from conftest import ISAS
from output_digests import DTYPES, canonical_bits, compute, digest, inputs, load

from turbogelu import ops as tg_ops

FIXTURE = load()


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("isa_name", ISAS)
def test_outputs_keep_their_digests(isa_name, dtype_name):
    with tg_ops.use_cpu_isa(isa_name):
        got = compute((dtype_name,))
    want = {k: v for k, v in FIXTURE["digests"].items() if k.startswith(f"{dtype_name}/")}
    assert set(got) == set(want), "the cases changed: regenerate the fixture on purpose"
    differ = sorted(k for k in got if got[k] != want[k])
    assert not differ, f"{len(differ)} cases changed their bits under {isa_name}: {differ[:10]}"


def test_the_fixture_was_checked_on_every_isa_the_kernels_have():
    # Written where the AVX-512 loops run too, so that an AVX2-only machine, which checks only
    # scalar and AVX2, still holds to digests that every ISA gave.
    assert set(FIXTURE["isas_checked_when_written"]) == {"avx512bf16", "avx512", "avx2", "scalar"}


def test_sixteen_bit_inputs_are_every_pattern():
    for dtype in (torch.float16, torch.bfloat16):
        x = inputs(dtype)
        assert torch.unique(x.view(torch.int16)).numel() == 1 << 16


def test_wide_inputs_reach_every_exponent_and_special_value():
    for dtype, exponent_bits, mantissa in ((torch.float32, 8, 23), (torch.float64, 11, 52)):
        x = inputs(dtype)
        raw = x.view(torch.int32 if dtype == torch.float32 else torch.int64)
        exponents = torch.unique((raw >> mantissa) & ((1 << exponent_bits) - 1))
        assert exponents.numel() == 1 << exponent_bits
        assert torch.isnan(x).any() and torch.isinf(x).any()
        assert (x == 0).any() and ((x != 0) & (x.abs() < torch.finfo(dtype).tiny)).any()


def test_digest_sees_one_bit_and_ignores_nan_payloads():
    x = torch.tensor([1.0, -0.0, float("nan")], dtype=torch.float32)
    flipped = x.clone()
    flipped.view(torch.int32)[0] ^= 1
    assert digest(flipped) != digest(x)
    assert digest(torch.tensor([1.0, 0.0, float("nan")])) != digest(x)  # -0 is not +0
    other_nan = x.clone()
    other_nan.view(torch.int32)[2] = -1  # a negative NaN with another payload
    assert canonical_bits(other_nan) == canonical_bits(x)
    assert digest(torch.tensor([1.0, -0.0, 0.0])) != digest(x)  # the NaN's position counts
