"""``turbogelu.patch()`` (turbogelu/patching.py): PyTorch's functional activations routed to the
package's ops inside the block, bit for bit; every other call, and these with arguments the ops
do not compute, untouched; kinds, the decorator, nesting, threads, autograd, and torch.compile
with fullgraph=True (the ops in the graph, no break). Hugging Face models: test_transformers.py."""

from __future__ import annotations

import threading

import pytest
import torch
from conftest import assert_same_bits
from torch._dynamo.testing import CompileCounterWithBackend

import turbogelu

F = torch.nn.functional


def _x(dtype=torch.float32) -> torch.Tensor:
    return (torch.randn(4096, generator=torch.Generator().manual_seed(3)) * 4).to(dtype)


# (PyTorch's call, this package's) on x
ROUTED = {
    "F.gelu": (lambda x: F.gelu(x), lambda x: turbogelu.gelu(x)),
    "F.gelu tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: turbogelu.gelu(x, "tanh")),
    "F.silu": (F.silu, turbogelu.silu),
    "torch.sigmoid": (torch.sigmoid, turbogelu.sigmoid),
    "Tensor.sigmoid": (lambda x: x.sigmoid(), turbogelu.sigmoid),
    "F.sigmoid": (F.sigmoid, turbogelu.sigmoid),
    "torch.tanh": (torch.tanh, turbogelu.tanh),
    "Tensor.tanh": (lambda x: x.tanh(), turbogelu.tanh),
    "F.tanh": (F.tanh, turbogelu.tanh),
    "F.softplus": (F.softplus, turbogelu.softplus),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("call", ROUTED)
def test_routed_calls_are_the_ops(call, dtype):
    theirs, ours = ROUTED[call]
    x = _x(dtype)
    with turbogelu.patch():
        got = theirs(x)
    assert_same_bits(got, ours(x), call)
    assert not torch.equal(theirs(x), got) or dtype != torch.float32  # outside: PyTorch's


def test_other_calls_and_arguments_are_untouched():
    x = _x()
    z = torch.randn(8, dtype=torch.complex64)
    calls = {
        "relu": lambda: F.relu(x),
        "exp": lambda: torch.exp(x),
        "sigmoid out=": lambda: torch.sigmoid(x, out=torch.empty_like(x)),
        "softplus beta=2": lambda: F.softplus(x, beta=2.0),
        "tanh complex": lambda: torch.tanh(z),
        "gelu of an int tensor": lambda: F.gelu(torch.ones(3, dtype=torch.int32)),
    }
    want = {}
    for name, call in calls.items():
        try:
            want[name] = call()
        except RuntimeError as e:  # refused by PyTorch: refused the same way in the block
            want[name] = str(e)
    with turbogelu.patch():
        for name, call in calls.items():
            try:
                got = call()
            except RuntimeError as e:
                got = str(e)
            if isinstance(got, str):
                assert got == want[name], name
            else:
                assert torch.equal(got, want[name]), name


def test_kinds_select_the_calls():
    x = _x()
    with turbogelu.patch(kinds=("gelu",)):
        assert_same_bits(F.gelu(x), turbogelu.gelu(x))
        assert torch.equal(torch.sigmoid(x), torch.sigmoid(_x()))
    with turbogelu.patch("sigmoid"):
        assert_same_bits(torch.sigmoid(x), turbogelu.sigmoid(x))
        assert torch.equal(F.gelu(x), F.gelu(_x()))


def test_errors():
    with pytest.raises(ValueError, match=r"unknown kind\(s\) \['relu'\]"):
        turbogelu.patch(kinds=("relu",))
    with pytest.raises(ValueError, match="backward"):
        turbogelu.patch(backward="sideways")
    with pytest.raises(ValueError, match="tier"):
        turbogelu.patch(tier="fast")


def test_decorator_nesting_and_tier():
    x = _x()

    @turbogelu.patch(tier="paper")
    def f(x):
        return torch.sigmoid(x)

    assert_same_bits(f(x), turbogelu.sigmoid(x, tier="paper"))
    p = turbogelu.patch()
    with p:
        with p:  # the same patch entered again
            assert_same_bits(torch.tanh(x), turbogelu.tanh(x))
        assert_same_bits(torch.tanh(x), turbogelu.tanh(x))
    assert torch.equal(torch.tanh(x), torch.tanh(_x()))


def test_the_patch_is_per_thread():
    """A TorchFunctionMode is thread-local: another thread runs PyTorch's functions."""
    x = _x()
    seen = {}
    with turbogelu.patch():
        t = threading.Thread(target=lambda: seen.update(y=torch.sigmoid(x)))
        t.start()
        t.join()
        assert_same_bits(torch.sigmoid(x), turbogelu.sigmoid(x))
    assert torch.equal(seen["y"], torch.sigmoid(x))


def test_autograd_through_the_patch():
    x = _x().requires_grad_()
    with turbogelu.patch():
        (g,) = torch.autograd.grad(F.gelu(x).sum(), x)
    (want,) = torch.autograd.grad(turbogelu.gelu(x).sum(), x)
    assert_same_bits(g, want)


def test_compiled_with_fullgraph_calls_the_ops():
    """Under patch() torch.compile traces the mode: one graph (no break) whose calls are the
    package's ops; the compiled result is the eager patched one's."""

    def block(x, b):
        return F.gelu(x + b) * torch.sigmoid(x) + torch.tanh(b)

    x, b = _x(), _x().flip(0)
    counter = CompileCounterWithBackend("aot_eager")
    with turbogelu.patch():
        got = torch.compile(block, backend=counter, fullgraph=True)(x, b)
        want = block(x, b)
    assert counter.frame_count == 1
    targets = {str(n.target) for g in counter.graphs for n in g.graph.nodes}
    assert {"turbogelu.gelu.default", "turbogelu.sigmoid.default"} <= targets, targets
    assert "turbogelu.tanh.default" in targets
    assert_same_bits(got, want)
