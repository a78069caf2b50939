"""The paper's integration tasks trained and timed (issue 18): native vs polynomial arms of the
small language model of ``experiments.llm`` on the Shakespeare corpus, under four protocols.

Pairing: for a task and a seed, both arms start from the same weights (``llm.build``), see the
same batches (``llm.batches`` seeded with the seed) and the same schedule; only the functions
of the arm differ. Training runs under ``mnist.deterministic`` (deterministic algorithms, a
fixed thread count, turbogelu's polynomial GELU program), so a rerun gives the same bits and
two native arms give identical losses.

Training: AdamW (lr ``LR``, weight decay ``WEIGHT_DECAY``), linear warm-up over ``warmup``
steps, then cosine to 0 at the last step; gradient norm clipped to ``CLIP``; cross-entropy of
the next character. The validation loss is the mean over ``val_windows`` fixed windows evenly
spaced over the held-out plays. The smoothed training loss is the exponentially weighted mean
of the per-step losses with a half-life of ``SMOOTH_FRACTION`` of the steps (``ewm``).

Protocols (``run_*``; the command line is ``experiments.llm_cli``, the figures and text
``experiments.llm_report``):

* seed: one longer run per task and arm; the curves, the final smoothed training loss and
  validation loss of each arm and their difference (polynomial minus native);
* noise: several seeds x both arms x a shorter horizon; per task the paired differences with
  Student-t intervals, against the native arm's seed-to-seed spread;
* swap: a native checkpoint evaluated with the polynomial functions swapped in (and the
  paper tier's), no training: the validation loss change;
* bf16 (issue 38): the noise protocol with the model in bfloat16 (``llm.bfloat16_products``),
  native against both tiers, and the swap of its native checkpoints: the paper's Table 7 in
  miniature with the paper's programs; and those checkpoints' Table 6 ablation
  (``experiments.llm_ablation``) in bfloat16, as the paper's;
* throughput: both arms in one process, alternating rounds; forward, backward and whole
  step, and the activation's share of a step (torch.profiler).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import torch
from torch import nn

from . import llm, records
from .llm_settings import (
    BATCH,
    CLIP,
    LR,
    MODEL,
    SEED_EVALS,
    SEED_STEPS,
    SMOOTH_FRACTION,
    THROUGHPUT_ITERS,
    THROUGHPUT_ROUNDS,
    VAL_WINDOWS,
    WARMUP,
    WEIGHT_DECAY,
)
from .mnist import CPU_PROGRAM, deterministic, t_interval

Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Settings:
    """What every run of a protocol shares (the model and the training)."""

    model: llm.Config = dataclasses.field(default_factory=lambda: llm.Config(**MODEL))
    batch: int = BATCH
    steps: int = SEED_STEPS
    evals: int = SEED_EVALS
    lr: float = LR
    warmup: int = WARMUP
    weight_decay: float = WEIGHT_DECAY
    clip: float = CLIP
    val_windows: int = VAL_WINDOWS
    threads: int = 1
    tier: str = "accurate"
    precision: str = "float32"  # or "bfloat16": llm.bfloat16_products (issue 38)

    def __post_init__(self):
        for name in ("batch", "steps", "evals", "val_windows", "threads"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.warmup < 0 or not self.lr > 0:
            raise ValueError(f"warmup must be >= 0 and lr > 0, got {self.warmup}, {self.lr}")
        if self.tier not in ("accurate", "paper"):
            raise ValueError(f"tier must be 'accurate' or 'paper', got {self.tier!r}")
        llm.check_precision(self.precision)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def check_tasks(tasks: Sequence[str]) -> list[str]:
    tasks = list(tasks)
    bad = [t for t in tasks if t not in llm.TASKS]
    if bad or not tasks or len(set(tasks)) != len(tasks):
        raise ValueError(f"tasks must be distinct names from {', '.join(llm.TASKS)}, got {tasks}")
    return tasks


def arms(tier: str = "accurate") -> dict[str, llm.Arm]:
    """The two arms compared: PyTorch's functions and this project's ops at ``tier``."""
    return {"native": llm.NATIVE, "polynomial": llm.polynomial_arm(tier)}


def swap_arms() -> dict[str, llm.Arm]:
    """The swap protocol's forms: native (the reference), both tiers of the ops, and the
    accurate tier with the attention's softmax by turbogelu.softmax (exp2 by polynomial: the
    issue's further B2 arm, evaluated here on every task with softmax attention)."""
    import turbogelu

    accurate = llm.polynomial_arm("accurate")
    return {
        "native": llm.NATIVE,
        "polynomial": accurate,
        "polynomial-paper": dataclasses.replace(
            llm.polynomial_arm("paper"), name="polynomial-paper"
        ),
        "polynomial-softmax": dataclasses.replace(
            accurate, name="polynomial-softmax", softmax=turbogelu.softmax
        ),
    }


