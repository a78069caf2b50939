"""Compare a run's results with the committed reference run (``results/reference/<mode>/``).

Figures are collected by name from the files a run writes (``collect``):

* ``<stem>.json`` with a ``figures`` dict (the notebooks, the MNIST protocols): every number;
* ``table2.json``: each row's max errors at the paper's form (``same``, ``same_ls``), of the LS
  column's reproduction (``ls``) and of the better form (``best``);
* ``accuracy_<spec>.json``: the dense float32 max/mean error, and per format and region the
  max ulp and the fraction correctly rounded;
* ``bench.jsonl`` (the last run): each protocol row's ratio to turbogelu and to the limit.

Every figure has one of three classes (``classify``: the first rule of ``CLASS_RULES`` its
name matches; a figure no rule matches is an error, so a new figure must be classified before
it can be compared):

* **exact**: the fits, the exhaustive 16-bit counts, the dense errors of the kernels, replay
  bits, settings and published numbers: what the code determines, never a tolerance measured
  between runs. By rule (``exact_match``), not by the luck of the CPUs measured: integers
  (counts, degrees, ulps) and the exactly specified non-integers of ``EXACT_BITS`` (settings,
  float32 and 16-bit values, published numbers, exact float64 arithmetic, mpmath) bit for
  bit; every other non-integer exact figure is a float64 result of machine-dependent
  arithmetic (a fit through LAPACK, an error against a float64 reference through numpy's or
  scipy's transcendental functions) and matches to the relative ``FLOAT64_RTOL``.
* **numerics**: what goes through a library kernel chosen by the CPU: training (the MNIST
  figures; matrix products through MKL / oneDNN, whose kernels and summation order depend on
  the CPU, its instruction set and the thread count), a least-squares line through numpy's
  OpenBLAS, PyTorch's own GELU at special values. Each must lie within the tolerance measured
  for it (``TOLERANCE_FILE``, written by ``python -m experiments.tolerances``: twice the largest
  difference seen between runs under different ATen / MKL / oneDNN / OpenBLAS instruction sets
  and thread counts and the reference), or match as an exact figure would (a tolerance
  measured as 0 is not tighter than ``FLOAT64_RTOL``).
* **time**: times, speedups and ratios of times belong to a machine; shown as new/reference
  ratios with both machines named, never failing.

A figure in the reference that the run did not produce fails (unless it is a time); a new one
is listed.

``python -m experiments.compare [--quick]`` prints the comparison with the class of every
mismatch (exit 1 when an exact or numerics figure differs or is missing, 2 when a figure has
no class or a numerics figure no measured tolerance); ``--save`` copies the run's result files
into the reference instead.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from pathlib import Path

from . import records, rendered_report

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
REFERENCE = RESULTS / "reference"

TOLERANCE_FILE = REFERENCE / "tolerances.json"

EXACT, NUMERICS, TIME = "exact", "numerics", "time"
CLASSES = (EXACT, NUMERICS, TIME)
_TIME_WORDS = (
    r"(time|_us\b|_us_|_ms\b|seconds|wall|speed|per_limit|vs_turbogelu|over_horner|throughput)"
)
# (name pattern, class, why): the first rule a figure's name matches gives its class.
CLASS_RULES: list[tuple[str, str, str]] = [
    (
        r"^05_timing\.seed_",
        EXACT,
        "the write-up's published speedups, entered as data (data/seeds/turbogelu_bench.csv)",
    ),
    (
        r"^06_mnist_mlp\.(epochs|noise_seeds|seed_writeup_\w+)$",
        EXACT,
        "protocol settings and the write-up's printed run (data/seeds/turbogelu_mnist.json)",
    ),
    (
        r"^06_mnist_mlp\.",
        NUMERICS,
        "training: matrix products through MKL / oneDNN, whose kernels depend on the CPU",
    ),
    (
        r"^11_llm_tasks\.(seed_steps|noise_steps|noise_seeds|bf16_steps|bf16_seeds|paper_\w+)$",
        EXACT,
        "protocol settings and the source paper's published Tables 5 and 7 (llm_settings)",
    ),
    (
        r"^11_llm_tasks\.(speedup_|throughput_ratio_|activation_share_)",
        TIME,
        "ratios of times and the activation's share of a profiled step",
    ),
    (
        r"^11_llm_tasks\.",
        NUMERICS,
        "training, as the MNIST figures: matrix products through MKL / oneDNN, whose kernels "
        "depend on the CPU (experiments.tolerances --parts llm measures how far they move)",
    ),
    (
        r"^04_derivative_checks\.special_value_mismatches_torch$",
        NUMERICS,
        "PyTorch's own float32 GELU goes through oneDNN, whose kernel depends on the CPU: "
        "under DNNL_MAX_CPU_ISA=AVX2 it gets inf and -0 right or wrong differently",
    ),
    (r"^bench\.", TIME, "the benchmark's ratios of times"),
    (
        r"^(03_estrin_evaluation|05_timing|08_cells|10_activation_family|12_family_sweep)\..*"
        + _TIME_WORDS,
        TIME,
        "times, speedups and ratios of times",
    ),
    (
        # A sweep point's program is its fit rounded to float32; the fit (Remez through LAPACK
        # and numpy's transcendentals) is determined only to its rounding noise, so a
        # coefficient within that noise of a float32 midpoint rounds either way on another CPU
        # (exp2's fraction in the quick grid, c4 = 0x1.2509e3p-7 to 1e-11: its max error
        # 1.2328e-07 here, 1.2422e-07 under .ci/run's imitation). Only the best error per
        # function is a figure; the counts beside it are integers, held exactly.
        r"^12_family_sweep\.\w+_best_max_abs_error$",
        NUMERICS,
        "the error of a float32 rounding of a fit known to its rounding noise",
    ),
    (
        # 01's crossing_shift_per_degree too, a least-squares line (np.polyfit) through the
        # crossings of Remez fits, all through LAPACK: once numerics with a tolerance measured
        # between runs (5.6e-17, one ulp seen under OPENBLAS_CORETYPE=Haswell), which another
        # OpenBLAS kernel exceeded (Sandybridge: 1.6e-11 relative); a float64 result, by rule
        r"^(01_tail_clamping|02_irls_fitting|07_polynomial_family|12_family_sweep|table2)\.",
        EXACT,
        "float64 fits and their errors (to FLOAT64_RTOL: LAPACK and numpy's / scipy's "
        "transcendentals; counts, settings and published numbers bit for bit)",
    ),
    (
        r"^09_min_degree\..*" + _TIME_WORDS,
        TIME,
        "how long the searches took",
    ),
    (
        r"^09_min_degree\.",
        EXACT,
        "proven minimum degrees and counts of inputs set aside (exact LP certificates)",
    ),
    (
        r"^(03_estrin_evaluation|04_derivative_checks|08_cells|10_activation_family|"
        r"accuracy_gelu_\w+)\.",
        EXACT,
        "the kernels' bits against a fixed ground truth: dense errors, every 16-bit input, "
        "replays, operation counts",
    ),
]

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
                for part in ("same_sollya", "sollya"):  # the control, named by its version
                    sol = row.get(part, {})
                    if "max_abs_error" in sol and sol.get("sollya_version"):
                        name = f"table2.{row['name']}.{part}@sollya-{sol['sollya_version']}"
                        figs[name] = sol["max_abs_error"]
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
            m = records.read_json(path).get("machine")
        except (json.JSONDecodeError, AttributeError):
            continue
        if isinstance(m, dict) and m.get("cpu"):
            return f"{m['cpu']} ({m.get('logical_cpus', '?')} CPUs)"
    return "unknown machine"


class Unclassified(ValueError):
    """A figure that no rule of ``CLASS_RULES`` classifies, or a numerics figure without a
    measured tolerance: the comparison cannot say whether it matches."""


def classify(name: str) -> str:
    """The class of figure ``name`` (``CLASS_RULES``); raises ``Unclassified``."""
    for pattern, cls, _why in CLASS_RULES:
        if re.search(pattern, name):
            return cls
    raise Unclassified(f"figure {name!r} has no class: add a rule to compare.CLASS_RULES")


def load_tolerances(mode: str, path: Path = TOLERANCE_FILE) -> dict[str, float]:
    """Figure name -> absolute tolerance measured for ``mode`` ("quick" or "full"); {} when
    the file or the mode is absent."""
    if not Path(path).is_file():
        return {}
    data = records.read_json(path)
    return {k: float(v["tolerance"]) for k, v in data.get(mode, {}).get("figures", {}).items()}


# How an exact figure matches (``exact_match``). Bit for bit only what the code specifies
# exactly: an integer (a count, a degree, ulps of a 16-bit result against a correctly rounded
# value decided by mpmath) and the non-integers of EXACT_BITS below. Every other non-integer
# exact figure is a float64 result whose last bits depend on the machine: a fit's error or
# levelled error through a LAPACK solve (numpy's OpenBLAS picks its kernels by CPU: the AVX2
# EPYC's reference and the Xeon's differed by up to 1.3e-12 relative in notebook 07's floors),
# an error against a float64 program evaluated through a BLAS product (notebook 03's rounding
# errors: up to 1.6e-9 relative apart under .ci/run's imitation of another CPU, a different
# OpenBLAS kernel) or against a float64 reference through numpy's SIMD-dispatched exp / tanh
# or scipy's special functions, a mean of such errors, or a ratio of two. They match to
# FLOAT64_RTOL, the spec files' rule (turbogelu.approx.spec.MEASURED_RTOL, which says why
# 1e-7: the smallest such figures, 1.6e-7, are differences of values <= ~2 a few ulps apart).
# The kernels' and the replay's bits are held by the integer figures (replay mismatches, max
# ulps), bit for bit, not by these.
FLOAT64_RTOL = 1e-7
# (pattern, why): non-integer exact figures that are exactly specified, so bit for bit.
EXACT_BITS: list[tuple[str, str]] = [
    (r"^05_timing\.seed_", "the write-up's published speedups, entered as data"),
    (r"^11_llm_tasks\.paper_", "the source paper's published Tables 5 and 7, entered as data"),
    (
        r"^07_polynomial_family\.[a-z_]+_d\d+_paper_(ls|sollya)$",
        "the source paper's Table 2, entered as data",
    ),
    (
        r"^01_tail_clamping\.(shipped_range|best_range_degree_\d+)$",
        "a setting and points of the scanned grid of R",
    ),
    (
        r"^(09_min_degree|10_activation_family)\.\w*clamp$",
        "clamps: 16-bit values found by the search, or the settings table's",
    ),
    (
        r"^09_min_degree\.(\w+_near_tie_ulps|\w+_failure_x_(min|max)|bounded_tail_(x|abs))$",
        "settings, and 16-bit inputs",
    ),
    (r"^10_activation_family\.tier_abs_bound$", "a setting"),
    (
        r"^10_activation_family\.table8_\w+_paper_(max|rms)_rel$",
        "the source paper's Table 8, entered as data",
    ),
    (
        r"^07_polynomial_family\.fig2_paper_(fit_interval|clamp)$",
        "the source paper's (L_i, L_c) of Figure 2b, entered as data",
    ),
    (
        r"^07_polynomial_family\.fig2_\w+_(best_fit_interval|best_clamp|argmax)$",
        "points of the searched (L_i, L_c) grid and float32 inputs where an error peaks",
    ),
    (r"^08_cells\.tails_from$", "(16 - 1.5) / scale, scale a float32 value: exact in float64"),
    (
        r"_jump_at_0$",
        "2 |P(0)|: a sum of a few 16-bit coefficients times +-1, exact in float64 in any order",
    ),
    (
        r"_vs_mpmath$",
        "the kernels' float64 / float32 outputs against mpmath at a fixed precision",
    ),
    (
        r"(pct|frac)_correctly_rounded$",
        "a count of inputs (against a correctly rounded value mpmath decides) over a count",
    ),
]


def exact_bits(name: str) -> bool:
    """Whether non-integer exact figure ``name`` is exactly specified (``EXACT_BITS``)."""
    return any(re.search(pattern, name) for pattern, _why in EXACT_BITS)


def _rtol_text() -> str:
    return f"{FLOAT64_RTOL:g}".replace("e-0", "e-")


def _float64(name: str, new: float, ref: float) -> bool:
    """Whether an exact figure is a float64 result (to ``FLOAT64_RTOL``): not an integer, not
    an ``EXACT_BITS`` figure."""
    return not (isinstance(new, int) or isinstance(ref, int) or exact_bits(name))


def exact_match(name: str, new: float, ref: float) -> bool:
    """Whether exact figure ``name`` matches: an integer or an ``EXACT_BITS`` figure bit for bit
    (a JSON float round-trips exactly; NaN matches NaN), any other to ``FLOAT64_RTOL``."""
    if _float64(name, new, ref) and math.isfinite(new) and math.isfinite(ref):
        return abs(new - ref) <= FLOAT64_RTOL * abs(ref)
    return new == ref or (math.isnan(new) and math.isnan(ref))


def _same(cls: str, new: float, ref: float, tol: float | None, name: str = "") -> bool:
    if cls == EXACT:
        return exact_match(name, new, ref)
    if math.isnan(new) or math.isnan(ref):
        return math.isnan(new) and math.isnan(ref)
    # never held tighter than an exact figure: a tolerance measured as 0 (no two runs here
    # disagreed) still lets a float64 result move by FLOAT64_RTOL on another CPU
    return abs(new - ref) <= tol or exact_match(name, new, ref)


def compare(
    results_dir: Path, reference_dir: Path, tolerances: dict[str, float] | None = None
) -> dict:
    """{'checked': [(name, class, new, ref, ok, tolerance)], 'times': [(name, new, ref)],
    'missing': [(name, class)], 'new': [...], 'machines': (run, reference)}. ``tolerances``:
    the numerics figures' (``load_tolerances``). Raises ``Unclassified`` for a figure without
    a class, or a numerics figure without a tolerance."""
    tolerances = tolerances or {}
    new, ref = collect(results_dir), collect(reference_dir)
    classes = {name: classify(name) for name in sorted(set(new) | set(ref))}
    untolerated = [
        n for n in sorted(ref) if classes[n] == NUMERICS and n in new and n not in tolerances
    ]
    if untolerated:
        raise Unclassified(
            f"numerics figures without a measured tolerance ({TOLERANCE_FILE.name}; "
            f"python -m experiments.tolerances measures them): {', '.join(untolerated)}"
        )
    out = {"checked": [], "times": [], "missing": [], "new": sorted(set(new) - set(ref))}
    out["not_here"] = []
    isas = None
    for name in sorted(ref):
        cls = classes[name]
        if name not in new:
            if _PER_ISA.search(name) and isas is None:
                isas = cpu_isas()
            why = _not_runnable_here(name, isas)
            if why:
                out["not_here"].append((name, why))
            elif cls != TIME:
                out["missing"].append((name, cls))
            continue
        if cls == TIME:
            out["times"].append((name, new[name], ref[name]))
        else:
            tol = tolerances.get(name) if cls == NUMERICS else None
            ok = _same(cls, new[name], ref[name], tol, name)
            out["checked"].append((name, cls, new[name], ref[name], ok, tol))
    out["machines"] = (_machine(results_dir), _machine(reference_dir))
    return out


# the replay checks of one instruction set (08's cells_replay_mismatches_avx512, 10's
# replay_mismatches_16bit_avx512bf16, ...)
_PER_ISA = re.compile(r"[._]replay_mismatches_(?:\w+_)?(avx512bf16|avx512|avx2|scalar)$")


def cpu_isas() -> list[str]:
    """The instruction sets the kernels can run on this CPU ([] if the ops do not load)."""
    try:
        from turbogelu.ops import cpu_isas_available

        return cpu_isas_available()
    except (ImportError, OSError, RuntimeError):
        return []


# Table 2's Sollya control, named by the Sollya version that made it (collect): compared bit
# for bit (to FLOAT64_RTOL) with a run of the same version only, since fpminimax's choices
# change between versions; another version's figures are new ones, not differences
_SOLLYA = re.compile(r"@sollya-(.+)$")


def _not_runnable_here(name: str, isas: list[str] | None) -> str | None:
    """Why a reference figure the run lacks could not be made here, else None: the replay
    check of an ISA can only run where the ISA does (an AVX2-only CPU cannot make the
    reference's avx512 figures); a Sollya figure only with that Sollya version."""
    m = _PER_ISA.search(name)
    if m and isas is not None and m.group(1) not in isas:
        return f"this CPU cannot run {m.group(1)}"
    m = _SOLLYA.search(name)
    if m:
        return f"made by Sollya {m.group(1)}, which this run did not have"
    return None


def failed(res: dict) -> bool:
    """Whether an exact or numerics figure differs or is missing."""
    return bool(res["missing"]) or any(not c[4] for c in res["checked"])


def render(res: dict) -> str:
    run, refm = res["machines"]
    lines = [f"this run: {run}; reference: {refm}"]
    for cls, what in (
        (EXACT, f"bit for bit, float64 results to {_rtol_text()} relative"),
        (NUMERICS, "within measured tolerances"),
    ):
        rows = [c for c in res["checked"] if c[1] == cls]
        bad = sum(not c[4] for c in rows)
        lines.append(f"{cls} figures ({what}): {len(rows) - bad} of {len(rows)} match")
    for name, cls, n, r, ok, tol in res["checked"]:
        if not ok:
            how = f"{cls}, tolerance {tol:.3g}, off by {abs(n - r):.3g}" if tol is not None else cls
            if cls == EXACT and _float64(name, n, r):
                how += f" (a float64 figure: to {_rtol_text()} relative)"
            lines.append(f"  DIFFERS [{how}] {name}: {n!r} (reference {r!r})")
    for name, cls in res["missing"]:
        lines.append(f"  MISSING [{cls}] {name}")
    for name, why in res.get("not_here", []):
        lines.append(f"  not measurable here ({why}): {name}")
    times = res["times"]
    if times:
        lines.append(f"time figures ({len(times)}; never fail; new / reference, machines above):")
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
        data = records.read_json(path)
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


def save(
    results_dir: Path,
    reference_dir: Path,
    *,
    minimal: bool = False,
    reports_dir: Path | None = None,
) -> list[Path]:
    """Copy a run's small result files into ``reference_dir`` (replacing what was there), and
    of bench.jsonl only its last run. ``minimal``: only what the comparison reads (the quick
    reference: its plots would duplicate the full run's). ``reports_dir``: the run's executed
    notebooks and paper (``reports/``), rendered into ``reference_dir/report``
    (``rendered_report``) once the result files are in place."""
    if reports_dir is not None:  # before anything of the old reference is removed
        rendered_report.sources(reports_dir)
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
        records.write_jsonl(reference_dir / "bench.jsonl", rows, append=False)
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
    info = {**records.machine(), "saved_from": str(results_dir)}
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        pass
    if reports_dir is not None:
        written.append(rendered_report.write(reports_dir, reference_dir))
    records.write_json(reference_dir / "machine.json", info)
    return [*written, reference_dir / "machine.json"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.compare", description=__doc__)
    p.add_argument("--quick", action="store_true", help="compare with the quick-mode reference")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--reference", type=Path, default=None, help="(results/reference/<mode>)")
    p.add_argument("--save", action="store_true", help="make this run the reference")
    p.add_argument(
        "--reports",
        type=Path,
        default=REPO / "reports",
        help="the run's executed notebooks and paper, rendered into the full reference "
        "(default: reports/)",
    )
    args = p.parse_args(argv)
    ref = args.reference or REFERENCE / ("quick" if args.quick else "full")
    if args.save:
        # the full reference carries the run's rendered report, and the pages that state its
        # figures (README.md, docs/) are filled from it again
        committed_full = ref.resolve() == (REFERENCE / "full").resolve()
        # required for the committed full reference; elsewhere rendered when the run left one
        reports = None if args.quick else args.reports
        if reports is not None and not committed_full:
            try:
                rendered_report.sources(reports)
            except FileNotFoundError:
                reports = None
        try:
            files = save(args.results, ref, minimal=args.quick, reports_dir=reports)
        except (FileNotFoundError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"saved {len(files)} files to {ref}")
        if committed_full:
            from . import pages

            for page in pages.write(ref):
                print(f"rewrote {page.relative_to(REPO)} from the new reference")
        return 0
    if not ref.is_dir():
        print(f"no reference run at {ref}: nothing to compare (make one with --save)")
        return 0
    try:
        res = compare(args.results, ref, load_tolerances("quick" if args.quick else "full"))
    except (Unclassified, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(res))
    return 1 if failed(res) else 0


if __name__ == "__main__":
    sys.exit(main())
