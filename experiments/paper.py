"""Build the paper from its source and the results of the runs.

``paper/paper.md`` is Markdown with three kinds of placeholders, filled from ``results/``:

* ``{{ expr : spec }}`` - a value: ``expr`` is a Python expression over the results (each
  ``results/<stem>.json`` is the name ``<stem>``, a notebook's ``results/NN_*.json`` also
  ``nbNN``, and ``data/specs/<name>.json`` is ``spec_<name>``; dict keys read as attributes or
  ``["key"]``, list items as ``[i]``; also abs, min, max, len, round), formatted with the
  format ``spec`` (``.3g``, ``.1%``, ``,d``; none: ``str``).
  Example: ``{{ table2[3].best.max_abs_error * 1e3 : .3f }}``.
* ``{{ table: name }}`` - a generated table (``TABLES``: a function of the results).
* ``{{ figure: path | caption }}`` - a PNG from ``results/`` copied next to the output, shown
  with its caption as "Figure n: caption", numbered in order. ``{sweep}`` in the path is the
  default sweep's folder of the mode (``default``, or ``default_quick`` in quick mode),
  ``{family_sweep}`` the family sweep's (``family``, ``family_quick``).

A paper is built in one mode, full or quick (``--quick``, what ``make reproduce QUICK=1``
runs), from the results of that mode: the sweep folder of the mode, and every notebook result
it reads must say it ran in that mode (``parameters.quick``), else the build fails naming the
file. A quick paper's first line says that it is one (``QUICK_BANNER``).

Every number in the paper's prose must come from a placeholder: ``numeric_literals`` lists
the numbers of the filled text that no placeholder produced, except those that by rule are not
figures (a digit inside a word such as bf16 or H200, heading and list numbering, code spans
and blocks, math between ``$``, the number after Table/Figure/Section/Eq., citation markers
such as ``[3]`` and the bibliographic entries of the References section). The build fails on
any (``tests/test_paper.py`` checks the committed source).

Output: ``reports/paper/paper.md`` (filled), ``paper.html`` (pandoc with ``--mathml``: the
math as MathML, which browsers render without a network; pandoc comes from the
``pypandoc-binary`` package of requirements.txt, or from ``PATH``: without one the build
fails, saying so, after writing the Markdown), ``paper.pdf`` when a LaTeX engine is installed
too (else skipped, saying so).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import records

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "paper" / "paper.md"
RESULTS = ROOT / "results"
OUT = ROOT / "reports" / "paper"

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)


class Missing(LookupError):
    """A placeholder reads a result that no run has written. (Not a KeyError: eval's name
    lookup would take a KeyError for "not a local" and fall through to a NameError.)"""


class _View:
    """Read-only attribute/index access to JSON data, naming the path when a key is missing."""

    def __init__(self, data, path: str):
        self._data, self._path = data, path

    def _wrap(self, value, path):
        return _View(value, path) if isinstance(value, dict | list) else value

    def __getattr__(self, key: str):
        if key.startswith("_"):
            raise AttributeError(key)
        return self[key]

    def __getitem__(self, key):
        try:
            value = self._data[key]
        except (KeyError, IndexError, TypeError):
            raise Missing(f"{self._path}[{key!r}]") from None
        return self._wrap(value, f"{self._path}[{key!r}]")

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        for i, v in enumerate(self._data) if isinstance(self._data, list) else []:
            yield self._wrap(v, f"{self._path}[{i}]")


class _Results(dict):
    """The namespace of expressions: result stems load lazily from ``results/``."""

    def __init__(self, root: Path, quick: bool = False):
        super().__init__(abs=abs, min=min, max=max, len=len, round=round)
        self.root = root
        self.quick = quick

    def __missing__(self, stem: str):
        path = self.root / f"{stem}.json"
        nb = re.fullmatch(r"nb(\d\d)", stem)
        if nb:  # nb01: the results of notebooks/01_*.ipynb (a stem is not an identifier)
            found = sorted(self.root.glob(f"{nb.group(1)}_*.json"))
            path = found[0] if found else self.root / f"{nb.group(1)}_<notebook>.json"
        elif stem.startswith("spec_"):  # spec_gelu_exact: data/specs/gelu_exact.json
            path = ROOT / "data" / "specs" / f"{stem[5:]}.json"
        if not path.is_file():
            raise Missing(f"{path} (no run wrote it)")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        ran_quick = data.get("parameters", {}).get("quick") if isinstance(data, dict) else None
        if ran_quick is not None and bool(ran_quick) != self.quick:
            raise ValueError(
                f"{path} is from a {'quick' if ran_quick else 'full'} run; this paper is built "
                f"in {'quick' if self.quick else 'full'} mode: build it "
                f"{'without' if self.quick else 'with'} --quick, or rerun the notebook"
            )
        view = _View(data, stem)
        self[stem] = view
        return view


def _table2(results: _Results) -> str:
    from turbogelu.approx import table2

    return table2.render_markdown(results["table2"]._data)


def _recorded(results: _Results, notebook: str, key: str, what: str):
    """What ``notebook``'s results file holds under ``key``; Missing when it was written by a
    version of the notebook from before ``what`` was added to it."""
    value = results[notebook]._data.get(key)
    if value is None:
        raise Missing(
            f"{notebook}.{key} (notebook {notebook[2:]} from before {what}: run it again)"
        )
    return value


def _table8(results: _Results) -> str:
    """The source paper's Table 8 (fits of 2^f on [0, 1]) as notebook 10 reproduced it."""
    from turbogelu.approx import exp2

    return exp2.render_table8(_recorded(results, "nb10", "table8", "Table 8"))