def set_arm(model: nn.Module, arm: llm.Arm) -> nn.Module:
    """Every module of ``model`` calls ``arm``'s functions from now on (the weights stay)."""
    for m in model.modules():
        if isinstance(m, llm.TinyLM | llm.Attention | llm.RoutedSwiGLU):
            m.arm = arm
        elif isinstance(m, llm.DenseMLP):
            m.act = arm.gelu if model.task == "gelu" else arm.silu
    return model


# ---------------------------------------------------------------- data


@dataclasses.dataclass
class Corpus:
    train: torch.Tensor  # int64 token ids
    val: torch.Tensor
    vocab: int


def load_corpus(root=None) -> Corpus:
    """The verified Shakespeare corpus (``shakespeare.load``; CorpusUnavailable when not made)."""
    from . import shakespeare

    tr, va, vocab = shakespeare.load(shakespeare.DEFAULT_ROOT if root is None else root)
    return Corpus(torch.from_numpy(tr).long(), torch.from_numpy(va).long(), len(vocab))


def val_windows(val: torch.Tensor, context: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` fixed (inputs, targets) windows evenly spaced over the validation text."""
    starts = torch.linspace(0, len(val) - context - 1, n).long()
    w = torch.stack([val[s : s + context + 1] for s in starts.tolist()])
    return w[:, :-1], w[:, 1:]


@torch.no_grad()
def evaluate(model: llm.TinyLM, x: torch.Tensor, y: torch.Tensor, chunk: int = 16):
    """(mean cross-entropy over every target of the windows, logits)."""
    model.eval()
    logits = torch.cat([model(x[i : i + chunk]) for i in range(0, len(x), chunk)])
    model.train()
    logits = logits.float()  # bfloat16 logits (llm.bfloat16_products): the loss in float32
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten()).item()
    return loss, logits


def ewm(values: Sequence[float], half_life: float) -> float:
    """The exponentially weighted mean of ``values`` at the last one (weights halve every
    ``half_life`` steps back; normalised, so it is a mean from the first value on)."""
    if not values:
        raise ValueError("ewm of no values")
    decay = 0.5 ** (1.0 / max(half_life, 1e-12))
    num = den = 0.0
    for v in values:
        num = num * decay + v
        den = den * decay + 1.0
    return num / den


# ---------------------------------------------------------------- one run


class Run:
    """One task, arm and seed: the model, its optimizer and its batch stream."""

    def __init__(self, task: str, arm: llm.Arm, seed: int, settings: Settings, corpus: Corpus):
        self.task, self.arm, self.seed, self.s = task, arm, seed, settings
        cfg = dataclasses.replace(settings.model, vocab=corpus.vocab)
        self.model = llm.build(cfg, task, arm, seed, settings.precision)
        self.opt = torch.optim.AdamW(
            self.model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
        )
        self.stream = llm.batches(corpus.train, cfg.context, settings.batch, seed)
        self.step = 0
        self.losses: list[float] = []

    def lr_at(self, step: int) -> float:
        s = self.s
        if step < s.warmup:
            return s.lr * (step + 1) / s.warmup
        span = max(s.steps - s.warmup, 1)
        return s.lr * 0.5 * (1.0 + math.cos(math.pi * (step - s.warmup) / span))

    def train_step(self) -> float:
        x, y = next(self.stream)
        for g in self.opt.param_groups:
            g["lr"] = self.lr_at(self.step)
        _, loss = self.model(x, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), self.s.clip)
        self.opt.step()
        self.step += 1
        self.losses.append(loss.item())
        return self.losses[-1]


def eval_points(steps: int, evals: int) -> list[int]:
    """The steps after which the validation loss is measured: 0, ``evals`` evenly spaced
    ones, always the last."""
    return sorted({0, steps, *(round(steps * (i + 1) / evals) for i in range(evals))})


def train_run(
    task: str,
    arm: llm.Arm,
    seed: int,
    settings: Settings,
    corpus: Corpus,
    val: tuple[torch.Tensor, torch.Tensor],
    *,
    evals: int | None = None,
    bar=None,
) -> tuple[Run, dict]:
    """Train one run for ``settings.steps``; (the Run, its record: per-step training
    losses, validation losses at ``eval_points``, the final smoothed training and
    validation losses, seconds)."""
    run = Run(task, arm, seed, settings, corpus)
    points = eval_points(settings.steps, settings.evals if evals is None else evals)
    val_curve = []
    t0 = time.perf_counter()
    eval_s = 0.0
    for step in range(settings.steps + 1):
        if step in points:
            te = time.perf_counter()
            val_curve.append({"step": step, "loss": evaluate(run.model, *val)[0]})
            eval_s += time.perf_counter() - te
        if step < settings.steps:
            run.train_step()
            if bar is not None:
                bar.update()
    wall = time.perf_counter() - t0
    half = SMOOTH_FRACTION * settings.steps
    rec = {
        "task": task,
        "arm": arm.name,
        "seed": seed,
        "steps": settings.steps,
        "characters": settings.steps * settings.batch * settings.model.context,
        "train_loss": run.losses,
        "val": val_curve,
        "final_train_loss_smoothed": ewm(run.losses, half),
        "final_val_loss": val_curve[-1]["loss"],
        "smoothing_half_life_steps": half,
        "train_seconds": wall - eval_s,
        "eval_seconds": eval_s,
        "tokens_per_second": settings.steps
        * settings.batch
        * settings.model.context
        / max(wall - eval_s, 1e-9),
    }
    return run, rec


def _bar(total: int, desc: str, show: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not show, desc=desc, unit="step", leave=False)


def want_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else progress


# ---------------------------------------------------------------- seed and swap


def pair_difference(recs: dict[str, dict], ref: str = "native", other: str = "polynomial") -> dict:
    a, b = recs[ref], recs[other]
    return {
        "train_loss_change": b["final_train_loss_smoothed"] - a["final_train_loss_smoothed"],
        "val_loss_change": b["final_val_loss"] - a["final_val_loss"],
        "identical_losses": a["train_loss"] == b["train_loss"],
    }


def run_seed_protocol(
    tasks: Sequence[str],
    settings: Settings,
    corpus: Corpus,
    seed: int = 0,
    *,
    arms_: dict[str, llm.Arm] | None = None,
    progress: bool | None = None,
    log: Log | None = None,
) -> tuple[dict, dict[str, nn.Module]]:
    """One run per task and arm (the first arm is the reference). Returns ({"runs": records,
    "differences": {task: pair_difference}}, {task: the first arm's trained model})."""
    tasks = check_tasks(tasks)
    arms_ = arms_ or arms(settings.tier)
    names = list(arms_)
    log = log or (lambda m: None)
    show = want_progress(progress)
    val = val_windows(corpus.val, settings.model.context, settings.val_windows)
    runs, diffs, models = [], {}, {}
    with deterministic(settings.threads):
        bar = _bar(len(tasks) * len(names) * settings.steps, "llm seed", show)
        for task in tasks:
            recs = {}
            for name in names:
                run, rec = train_run(task, arms_[name], seed, settings, corpus, val, bar=bar)
                rec["arm"] = name
                recs[name] = rec
                runs.append(rec)
                if name == names[0]:
                    models[task] = run.model
                log(
                    f"seed {task:4s} {name:10s} smoothed train loss "
                    f"{rec['final_train_loss_smoothed']:.4f}  val loss {rec['final_val_loss']:.4f}"
                    f"  ({rec['tokens_per_second']:.0f} tokens/s)"
                )
            if len(names) >= 2:
                diffs[task] = pair_difference(recs, names[0], names[1])
        bar.close()
    return {"runs": runs, "differences": diffs}, models


def run_swap_protocol(
    models: dict[str, nn.Module],
    settings: Settings,
    corpus: Corpus,
    *,
    forms: dict[str, llm.Arm] | None = None,
) -> list[dict]:
    """Each task's checkpoint (``models``, trained with the first form) evaluated on the
    validation windows with each form's functions swapped in: the loss, its change, the
    largest logit difference and the share of next-character predictions that change."""
    forms = forms or swap_arms()
    val = val_windows(corpus.val, settings.model.context, settings.val_windows)
    rows = []
    with deterministic(settings.threads):
        for task, model in models.items():
            original = model.arm
            ref = None
            for name, arm in forms.items():
                loss, logits = evaluate(set_arm(model, arm), *val)
                pred = logits.argmax(-1)
                if ref is None:
                    ref = (loss, logits, pred)
                rows.append(
                    {
                        "task": task,
                        "form": name,
                        "val_loss": loss,
                        "delta_val_loss": loss - ref[0],
                        "max_abs_logit_diff": (logits - ref[1]).abs().max().item(),
                        "changed_predictions": int((pred != ref[2]).sum().item()),
                        "predictions": int(pred.numel()),
                    }
                )
            set_arm(model, original)
    return rows


# ---------------------------------------------------------------- noise


def summarize_noise(
    rows: Sequence[dict], ref: str = "native", confidence: float = 0.95
) -> dict[str, dict]:
    """Per task and measure (the final smoothed training loss, the final validation loss):
    each arm's seed-to-seed spread and the paired differences (other arm minus ``ref``) with
    a Student-t interval, and how many seeds they are positive / zero / negative."""
    out = {}
    for task in dict.fromkeys(r["task"] for r in rows):
        rs = [r for r in rows if r["task"] == task]
        names = list(dict.fromkeys(r["arm"] for r in rs))
        seeds = sorted({r["seed"] for r in rs})
        out[task] = {"seeds": seeds}
        for key in ("final_train_loss_smoothed", "final_val_loss"):
            val = {(r["arm"], r["seed"]): r[key] for r in rs}
            spread = {a: {**t_interval([val[(a, s)] for s in seeds], confidence),
                          "values": [val[(a, s)] for s in seeds]} for a in names}  # fmt: skip
            paired = {}
            for a in names:
                if a == ref:
                    continue
                d = [val[(a, s)] - val[(ref, s)] for s in seeds]
                iv = t_interval(d, confidence)
                paired[f"{a}-{ref}"] = {
                    **iv,
                    "values": d,
                    "positive": sum(v > 0 for v in d),
                    "zero": sum(v == 0 for v in d),
                    "negative": sum(v < 0 for v in d),
                    "contains_zero": iv["ci_low"] <= 0 <= iv["ci_high"],
                    "mean_over_ref_sd": iv["mean"] / spread[ref]["sd"]
                    if spread[ref]["sd"] > 0
                    else None,
                }
            out[task][key] = {"spread": spread, "paired": paired}
    return out


def check_seeds(seeds: Sequence[int]) -> list[int]:
    seeds = list(seeds)
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(f"the noise protocol needs at least 2 distinct seeds, got {seeds}")
    return seeds


def run_noise_protocol(
    tasks: Sequence[str],
    settings: Settings,
    corpus: Corpus,
    seeds: Sequence[int],
    *,
    arms_: dict[str, llm.Arm] | None = None,
    progress: bool | None = None,
    log: Log | None = None,
    checkpoints: dict[str, nn.Module] | None = None,
) -> dict:
    """Every task x seed x arm trained for ``settings.steps`` (validation at the end only).
    Returns {"rows": the final figures of every run (no curves), "summary": summarize_noise}.
    ``checkpoints``, when given, receives per task the first arm's model of the first seed
    (for the swap protocol, without training it again)."""
    tasks, seeds = check_tasks(tasks), check_seeds(seeds)
    arms_ = arms_ or arms(settings.tier)
    log = log or (lambda m: None)
    show = want_progress(progress)
    val = val_windows(corpus.val, settings.model.context, settings.val_windows)
    rows = []
    with deterministic(settings.threads):
        bar = _bar(len(tasks) * len(seeds) * len(arms_) * settings.steps, "llm noise", show)
        for task in tasks:
            for seed in seeds:
                for name, arm in arms_.items():
                    run, rec = train_run(task, arm, seed, settings, corpus, val, evals=1, bar=bar)
                    if checkpoints is not None and (task not in checkpoints):
                        checkpoints[task] = run.model
                    rec["arm"] = name
                    rec.pop("val")
                    rec["train_loss_last"] = rec.pop("train_loss")[-1]
                    rows.append(rec)
                log(
                    f"noise {task:4s} seed {seed:3d} "
                    + "  ".join(
                        f"{r['arm']} {r['final_train_loss_smoothed']:.4f}/{r['final_val_loss']:.4f}"
                        for r in rows[-len(arms_) :]
                    )
                )
        bar.close()
    ref = next(iter(arms_))
    return {"rows": rows, "summary": summarize_noise(rows, ref)}


# ---------------------------------------------------------------- bfloat16 (issue 38)


BF16_PRECISION = (
    "bfloat16 by autocast's rule, emulated (experiments.llm.bfloat16_products): float32 master "
    "weights, AdamW state and residual stream; every matrix product rounds its operands to "
    "bfloat16, accumulates in float32 and returns bfloat16, so every transcendental sees and "
    "returns bfloat16; the loss in float32"
)


def bf16_arms() -> dict[str, llm.Arm]:
    """The bfloat16 study's arms: native (the reference), the accurate tier and the paper
    tier (the source paper's programs, GELU's D5 for the control)."""
    return {
        "native": llm.NATIVE,
        "polynomial": llm.polynomial_arm("accurate"),
        "polynomial-paper": dataclasses.replace(
            llm.polynomial_arm("paper"), name="polynomial-paper"
        ),
    }


def run_bf16_protocol(
    tasks: Sequence[str],
    settings: Settings,
    corpus: Corpus,
    seeds: Sequence[int],
    *,
    progress: bool | None = None,
    log: Log | None = None,
    checkpoints: dict[str, nn.Module] | None = None,
) -> dict:
    """The noise protocol with ``bf16_arms`` at ``settings.precision`` = "bfloat16" (one
    native run per task and seed, the reference of both tiers' paired differences), then the
    swap protocol on the first seed's native checkpoints with both tiers. Those checkpoints
    are left in ``checkpoints`` when given (the CLI runs the Table 6 ablation on them:
    ``llm_ablation.run_ablation``, which imports this module). Returns {"rows", "summary":
    summarize_noise, "swap": run_swap_protocol's rows, "table": llm_report.bf16_table,
    "outside": llm_report.bf16_summary}."""
    from . import llm_report

    if settings.precision != "bfloat16":
        raise ValueError(
            f"the bfloat16 study needs precision 'bfloat16', got {settings.precision!r}"
        )
    checkpoints = {} if checkpoints is None else checkpoints
    noise = run_noise_protocol(
        tasks, settings, corpus, seeds, arms_=bf16_arms(), progress=progress, log=log,
        checkpoints=checkpoints,
    )  # fmt: skip
    swap = run_swap_protocol(checkpoints, settings, corpus, forms=bf16_arms())
    table = llm_report.bf16_table(noise["summary"], swap)
    return {**noise, "swap": swap, "table": table, "outside": llm_report.bf16_summary(table)}


# ---------------------------------------------------------------- throughput


class _Marked(torch.autograd.Function):
    """Calls ``fn`` in its forward and its backward (autograd through ``fn``) inside profiler
    ranges, so that the profiler sees the activation's forward and backward of either arm
    under one name. Used only in the profiled step."""

    @staticmethod
    def forward(ctx, fn, *xs):
        with torch.enable_grad():
            inputs = [x.detach().requires_grad_() for x in xs]
            with torch.profiler.record_function(ACT_FORWARD):
                out = fn(*inputs)
        ctx.inputs, ctx.out = inputs, out
        return out.detach()

    @staticmethod
    def backward(ctx, grad):
        with torch.profiler.record_function(ACT_BACKWARD):
            grads = torch.autograd.grad(ctx.out, ctx.inputs, grad)
        return (None, *grads)


ACT_FORWARD, ACT_BACKWARD, STEP = "llm.activation.forward", "llm.activation.backward", "llm.step"


def marked(arm: llm.Arm) -> llm.Arm:
    """``arm`` with every function run through ``_Marked``."""

    def wrap(fn, n_tensors):
        def call(*args):
            xs, rest = args[:n_tensors], args[n_tensors:]
            return _Marked.apply(lambda *t: fn(*t, *rest), *xs)

        return call

    return dataclasses.replace(
        arm,
        gelu=wrap(arm.gelu, 1),
        silu=wrap(arm.silu, 1),
        sigmoid=wrap(arm.sigmoid, 1),
        softcap=wrap(arm.softcap, 1),
        swiglu=wrap(arm.swiglu, 2),
    )


def activation_share(model: llm.TinyLM, opt, x, y, arm: llm.Arm) -> dict:
    """One training step under torch.profiler with the activation marked: the activation's
    forward and backward time (inclusive CPU time of their ranges) and its share of the step."""
    from torch.profiler import ProfilerActivity, profile

    original = model.arm
    set_arm(model, marked(arm))
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            with torch.profiler.record_function(STEP):
                _, loss = model(x, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
    finally:
        set_arm(model, original)
    total = {ACT_FORWARD: 0.0, ACT_BACKWARD: 0.0, STEP: 0.0}
    for ev in prof.key_averages():
        if ev.key in total:
            total[ev.key] += ev.cpu_time_total
    step_us = total[STEP]
    return {
        "profiled_step_us": step_us,
        "activation_forward_us": total[ACT_FORWARD],
        "activation_backward_us": total[ACT_BACKWARD],
        "activation_share": (total[ACT_FORWARD] + total[ACT_BACKWARD]) / step_us
        if step_us > 0
        else None,
    }


def measure_throughput(
    task: str,
    settings: Settings,
    vocab: int,
    *,
    rounds: int = THROUGHPUT_ROUNDS,
    iters: int = THROUGHPUT_ITERS,
    arms_: dict[str, llm.Arm] | None = None,
    seed: int = 0,
) -> dict:
    """Both arms of ``task`` in this process: ``rounds`` rounds, the arms' order alternating
    from round to round, each arm ``iters`` training steps a round on one fixed batch; per
    arm the median over rounds of the round means of the forward, backward and whole-step
    times (the paper's Table 4 rule), tokens per second, and the profiled activation share;
    the ratios native / polynomial (speedups, >1 favours the polynomial) and the throughput
    ratio polynomial / native."""
    arms_ = arms_ or arms(settings.tier)
    names = list(arms_)
    cfg = dataclasses.replace(settings.model, vocab=vocab)
    models = {n: llm.build(cfg, task, a, seed) for n, a in arms_.items()}
    opts = {n: torch.optim.AdamW(m.parameters(), lr=settings.lr) for n, m in models.items()}
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (settings.batch, cfg.context + 1), generator=gen)
    x, y = ids[:, :-1], ids[:, 1:]
    means: dict[str, dict[str, list[float]]] = {n: {"forward": [], "backward": [], "step": []}
                                                 for n in names}  # fmt: skip

    def step(n):
        t0 = time.perf_counter()
        _, loss = models[n](x, y)
        t1 = time.perf_counter()
        opts[n].zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        opts[n].step()
        t3 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t0

    for n in names:  # warm-up
        step(n)
    for r in range(rounds):
        for n in names if r % 2 == 0 else names[::-1]:
            ts = [step(n) for _ in range(iters)]
            for i, k in enumerate(("forward", "backward", "step")):
                means[n][k].append(sum(t[i] for t in ts) / iters)
    out = {"task": task, "arms": {}}
    tokens = settings.batch * cfg.context
    for n in names:
        med = {k: statistics.median(v) for k, v in means[n].items()}
        out["arms"][n] = {
            **{f"{k}_seconds": v for k, v in med.items()},
            "round_means": means[n],
            "tokens_per_second": tokens / med["step"],
            **activation_share(models[n], opts[n], x, y, arms_[n]),
        }
    if len(names) >= 2:
        a, b = out["arms"][names[0]], out["arms"][names[1]]
        out["speedup"] = {k: a[f"{k}_seconds"] / b[f"{k}_seconds"]
                          for k in ("forward", "backward", "step")}  # fmt: skip
        out["throughput_ratio"] = b["tokens_per_second"] / a["tokens_per_second"]
    return out


def run_throughput_protocol(
    tasks: Sequence[str],
    settings: Settings,
    vocab: int,
    *,
    rounds: int = THROUGHPUT_ROUNDS,
    iters: int = THROUGHPUT_ITERS,
    arms_: dict[str, llm.Arm] | None = None,
    progress: bool | None = None,
    log: Log | None = None,
) -> list[dict]:
    """``measure_throughput`` for each task, with ``settings.threads`` threads."""
    from tqdm.auto import tqdm

    tasks = check_tasks(tasks)
    log = log or (lambda m: None)
    rows = []
    with deterministic(settings.threads):
        for task in tqdm(tasks, disable=not want_progress(progress), desc="llm throughput"):
            row = measure_throughput(task, settings, vocab, rounds=rounds, iters=iters, arms_=arms_)
            rows.append(row)
            if "speedup" in row:
                sp = row["speedup"]
                log(
                    f"throughput {task:4s} speedup forward {sp['forward']:.3f} backward "
                    f"{sp['backward']:.3f} step {sp['step']:.3f}; tokens/s ratio "
                    f"{row['throughput_ratio']:.3f}"
                )
    return rows


# ---------------------------------------------------------------- results


def meta(settings: Settings, command: str | None = None, **extra) -> dict:
    with deterministic(settings.threads):
        machine = records.machine_info()
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_commit": records.git_commit(),
        "machine": machine,
        "deterministic_algorithms": True,
        "turbogelu_cpu_program": CPU_PROGRAM,
        "settings": settings.to_dict(),
        "smoothing": f"exponentially weighted mean, half-life {SMOOTH_FRACTION:g} of the steps",
        "optimizer": f"AdamW lr {settings.lr} (warm-up {settings.warmup} steps, cosine to 0), "
        f"weight decay {settings.weight_decay}, gradient clip {settings.clip}",
        **extra,
    }
