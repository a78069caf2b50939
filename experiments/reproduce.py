"""``make reproduce``: every run behind the report, then the report, then a comparison.

Steps (each a subprocess of this interpreter, timed; ``--quick`` gives each its small mode):

1. ``table2``   the paper's Table 2 (``results/table2.json``; quick: no floors, no Sollya)
2. ``accuracy`` exhaustive bf16/fp16 + dense float32 report of each shipped spec
3. ``bench``    the benchmark, GELU's parts and the activation family's
   (``results/bench.jsonl``; quick: ``--quick``), and the compiled rows
   (``results/bench_compiled.jsonl``, experiments.bench_compiled), and the source paper's
   Tables 4, 9 and 10 (``results/bench_paper.json``, experiments.bench_paper)
4. ``mnist``    the training comparison (``results/mnist_*.json``; quick: ``--quick``)
   ``llm``      the language-model tasks' protocols (``results/llm_*.json``; quick: ``--quick``)
5. ``sweep``    the default sweep (``experiments/sweeps/default.json``: GELU) and the family's
   (``experiments/sweeps/family.json``), before the notebooks: notebook 12 reads the second
6. ``notebooks`` every notebook in ``notebooks/`` (not ``sweep_point``), executed with papermill
   into ``reports/notebooks/`` and rendered to HTML beside it (``python -m experiments notebook``)
7. ``paper``    ``reports/paper/`` from ``paper/paper.md``
8. ``compare``  the new figures against ``results/reference/<mode>/`` (``compare``)

``results/reproduce.json`` records each step's command, time and status. A failed step stops
the run (later steps read its results). ``--only`` / ``--skip`` select steps.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

from . import compare, records

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
REPORTS = REPO / "reports"
SPECS = ("gelu_exact", "gelu_tanh")
# The sweeps of the report (experiments/sweeps/<name>.json), each in its mode's grid.
SWEEPS = ("default", "family")


def _py(*args: str) -> list[str]:
    """The harness' command (the product's for its own: fit, codegen, report)."""
    package = "turbogelu" if args[0] in ("fit", "codegen", "report") else "experiments"
    return [sys.executable, "-m", package, *args]


# Notebooks not run by `make reproduce`, each with why (none today: 11_llm_tasks, left out
# while the language-model protocols did not fit the 60-minute budget, runs since they were
# sized for it; its results come from the llm step).
NOT_REPRODUCED: dict[str, str] = {}


def _notebooks() -> list[Path]:
    found = (REPO / "notebooks").glob("[0-9]*.ipynb")
    return sorted(p for p in found if p.stem not in NOT_REPRODUCED)


def steps(quick: bool) -> dict[str, list[list[str]]]:
    """Step name -> the commands it runs."""
    q = ["--quick"] if quick else []
    nb_cmds = []
    for nb in _notebooks():
        out = REPORTS / "notebooks" / nb.name
        nb_cmds.append(_py("notebook", nb.stem, *q, "--out", str(out)))
    return {
        "table2": [
            _py("table2", "--out", "results/table2.json", "--md", "results/table2.md")
            + (["--no-floors", "--no-sollya"] if quick else [])
        ],
        "accuracy": [
            _py("report", "--spec", f"data/specs/{s}.json", "--out", f"results/accuracy_{s}.json")
            for s in SPECS
        ],
        "bench": [
            _py(
                "bench",
                *q,
                "--parts",
                "protocol,sweep,degree,family",
                "--out",
                "results/bench.jsonl",
                "--plots",
                "results/bench",
            ),
            _py("bench-compiled", *q, "--out", "results/bench_compiled.jsonl"),
            _py("bench-paper", *q, "--out", "results/bench_paper.json"),
        ],  # fmt: skip
        "mnist": [_py("mnist", "all", *q)],
        "llm": [_py("llm", "all", *q)],
        "sweep": [
            # one point at a time (--jobs 1): two would share the memory bus their times measure
            _py("sweep", f"experiments/sweeps/{name}.json", "--no-progress", *q)
            for name in SWEEPS
        ],
        "notebooks": nb_cmds,
        "paper": [_py("paper", *q)],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.reproduce", description=__doc__)
    p.add_argument("--quick", action="store_true", help="every step in its small mode")
    p.add_argument("--only", default=None, help="comma-separated steps to run")
    p.add_argument("--skip", default="", help="comma-separated steps to leave out")
    args = p.parse_args(argv)
    plan = steps(args.quick)
    names = list(plan) + ["compare"]
    only = names if args.only is None else args.only.split(",")
    skip = [s for s in args.skip.split(",") if s]
    unknown = [s for s in only + skip if s not in names]
    if unknown:
        p.error(f"unknown step(s) {unknown}; steps: {names}")
    record = {"quick": args.quick, "steps": []}
    t_all = time.perf_counter()
    for name in names:
        if name not in only or name in skip:
            continue
        t0 = time.perf_counter()
        print(f"\n=== {name}", flush=True)
        status = "ok"
        if name == "compare":
            status = "ok" if compare.main(["--quick"] if args.quick else []) == 0 else "differs"
        else:
            for cmd in plan[name]:
                print("$ " + shlex.join(cmd[1:] if cmd[0] == sys.executable else cmd), flush=True)
                if subprocess.run(cmd, cwd=REPO, check=False).returncode != 0:
                    status = "failed"
                    break
        secs = time.perf_counter() - t0
        record["steps"].append({"step": name, "seconds": round(secs, 1), "status": status})
        print(f"=== {name}: {status} in {secs:.0f} s", flush=True)
        if status == "failed":
            break
    record["seconds"] = round(time.perf_counter() - t_all, 1)
    records.write_json(RESULTS / "reproduce.json", record)
    print(f"\nreproduce{' (quick)' if args.quick else ''}: {record['seconds']:.0f} s")
    for s in record["steps"]:
        print(f"  {s['step']:10s} {s['status']:8s} {s['seconds']:7.0f} s")
    paper = REPORTS / "paper" / "paper.html"
    if paper.is_file():
        print(f"the report: {paper.relative_to(REPO)} and reports/notebooks/*.html")
    return 0 if all(s["status"] == "ok" for s in record["steps"]) else 1


if __name__ == "__main__":
    sys.exit(main())
