"""Every row of the kernels' table under torch.compile: one fullgraph program over all of them
(forward bits and both kinds of backward), the mutating forms of every row, the modules in a
small MLP; then the clients: a channels_last conv's backward, a LLaMA-style SwiGLU MLP block,
and a compiled tail kernel under each ATen instruction set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from conftest import assert_same_bits, inductor_cache_dir, subprocess_env
from op_rows import ROWS
from torch import nn

import turbogelu

# The polynomial program, forced: the default on AVX-512 CPUs is cells (tests/test_cells.py).
pytestmark = pytest.mark.usefixtures("poly_program")

# Inductor, with its cache kept per ATEN_CPU_CAPABILITY setting (tests/conftest.py says why:
# a cache shared between CI's default and AVX2 passes gave 16-lane stores in 8-lane loops).
COMPILE_BACKEND = "inductor"

# The rows with a module (exp2 has none) and with an in-place form (swiglu has none).
MODULE_ROWS = [r for r in ROWS if r.op.module]
INPLACE_ROWS = [r for r in ROWS if not r.gated]


def _every_row(inputs, backward):
    """Each row's function on its inputs, summed: one graph holding every op of the table."""
    return sum(row.function(*xs, backward=backward) for row, xs in zip(ROWS, inputs, strict=True))


def test_compile_fullgraph_matches_eager(dynamo_reset):
    """Every row in one fullgraph program (a graph break would raise), forward and backward:
    the forward gives the eager bits; with backward="direct" the gradients are turbogelu's
    backward ops, the eager bits too; with the default, the rows whose default is from the
    saved result run aten's formula, which Inductor fuses in its own order of the
    multiplies: equal to a few float32 roundings (a stated tolerance)."""
    g = torch.Generator().manual_seed(0)
    inputs = [row.inputs((torch.randn(257, generator=g) * 3).requires_grad_()) for row in ROWS]
    leaves = [t for xs in inputs for t in xs]
    grad = torch.randn(257, generator=g)
    for backward in ("direct", "default"):
        compiled = torch.compile(_every_row, fullgraph=True, backend=COMPILE_BACKEND)
        out, want = compiled(inputs, backward), _every_row(inputs, backward)
        assert_same_bits(out, want)
        got = torch.autograd.grad(out, leaves, grad)
        expected = torch.autograd.grad(want, leaves, grad)
        for i, (p, q) in enumerate(zip(got, expected, strict=True)):
            if backward == "direct":
                assert torch.equal(p, q), i
            else:
                torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6, msg=f"input {i}")


@pytest.mark.parametrize("row", INPLACE_ROWS, ids=str)
def test_compile_inplace_and_out_forms(row, dynamo_reset):
    """The mutating forms under torch.compile (aot_eager: the same functionalization as
    inductor, without code generation) give the eager bits: their schemas return nothing, so
    functionalization accepts them (test_ops.py's test_mutating_ops_can_be_functionalized
    says why)."""

    def f(x, out):
        y = x * 2
        row.function_(y)
        row.raw_forward(x, out=out)
        return y + out

    x = torch.randn(33)
    expected = f(x, torch.empty(33))
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    assert_same_bits(compiled(x, torch.empty(33)), expected)


class _EveryModuleMLP(nn.Module):
    """Linear layers with every row's module between them (SwiGLU halves its input)."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.acts = nn.ModuleList(r.module(backward=b) for r, b in _module_backwards())
        self.fcs = nn.ModuleList(nn.Linear(d, 2 * d if r.gated else d) for r in MODULE_ROWS)

    def forward(self, x):
        for fc, act in zip(self.fcs, self.acts, strict=True):
            x = act(fc(x))
        return x


def _module_backwards():
    """Each module row with a backward choice, cycling through the three."""
    choices = ("default", "direct", "matched")
    return [(r, choices[i % 3]) for i, r in enumerate(MODULE_ROWS)]


def test_compile_modules_in_an_mlp(dynamo_reset):
    torch.manual_seed(0)
    model = _EveryModuleMLP()
    x = torch.randn(8, 16)
    x_eager = x.clone().requires_grad_()
    x_comp = x.clone().requires_grad_()

    compiled = torch.compile(model, fullgraph=True, backend=COMPILE_BACKEND)
    y_comp = compiled(x_comp)
    y_eager = model(x_eager)
    # Inductor fuses the linear layers' bias adds its own way: a stated tolerance, not bits.
    torch.testing.assert_close(y_comp, y_eager, rtol=1e-5, atol=1e-6)

    y_eager.square().sum().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    y_comp.square().sum().backward()
    for p, ge in zip(model.parameters(), eager_grads, strict=True):
        torch.testing.assert_close(p.grad, ge, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(x_comp.grad, x_eager.grad, rtol=1e-4, atol=1e-6)
    assert not torch._dynamo.utils.counters["graph_break"]


# sigmoid(x) * 2 at 257 elements: a kernel with a one-element tail, the case that showed the
# shared cache's corruption (then with the op's output fed to an in-place Inductor kernel;
# since issue 37 the op is lowered into the kernel: compiled, it is the polynomial program,
# so eager runs that program too).
_TAIL_PROGRAM = """
import torch, turbogelu, turbogelu.ops
f = torch.compile(lambda x: turbogelu.sigmoid(x) * 2, fullgraph=True)
with turbogelu.ops.use_cpu_kernel("poly"):
    for _ in range(20):
        x = torch.randn(257)
        assert torch.equal(f(x), turbogelu.sigmoid(x) * 2)
print("ok")
"""


def test_compiled_tail_kernel_under_each_aten_isa(dynamo_reset):
    """The same compiled program under this process's ATen ISA and, in a child, under the
    other one (AVX2, or the CPU's own when this process runs under AVX2), one after the
    other, each with its own Inductor cache: equal to eager in both."""
    exec(_TAIL_PROGRAM, {})
    if os.environ.get("ATEN_CPU_CAPABILITY") == "avx2":
        env = subprocess_env()
        del env["ATEN_CPU_CAPABILITY"], env["TORCHINDUCTOR_CACHE_DIR"]
        env["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(env)
    else:
        env = subprocess_env(ATEN_CPU_CAPABILITY="avx2")
    assert env["TORCHINDUCTOR_CACHE_DIR"] != os.environ["TORCHINDUCTOR_CACHE_DIR"]
    run = subprocess.run(
        [sys.executable, "-c", _TAIL_PROGRAM], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-2000:]


class _LlamaMLP(nn.Module):
    """RMSNorm then a SwiGLU MLP (gate and up projections, silu(gate) * up, down), residual."""

    def __init__(self, d: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(d)
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(turbogelu.swiglu(self.gate(h), self.up(h)))


def test_llama_mlp_block_compiles_without_graph_breaks(dynamo_reset):
    torch.manual_seed(0)
    block = _LlamaMLP()
    x = torch.randn(4, 16, 32)
    explained = torch._dynamo.explain(block)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(block, fullgraph=True, backend=COMPILE_BACKEND)
    y = compiled(x)
    y.square().mean().backward()
    grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    eager = block(x)
    eager.square().mean().backward()
    # Inductor fuses the norm and the matmuls differently from eager: a stated tolerance
    # (float32 rounding of reductions), not bits. The swiglu op itself is the same kernel.
    torch.testing.assert_close(y, eager, rtol=1e-5, atol=1e-5)
    for g, p in zip(grads, block.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-6)


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