def _bench_paper(results: _Results) -> str:
    """The source paper's Tables 4, 9 and 10 on this CPU, as notebook 11 recorded them
    (``bench_paper.render``)."""
    from . import bench_paper

    return bench_paper.render(_recorded(results, "nb11", "bench_paper", "the tables"))


def _table6(results: _Results) -> str:
    """The source paper's Table 6 in miniature (``llm_report.render_table6``), as notebook 11
    recorded the ablation (``python -m experiments llm ablation``)."""
    from . import llm_report

    return llm_report.render_table6(_recorded(results, "nb11", "ablation", "the Table 6 ablation"))


def _table6_bf16(results: _Results) -> str:
    """Table 6 in miniature on the bfloat16 study's checkpoints (``llm_report.render_table6``
    of the ``ablation`` in notebook 11's bfloat16 record)."""
    from . import llm_report

    bf16 = _recorded(results, "nb11", "bf16", "the bfloat16 study")
    if bf16.get("ablation") is None:
        raise Missing("nb11.bf16.ablation (notebook 11 from before the bfloat16 ablation: run it "
                      "again)")  # fmt: skip
    return llm_report.render_table6(bf16["ablation"])


def _table7_bf16(results: _Results) -> str:
    """The source paper's Table 7 in miniature with its programs, the model in bfloat16
    (``llm_report.render_table7_bf16``), as notebook 11 recorded the study (``python -m
    experiments llm bf16``)."""
    from . import llm_report

    return llm_report.render_table7_bf16(_recorded(results, "nb11", "bf16", "the bfloat16 study"))


