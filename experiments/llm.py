"""A small decoder-only transformer for the paper's integration tasks (issue 18), in plain
PyTorch, trained on the Shakespeare corpus (experiments/shakespeare.py) at the character level.

The model: token embedding, ``layers`` pre-norm blocks (RMSNorm, causal self-attention with
rotary positions, RMSNorm, MLP), a final RMSNorm and an untied output projection. The tasks
differ only where the paper swaps a transcendental, each a ``Task``:

* ``gelu``: the control, a dense MLP with GELU (``W2 gelu(W1 x)``);
* ``b1``: a dense MLP with SiLU;
* ``b2``: softmax attention whose logits are tanh-softcapped, ``c tanh(s / c)`` with c = 50;
* ``b3``: sigmoid attention: ``sigmoid(s - log n)`` per element (n: the number of keys a query
  sees), no softmax;
* ``b4``: a routed MLP: 4 SwiGLU experts (``W2 (silu(Wa x) * Wb x)``), each token sent to one
  (top-1 of a linear router's softmax, the output scaled by that probability).

An ``Arm`` supplies the functions (``gelu``, ``silu``, ``sigmoid``, ``softcap``, ``swiglu``):
``NATIVE`` is PyTorch's; ``polynomial_arm()`` this project's ops, ``torch.ops.turbogelu.*``,
the family's at a ``tier`` (a build without one of them gets an arm whose function raises an
error that says so, never a silent fallback to PyTorch's).
Everything but the arm (initial weights, batches, dropout: none) is the same for both arms of a
task, given the seed.

Precision (``TinyLM.precision``, issue 38): "float32" (every run before issue 38), or
"bfloat16": autocast's rule, float32 master weights and every matrix product with bfloat16
operands and a bfloat16 result, accumulated in float32 (``bfloat16_products``), so that each
transcendental sees and returns bfloat16 tensors, as in the source paper's bfloat16 training.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

TASKS = ("gelu", "b1", "b2", "b3", "b4")
SOFTCAP = 50.0  # Gemma 2's attention softcap (issue 18)
EXPERTS = 4
PRECISIONS = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class Arm:
    """The transcendental functions a model calls; ``name`` goes into results."""

    name: str
    gelu: Callable[[torch.Tensor], torch.Tensor]
    silu: Callable[[torch.Tensor], torch.Tensor]
    sigmoid: Callable[[torch.Tensor], torch.Tensor]
    softcap: Callable[[torch.Tensor, float], torch.Tensor]
    swiglu: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    # the attention's row softmax (every task but b3): PyTorch's in both arms of the
    # protocols; the swap protocol also evaluates turbogelu.softmax (exp2 by polynomial)
    softmax: Callable[[torch.Tensor, int], torch.Tensor] = torch.softmax


NATIVE = Arm(
    name="native",
    gelu=F.gelu,
    silu=F.silu,
    sigmoid=torch.sigmoid,
    softcap=lambda s, c: c * torch.tanh(s / c),
    swiglu=lambda a, b: F.silu(a) * b,
)


def _missing(op: str) -> Callable:
    def fail(*args, **kwargs):
        raise NotImplementedError(
            f"the polynomial arm needs torch.ops.turbogelu.{op}, which this build does not have "
            "(the activation family, issue 17); no PyTorch function stands in for it"
        )

    return fail


def polynomial_arm(tier: str = "accurate") -> Arm:
    """This project's ops (see the module docstring), the family's at ``tier`` ("accurate",
    the default, or "paper": the source paper's Table 2 programs)."""
    import turbogelu

    turbogelu.ops  # noqa: B018  (loads every op and registers its fake kernel and autograd)
    ops = torch.ops.turbogelu
    have = {name: hasattr(ops, name) for name in ("silu", "sigmoid", "softcap", "swiglu")}
    return Arm(
        name="polynomial",
        # the GELU control at the tier too (the paper tier's D5 program since issue 38)
        gelu=partial(turbogelu.gelu, tier=tier),
        silu=partial(ops.silu, tier=tier) if have["silu"] else _missing("silu"),
        # B3 runs the polynomial derivative in the backward too, as the paper does (autograd's
        # default for sigmoid would compute PyTorch's y * (1 - y) on the saved result).
        sigmoid=(
            partial(ops.sigmoid, tier=tier, backward="direct")
            if have["sigmoid"]
            else _missing("sigmoid")
        ),
        # B2 likewise, the direct fit of tanh' (autograd's default for softcap works from the
        # saved result too; the accurate tier's spec default, which the runs so far used).
        softcap=(
            partial(ops.softcap, tier=tier, backward="direct")
            if have["softcap"]
            else _missing("softcap")
        ),
        swiglu=partial(ops.swiglu, tier=tier) if have["swiglu"] else _missing("swiglu"),
    )


def _bf16_operand(x):
    """A product's operand rounded to bfloat16 and held in float32 (what a bfloat16 GEMM
    multiplies); anything but a floating tensor passes unchanged."""
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.bfloat16).float()
    return x


