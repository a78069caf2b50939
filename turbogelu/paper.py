"""Build the paper from its source and the results of the runs.

``paper/paper.md`` is Markdown with three kinds of placeholders, filled from ``results/``:

* ``{{ expr : spec }}`` - a value: ``expr`` is a Python expression over the results (each
  ``results/<stem>.json`` is the name ``<stem>``, a notebook's ``results/NN_*.json`` also
  ``nbNN``, and ``data/specs/<name>.json`` is ``spec_<name>``; dict keys read as attributes or
  ``["key"]``, list items as ``[i]``; also abs, min, max, len, round), formatted with the
  format ``spec`` (``.3g``, ``.1%``, ``,d``; none: ``str``).
  Example: ``{{ table2[3].best.max_abs_error * 1e3 : .3f }}``.
* ``{{ table: name }}`` - a generated table (``TABLES``: a function of the results).
* ``{{ figure: path | caption }}`` - a PNG from ``results/`` copied next to the output.

Every number in the paper's prose must come from a placeholder: ``numeric_literals`` lists
the numbers of the filled text that no placeholder produced, except those that by rule are not
figures (a digit inside a word such as bf16 or H200, heading and list numbering, code spans
and blocks, math between ``$``, and the number after Table/Figure/Section/Eq.). The build
fails on any (``tests/test_paper.py`` checks the committed source).

Output: ``reports/paper/paper.md`` (filled), ``paper.html`` (always; mistune, which nbconvert
brings), ``paper.pdf`` when pandoc and a LaTeX engine are installed.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

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

    def __init__(self, root: Path):
        super().__init__(abs=abs, min=min, max=max, len=len, round=round)
        self.root = root

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
        view = _View(data, stem)
        self[stem] = view
        return view


def _table2(results: _Results) -> str:
    from .approx import table2

    return table2.render_markdown(results["table2"]._data)


def _sweep_front(results: _Results) -> str:
    """The default sweep's Pareto front (max error vs Horner operations), from its table."""
    import csv

    base = results.root / "sweeps" / "default"
    try:
        front = json.loads((base / "front.json").read_text())["front"]
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
    written by ``python -m turbogelu bench``; from the last run of results/bench.jsonl where
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


# Generated tables: name -> function of the results namespace, returning Markdown.
TABLES: dict[str, Callable[[_Results], str]] = {
    "table2": _table2,
    "sweep_front": _sweep_front,
    "bench_targets": _bench_targets,
}


@dataclass
class Filled:
    """The filled text and the spans of it that placeholders produced."""

    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)


def fill(source: str, results_dir: Path = RESULTS, *, strict: bool = True) -> Filled:
    """Replace every placeholder; with ``strict`` a missing result raises ``Missing`` (listing
    all of them), else it is shown as ``[missing: ...]``."""
    results = _Results(Path(results_dir))
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
        if name not in TABLES:
            raise ValueError(f"unknown table {name!r}; known: {sorted(TABLES)}")
        return TABLES[name](results).rstrip("\n")
    if kind == "figure":
        rel, _, caption = rest.partition("|")
        path = Path(results.root.parent, rel.strip())
        if not path.is_file():
            raise Missing(f"{rel.strip()} (no run wrote it)")
        filled.figures.append(path)
        return f"![{caption.strip()}](figures/{path.name})"
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


def render_html(markdown_text: str, title: str = "turbogelu") -> str:
    import mistune

    text = re.sub(r"<!--.*?-->\n?", "", markdown_text, flags=re.S)  # source comments
    body = mistune.create_markdown(plugins=["table", "math"])(text)
    return (
        "<!doctype html>\n<!-- generated by python -m turbogelu paper -->\n<html><head>"
        f'<meta charset="utf-8"><title>{html.escape(title)}</title>'
        "<style>body{max-width:48em;margin:2em auto;font-family:sans-serif;line-height:1.5}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px}"
        "img{max-width:100%}</style></head><body>\n" + body + "\n</body></html>\n"
    )


def build(
    source: Path = SOURCE,
    results_dir: Path = RESULTS,
    out_dir: Path = OUT,
    *,
    strict: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Fill, check the numbers rule, write Markdown + HTML (+ PDF when possible)."""
    text = Path(source).read_text()
    filled = fill(text, results_dir, strict=strict)
    stray = numeric_literals(filled)
    if stray:
        lines = ", ".join(f"line {ln}: {lit}" for ln, lit in stray[:20])
        raise ValueError(f"numbers in the paper that no placeholder produced: {lines}")
    out_dir = Path(out_dir)
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    for fig in filled.figures:
        shutil.copyfile(fig, out_dir / "figures" / fig.name)
    header = f"<!-- generated by python -m turbogelu paper from {Path(source).name} -->\n"
    md = out_dir / "paper.md"
    md.write_text(header + filled.text)
    page = out_dir / "paper.html"
    page.write_text(render_html(filled.text))
    written = {"markdown": str(md), "html": str(page)}
    pdf = _pdf(md, out_dir, log)
    if pdf:
        written["pdf"] = pdf
    if filled.missing:
        log(f"{len(filled.missing)} placeholder(s) without results (shown as [missing: ...])")
    written["missing"] = filled.missing
    return written


def _pdf(md: Path, out_dir: Path, log: Callable[[str], None]) -> str | None:
    pandoc = shutil.which("pandoc")
    engine = next((e for e in ("xelatex", "pdflatex", "lualatex") if shutil.which(e)), None)
    if not (pandoc and engine):
        log("PDF skipped: needs pandoc and a LaTeX engine (HTML written)")
        return None
    pdf = out_dir / "paper.pdf"
    cmd = [pandoc, str(md), "-o", str(pdf), f"--pdf-engine={engine}"]
    proc = subprocess.run(cmd, cwd=out_dir, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        log(f"PDF failed ({' '.join(cmd)}):\n{proc.stderr[-2000:]}")
        return None
    return str(pdf)
