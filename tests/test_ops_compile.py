"""The turbogelu ops and module under torch.compile: fullgraph traces, the mutating forms, a
channels_last conv's backward."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same_bits
from torch import nn

import turbogelu

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")


# ------------------------------------------------------------------ torch.compile


class _TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = turbogelu.GELU("tanh")
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        h = self.act(self.fc1(x))
        h = turbogelu.gelu(self.fc2(h), "none", backward="matched")
        return self.fc3(h)


def test_compile_inplace_and_out_forms(dynamo_reset):
    """The mutating forms under torch.compile (aot_eager: the same functionalization as
    inductor, without code generation) give the eager bits: their schemas return nothing, so
    functionalization accepts them (test_ops.py's test_mutating_ops_can_be_functionalized
    says why)."""

    def f(x, out):
        y = x * 2
        turbogelu.gelu_(y)
        turbogelu.gelu_op(x, out=out)
        return y + out

    x = torch.randn(33)
    expected = f(x, torch.empty(33))
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    assert_same_bits(compiled(x, torch.empty(33)), expected)


def test_compile_channels_last_conv_backward(dynamo_reset):
    """A channels_last conv followed by turbogelu.GELU, compiled (inductor), trained one step.
    Autograd hands gelu_backward a contiguous grad with a channels_last x; the CPU kernel's
    result takes x's layout, as the fake kernel says, so inductor's stride assertion holds
    (it stopped the backward while the kernel followed grad's layout)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), turbogelu.GELU())
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last).requires_grad_()
    model(x).sum().backward()
    eager = x.grad.clone()
    x.grad = None
    compiled = torch.compile(model, fullgraph=True)
    compiled(x).sum().backward()
    torch.testing.assert_close(x.grad, eager, rtol=1e-4, atol=1e-5)


def test_compile_fullgraph_matches_eager(dynamo_reset):
    torch.manual_seed(0)
    model = _TinyMLP()
    x = torch.randn(8, 16)
    x_eager = x.clone().requires_grad_()
    x_comp = x.clone().requires_grad_()

    compiled = torch.compile(model, fullgraph=True)  # a graph break would raise
    y_comp = compiled(x_comp)
    y_eager = model(x_eager)
    torch.testing.assert_close(y_comp, y_eager, rtol=1e-5, atol=1e-6)

    y_eager.square().sum().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    y_comp.square().sum().backward()
    for p, ge in zip(model.parameters(), eager_grads, strict=True):
        torch.testing.assert_close(p.grad, ge, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(x_comp.grad, x_eager.grad, rtol=1e-4, atol=1e-6)
    assert not torch._dynamo.utils.counters["graph_break"]