class bfloat16_products(TorchFunctionMode):
    """Inside: every matrix product (``F.linear``, ``@``, ``mm``, ``bmm``) rounds its operands
    to bfloat16, multiplies and accumulates in float32 and returns bfloat16, as torch.autocast's
    bfloat16 products and a GPU's bfloat16 GEMM do; the backward's products follow through
    autograd (bfloat16-valued gradients, float32 accumulation, rounded at each cast). The
    cross-entropy takes float32 logits (autocast's float32 list). Emulated rather than
    ``torch.autocast`` because this CPU's bfloat16 GEMM (no AVX512-BF16) runs a step about ten
    times slower than float32 (``llm_settings``: the measured speeds); the rounding is the same.
    """

    PRODUCTS = frozenset({F.linear, torch.matmul, torch.Tensor.matmul, torch.mm, torch.bmm})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.PRODUCTS:
            args = [_bf16_operand(a) for a in args]
            kwargs = {k: _bf16_operand(v) for k, v in kwargs.items()}
            return func(*args, **kwargs).to(torch.bfloat16)
        if func is F.cross_entropy:
            return func(args[0].float(), *args[1:], **kwargs)
        return func(*args, **kwargs)


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def precision_context(precision: str):
    """The context a forward runs in: nothing for float32, ``bfloat16_products`` for bfloat16."""
    if check_precision(precision) == "bfloat16":
        return bfloat16_products()
    return contextlib.nullcontext()


@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 84
    context: int = 128
    width: int = 128
    heads: int = 4
    layers: int = 4
    mlp_ratio: int = 4

    def __post_init__(self):
        if self.width % self.heads or (self.width // self.heads) % 2:
            raise ValueError(
                f"width {self.width} must split into {self.heads} heads of an even size "
                "(rotary positions rotate pairs)"
            )


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x: torch.Tensor) -> torch.Tensor:
    """Rotary positions on (batch, heads, time, dim): pairs (even, odd) of each head's dims
    rotated by position x frequency, frequencies 10000^(-2i/dim)."""
    t, d = x.shape[-2], x.shape[-1]
    freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angle = torch.arange(t, dtype=torch.float32)[:, None] * freq[None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, cfg: Config, task: str, arm: Arm):
        super().__init__()
        self.heads, self.task, self.arm = cfg.heads, task, arm
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=False)
        self.out = nn.Linear(cfg.width, cfg.width, bias=False)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        q, k = rotary(q), rotary(k)
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (b, heads, t, t)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        if self.task == "b3":  # sigmoid attention: sigmoid(s - log n), n = keys seen
            n = torch.arange(1, t + 1, dtype=s.dtype, device=x.device)[:, None]
            p = self.arm.sigmoid(s - n.log()) * causal
        else:
            if self.task == "b2":
                s = self.arm.softcap(s, SOFTCAP)
            p = self.arm.softmax(s.masked_fill(~causal, float("-inf")), -1)
        return self.out((p @ v).transpose(1, 2).reshape(b, t, w))


