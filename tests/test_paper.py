"""The paper builder: placeholders filled from results, the numbers rule, HTML output."""

from __future__ import annotations

import json
import shutil

import pytest

from experiments import paper


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    (d / "acc.json").write_text(json.dumps({"max": 2.4988e-5, "rows": [{"ratio": 11.26}]}))
    return d


def test_fill_values_and_format_specs(results):
    f = paper.fill("max {{ acc.max * 1e3 : .3f }}e-3, ratio {{ acc.rows[0].ratio:.1f }}x", results)
    assert f.text == "max 0.025e-3, ratio 11.3x"
    assert [f.text[a:b] for a, b in f.spans] == ["0.025", "11.3"]
    # a typed exponent changes the number: flagged with it
    assert paper.numeric_literals(f) == [(1, "0.025e-3")]
    f = paper.fill("max {{ acc.max : .3e }}", results)
    assert f.text == "max 2.499e-05" and paper.numeric_literals(f) == []


def test_missing_result_is_an_error_naming_it(results):
    with pytest.raises(paper.Missing, match="nope.json"):
        paper.fill("{{ nope.x }}", results)
    with pytest.raises(paper.Missing, match="'absent'"):
        paper.fill("{{ acc.absent }}", results)
    f = paper.fill("a {{ acc.absent }} b", results, strict=False)
    assert "[missing: acc.absent]" in f.text and len(f.missing) == 1


def test_a_typed_number_is_flagged_and_rules_exempt_the_rest(results):
    src = (
        "## 2. Method\n\n1. bf16 and float32 on an H200, see Table 2 and `make QUICK=1`.\n"
        "The form $x/2 + x^2 P(z)$ is {{ acc.max:.2e }} off.\n"
        "We typed 0.5 here and 3e-5 there, and 12% too.\n"
    )
    f = paper.fill(src, results)
    assert [lit for _, lit in paper.numeric_literals(f)] == ["0.5", "3e-5", "12%"]
    assert all(line == 5 for line, _ in paper.numeric_literals(f))


def test_a_dict_is_not_a_value(results):
    with pytest.raises(ValueError, match="not a value"):
        paper.fill("{{ acc.rows }}", results)


