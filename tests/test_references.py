"""No stale reference: the commands and repository paths the documents quote exist.

Checked: README.md, results/README.md, notebooks/README.md, experiments/README.md (their code
spans, fenced code blocks and Markdown links) and the comments (``//`` and one-line
``/* */``) of every source under kernels/. One test per document, so a failure names it;
each stale reference is reported as ``file:line: reference: why``.

The rule:

* ``python -m MODULE [WORD]``: ``python -m MODULE --help`` exits 0 (run with this
  interpreter, in the repository root, once per module). Where the module's usage line has
  a positional choice (argparse subcommands, ``{fit,codegen,report}``), the word after
  MODULE, if it is a plain word, must be one of them, and, for subcommands, ``python -m
  MODULE WORD --help`` must exit 0 too (``python -m turbogelu bench`` is stale: bench is
  ``python -m experiments bench``). Other modules (``pip``, ``pytest``) are held to the same.
* A path: a token with a ``/`` whose first component is an entry of the repository root or
  of the document's folder (``tests/…``, ``reference/full/`` in results/README.md,
  ``turbogelu/…`` in a kernel's comment), or whose last component has a file extension of
  EXTENSIONS (except, in a comment, a header: ``ATen/cuda/CUDAContext.h`` is another
  library's include path); and, in a code span of its own or in a comment, a bare file name
  with a source extension (``cells.py``; ``.md`` only with an upper-case stem, ``DESIGN.md``:
  ``table.md`` is what a sweep writes). A path must exist relative to the repository root,
  to the document's folder, or (in kernels/ comments) to kernels/include. A bare file name
  must be the name of some file of the repository (or lie in the document's own folder).
  A trailing ``:LINE`` or ``::test_name`` is dropped before the check.
* Not checked (they name something a run makes, or many things): a path with a
  ``<placeholder>`` or an upper-case one (``OUTDIR/summary.md``), a ``{template}`` or
  ``{a,b}`` list, a ``*`` glob, ``...``, ``~`` or ``$``; and a path under a git-ignored
  output folder (OUTPUTS: results/ except results/reference/ and results/README.md,
  reports/, data/MNIST/, data/raw/, data/shakespeare/, build/, .venv/), which need not
  exist in a fresh checkout.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DOCUMENTS = ["README.md", "results/README.md", "notebooks/README.md", "experiments/README.md"]
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".metal", ".mm"}
KERNEL_SOURCES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "kernels").rglob("*")
    if p.is_file() and p.suffix in SOURCE_SUFFIXES
)

# A bare file name is a reference only with one of these (an output such as `bench.jsonl` is
# named bare all the time); a path with a `/` with any of EXTENSIONS.
SOURCE_EXTENSIONS = {
    "py", "ipynb", "md", "cpp", "cc", "h", "hpp", "cu", "cuh", "metal", "mm", "sh", "toml",
    "yml", "yaml", "cfg",
}  # fmt: skip
HEADER_EXTENSIONS = {"h", "hpp", "cuh"}
EXTENSIONS = SOURCE_EXTENSIONS | {"json", "jsonl", "csv", "txt", "png", "html", "pdf", "cff"}

# Git-ignored output folders (.gitignore): what runs write there need not exist here.
OUTPUTS = ("results/", "reports/", "data/MNIST/", "data/raw/", "data/shakespeare/", "build/")
OUTPUTS += (".venv/",)
COMMITTED_OUTPUTS = ("results/reference/", "results/README.md")

HELP_TIMEOUT_S = 120

COMMAND = re.compile(r"(?<![\w.-])python3? -m ([A-Za-z_][\w.]*)(?:[ \t]+(\S+))?")
# A path-like token: word characters, dots, slashes, and the template marks (kept so that a
# template is seen, and skipped, whole).
TOKEN = re.compile(r"(?:[\w.*<>~$+-]|\{[^{}\s]*\}|/)+")
SKIP_MARKS = ("<", ">", "*", "{", "}", "...", "~", "$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
FENCE = re.compile(r"^\s*(```|~~~)")


@functools.cache
def _repo_file_names() -> frozenset[str]:
    names = set()
    skip = {".git", ".venv", "build", "__pycache__", ".ruff_cache", ".pytest_cache"}
    for folder, dirs, files in os.walk(ROOT):
        rel = Path(folder).relative_to(ROOT).as_posix() + "/"
        dirs[:] = [d for d in dirs if d not in skip and not _is_output(rel + d + "/")]
        names.update(files)
    return frozenset(names)


def _is_output(rel: str) -> bool:
    rel = rel.removeprefix("./")
    if rel.startswith(COMMITTED_OUTPUTS):
        return False
    return rel.startswith(OUTPUTS) or rel.rstrip("/") + "/" in OUTPUTS


@functools.cache
def _help(module: str, sub: str | None = None) -> tuple[int, str]:
    """(exit status, output) of ``python -m MODULE [SUB] --help``."""
    args = [sys.executable, "-m", module, *([sub] if sub else []), "--help"]
    try:
        done = subprocess.run(
            args, cwd=ROOT, capture_output=True, text=True, timeout=HELP_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return -1, f"no answer within {HELP_TIMEOUT_S} s"
    return done.returncode, done.stdout + done.stderr


@functools.cache
def _choices(module: str) -> tuple[tuple[str, ...], bool]:
    """The first positional choice of the module's usage, or (), and whether it is argparse's
    subcommands (``{fit,codegen,report} ...``) rather than a plain positional's choices."""
    _, text = _help(module)
    m = re.search(r"usage:(.*?)(?:\n\s*\n|$)", text, re.S)
    if not m:
        return (), False
    usage = m.group(1)
    while True:  # drop the optional arguments, [--tier {accurate,paper}] among them
        shorter = re.sub(r"\[[^\[\]]*\]", "", usage)
        if shorter == usage:
            break
        usage = shorter
    found = re.search(r"\{([\w,-]+)\}(\s+\.\.\.)?", usage)
    if not found:
        return (), False
    return tuple(found.group(1).split(",")), found.group(2) is not None