class DenseMLP(nn.Module):
    def __init__(self, cfg: Config, act: Callable):
        super().__init__()
        self.up = nn.Linear(cfg.width, cfg.mlp_ratio * cfg.width, bias=False)
        self.down = nn.Linear(cfg.mlp_ratio * cfg.width, cfg.width, bias=False)
        self.act = act

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class RoutedSwiGLU(nn.Module):
    """``EXPERTS`` SwiGLU experts, top-1 routing; hidden width 2/3 of the dense MLP's so that
    one expert holds about the dense MLP's parameters."""

    def __init__(self, cfg: Config, arm: Arm):
        super().__init__()
        hidden = 2 * cfg.mlp_ratio * cfg.width // 3
        self.router = nn.Linear(cfg.width, EXPERTS, bias=False)
        self.gate_up = nn.Parameter(torch.empty(EXPERTS, cfg.width, 2 * hidden))
        self.down = nn.Parameter(torch.empty(EXPERTS, hidden, cfg.width))
        nn.init.normal_(self.gate_up, std=cfg.width**-0.5)
        nn.init.normal_(self.down, std=hidden**-0.5)
        self.arm = arm

    def forward(self, x):
        b, t, w = x.shape
        flat = x.reshape(-1, w)
        prob = torch.softmax(self.router(flat), dim=-1)
        weight, expert = prob.max(dim=-1)
        out = torch.zeros_like(flat)
        for e in range(EXPERTS):
            idx = (expert == e).nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            a, g = (flat[idx] @ self.gate_up[e]).chunk(2, dim=-1)
            y = (self.arm.swiglu(a, g) @ self.down[e]) * weight[idx, None]
            out[idx] = y.to(out.dtype)  # bfloat16 products into the float32 stream
        return out.view(b, t, w)


class Block(nn.Module):
    def __init__(self, cfg: Config, task: str, arm: Arm):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(cfg.width), RMSNorm(cfg.width)
        self.attn = Attention(cfg, task, arm)
        if task == "b4":
            self.mlp = RoutedSwiGLU(cfg, arm)
        else:
            self.mlp = DenseMLP(cfg, arm.gelu if task == "gelu" else arm.silu)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    precision = "float32"  # or "bfloat16" (the module docstring); weights stay float32

    def __init__(self, cfg: Config, task: str, arm: Arm = NATIVE):
        super().__init__()
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; the tasks are {TASKS}")
        self.cfg, self.task, self.arm = cfg, task, arm
        self.embed = nn.Embedding(cfg.vocab, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg, task, arm) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab, bias=False)

    def forward(self, ids, targets=None):
        if ids.shape[-1] > self.cfg.context:
            raise ValueError(f"{ids.shape[-1]} tokens exceed the context of {self.cfg.context}")
        with precision_context(self.precision):
            return self._forward(ids, targets)

    def _forward(self, ids, targets):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def batches(ids, context: int, batch: int, seed: int):
    """An endless stream of (inputs, targets) windows of ``context`` tokens at offsets drawn
    by a generator seeded with ``seed`` (the same for both arms of a task)."""
    data = torch.as_tensor(ids, dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    while True:
        start = torch.randint(0, len(data) - context - 1, (batch,), generator=gen)
        window = torch.stack([data[s : s + context + 1] for s in start.tolist()])
        yield window[:, :-1], window[:, 1:]


def build(cfg: Config, task: str, arm: Arm, seed: int, precision: str = "float32") -> TinyLM:
    """The model with initial weights drawn from ``seed`` alone (so both arms start equal),
    computing at ``precision``."""
    check_precision(precision)
    torch.manual_seed(seed)
    model = TinyLM(cfg, task, arm)
    model.precision = precision
    return model


def tokens_per_second(
    cfg: Config, task: str, arm: Arm = NATIVE, batch: int = 16, steps: int = 5, seed: int = 0
) -> float:
    """Training throughput (forward, backward and an AdamW step), median of ``steps`` steps
    after one warm-up step: what sizes the model to the time budget."""
    model = build(cfg, task, arm, seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, cfg.vocab, (batch, cfg.context + 1), generator=gen)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        _, loss = model(ids[:, :-1], ids[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    step = sorted(times[1:])[len(times[1:]) // 2]
    return batch * cfg.context / step