def test_build_writes_html_and_copies_figures(results, tmp_path):
    (results / "fig.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    src = tmp_path / "p.md"
    src.write_text("# T\n\n{{ figure: results/fig.png | error }}\n\nmax {{ acc.max:.2e }}\n")
    out = tmp_path / "out"
    written = paper.build(src, results, out, pdf=False, log=lambda m: None)
    page = (out / "paper.html").read_text()
    assert "2.50e-05" in page and 'src="figures/fig.png"' in page
    assert (out / "figures" / "fig.png").is_file()
    assert written["missing"] == []
    src.write_text("typed 1.5\n")
    with pytest.raises(ValueError, match="line 1: 1.5"):
        paper.build(src, results, out, pdf=False, log=lambda m: None)


def test_committed_paper_source_has_no_typed_numbers():
    # Missing results are allowed here (a fresh clone has none); typed numbers are not.
    f = paper.fill(paper.SOURCE.read_text(), paper.RESULTS / "_none_", strict=False)
    assert paper.numeric_literals(f) == []


def test_notebook_and_spec_aliases(results, tmp_path):
    (results / "01_tail_clamping.json").write_text(json.dumps({"figures": {"r": 4.389}}))
    f = paper.fill("R = {{ nb01.figures.r }}, degree {{ spec_gelu_exact.forward.degree }}", results)
    assert f.text.startswith("R = 4.389, degree ")  # the committed spec
    with pytest.raises(paper.Missing, match="02_"):
        paper.fill("{{ nb02.figures.r }}", results)


def _visible_text(page: str) -> str:
    """The text a reader sees: tags dropped, and MathML's TeX annotations (not shown)."""
    import html
    import re

    page = re.sub(r"<annotation[^>]*>.*?</annotation>", "", page, flags=re.S)
    page = re.sub(r"<head>.*?</head>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_html_renders_math_and_numbered_captions(results, tmp_path):
    (results / "fig.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    src = tmp_path / "p.md"
    src.write_text(
        "# T\n\nThe form $x\\,(1/2 + x\\,P(z))$ with $\\frac{1}{2}$, and\n\n"
        "$$\\frac{x}{R^2}$$\n\n{{ figure: results/fig.png | the error }}\n\n"
        "{{ figure: results/fig.png | again }}\n"
    )
    out = tmp_path / "out"
    paper.build(src, results, out, pdf=False, log=lambda m: None)
    page = (out / "paper.html").read_text()
    assert page.count("<math") == 3
    text = _visible_text(page)
    assert "$" not in text and "\\frac" not in text and "\\," not in text
    assert "Figure 1: the error" in text and "Figure 2: again" in text
    assert page.count("<figcaption") == 2


def test_committed_paper_renders_without_raw_latex(tmp_path):
    # The committed source, filled where results exist (none here: shown as [missing: ...]).
    filled = paper.fill(paper.SOURCE.read_text(), tmp_path / "none", strict=False)
    page = paper.render_html(filled.text, tmp_path)
    assert page.count("<math") >= 20
    text = _visible_text(page)
    assert "$" not in text and "\\frac" not in text and "\\cdot" not in text


def test_missing_pandoc_is_a_clear_error(results, tmp_path, monkeypatch):
    monkeypatch.setattr(paper, "pandoc_path", lambda: None)
    src = tmp_path / "p.md"
    src.write_text("# T\n\nmax {{ acc.max:.2e }}\n")
    with pytest.raises(paper.PandocMissing, match="pypandoc-binary"):
        paper.build(src, results, tmp_path / "out", pdf=False, log=lambda m: None)
    # the filled Markdown is there all the same
    assert "2.50e-05" in (tmp_path / "out" / "paper.md").read_text()


def _notebook_result(results, stem, quick, **figures):
    data = {"notebook": stem, "figures": figures, "parameters": {"quick": quick}}
    (results / f"{stem}.json").write_text(json.dumps(data))


def _sweep(results, name, pid):
    d = results / "sweeps" / name
    d.mkdir(parents=True)
    (d / "front.json").write_text(json.dumps({"front": [pid]}))
    head = "id,fit_range,degree,method,ops_horner,max_abs_error,bf16_max_ulp,time_us\n"
    (d / "table.csv").write_text(head + f"{pid},4.389,{pid[-1]},remez,12,2.5e-05,1,\n")
    (d / "pareto.png").write_bytes(b"\x89PNG\r\n\x1a\n")


def test_quick_paper_reads_the_quick_sweep_and_says_so_first(results, tmp_path):
    _sweep(results, "default", "p8")
    _sweep(results, "default_quick", "p6")
    _notebook_result(results, "05_timing", True, x=1.5)
    src = tmp_path / "p.md"
    src.write_text(
        "# T\n\nx {{ nb05.figures.x }}\n\n{{ table: sweep_front }}\n\n"
        "{{ figure: results/sweeps/{sweep}/pareto.png | front }}\n"
    )
    out = tmp_path / "out"
    paper.build(src, results, out, quick=True, pdf=False, log=lambda m: None)
    md = (out / "paper.md").read_text()
    assert md.splitlines()[0].startswith("**Quick-mode report**")
    assert "| 4.389 | 6 | remez |" in md and "| 4.389 | 8 |" not in md
    page = (out / "paper.html").read_text()
    assert _visible_text(page).split()[:2] == ["Quick-mode", "report"]
    assert "<title>turbogelu (quick mode)</title>" in page
    # the same results in full mode: the quick notebook result is refused, by name
    with pytest.raises(ValueError, match="05_timing.json is from a quick run"):
        paper.build(src, results, out, quick=False, pdf=False, log=lambda m: None)
    _notebook_result(results, "05_timing", False, x=1.5)
    paper.build(src, results, out, quick=False, pdf=False, log=lambda m: None)
    md = (out / "paper.md").read_text()
    assert "| 4.389 | 8 | remez |" in md and "Quick-mode" not in md


def test_citations_must_resolve_and_references_are_exempt(results, tmp_path):
    src = tmp_path / "p.md"
    src.write_text(
        "# T\n\nAs [1] and [2, 3] say, `regions[0]` is no citation.\n\n## References\n\n"
        "1. A. Author. A title. Journal 12(3), 2001.\n2. B. Author. Another. 1999.\n"
        "3. C. Author. Third. 2020.\n"
    )
    f = paper.fill(src.read_text(), results)
    assert paper.numeric_literals(f) == []
    assert paper.unresolved_citations(f.text) == []
    paper.build(src, results, tmp_path / "out", pdf=False, log=lambda m: None)
    src.write_text(src.read_text().replace("[2, 3]", "[2, 4]"))
    with pytest.raises(ValueError, match=r"References section: \[4\]"):
        paper.build(src, results, tmp_path / "out", pdf=False, log=lambda m: None)


def test_committed_paper_cites_only_listed_references_and_cites_both_sources():
    text = paper.SOURCE.read_text()
    assert paper.unresolved_citations(text) == []
    refs = text[text.index("## References") :]
    assert "TurboGeLU" in refs and "Fast Polynomial Transcendentals for LLMs" in refs
    assert "shared/seeds" not in text


@pytest.mark.skipif(
    not any(shutil.which(e) for e in ("xelatex", "lualatex", "pdflatex")),
    reason="no LaTeX engine installed (the README says how to get one)",
)
def test_pdf_where_latex_is_installed(results, tmp_path):
    (results / "fig.png").write_bytes(_png())
    src = tmp_path / "p.md"
    src.write_text(
        "# T\n\n$\\frac{x}{2}$ is {{ acc.max:.2e }}.\n\n{{ figure: results/fig.png | one }}\n"
    )
    logged = []
    written = paper.build(src, results, tmp_path / "out", log=logged.append)
    assert written.get("pdf"), logged
    assert (tmp_path / "out" / "paper.pdf").read_bytes().startswith(b"%PDF")


def _png() -> bytes:
    """A valid 1x1 PNG (LaTeX reads the image; the HTML tests only link it)."""
    import struct
    import zlib

    def chunk(kind, data):
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_table8_comes_from_notebook_10(results):
    """The source paper's Table 8 as notebook 10 recorded it, with its figures; a notebook 10
    result from before Table 8 is a clear Missing naming it (issue 38, item 4)."""
    from turbogelu.approx import exp2

    rows = exp2.table8(n=2001, samples=513)
    (results / "10_activation_family.json").write_text(json.dumps({"table8": rows}))
    f = paper.fill("{{ table: table8 }}", results)
    assert "| D1 | endpoint constrained |" in f.text and "6.148e-02" in f.text
    (results / "10_activation_family.json").write_text(json.dumps({"figures": {}}))
    with pytest.raises(paper.Missing, match="nb10.table8"):
        paper.fill("{{ table: table8 }}", results)
