"""The paper builder: placeholders filled from results, the numbers rule, HTML output."""

from __future__ import annotations

import json

import pytest

from turbogelu import paper


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
    written = paper.build(src, results, out, log=lambda m: None)
    page = (out / "paper.html").read_text()
    assert "2.50e-05" in page and 'src="figures/fig.png"' in page
    assert (out / "figures" / "fig.png").is_file()
    assert written["missing"] == []
    src.write_text("typed 1.5\n")
    with pytest.raises(ValueError, match="line 1: 1.5"):
        paper.build(src, results, out, log=lambda m: None)


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