def _family_fronts(results: _Results) -> str:
    """The family sweep's Pareto fronts per function beside the shipped programs, as notebook
    12 recorded them."""
    fronts = _recorded(results, "nb12", "fronts", "the family sweep")
    shipped = {(r["target"], r["tier"]): r for r in _recorded(results, "nb12", "shipped", "it")}
    lines = [
        "| function | program | degree | method | Horner ops | max abs error "
        "| bf16 / fp16 max ulp |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for target, rows in fronts.items():
        for r in rows:
            ulp = (
                ""
                if r.get("bf16_max_ulp") is None
                else f"{r['bf16_max_ulp']} / {r['fp16_max_ulp']}"
            )
            lines.append(
                f"| {target} | front: {r['variable']}, R = {r['fit_range']:g} | {r['degree']} "
                f"| {r['method']} | {r['ops_horner']} | {r['max_abs_error']:.2e} | {ulp} |"
            )
        for tier in ("accurate", "paper"):
            s = shipped.get((target, tier))
            if s:
                lines.append(f"| {target} | shipped {tier} | {s['degree']} | | {s['ops_horner']} "
                             f"| {s['max_abs_error']:.2e} | |")  # fmt: skip
    return "\n".join(lines)


def sweep_name(quick: bool) -> str:
    """The default sweep's folder under ``results/sweeps/`` in each mode (``sweep.out_dir``)."""
    return "default_quick" if quick else "default"


def _sweep_front(results: _Results) -> str:
    """The default sweep's Pareto front (max error vs Horner operations), from its table."""
    import csv

    base = results.root / "sweeps" / sweep_name(results.quick)
    try:
        front = records.read_json(base / "front.json")["front"]
        rows = {r["id"]: r for r in csv.DictReader((base / "table.csv").open())}
    except FileNotFoundError as exc:
        raise Missing(f"{exc.filename} (no sweep wrote it)") from None
    lines = [
        "| R | degree | method | Horner ops | max abs error | bf16 max ulp | time (µs) |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for pid in front:
        r = rows[pid]
        t = f"{float(r['time_us']):.1f}" if r.get("time_us") else "-"
        lines.append(
            f"| {r['fit_range']} | {r['degree']} | {r['method']} | {r['ops_horner']} | "
            f"{float(r['max_abs_error']):.3e} | {r['bf16_max_ulp']} | {t} |"
        )
    return "\n".join(lines)


def _bench_targets(results: _Results) -> str:
    """The speed targets evaluated from the benchmark's run (results/bench_targets.json,
    written by ``python -m experiments bench``; from the last run of results/bench.jsonl where
    an older benchmark wrote no such file)."""
    from . import bench_report, bench_targets

    try:
        result = results["bench_targets"]._data
    except Missing:
        jsonl = results.root / "bench.jsonl"
        if not jsonl.is_file():
            raise
        result = bench_targets.evaluate(bench_report.add_ratios(bench_report.load(jsonl)))
    return bench_targets.render(result, heading=False)


def _table3(results: _Results) -> str:
    """The source paper's Table 3 beside this machine's family rows (results/bench.jsonl,
    ``bench_report.table3``)."""
    from . import bench_report

    jsonl = results.root / "bench.jsonl"
    rows = bench_report.load(jsonl) if jsonl.is_file() else []
    fam = [r for r in rows if r.get("bench") == "family"]
    if not fam:
        raise Missing(
            f"the benchmark's family rows ({jsonl}: python -m experiments bench --family)"
        )
    return bench_report.table3(fam)


def _llm_tasks(results: _Results) -> str:
    """The language-model tasks (notebook 11's figures): per task the seed run's validation
    change beside the paper's Table 7, the noise protocol's paired validation difference with
    its 95 % interval and the native seed-to-seed sd, the swap's validation changes (accurate
    tier, paper tier, accurate tier with the exp2 softmax) and the step throughput ratio."""
    from .llm import TASKS

    f = results["nb11"]._data["figures"]

    def get(name: str, spec: str) -> str:
        v = f.get(name)
        return "" if v is None else format(v, spec)

    lines = [
        "| task | seed: val change | paper Table 7 | noise: val difference [95 %] | native sd"
        " | swap: accurate | paper tier | exp2 softmax | throughput poly / native |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in TASKS:
        noise = (
            f"{get(f'noise_{t}_val_mean', '+.1e')} [{get(f'noise_{t}_val_ci_low', '+.1e')},"
            f" {get(f'noise_{t}_val_ci_high', '+.1e')}]"
        )
        lines.append(
            f"| {t} | {get(f'seed_{t}_val_loss_change', '+.1e')}"
            f" | {get(f'paper_table7_{t}_change', '+.4f')} | {noise}"
            f" | {get(f'noise_{t}_val_native_sd', '.1e')}"
            f" | {get(f'swap_{t}_polynomial_delta_val_loss', '+.1e')}"
            f" | {get(f'swap_{t}_polynomial_paper_delta_val_loss', '+.1e')}"
            f" | {get(f'swap_{t}_polynomial_softmax_delta_val_loss', '+.1e')}"
            f" | {get(f'throughput_ratio_{t}', '.2f')} |"
        )
    return "\n".join(lines)


def _sized16(results: _Results) -> str:
    """The 16-bit cells programs sized for their format (data/specs/cells16/, committed specs
    rather than a run's results: what the kernels run in each format), with the search's
    proof one degree lower and the operations per element against the float32 program's."""
    from turbogelu.approx import cells16
    from turbogelu.approx import spec as specmod

    lines = [
        "| function | format | degree (float32's) | t* one degree lower "
        "| operations (float32's) | max ulp from the 1-ulp region on "
        "| matched derivative: max \\|error\\| |",
        "|---|---|---|---:|---|---:|---:|",
    ]
    for fn, fmt in cells16.SIZED:
        doc = specmod.load(cells16.spec_path(fn, fmt), "cells16")
        d, top = doc["degree"], cells16.SHIPPED_DEGREE
        lower = next(s for s in doc["search"] if s["degree"] == d - 1)["t_star"]
        matched = doc["backward_matched"]["errors"]["max_abs_float32"]
        lines.append(
            f"| {fn} | {fmt} | {d} ({top}) | {lower:.2f} "
            f"| {cells16.operations(fn, d)} ({cells16.operations(fn, top)}) "
            f"| {doc['forward']['errors']['max_ulp']} | {matched:.1e} |"
        )
    return "\n".join(lines)


# Generated tables: name -> function of the results namespace, returning Markdown.
TABLES: dict[str, Callable[[_Results], str]] = {
    "table2": _table2,
    "table8": _table8,
    "bench_paper": _bench_paper,
    "table6": _table6,
    "table6_bf16": _table6_bf16,
    "table7_bf16": _table7_bf16,
    "sweep_front": _sweep_front,
    "family_fronts": _family_fronts,
    "bench_targets": _bench_targets,
    "table3": _table3,
    "llm_tasks": _llm_tasks,
    "sized16": _sized16,
}


@dataclass
class Filled:
    """The filled text and the spans of it that placeholders produced."""

    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)


def fill(
    source: str,
    results_dir: Path = RESULTS,
    *,
    strict: bool = True,
    quick: bool = False,
    figure_href: Callable[[Path], str] | None = None,
    tables: dict[str, Callable[[_Results], str]] | None = None,
) -> Filled:
    """Replace every placeholder from the results of mode ``quick``; with ``strict`` a missing
    result raises ``Missing`` (listing all of them), else it is shown as ``[missing: ...]``.
    ``figure_href``: the link a figure's file gets (default ``figures/<name>``, where ``build``
    copies it). ``tables``: generated tables besides ``TABLES``."""
    results = _Results(Path(results_dir), quick)
    results.figure_href = figure_href or (lambda path: f"figures/{path.name}")
    results.tables = {**TABLES, **(tables or {})}
    out: list[str] = []
    filled = Filled("")
    pos = n = 0
    for m in _PLACEHOLDER.finditer(source):
        out.append(source[pos : m.start()])
        n += m.start() - pos
        body = m.group(1).strip()
        try:
            text = _expand(body, results, filled)
        except Missing as exc:
            filled.missing.append(f"{body}: {exc.args[0]}")
            text = f"[missing: {body}]"
        out.append(text)
        filled.spans.append((n, n + len(text)))
        n += len(text)
        pos = m.end()
    out.append(source[pos:])
    filled.text = "".join(out)
    if strict and filled.missing:
        raise Missing("results missing for:\n  " + "\n  ".join(filled.missing))
    return filled


def _expand(body: str, results: _Results, filled: Filled) -> str:
    kind, _, rest = body.partition(":")
    kind = kind.strip()
    if kind == "table":
        name = rest.strip()
        if name not in results.tables:
            raise ValueError(f"unknown table {name!r}; known: {sorted(results.tables)}")
        return results.tables[name](results).rstrip("\n")
    if kind == "figure":
        rel, _, caption = rest.partition("|")
        rel = rel.strip().replace("{sweep}", sweep_name(results.quick))
        rel = rel.replace("{family_sweep}", "family_quick" if results.quick else "family")
        # "results/..." is under the results folder being read, whatever its name
        inside = rel.removeprefix("results/")
        path = results.root / inside if inside != rel else Path(ROOT, rel)
        if not path.is_file():
            raise Missing(f"{rel} (no run wrote it)")
        filled.figures.append(path)
        # numbered in order; pandoc shows an image alone in its paragraph as a figure with
        # this text as its visible caption
        href = results.figure_href(path)
        return f"![Figure {len(filled.figures)}: {caption.strip()}]({href})"
    expr, _, spec = body.rpartition(":") if ":" in body else (body, "", "")
    value = eval(expr, {"__builtins__": {}}, results)  # noqa: S307 (the functions: _Results)
    if isinstance(value, _View):
        raise ValueError(f"{expr!r} is a dict or list, not a value")
    return format(value, spec.strip())


# ---------------------------------------------------------------- the numbers rule

_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?%?(?![\w])")
_EXEMPT_PATTERNS = [
    re.compile(r"```.*?```", re.S),  # code blocks
    re.compile(r"`[^`\n]*`"),  # code spans
    re.compile(r"\$[^$\n]+\$"),  # math
    re.compile(r"^#+[ \t]+[\d.]+", re.M),  # heading numbers
    re.compile(r"^[ \t]*\d+\.[ \t]", re.M),  # ordered-list markers
    re.compile(r"\b(?:Table|Figure|Fig\.|Section|Eq\.)[ \t]+\d+"),  # references
    re.compile(r"!\[[^\]]*\]\([^)]*\)"),  # image links (their captions are ours to write)
    re.compile(r"<!--.*?-->", re.S),  # comments
    re.compile(r"(?<![\w\]])\[\d+(?:\s*[,–-]\s*\d+)*\]"),  # citations: [3], [1, 4], [5–7]
    re.compile(r"^## References[ \t]*\n.*?(?=^## |\Z)", re.M | re.S),  # bibliographic data
]


def numeric_literals(filled: Filled) -> list[tuple[int, str]]:
    """(line number, literal) of every number in ``filled.text`` that no placeholder produced
    and no rule of the module docstring exempts."""
    text = filled.text
    exempt = list(filled.spans)
    for pat in _EXEMPT_PATTERNS:
        exempt += [(m.start(), m.end()) for m in pat.finditer(text)]
    exempt.sort()
    found = []
    for m in _NUMBER.finditer(text):
        if any(a <= m.start() and m.end() <= b for a, b in exempt):
            continue
        found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return found


# ---------------------------------------------------------------- rendering

QUICK_BANNER = (
    "**Quick-mode report** (`make reproduce QUICK=1`): every run behind it used its small "
    "settings (short timings, small training subsets, few epochs, a small sweep) to check the "
    "pipeline. Its numbers are not results; the full `make reproduce` makes those.\n\n"
)
# pandoc's reader: its Markdown with TeX math between dollars (rendered as MathML) and tables
_PANDOC_FROM = "markdown+tex_math_dollars+pipe_tables+implicit_figures"
_STYLE = (
    "<style>body{max-width:50em}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #bbb;padding:2px 6px}figure{margin:1.5em 0}"
    "figcaption{font-size:.9em;color:#333}img{max-width:100%}</style>"
)


class PandocMissing(RuntimeError):
    """No pandoc to render the paper with."""


def pandoc_path() -> str | None:
    """pandoc from the pypandoc-binary package (requirements.txt), else the one on PATH."""
    try:
        import pypandoc

        return pypandoc.get_pandoc_path()
    except (ImportError, OSError):
        return shutil.which("pandoc")


def _pandoc(args: list[str], text: str, cwd: Path) -> subprocess.CompletedProcess:
    pandoc = pandoc_path()
    if pandoc is None:
        raise PandocMissing(
            "the paper's HTML needs pandoc (it renders the math as MathML): install the "
            "requirements (`pip install -r requirements.txt`: pypandoc-binary ships pandoc) or "
            "put a pandoc on PATH; the filled Markdown is written"
        )
    return subprocess.run(
        [pandoc, "-f", _PANDOC_FROM, *args],
        input=text,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def render_html(markdown_text: str, out_dir: Path, title: str = "turbogelu") -> str:
    """A standalone HTML page of ``markdown_text``, math as MathML (pandoc ``--mathml``:
    no script, no network)."""
    args = ["-t", "html5", "-s", "--mathml", "--metadata", f"pagetitle={title}"]
    with tempfile.TemporaryDirectory() as tmp:
        style = Path(tmp) / "style.html"
        style.write_text(_STYLE)
        proc = _pandoc([*args, "--include-in-header", str(style)], markdown_text, out_dir)
    if proc.returncode != 0:
        raise RuntimeError(f"pandoc failed to render the HTML:\n{proc.stderr[-2000:]}")
    return proc.stdout


def build(
    source: Path = SOURCE,
    results_dir: Path = RESULTS,
    out_dir: Path = OUT,
    *,
    quick: bool = False,
    strict: bool = True,
    pdf: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Fill from the results of mode ``quick``, check the numbers rule, write Markdown +
    HTML (+ PDF when asked and possible)."""
    text = Path(source).read_text()
    filled = fill(text, results_dir, strict=strict, quick=quick)
    stray = numeric_literals(filled)
    if stray:
        lines = ", ".join(f"line {ln}: {lit}" for ln, lit in stray[:20])
        raise ValueError(f"numbers in the paper that no placeholder produced: {lines}")
    unknown = unresolved_citations(filled.text)
    if unknown:
        raise ValueError(f"citations of no entry in the References section: {unknown}")
    out_dir = Path(out_dir)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    for fig in filled.figures:
        shutil.copyfile(fig, out_dir / "figures" / fig.name)
    body = (QUICK_BANNER if quick else "") + filled.text
    md = out_dir / "paper.md"
    md.write_text(
        body + f"\n<!-- generated by python -m experiments paper from {Path(source).name}"
        f"{' --quick' if quick else ''} -->\n"
    )
    written = {"markdown": str(md)}
    page = out_dir / "paper.html"
    page.write_text(render_html(body, out_dir, "turbogelu (quick mode)" if quick else "turbogelu"))
    written["html"] = str(page)
    pdf_path = _pdf(body, out_dir, log) if pdf else None
    if pdf_path:
        written["pdf"] = pdf_path
    if filled.missing:
        log(f"{len(filled.missing)} placeholder(s) without results (shown as [missing: ...])")
    written["missing"] = filled.missing
    return written


# [3], [1, 4], [5–7]; not an index such as regions[0]
_CITATION = re.compile(r"(?<![\w\]])\[(\d+(?:\s*[,–-]\s*\d+)*)\]")


def unresolved_citations(text: str) -> list[int]:
    """Cited numbers ([3], [1, 4], [5–7]) that no numbered entry of ``## References`` has."""
    refs = re.search(r"^## References[ \t]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    entries = set(map(int, re.findall(r"^(\d+)\.[ \t]", refs.group(1), re.M))) if refs else set()
    cited = set()
    body = text[: refs.start()] if refs else text
    for m in _CITATION.finditer(body):
        for part in re.split(r"\s*,\s*", m.group(1)):
            ends = [int(n) for n in re.split(r"\s*[–-]\s*", part)]  # "5" or "5–7"
            cited.update(range(ends[0], ends[-1] + 1))
    return sorted(cited - entries)


def _pdf(body: str, out_dir: Path, log: Callable[[str], None]) -> str | None:
    """paper.pdf through pandoc and a LaTeX engine, when one is installed (else None, said).
    LaTeX numbers the figures itself, so their captions lose the "Figure n: " written for
    the HTML."""
    engine = next((e for e in ("xelatex", "lualatex", "pdflatex") if shutil.which(e)), None)
    if engine is None:
        log(
            "PDF skipped: no LaTeX engine (xelatex, lualatex or pdflatex) found; the README "
            "says how to install one (HTML written)"
        )
        return None
    text = re.sub(r"!\[Figure \d+: ", "![", body)
    pdf = out_dir / "paper.pdf"
    args = ["-o", str(pdf), f"--pdf-engine={engine}", "--resource-path", str(out_dir)]
    proc = _pandoc([*args, "-V", "geometry:margin=2.5cm"], text, out_dir)
    if proc.returncode != 0:
        log(f"PDF failed ({engine}):\n{proc.stderr[-2000:]}")
        return None
    missing = sorted(set(re.findall(r"Missing character: There is no (\S+)", proc.stderr)))
    if missing:  # the PDF is written, but these characters are blank in it
        log(f"PDF written without glyphs for {' '.join(missing)} (not in the LaTeX font)")
    return str(pdf)
