"""The language-model protocols' settings (``python -m experiments llm``, issue 18): the model
size, the training horizons, the seeds, the quick setting of the tests, and the source
paper's figures they are set beside. No import at all: the command line (``llm_cli``) builds
its parser from these without torch, as ``mnist_settings`` does for MNIST.

Sizing (measured on the shared 2-core build machine, one thread, before choosing): the default
``experiments.llm.Config`` (context 128, width 128, 4 heads, 4 layers, MLP ratio 4: 0.81M
parameters; B4's four experts 2.38M, about one dense MLP's worth active per token) trains at
about 7,000 characters a second for every task and both arms (forward, backward and an AdamW
step; 5,700-6,000 for B4). ``llm all`` runs inside ``make reproduce``, whose whole run must
stay under 60 minutes on that machine (the rest of it takes about 43), so it is sized for
about 11 minutes (the first sizing, 240 and 60 steps, took 17):

* seed: ``SEED_STEPS`` steps of ``BATCH`` windows of 128 characters per task and arm
  (163,840 characters each; 10 runs);
* noise: ``NOISE_SEEDS`` seeds x 2 arms x 5 tasks x ``NOISE_STEPS`` steps (40,960 characters
  each; 50 runs);
* swap: no training: the seed protocol's native checkpoint, evaluated;
* throughput: ``THROUGHPUT_ROUNDS`` alternating rounds of ``THROUGHPUT_ITERS`` steps per arm
  and task, and one profiled step per arm and task.

Each protocol's wall time is in its result's meta (``results/reference/full/llm_*.json`` for
the reference run), not copied here.
"""

MODEL = {"context": 128, "width": 128, "heads": 4, "layers": 4, "mlp_ratio": 4}
BATCH = 8
LR = 3e-3
WARMUP = 20  # linear warm-up steps, then cosine to 0 at the last step
WEIGHT_DECAY = 0.01
CLIP = 1.0  # gradient-norm clip
VAL_WINDOWS = 64  # fixed validation windows, evenly spaced over the held-out plays
SEED_STEPS = 160
SEED_EVALS = 8  # validation losses along the seed run (and one at step 0)
NOISE_STEPS = 40
NOISE_SEEDS = 5
THROUGHPUT_ROUNDS = 5
THROUGHPUT_ITERS = 4
# The smoothed training loss is an exponentially weighted mean with a half-life of this
# fraction of the run's steps. The paper's Table 7 uses a half-life of 1 billion tokens at a
# ~100-billion-token horizon (1 %); a run of a few hundred steps needs a longer one to average
# over more than a handful of batches, so a tenth.
SMOOTH_FRACTION = 0.1

QUICK_MODEL = {"context": 32, "width": 32, "heads": 2, "layers": 1, "mlp_ratio": 2}
QUICK = {
    "batch": 4,
    "seed_steps": 12,
    "seed_evals": 3,
    "noise_steps": 6,
    "noise_seeds": 3,
    "val_windows": 8,
    "throughput_rounds": 2,
    "throughput_iters": 2,
    "warmup": 2,
    "bf16_steps": 6,
    "bf16_seeds": 3,
}

# ---------------------------------------------------------------- the bfloat16 study
# ``python -m experiments llm bf16`` (issue 38: the paper's Table 7 in miniature with its
# programs): native, the accurate tier and the paper tier (``polynomial-paper``), every task,
# ``BF16_SEEDS`` seeds, the model computing in bfloat16 by autocast's rule (float32 master
# weights and optimizer; every matrix product bfloat16 in, float32 accumulation, bfloat16 out:
# ``experiments.llm.bfloat16_products``), so each transcendental sees and returns bfloat16.
# Measured on the shared 2-core build machine, one thread, the default model, batch 8 (ms a
# training step, native / paper tier, GELU control and B4): float32 190 / 215 and 250 / 295;
# bfloat16 weights (``model.to(torch.bfloat16)``) 1,970 / 2,130 and 2,370 / 2,390;
# ``torch.autocast("cpu", torch.bfloat16)`` 1,970 / 2,640 (B4: index_put refuses the mixed
# dtypes): this AVX2 CPU has no bfloat16 GEMM (aten::mm took 78 % of the step). The emulated
# products: 165-270 ms, every task and arm. At that speed the 75 runs (5 tasks x 3 arms x 5
# seeds) get ~16 steps each in the ~4 minutes ``make reproduce`` can spare, so the study uses
# a smaller model: ``BF16_MODEL`` at 19-51 ms a step (median ~29) for ``BF16_STEPS`` steps
# (40,960 characters a run). The first full run: 25-42 ms a step alone (B4 the slowest), about
# 3.3 minutes in all when alone (284 s while sharing the two cores with a test run).
BF16_MODEL = {"context": 64, "width": 64, "heads": 2, "layers": 2, "mlp_ratio": 4}
BF16_STEPS = 80
BF16_SEEDS = 5

