"""``python -m experiments llm {seed,swap,ablation,noise,throughput,all}``: the command line of the
language-model protocols (issue 18). Free of torch at import time (the CLI's parser is built
for every subcommand): the settings are in ``experiments.llm_settings``, the protocols in
``experiments.llm_protocols``, the figures and text in ``experiments.llm_report``.

Files: ``<out-dir>/llm_{seed,swap,ablation,noise,bf16,throughput}.json`` (``llm_quick_*`` with
``--quick``) and PNGs beside them. ``ablation`` (the source paper's Table 6 in miniature,
``experiments.llm_ablation``) evaluates the seed protocol's native checkpoint: ``all`` runs it
on the seed run's models, ``ablation`` alone trains the native runs first, as ``swap`` does;
``bf16`` runs it again on its own native checkpoints (the model in bfloat16), into
``llm_bf16.json``'s ``ablation``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from . import records
from .llm_settings import (
    BATCH,
    BF16_SEEDS,
    BF16_STEPS,
    NOISE_SEEDS,
    NOISE_STEPS,
    QUICK,
    SEED_STEPS,
    THROUGHPUT_ITERS,
    THROUGHPUT_ROUNDS,
)

TASKS = ("gelu", "b1", "b2", "b3", "b4")  # experiments.llm.TASKS (checked there)
PROTOCOLS = ("seed", "swap", "ablation", "noise", "bf16", "throughput", "all")


def add_arguments(p) -> None:
    p.add_argument(
        "protocol",
        choices=PROTOCOLS,
        help="seed: one longer run per task and arm; swap: the native run's checkpoint with the "
        "polynomial functions swapped in; ablation: that checkpoint with D4 programs fitted by "
        "endpoint LS and by minimax (the paper's Table 6); noise: seeds x arms, paired "
        "intervals; bf16: the model in bfloat16, native vs both tiers, seeds x arms with paired "
        "intervals and a swap (the paper's Table 7 in miniature, its programs); throughput: "
        "both arms timed in one process; all: every one (swap and ablation from the seed "
        "protocol's run)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"test setting: a 1-layer width-32 model, {QUICK['seed_steps']} seed steps, "
        f"{QUICK['noise_seeds']} noise seeds x {QUICK['noise_steps']} steps; files llm_quick_*",
    )
    p.add_argument("--tasks", default=",".join(TASKS), help=f"some of {','.join(TASKS)} (all)")
    p.add_argument("--steps", type=int, default=None, help=f"seed/swap steps ({SEED_STEPS})")
    p.add_argument("--seed", type=int, default=0, help="seed/swap/throughput seed (0)")
    p.add_argument("--noise-steps", type=int, default=None, help=f"({NOISE_STEPS})")
    p.add_argument(
        "--seeds",
        default=None,
        help=f"noise and bf16 seeds: a count n or a list like 3,5,8 ({NOISE_SEEDS}, bf16 "
        f"{BF16_SEEDS})",
    )
    p.add_argument("--bf16-steps", type=int, default=None, help=f"({BF16_STEPS})")
    p.add_argument("--batch", type=int, default=None, help=f"windows per step ({BATCH})")
    p.add_argument("--rounds", type=int, default=None, help=f"throughput ({THROUGHPUT_ROUNDS})")
    p.add_argument("--iters", type=int, default=None, help=f"throughput ({THROUGHPUT_ITERS})")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1)")
    p.add_argument(
        "--tier", choices=("accurate", "paper"), default="accurate", help="the ops' tier"
    )
    p.add_argument(
        "--minimax",
        choices=("auto", "remez", "sollya"),
        default="auto",
        help="the ablations' minimax fitter (ablation, and bf16's; auto: Sollya's fpminimax when "
        "sollya is on PATH, else this project's Remez with a bfloat16 neighbour search; with "
        "--quick, Remez, so "
        "that quick runs compare across machines with and without Sollya, as table2's do)",
    )
    p.add_argument("--root", default=None, help="data root holding shakespeare/ (data/)")
    p.add_argument("--out-dir", default="results", help="where JSON and PNG go (results/)")
    p.add_argument("--no-plots", action="store_true", help="JSON only")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="tqdm bars (default: when stderr is a terminal)",
    )


def parse_tasks(text: str) -> list[str]:
    tasks = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks or len(set(tasks)) != len(tasks):
        raise ValueError(f"--tasks takes distinct names from {','.join(TASKS)}, got {text!r}")
    return tasks


def parse_seeds(text: str) -> list[int]:
    from .mnist_cli import parse_seeds as parse

    return parse(text)


def main(args) -> int:
    """Run the protocol(s) of ``args`` and write their JSON and plots. A bad argument is a
    ValueError (the caller prints it and exits 2) raised before any training."""
    t_start = time.perf_counter()
    tasks = parse_tasks(args.tasks)
    quick = args.quick
    q = QUICK if quick else {}
    seeds = parse_seeds(args.seeds or str(q.get("noise_seeds", NOISE_SEEDS)))
    bf16_seeds = parse_seeds(args.seeds or str(q.get("bf16_seeds", BF16_SEEDS)))
    for name in ("steps", "noise_steps", "bf16_steps", "batch", "rounds", "iters", "threads"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {v}")

    import dataclasses

    from . import llm, llm_ablation, llm_protocols, llm_report
    from .llm_settings import BF16_MODEL, MODEL, QUICK_MODEL

    model = llm.Config(**(QUICK_MODEL if quick else MODEL))
    base = {
        "model": model,
        "batch": args.batch or q.get("batch", BATCH),
        "threads": args.threads,
        "tier": args.tier,
    }
    if quick:
        base |= {"val_windows": q["val_windows"], "warmup": q["warmup"], "evals": q["seed_evals"]}
    seed_s = llm_protocols.Settings(steps=args.steps or q.get("seed_steps", SEED_STEPS), **base)
    noise_s = dataclasses.replace(
        seed_s, steps=args.noise_steps or q.get("noise_steps", NOISE_STEPS)
    )
    bf16_s = dataclasses.replace(
        seed_s,
        model=model if quick else llm.Config(**BF16_MODEL),
        steps=args.bf16_steps or q.get("bf16_steps", BF16_STEPS),
        precision="bfloat16",
    )
    rounds = args.rounds or q.get("throughput_rounds", THROUGHPUT_ROUNDS)
    iters = args.iters or q.get("throughput_iters", THROUGHPUT_ITERS)
    corpus = llm_protocols.load_corpus(args.root)
    out_dir = Path(args.out_dir)
    prefix = "llm_quick_" if quick else "llm_"
    command = shlex.join(["python", "-m", "experiments", "llm", *args.argv])
    written: list[Path] = []

    def log(msg: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(msg, file=sys.stdout)
        sys.stdout.flush()

    def plot(fn, payload, name):
        if not args.no_plots:
            written.append(out_dir / f"{prefix}{name}.png")
            fn(payload, written[-1])

    def save(name, payload):
        written.append(records.write_json(out_dir / f"{prefix}{name}.json", payload))

    # the ablations' minimax fitter: a quick run fits by Remez wherever it runs (as quick table2
    # skips Sollya), so that its figures compare across machines with and without Sollya
    minimax = "remez" if quick and args.minimax == "auto" else args.minimax
    p = args.protocol
    if p in ("seed", "swap", "ablation", "all"):
        t0 = time.perf_counter()
        arms = llm_protocols.arms(args.tier)
        if p in ("swap", "ablation"):  # the native run alone: its checkpoint is what is swapped
            arms = {"native": arms["native"]}
        res, models = llm_protocols.run_seed_protocol(
            tasks, seed_s, corpus, args.seed, arms_=arms, progress=args.progress, log=log
        )
        wall = time.perf_counter() - t0
        if p in ("seed", "all"):
            log(llm_report.seed_text(res))
            meta = llm_protocols.meta(seed_s, command, seed=args.seed, wall_seconds=wall)
            from .llm_settings import PAPER_SOURCE, PAPER_TABLE7

            paper = {"source": PAPER_SOURCE, "table7": PAPER_TABLE7}
            payload = {"kind": "experiments.llm.seed", "meta": meta, **res, "paper": paper}
            save("seed", payload)
            plot(llm_report.plot_seed_curves, payload, "seed_curves")
        if p in ("swap", "all"):
            t1 = time.perf_counter()
            rows = llm_protocols.run_swap_protocol(models, seed_s, corpus)
            log(llm_report.swap_text(rows))
            native = {r["task"]: r for r in res["runs"] if r["arm"] == "native"}
            meta = llm_protocols.meta(
                seed_s, command, seed=args.seed, trained_with="native",
                training_seconds=wall, wall_seconds=time.perf_counter() - t1,
            )  # fmt: skip
            payload = {
                "kind": "experiments.llm.swap",
                "meta": meta,
                "swap": rows,
                "checkpoints": {
                    t: {k: r[k] for k in ("steps", "characters", "final_val_loss")}
                    for t, r in native.items()
                },
            }
            save("swap", payload)
            plot(llm_report.plot_swap, rows, "swap")
        if p in ("ablation", "all"):
            t1 = time.perf_counter()
            body = llm_ablation.run_ablation(models, seed_s, corpus, minimax=minimax, log=log)
            log(llm_report.ablation_text(body))
            meta = llm_protocols.meta(
                seed_s, command, seed=args.seed, trained_with="native", training_seconds=wall,
                wall_seconds=time.perf_counter() - t1, dtype=", ".join(body["dtype"]),
                minimax_fitter=body["minimax_fitter"],
            )  # fmt: skip
            payload = {"kind": "experiments.llm.ablation", "meta": meta, **body}
            save("ablation", payload)
            plot(llm_report.plot_ablation, payload, "ablation")
    if p in ("noise", "all"):
        t0 = time.perf_counter()
        res = llm_protocols.run_noise_protocol(
            tasks, noise_s, corpus, seeds, progress=args.progress, log=log
        )
        wall = time.perf_counter() - t0
        log(llm_report.noise_text(res["summary"]))
        meta = llm_protocols.meta(noise_s, command, seeds=seeds, wall_seconds=wall)
        payload = {"kind": "experiments.llm.noise", "meta": meta, **res}
        save("noise", payload)
        plot(llm_report.plot_noise, payload, "noise")
    if p in ("bf16", "all"):
        from .llm_settings import PAPER_SOURCE, PAPER_TABLE7

        t0 = time.perf_counter()
        checkpoints: dict = {}  # the first seed's native models, which the ablation swaps
        res = llm_protocols.run_bf16_protocol(
            tasks, bf16_s, corpus, bf16_seeds, progress=args.progress, log=log,
            checkpoints=checkpoints,
        )  # fmt: skip
        res["ablation"] = llm_ablation.run_ablation(
            checkpoints, bf16_s, corpus, minimax=minimax, log=log
        )
        wall = time.perf_counter() - t0
        log(llm_report.bf16_text(res))
        log(llm_report.ablation_text(res["ablation"]))
        meta = llm_protocols.meta(
            bf16_s, command, seeds=bf16_seeds, wall_seconds=wall,
            arms=list(llm_protocols.bf16_arms()), precision=llm_protocols.BF16_PRECISION,
            minimax_fitter=res["ablation"]["minimax_fitter"],
        )  # fmt: skip
        paper = {"source": PAPER_SOURCE, "table7": PAPER_TABLE7}
        save("bf16", {"kind": "experiments.llm.bf16", "meta": meta, **res, "paper": paper})
    if p in ("throughput", "all"):
        t0 = time.perf_counter()
        rows = llm_protocols.run_throughput_protocol(
            tasks, seed_s, corpus.vocab, rounds=rounds, iters=iters, progress=args.progress,
            log=log,
        )  # fmt: skip
        wall = time.perf_counter() - t0
        log(llm_report.throughput_text(rows))
        from .llm_settings import CPU_CAVEAT, PAPER_SOURCE, PAPER_TABLE4, PAPER_TABLE5

        meta = llm_protocols.meta(seed_s, command, rounds=rounds, iters=iters, wall_seconds=wall)
        payload = {
            "kind": "experiments.llm.throughput",
            "meta": meta,
            "rows": rows,
            "paper": {"source": PAPER_SOURCE, "table4": PAPER_TABLE4, "table5": PAPER_TABLE5},
            "caveat": CPU_CAVEAT,
        }
        save("throughput", payload)
        plot(llm_report.plot_throughput, rows, "throughput")
    for w in written:
        print(f"wrote {w}", file=sys.stderr)
    print(
        f"llm {p}{' --quick' if quick else ''}: {time.perf_counter() - t_start:.1f} s wall",
        file=sys.stderr,
    )
    return 0
