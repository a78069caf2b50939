"""The rendered report of a reference run: what a reader sees on a code-hosting site without
running anything.

``make reproduce`` leaves the executed notebooks in ``reports/notebooks/`` and the paper in
``reports/paper/``; ``python -m experiments.compare --save`` (the step that makes a run the
reference) calls ``write`` to put them beside the reference's result files, in
``results/reference/full/report/``:

* ``notebooks/NN_name.md``: each executed notebook as Markdown (code, printed output, tables,
  figures), which code-hosting sites render; an executed ``.ipynb`` would carry every figure
  again as base64;
* ``paper.md`` and ``paper.html``: the paper filled from the run;
* ``figures/``: the images of the notebooks and the paper that the reference does not already
  hold, each stored once (an image shown twice, byte for byte the same, is one file both link
  to; one the reference holds, such as a plot a notebook saved, is linked where it is), PNGs
  above ``MAX_PNG_BYTES`` written again smaller;
* ``manifest.json``: the SHA-256 of every result file of the reference the report was
  rendered beside, so that ``problems`` (and ``tests/test_rendered_report.py``) can tell that
  the report belongs to the reference it sits in: the same run.

The whole folder is kept under ``MAX_BYTES``; ``write`` fails rather than exceed it.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from pathlib import Path

from . import records

FOLDER = "report"
MANIFEST = "manifest.json"
# The report is committed with every reference: it must stay small (issue 35: 6 MB in all).
MAX_BYTES = 6_000_000
# A figure above this is re-encoded at a smaller size (most are 50-150 kB at 100 dpi).
MAX_PNG_BYTES = 250_000
# The result files a report is tied to: what compare.save keeps of a run, but the report itself.
_RESULT_GLOBS = ("*.json", "*.jsonl")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def result_hashes(reference_dir: Path) -> dict[str, str]:
    """File name -> SHA-256 of the reference's result files (its top-level JSON / JSON-lines
    files, the reference's own ``machine.json`` excepted: it is written after the report)."""
    out = {}
    for pattern in _RESULT_GLOBS:
        for path in sorted(Path(reference_dir).glob(pattern)):
            if path.name != "machine.json":
                out[path.name] = _sha256(path.read_bytes())
    return dict(sorted(out.items()))


def _shrink_png(data: bytes) -> bytes:
    """``data`` re-encoded smaller when it is above ``MAX_PNG_BYTES``: palette colours (the
    plots use few), then halved until it fits."""
    if len(data) <= MAX_PNG_BYTES:
        return data
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    while True:
        buf = io.BytesIO()
        img.quantize(colors=256).save(buf, format="PNG", optimize=True)
        if buf.tell() <= MAX_PNG_BYTES or min(img.size) < 200:
            return buf.getvalue()
        img = img.resize((img.width // 2, img.height // 2))


class _Figures:
    """The report's images, each stored once: one the reference already holds (a plot a
    notebook saved, a figure of the paper) is linked where it is; any other is written to
    ``report/figures/`` under the first name it came with."""

    def __init__(self, report: Path, reference_dir: Path):
        self.report, self.folder = report, report / "figures"
        self.folder.mkdir(parents=True, exist_ok=True)
        # hash -> path relative to the report folder
        self.by_hash: dict[str, str] = {}
        for png in sorted(reference_dir.rglob("*.png")):
            if report not in png.parents:
                rel = Path("..") / png.relative_to(reference_dir)
                self.by_hash.setdefault(_sha256(png.read_bytes()), rel.as_posix())

    def add(self, name: str, data: bytes) -> str:
        """Where image ``data`` (offered as ``name``) is, relative to the report folder."""
        key = _sha256(data)
        if key not in self.by_hash:
            stem, suffix = Path(name).stem, Path(name).suffix
            taken = set(self.by_hash.values())
            final, n = f"figures/{stem}{suffix}", 1
            while final in taken:  # another image offered the same name
                n += 1
                final = f"figures/{stem}_{n}{suffix}"
            if suffix.lower() == ".png":
                data = _shrink_png(data)
            (self.report / final).write_bytes(data)
            self.by_hash[key] = final
        return self.by_hash[key]


_MD_IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)(\))")


def _relink(text: str, mapping: dict[str, str]) -> str:
    """Markdown image links whose target is a key of ``mapping`` pointed at its value."""
    return _MD_IMAGE.sub(
        lambda m: m.group(1) + mapping.get(m.group(2), m.group(2)) + m.group(3), text
    )