# The source paper's figures ("Fast Polynomial Transcendentals for LLMs", R. Hu, Graphcore
# Research, 2026: reference 2 of paper/paper.md; seed document 003_0783a5cae37bf496). Each its
# own table:
# Table 7: paired pre-training at ~100 billion tokens, EWM training loss (half-life 1 billion
# tokens), polynomial minus native; one paired trajectory per task (no interval).
PAPER_TABLE7 = {
    "b1": {"horizon_tokens": 100.2701e9, "native": 2.6264, "polynomial": 2.7050, "change": 0.0786},
    "b2": {"horizon_tokens": 100.2701e9, "native": 2.5415, "polynomial": 2.5439, "change": 0.0025},
    "b3": {
        "horizon_tokens": 100.2701e9,
        "native": 4.9471,
        "polynomial": 4.8397,
        "change": -0.1073,
    },
    "b4": {"horizon_tokens": 100.2439e9, "native": 2.1532, "polynomial": 2.1560, "change": 0.0028},
}
# Table 4: component speedups (native time / polynomial time) on one GB200: B1 and B4 one
# activation kernel, B2 and B3 complete causal GQA attention (seq 4096, 32 heads).
PAPER_TABLE4 = {
    "b1": {"forward": 1.055, "backward": 1.007},
    "b2": {"forward": 2.053, "backward": 1.046},
    "b3": {"forward": 1.074, "backward": 1.001},
    "b4": {"forward": 1.003, "backward": 1.005},
}
# Table 5: complete-model speedups (Llama 3 8B probes on one GB200 for B1-B3, DeepSeek-V3
# 27A4B on four for B4) and the training-throughput ratio (polynomial / native tokens/s).
PAPER_TABLE5 = {
    "b1": {"forward": 1.005, "backward": 1.038, "step": 1.027, "throughput": 1.027},
    "b2": {"forward": 1.107, "backward": 1.004, "step": 1.029, "throughput": 1.029},
    "b3": {"forward": 1.011, "backward": 0.997, "step": 1.003, "throughput": 1.002},
    "b4": {"forward": 1.087, "backward": 1.077, "step": 1.080, "throughput": 1.080},
}
PAPER_SOURCE = (
    "Fast Polynomial Transcendentals for LLMs (seed document 003_0783a5cae37bf496), "
    "Tables 4, 5 and 7"
)

CPU_CAVEAT = (
    "What a CPU can show: whether the polynomial ops change the training loss by more than "
    "seed-to-seed noise at this size, and how the ops' time compares with PyTorch's CPU "
    "kernels inside a whole training step here. What it cannot show: the paper's GB200 "
    "ratios. Those come from replacing special-function-unit (SFU) instructions with packed "
    "BF16 FMAs inside fused GPU kernels (FlashAttention-4's softcap, fused SwiGLU), at sizes "
    "where the activation's share of the step and the balance of SFU, FMA and memory "
    "pipelines are a GPU's; a CPU has no SFU, runs float32 here, and its matrix products "
    "dominate a step of a model this small, so its ratios say nothing about a GB200's."
)

