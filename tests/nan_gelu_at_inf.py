"""A pytest plugin (``-p nan_gelu_at_inf``, tests/ on PYTHONPATH) that makes PyTorch's float16
``F.gelu`` return NaN at +-inf, as PyTorch 2.14.1 does on a Sapphire Rapids Xeon (it returns
inf on an AMD Zen 4): test_ops_special_values.py runs the op tests under it, so that no
test leans on a result of PyTorch's that depends on the CPU."""

from __future__ import annotations

import torch
import torch.nn.functional as F

_torch_gelu = F.gelu


def _gelu_nan_at_inf(x, approximate="none"):
    y = _torch_gelu(x, approximate=approximate)
    if isinstance(x, torch.Tensor) and x.dtype == torch.float16:
        y = torch.where(torch.isinf(x), torch.full_like(y, float("nan")), y)
    return y


def pytest_configure(config):
    F.gelu = _gelu_nan_at_inf
    assert torch.isnan(F.gelu(torch.tensor([float("inf")], dtype=torch.float16))).all()
    print("F.gelu imitates NaN at +-inf in float16 (tests/nan_gelu_at_inf.py)")
