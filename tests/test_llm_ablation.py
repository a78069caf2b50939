"""The source paper's Table 6 in miniature (experiments/llm_ablation.py, issue 38 item 3): the
programs on tensors match the lab's replay, the two fits differ and say who made them, an
ablation of tiny models gives every row and range, and the paper's table renders from a record.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from experiments import llm, llm_ablation, llm_protocols, llm_report, llm_settings, paper


@pytest.fixture(scope="module")
def programs():
    return llm_ablation.fit_programs("remez")


def test_programs_on_tensors_match_the_replay(programs):
    from turbogelu.approx import polyspec

    specs, _ = programs
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan]
    for form in specs.values():
        for fn, ps in form.items():
            c = float(np.float32(ps.clamp))
            near = np.nextafter(np.float32([c, -c, c, -c]), np.float32([9, -9, 0, 0]))
            x = np.concatenate([np.linspace(-3 * c, 3 * c, 20001), [c, -c], near, edges])
            x = x.astype(np.float32)
            for fma in (False, True):  # the ablation's split form; the kernels' fused one
                want = polyspec.replay(ps, x, fma=fma)
                got = llm_ablation.evaluate_program(ps, torch.from_numpy(x), fma=fma).numpy()
                assert got.dtype == np.float32
                # bit for bit (fused: a double rounding of a sum could cost an ulp elsewhere)
                np.testing.assert_array_equal(got, want, err_msg=f"{fn} {ps.method} {fma}")
            narrow = llm_ablation.evaluate_program(ps, torch.from_numpy(x).bfloat16())
            assert narrow.dtype == torch.bfloat16  # the model's dtype comes back
    with pytest.raises(TypeError, match="floating-point"):
        llm_ablation.evaluate_program(specs["endpoint-ls"]["silu"], torch.arange(3))


def test_the_two_fits_differ_and_record_their_fitter(programs):
    specs, fitters = programs
    for fn, (variable, factor, degree) in llm_settings.ABLATION_FORMS.items():
        ls, mm = specs["endpoint-ls"][fn], specs["minimax"][fn]
        assert ls.coefficients != mm.coefficients
        assert (ls.fmt, mm.fmt) == ("bfloat16", "bfloat16")
        assert (ls.variable, ls.factor, ls.degree) == (variable, factor, degree)
        # the same fit interval and clamp for both fits
        assert (ls.fit_interval, ls.clamp) == (mm.fit_interval, mm.clamp)
        assert (ls.fit_interval, ls.clamp) == llm_settings.ABLATION_POINTS[fn]
    assert fitters["endpoint-ls"].startswith("endpoint-ls")
    assert fitters["minimax"].startswith("remez+search")
    with pytest.raises(ValueError, match="minimax must be"):
        llm_ablation.minimax_fitter("chebyshev")
    from turbogelu.approx import methods

    if methods.sollya_available():
        assert llm_ablation.minimax_fitter("auto") == "sollya"
        assert "sollya fpminimax" in llm_ablation.fit_programs("auto")[1]["minimax"]
    else:
        assert llm_ablation.minimax_fitter("auto") == "remez"
        with pytest.raises(RuntimeError, match="sollya"):
            llm_ablation.minimax_fitter("sollya")


def test_each_point_is_the_paper_s_or_no_worse_than_its_grid_neighbours():
    """ABLATION_POINTS: the paper's own sigmoid point; elsewhere the endpoint-LS grid search's
    best, so no neighbour on the grid (under L_c <= L_i + 1) has a smaller error."""
    from turbogelu.approx import search

    assert llm_settings.ABLATION_POINTS["sigmoid"] == (5.0, 5.28125)  # the paper's Figure 2
    for fn, (lis, lcs) in llm_settings.ABLATION_GRIDS.items():
        li, lc = llm_settings.ABLATION_POINTS[fn]
        di, dc = (float(t.split(":")[2]) for t in (lis, lcs))
        assert li in search.parse_values(lis) and lc in search.parse_values(lcs)

        def err(a, b, fn=fn):
            ps = llm_ablation.fit_program(fn, "endpoint-ls", (a, b))
            return llm_ablation.describe_program(ps)["max_abs_error"]

        best = err(li, lc)
        for a in (li - di, li, li + di):
            for b in (lc - dc, lc, lc + dc):
                if search.default_constraint(a, b):
                    assert err(a, b) >= best, (fn, a, b)


TINY = llm.Config(vocab=11, context=16, width=16, heads=2, layers=2, mlp_ratio=2)


@pytest.fixture(scope="module")
def tiny_ablation():
    gen = torch.Generator().manual_seed(0)
    corpus = llm_protocols.Corpus(
        torch.randint(0, 11, (4000,), generator=gen),
        torch.randint(0, 11, (800,), generator=gen),
        11,
    )
    settings = llm_protocols.Settings(model=TINY, val_windows=4, steps=1)
    models = {t: llm.build(TINY, t, llm.NATIVE, seed=1) for t in llm.TASKS}
    val = llm_protocols.val_windows(corpus.val, TINY.context, settings.val_windows)
    plain = {t: llm_protocols.evaluate(m, *val)[0] for t, m in models.items()}
    result = llm_ablation.run_ablation(models, settings, corpus, reaches=(2.0,), minimax="remez")
    return result, models, plain


def test_every_task_form_and_condition_has_a_row(tiny_ablation):
    result, models, plain = tiny_ablation
    rows = result["rows"]
    want = {(t, f, c) for t in llm.TASKS for f in llm_ablation.FORMS for c in ("trained", "reach2")}
    assert {(r["task"], r["form"], r["condition"]) for r in rows} == want
    assert len(rows) == len(want)
    for r in rows:
        assert math.isfinite(r["val_loss"])
        assert r["perplexity"] == pytest.approx(math.exp(r["val_loss"]), rel=1e-12)
        assert 0.0 <= r["accuracy"] <= 1.0
        if r["form"] == "native":
            assert r["delta_val_loss"] == 0.0 and r["changed_predictions"] == 0
    for t in llm.TASKS:  # the native row is the checkpoint as it evaluates unswapped
        native = next(r for r in rows if (r["task"], r["form"], r["condition"]) ==
                      (t, "native", "trained"))  # fmt: skip
        assert native["val_loss"] == plain[t]
        assert models[t].arm is llm.NATIVE  # and the model is left as it was
        assert all(b.attn.arm is llm.NATIVE for b in models[t].blocks)
    assert result["dtype"] == ["float32"]
    assert result["minimax_fitter"].startswith("remez+search")
    assert set(result["programs"]) == set(llm_settings.ABLATION_FORMS)


def test_input_ranges_are_recorded_and_the_stretch_reaches_the_clamp(tiny_ablation):
    result, _, _ = tiny_ablation
    for t in llm.TASKS:
        site = llm_ablation.TASK_SITES[t]
        trained = result["ranges"][t]["trained"][site]
        assert trained["values"] > 0 and trained["min"] <= trained["max"]
        assert len(trained["layers"]) == TINY.layers
        assert (
            trained["clamp"]
            == result["programs"][llm_ablation.SITE_FUNCTION[site]]["endpoint-ls"]["clamp"]
        )
        assert result["reaches_clamp"][t][site] == (trained["beyond_clamp"] > 0)
        stressed = result["ranges"][t]["reach2"][site]
        # the first layer's inputs are stretched exactly (later ones follow a changed model)
        first = stressed["layers"][0]
        k = result["stretches"][t]["reach2"][site]
        assert max(abs(first["min"]), abs(first["max"])) == pytest.approx(
            k * max(abs(trained["layers"][0]["min"]), abs(trained["layers"][0]["max"])),
            rel=1e-5,
        )
        assert stressed["beyond_clamp"] > 0
    entries = [s for s in result["sites"] if s["condition"] == "trained"]
    assert {(s["task"], s["site"]) for s in entries} >= {
        (t, llm_ablation.TASK_SITES[t]) for t in llm.TASKS
    }


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="distinct positive"):
        llm_ablation.check_reaches([2.0, -1.0])
    with pytest.raises(ValueError, match="positive factor"):
        llm_ablation.probed(llm.NATIVE, {"silu": 0.0})
    with pytest.raises(ValueError, match="no D4 form"):
        llm_ablation.fit_program("softplus", "endpoint-ls")
    with pytest.raises(ValueError, match="method must be"):
        llm_ablation.fit_program("silu", "ls")


def test_the_paper_table_renders_from_the_record_and_says_missing_without(tiny_ablation, tmp_path):
    result, _, _ = tiny_ablation
    record = {"kind": "experiments.llm.ablation", "meta": {"dtype": "float32"}, **result}
    text = llm_report.render_table6(json.loads(json.dumps(record)))
    assert "| b1 | endpoint-ls |" in text and "| b4 | minimax |" in text
    assert "Qwen2.5 7B" in text and "298,700.735" in text  # the paper's figures beside
    assert "to 2 × clamp" in text  # the stress rows
    assert "native" in llm_report.ablation_text(record)
    (tmp_path / "11_llm_tasks.json").write_text(json.dumps({"ablation": record}))
    assert "| gelu | native |" in paper.fill("{{ table: table6 }}", tmp_path).text
    (tmp_path / "11_llm_tasks.json").write_text(json.dumps({"figures": {}}))
    with pytest.raises(paper.Missing, match="nb11.ablation"):
        paper.fill("{{ table: table6 }}", tmp_path)


def test_the_cli_knows_the_protocol():
    from experiments import llm_cli

    assert "ablation" in llm_cli.PROTOCOLS
    assert dataclasses.is_dataclass(llm_protocols.Settings)


def test_sollya_minimax_figures_are_named_by_its_version():
    """A minimax fitted by Sollya gives figures named by Sollya's version, which compare sets
    aside on a machine with another Sollya or none (their coefficients are another fit's)."""
    from experiments import compare

    assert llm_ablation.figure_tag({"minimax_sollya_version": "8.0"}, "minimax") == "@sollya-8.0"
    assert llm_ablation.figure_tag({"minimax_sollya_version": "8.0"}, "endpoint-ls") == ""
    assert llm_ablation.figure_tag({"minimax_sollya_version": None}, "minimax") == ""
    name = "11_llm_tasks.ablation_b1_minimax_trained_val_loss@sollya-8.0"
    assert "Sollya 8.0" in compare._not_runnable_here(name, None)
    assert compare._not_runnable_here(name.split("@")[0], None) is None


def test_the_quick_ablation_fits_its_minimax_by_remez_everywhere(llm_quick_all):
    """Quick runs are compared with a reference made on another machine: their minimax is this
    project's Remez whether or not Sollya is installed (the full run's is Sollya's where it is)."""
    body = json.loads((llm_quick_all / "llm_quick_ablation.json").read_text())
    assert body["minimax_fitter"].startswith("remez+search")
    assert body["minimax_sollya_version"] is None
