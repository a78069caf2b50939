"""Measure how far each compared figure moves between machines, and so the tolerances of the
comparison's *numerics* figures (``compare.CLASS_RULES``).

Training goes through matrix products whose kernels (MKL, oneDNN) and vector code (ATen)
are chosen by the CPU; a least-squares line goes through numpy's OpenBLAS, whose kernels are
chosen the same way; PyTorch's own GELU takes other paths at special values under another
ATen instruction set. So a run on another machine can land off the reference's bits. How far
is measured, not guessed: ``python -m experiments.tolerances`` runs the steps of ``PARTS`` under
each of ``VARIANTS`` (one process each, in ``--work/<mode>/<variant>/``; a step whose output
is there is not rerun) and compares every figure of every run with every other run and with
the committed reference (``results/reference/<mode>/``, made on another CPU):

* a *numerics* figure's tolerance is twice the largest difference between any two of them;
  it is written, with the values, the variants, the machine and the commands, into
  ``compare.TOLERANCE_FILE`` under the mode (the other mode's entry is kept). A figure that no
  two runs disagree on gets 0: it must then match exactly;
* an *exact* figure that differs between any two of them (``compare.exact_match``: in any bit,
  or a float64 result beyond ``compare.FLOAT64_RTOL``) is an error (exit 1): it must be made
  exact or classified as numerics, and the file is not written.

``--parts``: ``mnist`` (the MNIST protocols and notebook 06: the default), ``llm`` (the
language-model protocols and notebook 11), ``table2``, ``accuracy``, a notebook's stem (01-04,
07, 08), or ``fits`` for the fits: the steps behind every figure of make reproduce that is not
a time. Figures of parts whose runs are not in ``--work`` keep the entry an earlier command
wrote (the file says which commands made it), so one part can be measured at a time.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import math
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from . import compare, records

REPO = compare.REPO

# name -> (environment, extra arguments of `mnist all` and `llm all`). What a run on another
# machine may change: ATen's vector code (ATEN_CPU_CAPABILITY), MKL's GEMM kernels
# (MKL_ENABLE_INSTRUCTIONS), oneDNN's (DNNL_MAX_CPU_ISA), numpy's OpenBLAS kernels, behind
# the fits (OPENBLAS_CORETYPE; AVX2-only Haswell code here), the intra-op threads of training
# (--threads: torch.set_num_threads; OMP_NUM_THREADS, which training overrides with its own
# setting, is run to show it changes nothing), turbogelu's own ISA (its kernels give the same
# bits on every ISA: tests/test_ops_determinism.py), and all of them at once.
VARIANTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "default": ({}, []),
    "aten-avx2": ({"ATEN_CPU_CAPABILITY": "avx2"}, []),
    "aten-default": ({"ATEN_CPU_CAPABILITY": "default"}, []),
    "mkl-avx2": ({"MKL_ENABLE_INSTRUCTIONS": "AVX2"}, []),
    "mkl-avx512": ({"MKL_ENABLE_INSTRUCTIONS": "AVX512"}, []),
    "onednn-avx2": ({"DNNL_MAX_CPU_ISA": "AVX2"}, []),
    "openblas-haswell": ({"OPENBLAS_CORETYPE": "Haswell"}, []),
    "threads-2": ({}, ["--threads", "2"]),
    "omp-1": ({"OMP_NUM_THREADS": "1"}, []),
    "all-avx2": (
        {
            "ATEN_CPU_CAPABILITY": "avx2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "DNNL_MAX_CPU_ISA": "AVX2",
            "OPENBLAS_CORETYPE": "Haswell",
            "TURBOGELU_CPU_ISA": "avx2",
            "OMP_NUM_THREADS": "1",
        },
        [],
    ),
    # .ci/run's second pass (tests/test_tolerances_variants.py holds them equal): numpy
    # without its SIMD loops for exp, log1p, ... and OpenBLAS's Sandybridge kernels move the
    # last bits of the fits' float64 arithmetic
    "ci-imitation": (
        {
            "TURBOGELU_CPU_ISA": "avx2",
            "ATEN_CPU_CAPABILITY": "avx2",
            "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR X86_V3",
            "OPENBLAS_CORETYPE": "Sandybridge",
        },
        [],
    ),
}
REFERENCE_RUN = "reference"
# The steps behind the figures that are not times (make reproduce's, in each mode).
FIT_NOTEBOOKS = (
    "01_tail_clamping",
    "02_irls_fitting",
    "03_estrin_evaluation",
    "04_derivative_checks",
    "07_polynomial_family",
    "08_cells",
    "12_family_sweep",
)
# A part is one step's name; "fits" stands for all of them but mnist.
PARTS = ("mnist", "llm", "table2", "accuracy", *FIT_NOTEBOOKS)
ALIASES = {"fits": ["table2", "accuracy", *FIT_NOTEBOOKS]}


def _run(cmd: list[str], env: dict[str, str], log) -> None:
    shown = " ".join(f"{k}={v}" for k, v in env.items())
    log(f"$ {shown + ' ' if shown else ''}{shlex.join(['python', *cmd[1:]])}")
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )


def _steps(part: str, out: Path, quick: bool, train_args: list[str]) -> list[tuple[Path, list]]:
    """(output file, command) of each step of ``part`` into ``out``."""
    py = [sys.executable, "-m", "experiments"]
    q = ["--quick"] if quick else []

    def notebook(stem):
        nb = [*py, "notebook", stem, *q, "--results-dir", str(out)]
        return out / f"{stem}.json", [*nb, "--out", str(out / f"{stem}.ipynb")]

    if part == "mnist":
        # written last by `mnist all`: a run stopped halfway is run again
        last = out / f"mnist_{'quick_' if quick else ''}noise.json"
        mnist = [*py, "mnist", "all", *q, *train_args, "--out-dir", str(out), "--no-plots"]
        path, nb06 = notebook("06_mnist_mlp")
        return [(last, mnist), (path, [*nb06, "-p", "run_if_missing=false"])]
    if part == "llm":
        # the throughput protocol's figures are times (not compared here): one short round
        # written last by `llm all`: a run stopped halfway is run again
        last = out / f"llm_{'quick_' if quick else ''}throughput.json"
        llm = [*py, "llm", "all", *q, *train_args, "--rounds", "1", "--iters", "1"]
        llm += ["--out-dir", str(out), "--no-plots", "--no-progress"]
        path, nb11 = notebook("11_llm_tasks")
        return [(last, llm), (path, [*nb11, "-p", "run_if_missing=false"])]
    if part == "table2":
        table2 = [*py, "table2", "--out", str(out / "table2.json")]
        return [(out / "table2.json", table2 + (["--no-floors", "--no-sollya"] if quick else []))]
    if part == "accuracy":
        steps = []
        for spec in ("gelu_exact", "gelu_tanh"):
            path = out / f"accuracy_{spec}.json"
            cmd = [
                sys.executable,
                "-m",
                "turbogelu",
                "report",
                "--spec",
                f"data/specs/{spec}.json",
                "--out",
                str(path),
            ]
            steps.append((path, cmd))
        return steps
    return [notebook(part)]


def run_variant(name: str, out: Path, quick: bool, parts, log=print) -> Path:
    """The steps of ``parts`` under variant ``name`` into ``out`` (those done are kept)."""
    env, train_args = VARIANTS[name]
    out.mkdir(parents=True, exist_ok=True)
    for part in parts:
        for path, cmd in _steps(part, out, quick, train_args):
            if not path.is_file():
                _run(cmd, env, log)
    return out


def differences(runs: dict[str, dict[str, float]]) -> dict[str, dict]:
    """For every numerics figure of the runs: the largest |difference| between two runs,
    the pair that shows it, and the tolerance (twice that)."""
    names = sorted(
        {n for figs in runs.values() for n in figs if compare.classify(n) == compare.NUMERICS}
    )
    out = {}
    for name in names:
        values = {run: figs[name] for run, figs in runs.items() if name in figs}
        worst, pair = 0.0, []
        for (a, va), (b, vb) in itertools.combinations(values.items(), 2):
            d = abs(va - vb)
            if math.isnan(d):
                raise ValueError(f"{name}: NaN in run {a} or {b}")
            if d > worst or not pair:
                worst, pair = d, [a, b]
        out[name] = {
            "tolerance": 2 * worst,
            "max_difference": worst,
            "between": pair,
            "values": values,
        }
    return out


def this_machine() -> dict:
    """``records.machine()``, its CPU named with " (AVX-512)" where the CPU has AVX-512: one
    model name covers CPUs with and without it (an AMD EPYC of each kind has run this
    project), whose kernels differ, so that each is a machine of its own here and a run on one
    does not replace the values measured on the other."""
    here = records.machine()
    if has_avx512():
        here["cpu"] += " (AVX-512)"
    return here


def has_avx512() -> bool:
    """Whether this CPU has AVX-512 (Linux's /proc/cpuinfo; False where there is none)."""
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def other_machines_runs(
    earlier: dict, here: dict, forget: re.Pattern | None = None
) -> dict[str, dict[str, float]]:
    """The runs an earlier command measured on another CPU (``earlier``: the tolerance file's
    entry for the mode), rebuilt from the values it kept, named ``<variant>@<cpu>``: so that a
    command run on a second machine widens each tolerance to what both machines showed rather
    than replacing the first machine's spread with its own. Runs of this CPU, and the
    reference's value, are measured again instead. The figures ``forget`` matches are left
    out: the code behind them changed since, so another CPU's old values measure nothing."""
    cpu = (earlier.get("measured_on") or {}).get("cpu")
    runs: dict[str, dict[str, float]] = {}
    for name, fig in earlier.get("figures", {}).items():
        if forget is not None and forget.search(name):
            continue
        for run, value in fig.get("values", {}).items():
            if run == REFERENCE_RUN or ("@" not in run and cpu == here.get("cpu")):
                continue
            if "@" in run and run.split("@", 1)[1] == here.get("cpu"):
                continue
            runs.setdefault(run if "@" in run else f"{run}@{cpu}", {})[name] = value
    return runs


def exact_differences(runs: dict[str, dict[str, float]]) -> list[tuple]:
    """(figure, {run: value}) of every exact figure on which two runs differ (``compare.
    exact_match``: in any bit, a float64 result beyond ``compare.FLOAT64_RTOL``)."""
    names = sorted({n for figs in runs.values() for n in figs})
    bad = []
    for name in names:
        if compare.classify(name) != compare.EXACT:
            continue
        values = {run: figs[name] for run, figs in runs.items() if name in figs}
        first = next(iter(values.values()))
        if not all(compare.exact_match(name, v, first) for v in values.values()):
            bad.append((name, values))
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.tolerances", description=__doc__)
    p.add_argument("--full", action="store_true", help="the full mode's steps (default: quick)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated (all)")
    p.add_argument("--parts", default="mnist", help=f"comma-separated, of {PARTS} or fits (mnist)")
    p.add_argument("--work", type=Path, default=REPO / "results" / "tolerances", help="run folders")
    p.add_argument("--out", type=Path, default=compare.TOLERANCE_FILE)
    p.add_argument(
        "--forget",
        metavar="REGEX",
        type=re.compile,
        help="figures whose values measured earlier on other CPUs are dropped (the code behind "
        "them changed since); this machine's runs measure them again",
    )
    args = p.parse_args(argv)
    mode = "full" if args.full else "quick"
    names = [v for v in args.variants.split(",") if v]
    asked = [v for v in args.parts.split(",") if v]
    parts = [q for v in asked for q in ALIASES.get(v, [v])]
    unknown = [v for v in names if v not in VARIANTS] + [v for v in parts if v not in PARTS]
    if unknown:
        p.error(f"unknown variant(s) or part(s) {unknown}; {list(VARIANTS)}, {list(PARTS)}")
    t0 = time.perf_counter()
    for name in names:
        run_variant(name, args.work / mode / name, not args.full, parts)
    # every run of this mode in the work folder, this command's and earlier ones'
    ref_dir = compare.REFERENCE / mode
    runs = {REFERENCE_RUN: compare.collect(ref_dir)}
    present = {}
    for name in VARIANTS:
        d = args.work / mode / name
        if d.is_dir() and any(d.glob("*.json")):
            runs[name] = compare.collect(d)
            present[name] = sorted(f.stem for f in d.glob("*.json"))
    data = records.read_json(args.out) if args.out.is_file() else {}
    earlier = data.get(mode, {})
    runs |= other_machines_runs(earlier, this_machine(), args.forget)
    bad = exact_differences(runs)
    for name, values in bad:
        shown = ", ".join(f"{r} {v!r}" for r, v in values.items())
        print(f"EXACT FIGURE DIFFERS: {name}: {shown}")
    if bad:
        print(
            f"{len(bad)} exact figure(s) differ between runs: make them exact or classify them "
            f"as numerics (compare.CLASS_RULES); {args.out} not written"
        )
        return 1
    # A figure measured in one run only (the reference's, of a part not run into this work
    # folder) keeps the entry an earlier command measured, where there is one.
    figs = {
        n: f
        for n, f in differences(runs).items()
        if len(f["values"]) > 1 or n not in earlier.get("figures", {})
    }
    kept = {n: f for n, f in earlier.get("figures", {}).items() if n not in figs}
    data["about"] = (
        "Tolerances of the comparison's numerics figures (experiments/compare.py): per figure "
        "twice the largest difference measured between runs under different instruction sets "
        "and thread counts and the committed reference run, with every run's value. Written "
        "by experiments/tolerances.py, whose docstring says how."
    )
    command = ["python", "-m", "experiments.tolerances", *(["--full"] if args.full else [])]
    if asked != ["mnist"]:
        command += ["--parts", ",".join(asked)]
    if names != list(VARIANTS):
        command += ["--variants", ",".join(names)]
    if args.forget is not None:
        command += ["--forget", args.forget.pattern]
    previous = earlier.get("commands", [])
    variants = dict(earlier.get("variants", {}))
    for n in present:
        had = variants.get(n, {}).get("results", [])
        variants[n] = {
            "env": VARIANTS[n][0],
            "train_args": VARIANTS[n][1],
            "results": sorted(set(had) | set(present[n])),
        }
    here = this_machine()
    machines = [m for m in earlier.get("machines", [earlier.get("measured_on")]) if m]
    data[mode] = {
        "commands": [*[c for c in previous if c != shlex.join(command)], shlex.join(command)],
        "measured_on": here,
        "machines": [*[m for m in machines if m.get("cpu") != here["cpu"]], here],
        "reference_machine": compare._machine(ref_dir),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seconds_last_command": round(time.perf_counter() - t0),
        "variants": variants,
        "exact_figures_checked": sum(
            1 for n in {k for f in runs.values() for k in f} if compare.classify(n) == "exact"
        ),
        "figures": dict(sorted({**kept, **figs}.items())),
        "figures_kept_from_earlier_commands": len(kept),
    }
    records.write_json(args.out, data)
    for name, f in figs.items():
        pair = " vs ".join(f["between"]) or "one run"
        print(f"{name}: max difference {f['max_difference']:.3g} ({pair})")
    print(
        f"wrote {args.out} ({mode}: {len(figs)} numerics figures over {len(runs)} runs, "
        f"{len(kept)} kept from earlier commands; "
        f"{data[mode]['exact_figures_checked']} exact figures identical in every run)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
