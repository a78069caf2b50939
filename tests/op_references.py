"""What the op tests (tests/test_ops*.py) compare against: float64 references of GELU and its
derivative rounded to the tested dtype, the tolerances the fitted specs allow, and helpers on
tensors' layouts and dtypes that more than one of those files uses.
"""

from __future__ import annotations

import numpy as np
import torch
from conftest import HALF_DTYPES

from turbogelu.approx import reference

OPS = torch.ops.turbogelu
AWKWARD_SIZES = [1, 9, 15, 16, 17, 41, 341, 4231]
FORWARD_ATOL = 3e-5  # |turbogelu - GELU| in float32/float64 (spec: 2.5e-5, the jump at R)
DIRECT_ATOL = 6e-4  # |direct backward - GELU'| (spec: 1.7e-4)
MATCHED_ATOL = 2.5e-3  # |matched backward - GELU'| (spec: 2.0e-3, the derivative of P)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def clone_layout(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` with the same sizes, strides and storage offset (an expanded or sliced
    view stays one), and the same requires_grad."""
    copy = torch.empty(0, dtype=t.dtype, device=t.device)
    copy.set_(t.untyped_storage().clone(), t.storage_offset(), t.size(), t.stride())
    return copy.requires_grad_(t.requires_grad)


def is_dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense (one block of memory): then empty_like keeps the strides."""
    return torch.empty_like(t).stride() == t.stride()


def smallest_subnormal(dtype: torch.dtype) -> torch.Tensor:
    """The smallest positive subnormal of ``dtype``."""
    one = torch.ones((), dtype=torch.int64 if dtype == torch.float64 else torch.int32)
    if dtype in HALF_DTYPES:
        one = one.to(torch.int16)
    return one.view(dtype)


def reference_gelu(x: torch.Tensor, approximate: str) -> torch.Tensor:
    """GELU in float64 (scipy), rounded to x's dtype."""
    ref = reference.gelu(x.detach().double().cpu().numpy(), approximate)
    return torch.from_numpy(np.asarray(ref)).to(x.dtype).reshape(x.shape)


def reference_gelu_backward(grad: torch.Tensor, x: torch.Tensor, approximate: str):
    """grad * GELU'(x) in float64, rounded to x's dtype."""
    d = reference.gelu_grad(x.detach().double().cpu().numpy(), approximate)
    d = torch.from_numpy(np.asarray(d)).reshape(x.shape)
    return (grad.detach().double() * d).to(x.dtype)


def assert_close_to_reference(actual, expected, atol_unit, scale=None):
    """|actual - expected| <= atol_unit * scale + eps(dtype) * |expected| (+ a float16/bfloat16
    rounding of the reference), elementwise, in float64."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = actual.detach().double(), expected.detach().double()
    eps = torch.finfo(actual.dtype).eps
    s = 1.0 if scale is None else scale.detach().double().abs()
    bound = atol_unit * s + eps * e.abs() + (eps * 1e-3 if actual.dtype in HALF_DTYPES else 0.0)
    err = (a - e).abs()
    bad = ~(err <= bound)
    assert not bad.any(), f"max excess {(err - bound)[bad].max().item():.3e} at {bad.nonzero()[:4]}"


def assert_within_an_ulp(got: torch.Tensor, want: torch.Tensor, msg: str = "") -> None:
    """``got`` against ``want`` where PyTorch's own float32 arithmetic stands between them (the
    from-output formula off the CPU): float32 within 2 ulps of ``want``; a 16-bit dtype within
    1 ulp, and equal in all but 1 in 1000 elements."""
    assert got.dtype == want.dtype, msg
    info = torch.finfo(want.dtype)
    _, exponent = torch.frexp(want.double())  # |want| in [2^(e-1), 2^e)
    ulp = (info.eps * torch.exp2((exponent - 1).double())).clamp(min=info.tiny * info.eps)
    off = (got.double() - want.double()).abs()
    if want.dtype == torch.float32:
        assert (off <= 2 * ulp).all(), msg
    else:
        assert (off <= ulp).all(), msg
        assert (off > 0).float().mean() <= 1e-3, msg
