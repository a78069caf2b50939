"""``python -m experiments mnist {seed,swap,noise,all}``: the command line. Free of torch at
import time (the CLI's parser is built for every subcommand): the protocols' settings, and why
they are what they are, are in ``experiments.mnist_settings``; the training is in
``experiments.mnist`` (imported when the command runs), the figures and the printed summaries
in ``experiments.mnist_report``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from . import records
from .mnist_settings import (
    ACTIVATIONS,
    FULL_NOISE,
    NOISE_ACTIVATIONS,
    QUICK,
    QUICK_NOISE,
    SEED_EPOCHS,
    SEED_PAIR,
)


def add_arguments(p) -> None:
    p.add_argument(
        "protocol",
        choices=("seed", "swap", "noise", "all"),
        help=f"seed: exact vs turbogelu, {SEED_EPOCHS} epochs; swap: the exact run's weights "
        "evaluated with the other forms; noise: seeds x activations; all: the three "
        "(swap from the seed protocol's exact run)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"CI setting: the first {QUICK['train_subset']} train / "
        f"{QUICK['test_subset']} test images, {QUICK['epochs']} epochs, "
        f"{QUICK_NOISE['seeds']} noise seeds x {QUICK_NOISE['epochs']} epochs; "
        "files named mnist_quick_*",
    )
    p.add_argument(
        "--epochs", type=int, default=None, help=f"seed/swap protocol epochs ({SEED_EPOCHS})"
    )
    p.add_argument("--seed", type=int, default=0, help="seed/swap protocol seed (0)")
    p.add_argument(
        "--noise-epochs",
        type=int,
        default=None,
        help=f"noise protocol epochs ({FULL_NOISE['epochs']})",
    )
    p.add_argument(
        "--seeds",
        default=None,
        help=f"noise seeds: a count n (seeds 0..n-1) or a list like 3,5,8 ({FULL_NOISE['seeds']})",
    )
    p.add_argument(
        "--activations",
        default=",".join(NOISE_ACTIVATIONS),
        help=f"noise protocol activations (must include exact), from {', '.join(ACTIVATIONS)}",
    )
    p.add_argument("--train-subset", type=int, default=None, help="the first n training images")
    p.add_argument("--test-subset", type=int, default=None, help="the first n test images")
    p.add_argument("--batch-size", type=int, default=128, help="(128)")
    p.add_argument("--lr", type=float, default=0.05, help="peak learning rate (0.05)")
    p.add_argument("--momentum", type=float, default=0.9, help="(0.9)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (1: on the shared 2-core machine one thread is fastest)",
    )
    p.add_argument(
        "--backward",
        choices=("default", "direct", "matched"),
        default="default",
        help="turbogelu's backward coefficients (default)",
    )
    p.add_argument("--root", default=None, help="data root holding MNIST/raw (data/)")
    p.add_argument("--out-dir", default="results", help="where JSON and PNG go (results/)")
    p.add_argument("--no-plots", action="store_true", help="JSON only")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="tqdm bars (default: when stderr is a terminal)",
    )


def parse_seeds(text: str) -> list[int]:
    """``"10"`` -> seeds 0..9; ``"3,5,8"`` -> those seeds."""
    try:
        if "," in text:
            seeds = [int(s) for s in text.split(",") if s.strip()]
        else:
            seeds = list(range(int(text)))
    except ValueError:
        raise ValueError(f"--seeds takes a count or a comma-separated list, got {text!r}") from None
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(
            f"--seeds: the noise protocol needs at least 2 distinct seeds, got {text!r}"
        )
    return seeds


def main(args) -> int:
    """Run the protocol(s) of ``args`` and write their JSON and plots."""
    from . import mnist, mnist_report

    t_start = time.perf_counter()
    quick = args.quick
    base = QUICK if quick else {}
    noise_base = QUICK_NOISE if quick else FULL_NOISE
    epochs = args.epochs if args.epochs is not None else base.get("epochs", SEED_EPOCHS)
    noise_epochs = args.noise_epochs if args.noise_epochs is not None else noise_base["epochs"]
    seeds = parse_seeds(args.seeds or str(noise_base["seeds"]))
    activations = [
        mnist.check_activation(a.strip()) for a in args.activations.split(",") if a.strip()
    ]
    common = {
        "batch_size": args.batch_size,
        "lr": args.lr,
        "momentum": args.momentum,
        "threads": args.threads,
        "backward": args.backward,
        "train_subset": args.train_subset or base.get("train_subset"),
        "test_subset": args.test_subset or base.get("test_subset"),
    }
    seed_cfg = mnist.Config(epochs=epochs, **common)
    noise_cfg = mnist.Config(epochs=noise_epochs, **common)
    if args.protocol in ("noise", "all"):
        mnist.check_noise_arguments(seeds, activations)  # before any training
    data = mnist.prepare_data(args.root, common["train_subset"], common["test_subset"])
    out_dir = Path(args.out_dir)
    prefix = "mnist_quick_" if quick else "mnist_"
    command = shlex.join(["python", "-m", "experiments", "mnist", *args.argv])
    written: list[Path] = []

    def log(msg: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(msg, file=sys.stdout)
        sys.stdout.flush()

    def plot(fn, payload, name):
        if not args.no_plots:
            written.append(out_dir / f"{prefix}{name}.png")
            fn(payload, written[-1])

    if args.protocol in ("seed", "swap", "all"):
        t0 = time.perf_counter()
        acts = ("exact",) if args.protocol == "swap" else SEED_PAIR
        res = mnist.run_seed_protocol(
            seed_cfg,
            data,
            args.seed,
            activations=acts,
            swap=args.protocol != "seed",
            progress=args.progress,
            log=log,
        )
        wall = time.perf_counter() - t0
        if args.protocol != "swap":
            log(f"first epoch whose printed accuracies differ: {res['first_difference_epoch']}")
            payload = {
                "kind": "experiments.mnist.seed",
                "meta": mnist.meta(seed_cfg, command, seed=args.seed, wall_seconds=wall),
                **{k: res[k] for k in ("lines", "first_difference_epoch", "weight_diff", "rows")},
            }
            written.append(records.write_json(out_dir / f"{prefix}seed.json", payload))
            plot(mnist_report.plot_curves, payload, "seed_curves")
            plot(mnist_report.plot_weight_diff, payload, "seed_weight_diff")
        if args.protocol != "seed":
            log(mnist_report.swap_text(res["swap"]))
            payload = {
                "kind": "experiments.mnist.swap",
                "meta": mnist.meta(
                    seed_cfg, command, seed=args.seed, wall_seconds=wall, trained_with="exact"
                ),
                "swap": res["swap"],
                "rows": [r for r in res["rows"] if r["activation"] == "exact"],
            }
            written.append(records.write_json(out_dir / f"{prefix}swap.json", payload))
            plot(mnist_report.plot_swap, payload, "swap")
    if args.protocol in ("noise", "all"):
        t0 = time.perf_counter()
        res = mnist.run_noise_protocol(
            noise_cfg, data, seeds, activations=activations, progress=args.progress, log=log
        )
        wall = time.perf_counter() - t0
        log(mnist_report.noise_text(res["summary"]))
        payload = {
            "kind": "experiments.mnist.noise",
            "meta": mnist.meta(noise_cfg, command, seeds=seeds, wall_seconds=wall),
            **res,
        }
        written.append(records.write_json(out_dir / f"{prefix}noise.json", payload))
        plot(mnist_report.plot_noise, payload, "noise")
        plot(mnist_report.plot_curves, payload, "noise_curves")
    for w in written:
        print(f"wrote {w}", file=sys.stderr)
    print(
        f"mnist {args.protocol}{' --quick' if quick else ''}: "
        f"{time.perf_counter() - t_start:.1f} s wall",
        file=sys.stderr,
    )
    return 0
