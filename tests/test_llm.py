"""The small language model of the integration tasks (experiments/llm.py): causal, the same
initial weights for both arms of a task, each task's mechanism where it should be, and the
polynomial arm calling this project's ops (or refusing, for ops not built yet)."""

from __future__ import annotations

import math

import pytest
import torch

import turbogelu
from experiments import llm

TINY = llm.Config(vocab=20, context=16, width=32, heads=4, layers=2, mlp_ratio=2)


def _ids(batch=3, t=16, seed=0):
    return torch.randint(0, TINY.vocab, (batch, t), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("task", llm.TASKS)
def test_every_task_is_causal_and_trains(task):
    model = llm.build(TINY, task, llm.NATIVE, seed=1)
    ids = _ids()
    logits = model(ids)
    assert logits.shape == (3, 16, TINY.vocab)
    changed = ids.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % TINY.vocab  # the future of position 9
    # the past unchanged: bit for bit would assert the BLAS's blocking, not causality (B4's
    # top-1 routing sends a different number of tokens to each expert when the future
    # changes, and on an AVX2-only AMD EPYC those matrix products then differ in the last
    # bits); a leak of the future moves logits by far more than 1e-5
    torch.testing.assert_close(model(changed)[:, :10], logits[:, :10], rtol=1e-5, atol=1e-5)
    assert (model(changed)[:, 10:] - logits[:, 10:]).abs().max() > 1e-3
    # a few AdamW steps on one batch lower its loss, and every parameter gets a gradient
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        _, loss = model(ids[:, :-1], ids[:, 1:])
        opt.zero_grad()
        loss.backward()
        if not losses:
            missing = [n for n, p in model.named_parameters() if p.grad is None]
            assert missing == []
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_both_arms_start_from_the_same_weights():
    a = llm.build(TINY, "gelu", llm.NATIVE, seed=5)
    b = llm.build(TINY, "gelu", llm.polynomial_arm(), seed=5)
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb)
    assert not torch.equal(llm.build(TINY, "gelu", llm.NATIVE, seed=6).head.weight, a.head.weight)


def test_the_polynomial_arm_calls_turbogelu_and_refuses_what_is_not_built():
    arm = llm.polynomial_arm()
    assert arm.gelu.func is turbogelu.gelu and arm.gelu.keywords == {"tier": "accurate"}
    assert llm.polynomial_arm("paper").gelu.keywords == {"tier": "paper"}
    x = torch.randn(10)
    # GELU control: native and polynomial differ, by about GELU's polynomial error
    model_n = llm.build(TINY, "gelu", llm.NATIVE, seed=2)
    model_p = llm.build(TINY, "gelu", arm, seed=2)
    ids = _ids()
    diff = (model_n(ids) - model_p(ids)).abs().max().item()
    assert 0 < diff < 1e-3
    for op in ("silu", "sigmoid", "softcap", "swiglu"):
        if not hasattr(torch.ops.turbogelu, op):
            with pytest.raises(NotImplementedError, match=f"torch.ops.turbogelu.{op}"):
                getattr(arm, op)(x) if op not in ("softcap", "swiglu") else getattr(arm, op)(x, x)


def test_sigmoid_attention_uses_the_log_n_bias():
    att = llm.Attention(TINY, "b3", llm.NATIVE)
    seen = {}

    def sigmoid(s):
        seen["s"] = s
        return torch.sigmoid(s)

    att.arm = llm.dataclasses.replace(llm.NATIVE, sigmoid=sigmoid)
    x = torch.randn(2, 5, TINY.width)
    att(x)
    s = seen["s"]  # (b, heads, t, t): the scaled logits minus log(n), n = 1..t per query
    b, t, w = x.shape
    q, k, _ = att.qkv(x).view(b, t, 3, TINY.heads, w // TINY.heads).permute(2, 0, 3, 1, 4)
    raw = llm.rotary(q) @ llm.rotary(k).transpose(-1, -2) / math.sqrt(q.shape[-1])
    bias = torch.log(torch.arange(1, t + 1, dtype=torch.float32))[:, None]
    torch.testing.assert_close(s, raw - bias)


def test_softcap_bounds_the_logits():
    recording = []
    arm = llm.dataclasses.replace(
        llm.NATIVE, softcap=lambda s, c: recording.append(c) or c * torch.tanh(s / c)
    )
    llm.Attention(TINY, "b2", arm)(torch.randn(1, 4, TINY.width))
    assert recording == [llm.SOFTCAP]


def test_routed_experts_send_each_token_to_one():
    mlp = llm.RoutedSwiGLU(TINY, llm.NATIVE)
    x = torch.randn(2, 6, TINY.width)
    out = mlp(x)
    flat = x.reshape(-1, TINY.width)
    prob = torch.softmax(mlp.router(flat), -1)
    w, e = prob.max(-1)
    for i in range(flat.shape[0]):
        a, g = (flat[i] @ mlp.gate_up[e[i]]).chunk(2)
        want = (torch.nn.functional.silu(a) * g) @ mlp.down[e[i]] * w[i]
        torch.testing.assert_close(out.reshape(-1, TINY.width)[i], want)


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="even size"):
        llm.Config(width=20, heads=4)  # heads of 5 dims
    with pytest.raises(ValueError, match="unknown task"):
        llm.TinyLM(TINY, "b5")
    with pytest.raises(ValueError, match="exceed the context"):
        llm.build(TINY, "b1", llm.NATIVE, 0)(_ids(t=17))


def test_batches_are_reproducible_and_throughput_is_measured():
    ids = list(range(100))
    a = llm.batches(ids, 8, 4, seed=3)
    b = llm.batches(ids, 8, 4, seed=3)
    for _ in range(3):
        (xa, ya), (xb, yb) = next(a), next(b)
        assert torch.equal(xa, xb) and torch.equal(ya, yb) and torch.equal(ya, xa + 1)
    assert llm.tokens_per_second(TINY, "b1", batch=2, steps=2) > 0
