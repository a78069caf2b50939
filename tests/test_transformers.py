"""Models of Hugging Face transformers (a test dependency, requirements.txt), built from configs
with no weights: a LLaMA-style (SiLU in a gated MLP), a GPT-2-style (the tanh GELU written out,
NewGELUActivation) and a BERT-style (F.gelu through GELUActivation) model of two layers.
``replace_activations`` reaches every activation module; ``turbogelu.patch()`` reaches the
functional calls of the unreplaced model; logits stay near the original's, a training step
runs, and generation runs eager and under torch.compile."""

from __future__ import annotations

import pytest
import torch

import turbogelu

transformers = pytest.importorskip("transformers")
from transformers import activations as hf_acts  # noqa: E402

VOCAB, TOKENS = 96, 12


def _llama():
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config)


def _gpt2():
    config = transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
        activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def _bert():
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, hidden_act="gelu", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return transformers.BertForMaskedLM(config)


# name -> (builder, the activation class its config names, the kind it counts as, how many)
MODELS = {
    "llama": (_llama, hf_acts.SiLUActivation, "silu", 2),
    "gpt2": (_gpt2, hf_acts.NewGELUActivation, "gelu", 2),
    "bert": (_bert, hf_acts.GELUActivation, "gelu", 3),  # two layers and the MLM head
}


def _build(name: str):
    torch.manual_seed(0)
    model = MODELS[name][0]().eval()
    return model


def _tokens(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, TOKENS), generator=torch.Generator().manual_seed(seed))


def _logits(model, tokens) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=tokens).logits


def _activations(model, cls) -> int:
    return len({id(m) for m in model.modules() if isinstance(m, cls)})


@pytest.mark.parametrize("name", MODELS)
def test_replace_activations_reaches_every_activation(name):
    """Every activation module of the model becomes this package's, and the logits stay within
    the accurate tier's bound (3e-5) of the original's: the activations' errors, each within
    it, reach the logits through projections initialised at std 0.02, which shrink them
    (measured 1e-7 to 1e-6: pytest -s prints them)."""
    _, cls, kind, count = MODELS[name]
    model = _build(name)
    assert _activations(model, cls) == count
    tokens = _tokens()
    before = _logits(model, tokens)
    counts = turbogelu.replace_activations(model)
    assert counts[kind] == count and _activations(model, cls) == 0
    after = _logits(model, tokens)
    change = (after - before).abs().max().item()
    print(f"{name}: max |logits change| {change:.3e}")
    assert 0 < change <= 3e-5


@pytest.mark.parametrize("name", ["llama", "bert"])
def test_patch_reaches_the_functional_calls(name):
    """The unreplaced model under patch(): GELUActivation and SiLUActivation call F.gelu and
    F.silu, which the patch routes to the ops the replacement modules call, so the logits are
    the replaced model's bits; outside the block the model is PyTorch's again."""
    model = _build(name)
    tokens = _tokens()
    plain = _logits(model, tokens)
    with turbogelu.patch():
        patched = _logits(model, tokens)
    assert torch.equal(_logits(model, tokens), plain)
    turbogelu.replace_activations(model)
    assert torch.equal(patched, _logits(model, tokens))


def test_patch_reaches_the_tanh_of_a_written_out_gelu():
    """GPT-2's NewGELUActivation writes 0.5 x (1 + tanh(...)) itself: patch() routes its
    torch.tanh (the formula stays; replace_activations swaps the whole module instead)."""
    model = _build("gpt2")
    tokens = _tokens()
    plain = _logits(model, tokens)
    with turbogelu.patch(kinds=("tanh",)):
        patched = _logits(model, tokens)
    assert 0 < (patched - plain).abs().max() <= 3e-5


@pytest.mark.parametrize("name", MODELS)
def test_a_training_step_after_replacement(name):
    model = _build(name).train()
    turbogelu.replace_activations(model)
    tokens = _tokens()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    out = model(input_ids=tokens, labels=tokens)
    out.loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(g.isfinite().all() for g in grads)
    before = _logits(model, tokens)
    optimizer.step()
    assert not torch.equal(before, _logits(model, tokens))


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_generation_eager(name):
    model = _build(name)
    want = model.generate(_tokens()[:1], max_new_tokens=4, do_sample=False)
    turbogelu.replace_activations(model)
    got = model.generate(_tokens()[:1], max_new_tokens=4, do_sample=False)
    assert got.shape == want.shape == (1, TOKENS + 4)
    assert torch.equal(got[:, :TOKENS], want[:, :TOKENS])


@pytest.mark.slow  # 27 s of compiling on two cores (make test-all runs it)
def test_generation_compiled_with_the_patch():
    """The LLaMA-style model's forward compiled with fullgraph=True (no graph break) under
    patch(), and greedy generation runs: its tokens are those of the eager patched model."""
    model = _build("llama")
    tokens = _tokens()[:1]
    with turbogelu.patch():
        eager = model.generate(tokens, max_new_tokens=3, do_sample=False)
        model.forward = torch.compile(model.forward, fullgraph=True, dynamic=True)
        compiled = model.generate(tokens, max_new_tokens=3, do_sample=False)
    assert torch.equal(compiled, eager)