def _notebook_markdown(executed: Path, figures: _Figures) -> str:
    """An executed notebook as Markdown, its images stored in ``figures`` and linked from
    ``notebooks/``."""
    import nbformat
    from nbconvert import MarkdownExporter

    nb = nbformat.read(executed, as_version=4)
    exporter = MarkdownExporter()
    stem = executed.stem
    body, resources = exporter.from_notebook_node(
        nb, resources={"unique_key": stem, "output_files_dir": f"{stem}_files"}
    )
    mapping = {  # the Markdown sits in notebooks/, one below the report folder
        name: f"../{figures.add(Path(name).name, data)}"
        for name, data in resources.get("outputs", {}).items()
    }
    head = (
        f"<!-- {executed.name} as executed by make reproduce, rendered by "
        f"python -m experiments.compare --save -->\n\n"
    )
    return head + _relink(body, mapping)


def sources(reports_dir: Path) -> tuple[list[Path], Path]:
    """The executed notebooks and the filled paper of a run's ``reports_dir``; raises
    ``FileNotFoundError`` when either is absent."""
    notebooks = sorted((Path(reports_dir) / "notebooks").glob("[0-9]*.ipynb"))
    paper_md = Path(reports_dir) / "paper" / "paper.md"
    if not notebooks or not paper_md.is_file():
        raise FileNotFoundError(
            f"no executed notebooks in {Path(reports_dir) / 'notebooks'} or no paper at "
            f"{paper_md}: make reproduce writes both"
        )
    return notebooks, paper_md


def write(reports_dir: Path, reference_dir: Path) -> Path:
    """Render ``reports_dir`` (``notebooks/*.ipynb`` executed, ``paper/``) into
    ``reference_dir/report`` (replacing it), tied to the result files already in
    ``reference_dir``. Raises ``FileNotFoundError`` when the run left no executed notebook or
    no paper, ``ValueError`` when the folder would exceed ``MAX_BYTES``."""
    reports_dir, reference_dir = Path(reports_dir), Path(reference_dir)
    notebooks, paper_md = sources(reports_dir)
    out = reference_dir / FOLDER
    if out.exists():
        shutil.rmtree(out)
    figures = _Figures(out, reference_dir)
    (out / "notebooks").mkdir(parents=True)
    for nb in notebooks:
        (out / "notebooks" / f"{nb.stem}.md").write_text(_notebook_markdown(nb, figures))
    # the paper links its figures as figures/<name>: the same store, under the stored names
    paper_figs = reports_dir / "paper" / "figures"
    mapping = {
        f"figures/{p.name}": figures.add(p.name, p.read_bytes())
        for p in sorted(paper_figs.glob("*"))
        if p.is_file()
    }
    (out / "paper.md").write_text(_relink(paper_md.read_text(), mapping))
    html = reports_dir / "paper" / "paper.html"
    if html.is_file():
        text = html.read_text()
        for old, new in mapping.items():
            text = text.replace(f'src="{old}"', f'src="{new}"')
        (out / "paper.html").write_text(text)
    manifest = {
        "made_by": "python -m experiments.compare --save (experiments/rendered_report.py)",
        "notebooks": [f"notebooks/{nb.stem}.md" for nb in notebooks],
        "results_sha256": result_hashes(reference_dir),
    }
    records.write_json(out / MANIFEST, manifest)
    size = folder_bytes(out)
    if size > MAX_BYTES:
        raise ValueError(f"{out}: {size} bytes, over the {MAX_BYTES} a committed report may take")
    return out


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def problems(reference_dir: Path) -> list[str]:
    """Why ``reference_dir/report`` does not belong to the reference beside it ([] when it
    does): a result file changed, added or removed since the report was rendered, a document
    or an image the report names that is absent, or the folder over its size."""
    out_dir = Path(reference_dir) / FOLDER
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text())
    except FileNotFoundError:
        return [f"{out_dir / MANIFEST}: missing"]
    found = []
    rendered, now = manifest.get("results_sha256", {}), result_hashes(reference_dir)
    for name in sorted(set(rendered) | set(now)):
        if rendered.get(name) != now.get(name):
            what = "absent" if name not in now else "new" if name not in rendered else "changed"
            found.append(f"{name}: {what} since the report was rendered (not the same run)")
    docs = [out_dir / "paper.md", *(out_dir / n for n in manifest.get("notebooks", []))]
    for doc in docs:
        if not doc.is_file():
            found.append(f"{doc}: missing")
            continue
        for m in _MD_IMAGE.finditer(doc.read_text()):
            target = doc.parent / m.group(2)
            if "://" not in m.group(2) and not target.is_file():
                found.append(f"{doc.name}: links a missing image {m.group(2)}")
    size = folder_bytes(out_dir)
    if size > MAX_BYTES:
        found.append(f"{out_dir}: {size} bytes, over {MAX_BYTES}")
    return found
