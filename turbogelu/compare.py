"""Compare a run's results with the committed reference run (``results/reference/<mode>/``).

Figures are collected by name from the files a run writes (``collect``):

* ``<stem>.json`` with a ``figures`` dict (the notebooks, the MNIST protocols): every number;
* ``table2.json``: each row's max errors at the paper's form (``same``, ``same_ls``), of the LS
  column's reproduction (``ls``) and of the better form (``best``);
* ``accuracy_<spec>.json``: the dense float32 max/mean error, and per format and region the
  max ulp and the fraction correctly rounded;
* ``bench.jsonl`` (the last run): each protocol row's ratio to turbogelu and to the limit.

A figure is a *time* when its name says so (``TIME_WORDS``: times, speedups, ratios of
times): times are shown as new/reference ratios with both machines named and never fail, since
they belong to a machine. Every other figure is an *accuracy* figure and must match: exactly
for integers, within ``REL_TOL`` relative for floats (the runs are deterministic; the slack
covers last-bit differences of LAPACK and libm between CPUs), or within the tolerance that
``TOLERANCES`` states for the figure's name. A figure in the reference that the run did not
produce is a failure; a new one is listed.

``python -m turbogelu.compare [--quick]`` prints the comparison (exit 1 when an accuracy figure
differs or is missing); ``--save`` copies the run's result files into the reference instead.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
REFERENCE = RESULTS / "reference"

REL_TOL = 1e-9
TIME_WORDS = re.compile(
    r"(time|_us\b|_us_|_ms\b|seconds|wall|speed|per_limit|vs_turbogelu|over_horner|throughput)"
)
# name pattern -> (relative, absolute) tolerance, with the reason.
TOLERANCES: dict[str, tuple[float, float, str]] = {
    # Remez and the neighbour search stop on float64 comparisons of errors near 1e-3; a last-bit
    # LAPACK difference can move a floor's bracket by a few 1e-12 relative.
    r"^table2\.": (1e-6, 0.0, "float64 fits; LAPACK last bits differ between CPUs"),
}
# What a reference snapshot holds (small files only).
SNAPSHOT = (
    "*.json",
    "*.md",
    "*.png",
    "figures/*/*.png",
    "bench/*.png",
    "sweeps/*/table.*",
    "sweeps/*/front.json",
    "sweeps/*/pareto.png",
)


def _is_time(name: str) -> bool:
    return bool(TIME_WORDS.search(name))


def _bench_figures(path: Path) -> dict[str, float]:
    from .bench_report import load

    out = {}
    for r in load(path):
        if r.get("bench", "protocol") != "protocol":
            continue
        key = f"bench.{r['direction']}.{r['dtype']}.{r['method']}"
        for k in ("vs_turbogelu", "per_limit"):
            if isinstance(r.get(k), int | float):
                out[f"{key}.{k}"] = r[k]
    return out


def collect(results_dir: Path) -> dict[str, float]:
    """Every comparable figure of a run, by name."""
    results_dir = Path(results_dir)
    figs: dict[str, float] = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        stem = path.stem
        if isinstance(data, dict) and isinstance(data.get("figures"), dict):
            for k, v in data["figures"].items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    figs[f"{stem}.{k}"] = v
        elif stem == "table2":
            for row in data:
                for part in ("same", "same_ls", "ls", "best"):
                    if part in row:  # a reference from before the same-form fits lacks two
                        figs[f"table2.{row['name']}.{part}"] = row[part]["max_abs_error"]
        elif stem.startswith("accuracy_"):
            figs[f"{stem}.dense.max_abs"] = data["dense"]["max_abs"]
            figs[f"{stem}.dense.mean_abs"] = data["dense"]["mean_abs"]
            for ex in data.get("exhaustive", []):
                for reg in ex["regions"]:
                    base = f"{stem}.{ex['format']}.{reg['region']}"
                    figs[f"{base}.max_ulp"] = reg["max_ulp"]
                    figs[f"{base}.frac_correctly_rounded"] = reg["frac_correctly_rounded"]
    bench = results_dir / "bench.jsonl"
    if bench.is_file():
        figs.update(_bench_figures(bench))
    return figs


def _machine(results_dir: Path) -> str:
    for path in [Path(results_dir) / "machine.json", *sorted(Path(results_dir).glob("*.json"))]:
        if not path.is_file():
            continue
        try:
            m = json.loads(path.read_text()).get("machine")
        except (json.JSONDecodeError, AttributeError):
            continue
        if isinstance(m, dict) and m.get("cpu"):
            return f"{m['cpu']} ({m.get('logical_cpus', '?')} CPUs)"
    return "unknown machine"


def _tolerance(name: str) -> tuple[float, float]:
    for pat, (rel, abs_, _why) in TOLERANCES.items():
        if re.search(pat, name):
            return rel, abs_
    return REL_TOL, 0.0


def _same(name: str, new: float, ref: float) -> bool:
    if isinstance(new, int) and isinstance(ref, int):
        return new == ref
    if math.isnan(new) or math.isnan(ref):
        return math.isnan(new) and math.isnan(ref)
    rel, abs_ = _tolerance(name)
    return abs(new - ref) <= max(abs_, rel * max(abs(new), abs(ref)))


def compare(results_dir: Path, reference_dir: Path) -> dict:
    """{'accuracy': [(name, new, ref, ok)], 'times': [(name, new, ref)], 'missing': [...],
    'new': [...], 'machines': (run, reference)}."""
    new, ref = collect(results_dir), collect(reference_dir)
    out = {"accuracy": [], "times": [], "missing": [], "new": sorted(set(new) - set(ref))}
    for name in sorted(ref):
        if name not in new:
            (out["times"] if _is_time(name) else out["missing"]).append(name)
            continue
        if _is_time(name):
            out["times"].append((name, new[name], ref[name]))
        else:
            out["accuracy"].append((name, new[name], ref[name], _same(name, new[name], ref[name])))
    out["machines"] = (_machine(results_dir), _machine(reference_dir))
    return out


def render(res: dict) -> str:
    run, refm = res["machines"]
    acc = res["accuracy"]
    bad = [a for a in acc if not a[3]]
    lines = [
        f"this run: {run}; reference: {refm}",
        f"accuracy figures: {len(acc) - len(bad)} of {len(acc)} match"
        + (f", {len(res['missing'])} missing" if res["missing"] else ""),
    ]
    for name, n, r, _ in bad:
        lines.append(f"  DIFFERS {name}: {n!r} (reference {r!r})")
    for name in res["missing"]:
        lines.append(f"  MISSING {name}")
    times = [t for t in res["times"] if isinstance(t, tuple)]
    if times:
        lines.append(f"times ({len(times)}; new / reference, machines above):")
        for name, n, r in times:
            ratio = n / r if r else float("nan")
            lines.append(f"  {name}: {n:.4g} vs {r:.4g} ({ratio:.2f}x)")
    if res["new"]:
        lines.append(f"new figures, not in the reference: {len(res['new'])}")
    return "\n".join(lines)


def _compared_files(results_dir: Path) -> list[str]:
    """The files ``collect`` reads (bench.jsonl handled apart)."""
    out = []
    for path in sorted(results_dir.glob("*.json")):
        data = json.loads(path.read_text())
        if path.stem in ("table2",) or path.stem.startswith("accuracy_"):
            out.append(path.name)
        elif isinstance(data, dict) and isinstance(data.get("figures"), dict):
            out.append(path.name)
    return out


def _from_quick_mode(path: Path) -> bool:
    """Whether ``path`` (relative to the results folder) is a quick-mode output
    (mnist_quick_*, bench_quick.*, sweeps/default_quick/...): a quick run in the same results
    folder leaves them there, and the full reference must not take them."""
    return any("_quick" in part for part in path.parts)


def save(results_dir: Path, reference_dir: Path, *, minimal: bool = False) -> list[Path]:
    """Copy a run's small result files into ``reference_dir`` (replacing what was there), and
    of bench.jsonl only its last run. ``minimal``: only what the comparison reads (the quick
    reference: its plots would duplicate the full run's)."""
    if reference_dir.exists():
        shutil.rmtree(reference_dir)
    written = []
    reference_dir.mkdir(parents=True)
    if minimal:
        for name in _compared_files(results_dir):
            shutil.copyfile(results_dir / name, reference_dir / name)
            written.append(reference_dir / name)
    # bench.jsonl collects every benchmark run made in this folder: keep the last one only.
    if (results_dir / "bench.jsonl").is_file():
        from .bench_report import load

        rows = load(results_dir / "bench.jsonl")
        (reference_dir / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        written.append(reference_dir / "bench.jsonl")
    for pattern in () if minimal else SNAPSHOT:
        for src in sorted(results_dir.glob(pattern)):
            if (
                REFERENCE in src.parents
                or src.name == "README.md"
                or _from_quick_mode(src.relative_to(results_dir))
            ):
                continue
            dst = reference_dir / src.relative_to(results_dir)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            written.append(dst)
    from .notebooks import machine

    info = {**machine(), "saved_from": str(results_dir)}
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        pass
    (reference_dir / "machine.json").write_text(json.dumps(info, indent=1) + "\n")
    return [*written, reference_dir / "machine.json"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m turbogelu.compare", description=__doc__)
    p.add_argument("--quick", action="store_true", help="compare with the quick-mode reference")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--reference", type=Path, default=None, help="(results/reference/<mode>)")
    p.add_argument("--save", action="store_true", help="make this run the reference")
    args = p.parse_args(argv)
    ref = args.reference or REFERENCE / ("quick" if args.quick else "full")
    if args.save:
        files = save(args.results, ref, minimal=args.quick)
        print(f"saved {len(files)} files to {ref}")
        return 0
    if not ref.is_dir():
        print(f"no reference run at {ref}: nothing to compare (make one with --save)")
        return 0
    res = compare(args.results, ref)
    print(render(res))
    return 1 if res["missing"] or any(not a[3] for a in res["accuracy"]) else 0


if __name__ == "__main__":
    sys.exit(main())