def _command(module: str, word: str | None) -> tuple[str, str | None]:
    """The module and the plain word after it (None if none) of a quoted command."""
    word = (word or "").strip("()[],.;:'\"`")
    return module.rstrip("."), word if re.fullmatch(r"[A-Za-z][\w-]*", word) else None


def _check_command(module: str, word: str | None) -> str | None:
    """Why ``python -m MODULE WORD`` is stale, or None."""
    rc, out = _help(module)
    if rc != 0:
        last = out.strip().splitlines()[-1:] or [""]
        return f"`python -m {module} --help` exits {rc}: {last[0][:200]}"
    choices, subcommands = _choices(module)
    if not choices or word is None:
        return None
    if word not in choices:
        return f"`python -m {module}` has no command {word!r} (it has {', '.join(choices)})"
    if not subcommands:
        return None
    rc, out = _help(module, word)
    if rc != 0:
        last = out.strip().splitlines()[-1:] or [""]
        return f"`python -m {module} {word} --help` exits {rc}: {last[0][:200]}"
    return None


def _bases(doc: str) -> list[Path]:
    bases = [ROOT, (ROOT / doc).parent]
    if doc.startswith("kernels/"):
        bases.append(ROOT / "kernels" / "include")
    return list(dict.fromkeys(bases))


def _check_path(token: str, doc: str, bare_ok: bool, link: bool = False) -> str | None:
    """Why the path ``token`` quoted in ``doc`` is stale, or None (also when it is no path
    by the rule of the module's docstring)."""
    path = re.sub(r"(::[\w\[\]-]+|:\d+(-\d+)?)$", "", token).rstrip(".,:;")
    if not path or any(mark in path for mark in SKIP_MARKS) or "://" in path:
        return None
    if any(re.fullmatch(r"[A-Z][A-Z_]*", p) for p in path.split("/")):
        return None  # a placeholder: OUTDIR/summary.md
    path = path.removeprefix("./")
    bases = _bases(doc)
    if link:  # a Markdown link: relative to the document's folder
        bases = [(ROOT / doc).parent]
    parts = [p for p in path.split("/") if p]
    if not parts:
        return None
    last = parts[-1]
    ext = last.rsplit(".", 1)[1] if "." in last.strip(".") else ""
    if "/" not in path.rstrip("/") and not link:
        if not bare_ok or ext not in SOURCE_EXTENSIONS:
            return None
        if ext == "md" and not last[:-3].isupper():
            return None
        here = (ROOT / doc).parent / path
        if _is_output(here.relative_to(ROOT).as_posix()):
            return None
        if here.exists() or path in _repo_file_names():
            return None
        return "no file of the repository has this name"
    anchored = [b for b in bases if (b / parts[0]).exists()]
    if not link and not anchored:
        if ext not in EXTENSIONS:
            return None  # not a path (bfloat16/float16, 1/2)
        if doc.startswith("kernels/") and ext in HEADER_EXTENSIONS:
            return None  # another library's include path (ATen/cuda/CUDAContext.h)
    for base in bases:
        target = base / path
        rel = os.path.relpath(target, ROOT).replace(os.sep, "/")
        if rel.startswith("../"):
            continue
        if target.exists():
            return None
        # an output folder's file, where the path's first component says which folder (not
        # `turbogelu/compare.py` read as results/turbogelu/compare.py)
        if (base == ROOT or base in anchored) and _is_output(rel + "/" * path.endswith("/")):
            return None
    where = " or ".join(
        "the repository root" if b == ROOT else b.relative_to(ROOT).as_posix() + "/" for b in bases
    )
    return f"no such path (relative to {where})"


