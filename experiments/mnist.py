"""MNIST MLP trained with exact GELU, PyTorch's tanh form and turbogelu: does the polynomial
change training by more than run-to-run noise does?

The model: 784-512-512-10, ``Linear -> GELU -> Linear -> GELU -> Linear``, cross-entropy,
SGD with momentum 0.9, batch 128, learning rate 0.05 on a per-step cosine schedule to 0 over
the run (so a short schedule ends annealed as a long one does), no weight decay, no dropout.
Inputs are the pixel values scaled to [0, 1] and standardized with MNIST's mean 0.1307 and
standard deviation 0.3081, as tensors prepared up front (no DataLoader).

Pairing: a seed fixes the initial weights (``torch.manual_seed(seed)`` right before the layers
are built; the activations have no parameters) and the batch order (a separate
``torch.Generator`` seeded with ``seed``), so the runs of one seed differ only in the
activation. Training runs under ``torch.use_deterministic_algorithms(True)`` with one thread
by default (``threads``): two runs with equal settings give equal bits.

Protocols (each writes JSON in long format, see ``run_*``):

* seed: 35 epochs, exact vs turbogelu, one seed, printed as the TurboGeLU write-up printed it
  (``epoch 01 | exact train/test acc a/b | turbo train/test acc c/d``), the first epoch whose
  printed accuracies differ and the max |weight difference| after every epoch;
* swap: the exact run's weights, after every epoch, evaluated with the exact activation swapped
  for the others (``turbogelu.replace_gelu``, PyTorch's tanh form, turbogelu's tanh form);
* noise: several seeds x {exact, tanh, turbogelu} on a shorter schedule; the paired difference
  turbo - exact (and tanh - exact) in final test accuracy with a t confidence interval over
  seeds, next to the seed-to-seed spread of exact alone.

"train acc" is the running accuracy over the epoch's batches, measured in the forward passes
that train (the model has no dropout or batch norm, so train and eval mode agree); "test acc"
is measured on the whole test set after the epoch.

The protocols' settings (epochs, seeds, the quick setting) are in ``experiments.mnist_settings``,
the figures and printed summaries in ``experiments.mnist_report`` (also importable from here,
as notebook 06 does), the command line in ``experiments.mnist_cli``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from . import records
from .mnist_report import (  # noqa: F401  (the notebook's entry points, also from here)
    noise_text,
    plot_curves,
    plot_noise,
    plot_swap,
    plot_weight_diff,
    swap_text,
)
from .mnist_settings import (
    ACTIVATIONS,
    NOISE_ACTIVATIONS,
    SEED_EPOCHS,
    SEED_PAIR,
    SWAP_FORMS,
)

MEAN, STD = 0.1307, 0.3081
ROOT = Path(__file__).resolve().parents[1]
SEED_REFERENCE = ROOT / "data" / "seeds" / "turbogelu_mnist.json"


@dataclasses.dataclass(frozen=True)
class Config:
    """Training settings shared by every run of a protocol."""

    epochs: int = SEED_EPOCHS
    hidden: tuple[int, ...] = (512, 512)
    batch_size: int = 128
    lr: float = 0.05
    momentum: float = 0.9
    train_subset: int | None = None  # the first n training images (None: all 60,000)
    test_subset: int | None = None  # the first n test images (None: all 10,000)
    threads: int = 1
    backward: str = "default"  # turbogelu's backward coefficients

    def __post_init__(self):
        for name in ("epochs", "batch_size", "threads"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("train_subset", "test_subset"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be >= 1 (or None for all), got {v}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(f"hidden must be positive layer widths, got {self.hidden}")


# ---------------------------------------------------------------- model and data


def check_activation(name: str) -> str:
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; choose from {', '.join(ACTIVATIONS)}")
    return name


def make_activation(name: str, backward: str = "default") -> nn.Module:
    """``exact`` -> nn.GELU(), ``tanh`` -> nn.GELU(approximate="tanh"), ``turbogelu`` ->
    turbogelu.GELU(), ``turbogelu-tanh`` -> turbogelu.GELU("tanh")."""
    approximate, turbo = ACTIVATIONS[check_activation(name)]
    if turbo:
        from turbogelu.modules import GELU

        return GELU(approximate, backward=backward)
    return nn.GELU(approximate=approximate)


def build_mlp(
    activation: str, seed: int, hidden: Sequence[int] = (512, 512), backward: str = "default"
) -> nn.Sequential:
    """784-hidden...-10 MLP with ``activation`` between the layers. The weights depend on
    ``seed`` only: the same for every activation."""
    make_activation(activation, backward)  # bad names fail before the RNG is touched
    torch.manual_seed(seed)
    widths = [784, *hidden, 10]
    layers: list[nn.Module] = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(make_activation(activation, backward))
    return nn.Sequential(*layers)


def set_activation(model: nn.Module, activation: str, backward: str = "default") -> nn.Module:
    """Replace every GELU module (torch's or turbogelu's) in ``model`` by ``activation``."""
    from turbogelu.modules import GELU

    make_activation(activation, backward)
    for parent in model.modules():
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.GELU | GELU):
                setattr(parent, name, make_activation(activation, backward))
    return model


@dataclasses.dataclass
class Data:
    train_x: torch.Tensor  # float32 [N, 784], standardized
    train_y: torch.Tensor  # int64 [N]
    test_x: torch.Tensor
    test_y: torch.Tensor
    root: str


def prepare_data(
    root: str | Path | None = None, train_subset: int | None = None, test_subset: int | None = None
) -> Data:
    """The verified MNIST from ``root`` (default: the repository's data/) as standardized
    float32 matrices; ``*_subset``: the first n images."""
    from experiments import data as mnist_data

    root = mnist_data.DEFAULT_ROOT if root is None else Path(root)
    xtr, ytr, xte, yte = mnist_data.load_mnist(root)

    def prep(x, y, n):
        if n is not None:
            x, y = x[:n], y[:n]
        x = (x.reshape(len(x), 784).to(torch.float32) / 255.0 - MEAN) / STD
        return x.contiguous(), y.to(torch.int64).contiguous()

    train_x, train_y = prep(xtr, ytr, train_subset)
    test_x, test_y = prep(xte, yte, test_subset)
    return Data(train_x, train_y, test_x, test_y, str(root))


# The CPU program turbogelu's layers run in these experiments, whatever this CPU's default
# (cells on AVX-512, the polynomial elsewhere): the polynomial, the program of every backend,
# so that a run on one machine compares with a run on another.
CPU_PROGRAM = "poly"


@contextlib.contextmanager
def deterministic(threads: int = 1):
    """Deterministic algorithms, a fixed intra-op thread count and turbogelu's CPU program
    (``CPU_PROGRAM``), restored afterwards."""
    from turbogelu import ops as tops

    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_threads = torch.get_num_threads()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    try:
        with tops.use_cpu_kernel(CPU_PROGRAM):
            yield
    finally:
        torch.use_deterministic_algorithms(prev_det)
        torch.set_num_threads(prev_threads)


def _want_progress(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else progress


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int = 2000):
    """(accuracy, mean cross-entropy, logits) of ``model`` on ``x``, ``y``."""
    model.eval()
    logits = torch.cat([model(x[i : i + chunk]) for i in range(0, len(x), chunk)])
    model.train()
    acc = (logits.argmax(1) == y).sum().item() / len(y)
    loss = F.cross_entropy(logits, y, reduction="sum").item() / len(y)
    return acc, loss, logits


class Run:
    """One training run (one activation, one seed), advanced an epoch at a time so that
    protocols can step several runs side by side."""

    def __init__(self, activation: str, seed: int, config: Config, data: Data):
        self.activation, self.seed, self.config, self.data = activation, seed, config, data
        self.model = build_mlp(activation, seed, config.hidden, config.backward)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=config.lr, momentum=config.momentum)
        self.order = torch.Generator().manual_seed(seed)
        n = len(data.train_y)
        self.steps_per_epoch = math.ceil(n / config.batch_size)
        self.total_steps = self.steps_per_epoch * config.epochs
        self.step = 0
        self.epoch = 0
        self.history: list[dict] = []

    def lr_at(self, step: int) -> float:
        """Cosine from lr to 0 over the run, one value per optimizer step."""
        return self.config.lr * 0.5 * (1.0 + math.cos(math.pi * step / self.total_steps))

    def train_epoch(self, progress: bool = False) -> dict:
        from tqdm.auto import tqdm

        cfg, d = self.config, self.data
        n = len(d.train_y)
        perm = torch.randperm(n, generator=self.order)
        correct, loss_sum = 0, 0.0
        t0, c0 = time.perf_counter(), time.process_time()
        bar = tqdm(
            range(0, n, cfg.batch_size),
            disable=not progress,
            leave=False,
            desc=f"{self.activation} seed {self.seed} epoch {self.epoch + 1}",
            unit="batch",
        )
        for i in bar:
            idx = perm[i : i + cfg.batch_size]
            x, y = d.train_x[idx], d.train_y[idx]
            for group in self.opt.param_groups:
                group["lr"] = self.lr_at(self.step)
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            self.step += 1
            correct += (logits.argmax(1) == y).sum().item()
            loss_sum += loss.item() * len(y)
        train_s, train_cpu = time.perf_counter() - t0, time.process_time() - c0
        t1 = time.perf_counter()
        test_acc, test_loss, _ = evaluate(self.model, d.test_x, d.test_y)
        self.epoch += 1
        row = {
            "activation": self.activation,
            "seed": self.seed,
            "epoch": self.epoch,
            "train_acc": correct / n,
            "train_loss": loss_sum / n,
            "test_acc": test_acc,
            "test_loss": test_loss,
            "train_seconds": train_s,
            "train_cpu_seconds": train_cpu,
            "eval_seconds": time.perf_counter() - t1,
        }
        self.history.append(row)
        return row


def train(
    activation: str, seed: int, config: Config, data: Data, *, progress: bool | None = None
) -> Run:
    """Train one run to the end of ``config.epochs``; the Run (model and history)."""
    with deterministic(config.threads):
        run = Run(activation, seed, config, data)
        for _ in range(config.epochs):
            run.train_epoch(_want_progress(progress))
    return run


def max_weight_difference(a: nn.Module, b: nn.Module) -> float:
    return max(
        (pa - pb).abs().max().item() for pa, pb in zip(a.parameters(), b.parameters(), strict=True)
    )


# ---------------------------------------------------------------- the printed line


def fmt_acc(a: float) -> str:
    return f"{a:.4f}"


def seed_line(epoch: int, exact: dict, turbo: dict) -> str:
    """``epoch 01 | exact train/test acc 0.8861/0.9453 | turbo train/test acc ...``"""
    return (
        f"epoch {epoch:02d} | exact train/test acc {fmt_acc(exact['train_acc'])}/"
        f"{fmt_acc(exact['test_acc'])} | turbo train/test acc {fmt_acc(turbo['train_acc'])}/"
        f"{fmt_acc(turbo['test_acc'])}"
    )


def first_printed_difference(rows_a: Sequence[dict], rows_b: Sequence[dict]) -> int | None:
    """The first epoch whose printed (4-decimal) train or test accuracy differs; None: never."""
    for ra, rb in zip(rows_a, rows_b, strict=True):
        for key in ("train_acc", "test_acc"):
            if fmt_acc(ra[key]) != fmt_acc(rb[key]):
                return ra["epoch"]
    return None


_SEED_LINE = re.compile(
    r"epoch (\d+) \| exact train/test acc ([\d.]+)/([\d.]+) \| "
    r"turbo train/test acc ([\d.]+)/([\d.]+)"
)


def parse_seed_lines(lines: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """The printed lines of ``seed_line`` back into per-epoch rows (``epoch``, ``train_acc``,
    ``test_acc``) of the exact run and of the turbogelu run (values as printed)."""
    exact, turbo = [], []
    for line in lines:
        m = _SEED_LINE.fullmatch(line.strip())
        if m is None:
            raise ValueError(f"not a seed-protocol line: {line!r}")
        e = int(m[1])
        exact.append({"activation": "exact", "epoch": e, "train_acc": float(m[2]),
                      "test_acc": float(m[3])})  # fmt: skip
        turbo.append({"activation": "turbogelu", "epoch": e, "train_acc": float(m[4]),
                      "test_acc": float(m[5])})  # fmt: skip
    return exact, turbo


def load_seed_reference(path: str | Path = SEED_REFERENCE) -> dict:
    """The TurboGeLU write-up's printed MNIST run (``data/seeds/turbogelu_mnist.json``):
    its ``lines``, their ``rows`` (``parse_seed_lines``: exact, turbogelu) and the first epoch
    whose printed accuracies differ, recomputed from the lines and checked against the
    file's ``first_difference_epoch``."""
    data = load_json(path)
    exact, turbo = parse_seed_lines(data["lines"])
    first = first_printed_difference(exact, turbo)
    if first != data.get("first_difference_epoch"):
        raise ValueError(
            f"{path}: the lines' first difference is epoch {first}, the file says "
            f"{data.get('first_difference_epoch')}"
        )
    return {**data, "rows": exact + turbo, "first_difference_epoch": first}


# ---------------------------------------------------------------- protocols


def evaluate_swaps(
    model: nn.Module, data: Data, forms: Sequence[str] = SWAP_FORMS, backward: str = "default"
) -> list[dict]:
    """The same weights evaluated with each activation in ``forms`` (the first is the
    reference): test accuracy and loss, their change, how many test predictions change and
    the largest logit difference."""
    rows, ref = [], None
    for form in forms:
        m = set_activation(copy.deepcopy(model), form, backward)
        acc, loss, logits = evaluate(m, data.test_x, data.test_y)
        pred = logits.argmax(1)
        if ref is None:
            ref = (acc, loss, logits, pred)
        rows.append(
            {
                "form": form,
                "test_acc": acc,
                "test_loss": loss,
                "delta_acc": acc - ref[0],
                "delta_loss": loss - ref[1],
                "changed_predictions": int((pred != ref[3]).sum().item()),
                "max_abs_logit_diff": (logits - ref[2]).abs().max().item(),
            }
        )
    return rows


def run_seed_protocol(
    config: Config,
    data: Data,
    seed: int = 0,
    *,
    activations: Sequence[str] = SEED_PAIR,
    swap: bool = True,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Train ``activations`` (the first is the reference, normally exact vs turbogelu) side by
    side, one epoch each in turn, from the same seed. Returns ``{"rows": per-run per-epoch
    records, "weight_diff": [{epoch, max_abs}], "lines": the printed lines,
    "first_difference_epoch": ..., "swap": rows of ``evaluate_swaps`` on the first run's
    weights after every epoch (if swap)}``."""
    from tqdm.auto import tqdm

    for a in activations:
        check_activation(a)
    log = log or (lambda s: None)
    show = _want_progress(progress)
    out = {"rows": [], "weight_diff": [], "lines": [], "swap": []}
    with deterministic(config.threads):
        runs = [Run(a, seed, config, data) for a in activations]
        bar = tqdm(range(config.epochs), disable=not show, desc="seed protocol", unit="epoch")
        for epoch in bar:
            rows = [r.train_epoch(show) for r in runs]
            out["rows"] += rows
            if len(runs) >= 2:
                diff = max_weight_difference(runs[0].model, runs[1].model)
                out["weight_diff"].append({"epoch": epoch + 1, "max_abs": diff})
                line = seed_line(epoch + 1, rows[0], rows[1])
                out["lines"].append(line)
                log(f"{line} | max |dw| {diff:.3e}")
            else:
                log(
                    f"epoch {epoch + 1:02d} | {activations[0]} train/test acc "
                    f"{fmt_acc(rows[0]['train_acc'])}/{fmt_acc(rows[0]['test_acc'])}"
                )
            if swap:
                for row in evaluate_swaps(runs[0].model, data, backward=config.backward):
                    out["swap"].append({"epoch": epoch + 1, "seed": seed, **row})
    if len(runs) >= 2:
        out["first_difference_epoch"] = first_printed_difference(runs[0].history, runs[1].history)
    return out


def t_interval(values: Sequence[float], confidence: float = 0.95) -> dict:
    """Mean, sample standard deviation and the Student-t confidence interval of the mean."""
    from scipy import stats

    n = len(values)
    if n < 2:
        raise ValueError(f"a confidence interval needs at least 2 values, got {n}")
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    t = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    half = t * sd / math.sqrt(n)
    return {
        "n": n,
        "mean": mean,
        "sd": sd,
        "t_crit": t,
        "confidence": confidence,
        "ci_low": mean - half,
        "ci_high": mean + half,
    }


def summarize_noise(
    rows: Sequence[dict],
    reference: str = "exact",
    confidence: float = 0.95,
    pairs: Sequence[dict] = (),
) -> dict:
    """From the final-epoch rows, for the test accuracy (``final_test_acc``, ``paired``) and
    the test loss (``final_test_loss``, ``paired_loss``): per activation the seed-to-seed
    spread; per other activation the paired difference to ``reference`` over seeds with a t
    interval, and how many seeds it is positive / zero / negative. ``pairs`` (from
    ``compare_models``): per comparison kind the mean and max of each measure."""
    last = max(r["epoch"] for r in rows)
    acts = list(dict.fromkeys(r["activation"] for r in rows))
    out = {"epoch": last}
    for key, spread_name, paired_name in (
        ("test_acc", "final_test_acc", "paired"),
        ("test_loss", "final_test_loss", "paired_loss"),
    ):
        final = {(r["activation"], r["seed"]): r[key] for r in rows if r["epoch"] == last}
        seeds = sorted({s for _, s in final})
        spread = {}
        for a in acts:
            vals = [final[(a, s)] for s in seeds]
            spread[a] = {
                **t_interval(vals, confidence),
                "min": min(vals),
                "max": max(vals),
                "values": vals,
            }
        paired = {}
        for a in acts:
            if a == reference:
                continue
            d = [final[(a, s)] - final[(reference, s)] for s in seeds]
            paired[f"{a}-{reference}"] = {
                **t_interval(d, confidence),
                "values": d,
                "positive": sum(v > 0 for v in d),
                "zero": sum(v == 0 for v in d),
                "negative": sum(v < 0 for v in d),
            }
        out.update({"seeds": seeds, spread_name: spread, paired_name: paired})
    by_kind: dict[str, list[dict]] = {}
    for p in pairs:
        by_kind.setdefault(p["comparison"], []).append(p)
    measures = ("max_abs_weight_diff", "rel_weight_distance", "disagreeing_predictions")
    out["model_differences"] = {
        kind: {"n": len(ps)}
        | {f"mean_{m}": sum(p[m] for p in ps) / len(ps) for m in measures}
        | {f"max_{m}": max(p[m] for p in ps) for m in measures}
        for kind, ps in by_kind.items()
    }
    out["interval"] = f"two-sided {confidence:.0%} Student-t interval of the mean over seeds"
    return out


def compare_models(a: nn.Module, b: nn.Module, data: Data) -> dict:
    """How far apart two trained models are: max |weight difference|, the L2 distance of all
    weights relative to ``b``'s norm, and the test images on which their predictions differ."""
    wa = torch.cat([p.detach().flatten() for p in a.parameters()])
    wb = torch.cat([p.detach().flatten() for p in b.parameters()])
    _, _, la = evaluate(a, data.test_x, data.test_y)
    _, _, lb = evaluate(b, data.test_x, data.test_y)
    return {
        "max_abs_weight_diff": (wa - wb).abs().max().item(),
        "rel_weight_distance": ((wa - wb).norm() / wb.norm()).item(),
        "disagreeing_predictions": int((la.argmax(1) != lb.argmax(1)).sum().item()),
    }


def check_noise_arguments(seeds: Sequence[int], activations: Sequence[str]) -> None:
    for a in activations:
        check_activation(a)
    if "exact" not in activations:
        raise ValueError("the noise protocol compares against 'exact': include it")
    if len(set(activations)) != len(activations):
        raise ValueError(f"repeated activation in {list(activations)}")
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(f"the noise protocol needs at least 2 distinct seeds, got {list(seeds)}")


def run_noise_protocol(
    config: Config,
    data: Data,
    seeds: Sequence[int],
    *,
    activations: Sequence[str] = NOISE_ACTIVATIONS,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Every seed x activation trained for ``config.epochs``. Returns the per-epoch ``rows``,
    ``pairs`` (``compare_models`` of each activation's final model with exact's of the same
    seed, and of exact with exact of the previous seed: what "another seed" means) and
    ``summarize_noise``."""
    from tqdm.auto import tqdm

    check_noise_arguments(seeds, activations)
    log = log or (lambda s: None)
    show = _want_progress(progress)
    rows, pairs = [], []
    previous_exact = None
    with deterministic(config.threads):
        bar = tqdm(
            total=len(seeds) * len(activations) * config.epochs,
            disable=not show,
            desc="noise protocol",
            unit="epoch",
        )
        for seed in seeds:
            models = {}
            for a in activations:
                run = Run(a, seed, config, data)
                for _ in range(config.epochs):
                    rows.append(run.train_epoch(show))
                    bar.update()
                models[a] = run.model
                r = rows[-1]
                log(
                    f"seed {seed:3d} {a:10s} final train/test acc {fmt_acc(r['train_acc'])}/"
                    f"{fmt_acc(r['test_acc'])}  test loss {r['test_loss']:.5f}"
                )
            for a in activations:
                if a != "exact":
                    diff = compare_models(models[a], models["exact"], data)
                    pairs.append({"comparison": f"{a}-exact", "seed": seed, **diff})
            if previous_exact is not None:  # the scale of "another seed", for comparison
                diff = compare_models(models["exact"], previous_exact[1], data)
                pairs.append({"comparison": "exact seed-to-seed", "seed": seed,
                              "other_seed": previous_exact[0], **diff})  # fmt: skip
            previous_exact = (seed, models["exact"])
        bar.close()
    return {"rows": rows, "pairs": pairs, "summary": summarize_noise(rows, pairs=pairs)}


# ---------------------------------------------------------------- results


def meta(config: Config, command: str | None = None, **extra) -> dict:
    with deterministic(config.threads):
        machine = records.machine_info()
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_commit": records.git_commit(),
        "machine": machine,
        "deterministic_algorithms": True,
        "turbogelu_cpu_program": CPU_PROGRAM,
        "config": dataclasses.asdict(config),
        "model": f"784-{'-'.join(map(str, config.hidden))}-10 MLP, GELU between layers",
        "optimizer": f"SGD momentum {config.momentum}, lr {config.lr} cosine to 0 per step, "
        f"batch {config.batch_size}, cross-entropy, no weight decay",
        **extra,
    }


def load_json(path: str | Path) -> dict:
    return records.read_json(path)