# ---------------------------------------------------------------- the Table 6 ablation
# ``experiments.llm_ablation``: the seed protocol's native checkpoint with its activations
# swapped for D4 programs of the paper's reduced forms (``turbogelu.approx.table2``'s readings
# of "Dk"), bfloat16 coefficients, fitted by endpoint least squares and by a same-form minimax.
# function -> (variable, factor, degree of P): sigmoid "1/2 + odd" and tanh "odd" as
# sign(x) |x| P3(z): the powers 1..4 of |x|; SiLU and GELU "x/2 + even" as P4(z(x^2)).
ABLATION_FORMS = {
    "sigmoid": ("u", 1, 3),
    "tanh": ("u", 1, 3),
    "silu": ("y", 0, 4),
    "gelu": ("y", 0, 4),
}
# (L_i, L_c) per function, the same for both fitters. Sigmoid: the paper's own choice for its
# D4 centered sigmoid (its Figure 2). The others, which the paper does not give: the paper's
# selection rule applied to each (Figure 2 (b): endpoint LS with bfloat16 coefficients, the
# least max error of the whole program over the grid ``ABLATION_GRIDS``, L_c <= L_i + 1),
# found with ``turbogelu.approx.search.grid_search``; tests/test_llm_ablation.py checks that
# each is no worse than its grid neighbours.
ABLATION_POINTS = {
    "sigmoid": (5.0, 5.28125),
    "tanh": (2.6875, 2.7625),
    "silu": (5.75, 5.75),
    "gelu": (3.0, 3.0),
}
ABLATION_GRIDS = {  # search.parse_values texts of L_i and L_c
    "tanh": ("2:3.5:0.0625", "2.2:3.4:0.03125"),
    "silu": ("4.5:6.5:0.125", "4.5:6.5:0.0625"),
    "gelu": ("2.5:4.5:0.125", "2.5:4.5:0.0625"),
}
# The stress test: each site's inputs multiplied by the factor that takes their largest
# magnitude (native, as trained) to each of these multiples of the program's clamp (outputs of
# SiLU, GELU and SwiGLU divided by it, so their scale stays), native and programs alike: a
# share of the inputs beyond the clamps whatever the trained range (a factor common to all
# sites would not do: the softcap's tanh sees s / 50, two orders below its clamp). One reach
# keeps the full run's ablation to seconds (each reach is three more evaluations per task).
ABLATION_REACHES = (8.0,)

# Table 6: same-checkpoint D4 ablations of open-weight models. Accuracy: change of the
# unweighted mean over seven tasks (variant minus native, percentage points); perplexity:
# WikiText-2 word perplexity, native -> variant; prefill / decode: throughput ratios variant /
# native. "minimax" is the paper's "Sollya minimax" column. ``task``: our nearest task.
PAPER_TABLE6 = [
    {"model": "Qwen2.5 7B", "operator": "Dense SwiGLU", "task": "b1", "rows": {
        "endpoint-ls": {"accuracy_change_pp": -0.51, "perplexity": (8.734, 197.677),
                        "prefill": 1.035, "decode": 1.013},
        "minimax": {"accuracy_change_pp": -39.80, "perplexity": (8.734, 298700.735),
                    "prefill": 1.036, "decode": 1.015}}},
    {"model": "Qwen3 30B-A3B", "operator": "Expert SwiGLU", "task": "b4", "rows": {
        "endpoint-ls": {"accuracy_change_pp": -0.10, "perplexity": (7.648, 7.655),
                        "prefill": 1.056, "decode": 1.025},
        "minimax": {"accuracy_change_pp": 0.04, "perplexity": (7.648, 7.651),
                    "prefill": 1.051, "decode": 1.025}}},
    {"model": "GLM-4.7 Flash", "operator": "Expert SwiGLU + router sigmoid", "task": "b4",
     "rows": {
        "endpoint-ls": {"accuracy_change_pp": -0.30, "perplexity": (11.406, 11.400),
                        "prefill": 0.969, "decode": 1.004},
        "minimax": {"accuracy_change_pp": -0.18, "perplexity": (11.406, 11.614),
                    "prefill": 0.966, "decode": 1.003}}},
]  # fmt: skip
PAPER_TABLE6_SOURCE = (
    "Fast Polynomial Transcendentals for LLMs (seed document 003_0783a5cae37bf496), Table 6"
)