def _markdown_pieces(text: str):
    """(line, text, kind) of the code of a Markdown document: "code" for a fenced block's
    line, "span" for a code span, "link" for a link's target."""
    lines = text.split("\n")
    prose = []
    in_fence = False
    for i, line in enumerate(lines, 1):
        if FENCE.match(line):
            in_fence = not in_fence
            prose.append("")
        elif in_fence:
            yield i, line, "code"
            prose.append("")
        else:
            prose.append(line)
    prose_text = "\n".join(prose)
    for m in CODE_SPAN.finditer(prose_text):
        yield prose_text.count("\n", 0, m.start()) + 1, m.group(2).replace("\n", " "), "span"
    without_spans = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose_text)
    for m in LINK.finditer(without_spans):
        yield without_spans.count("\n", 0, m.start()) + 1, m.group(1), "link"


def _comment_pieces(text: str):
    """(line, comment text, "comment") of a C/C++/CUDA/Metal source (// and one-line /* */;
    a // inside a string literal is taken for a comment, which only adds candidates)."""
    for i, line in enumerate(text.split("\n"), 1):
        parts = re.findall(r"/\*(.*?)\*/", line)
        if "//" in line:
            parts.append(line.split("//", 1)[1])
        for part in parts:
            yield i, part, "comment"


def stale_references(doc: str, text: str | None = None) -> list[str]:
    """``file:line: reference: why`` of each stale reference of ``doc`` (its text: ``text``
    where given, else the file's)."""
    if text is None:
        text = (ROOT / doc).read_text(encoding="utf-8")
    pieces = _markdown_pieces(text) if doc.endswith(".md") else _comment_pieces(text)
    found = []
    for line, piece, kind in pieces:
        if kind == "link":
            if re.match(r"[a-z][\w+.-]*:|#", piece):  # a URL, mailto: or an anchor
                continue
            why = _check_path(piece.split("#", 1)[0], doc, bare_ok=True, link=True)
            if why:
                found.append(f"{doc}:{line}: {piece}: {why}")
            continue
        for m in COMMAND.finditer(piece):
            module, word = _command(m.group(1), m.group(2))
            why = _check_command(module, word)
            if why:
                found.append(f"{doc}:{line}: python -m {module} {word or ''}".rstrip() + f": {why}")
        in_command = set()
        for m in COMMAND.finditer(piece):
            in_command.update(range(m.start(1), m.end(1)))
        # a bare name counts alone in its code span, or in a comment; not among a command's
        # arguments (`papermill a.ipynb out.ipynb`: out.ipynb is an output)
        bare_ok = kind == "comment" or (kind == "span" and len(piece.split()) == 1)
        for m in TOKEN.finditer(piece):
            if m.start() in in_command:
                continue  # a module's dotted name
            why = _check_path(m.group(0), doc, bare_ok)
            if why:
                found.append(f"{doc}:{line}: {m.group(0)}: {why}")
    return found


@pytest.mark.parametrize("doc", DOCUMENTS + KERNEL_SOURCES)
def test_no_stale_reference(doc):
    stale = stale_references(doc)
    assert not stale, f"{len(stale)} stale reference(s) in {doc}:\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("doc", "text", "expected"),
    [
        ("README.md", "run `python -m turbogelu bench`", "has no command 'bench'"),
        ("README.md", "`python -m turbogelu_nowhere`", "--help` exits 1"),
        ("results/README.md", "that `turbogelu/compare.py` compares", "no such path"),
        ("README.md", "see `DESIGN.md`", "no file of the repository has this name"),
        ("README.md", "[design](docs/NOWHERE.md)", "no such path"),
        ("kernels/cpu/x.cpp", "// (python -m turbogelu bench)", "has no command 'bench'"),
        ("kernels/cpu/x.cpp", "// kernels/cpu/nowhere.cpp's loop", "no such path"),
        ("kernels/cpu/x.cpp", "// approx/replay.py builds the same", "no such path"),
        ("kernels/cpu/x.cpp", "/* see nowhere_ops.cpp */", "no file of the repository"),
    ],
)
def test_the_rule_catches(doc, text, expected):
    """The kinds of staleness this test exists for are caught (in a synthetic text)."""
    stale = stale_references(doc, text)
    assert len(stale) == 1 and expected in stale[0], stale


@pytest.mark.parametrize(
    "text",
    [
        "`python -m experiments bench --quick`",
        "`python -m turbogelu fit --gelu-mode exact`",
        "`results/bench/*.png`, `results/<stem>.json`, `mnist_{seed,swap}.json`",
        "`reports/paper/paper.html`, `results/bench.jsonl`, `bench.md`, `out.ipynb x`",
        "`results/reference/full/`, `tests/test_references.py::test_no_stale_reference`",
        "`bfloat16/float16`, `x/y`, [a link](https://example.org/x.md), [top](#layout)",
        "`table.md`, `python -m venv .venv`, `python -m experiments.compare --quick`",
    ],
)
def test_the_rule_passes(text):
    """What the rule does not count as stale: real commands, outputs, templates, non-paths."""
    assert stale_references("README.md", text) == []
