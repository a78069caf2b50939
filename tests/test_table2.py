"""The paper's Table 2: reproduced LS column, our improved fits, floors and the Sollya control."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from scipy.special import erf

from turbogelu.approx import search, table2, targets
from turbogelu.approx.table2 import ROWS

NAMES = [r.name for r in ROWS]


@pytest.mark.parametrize("target", sorted(table2.SOLLYA_RESIDUALS))
def test_sollya_expressions_are_the_residuals(target):
    # The strings go to Sollya unchecked by us otherwise: evaluate them with numpy.
    u = np.linspace(0.0, 8.0, 401)
    expr = table2.SOLLYA_RESIDUALS[target].replace("^", "**")
    env = {"exp": np.exp, "erf": erf, "tanh": np.tanh, "sqrt": np.sqrt, "x": u}
    got = eval(expr, env)  # noqa: S307 - our own constant strings
    np.testing.assert_allclose(got, targets.TARGETS[target].residual(u), rtol=1e-13, atol=1e-16)


# The LS column: the paper's endpoint-constrained LS with bf16 coefficients, reproduced within
# 5 % (the tolerance: the paper does not state L_i, L_c or its rounding, so a reading
# within 5 % is taken as reproducing it; test_table2_research in the note lists the others).
@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_ls_column_reproduced_within_5_percent(row):
    ps = row.ls.fit("endpoint-ls")
    err = ps.meta["errors"]["max_abs_error"]
    assert abs(err / row.paper_ls - 1) <= 0.05, (row.name, err, row.paper_ls)


# Ours: minimax + bf16 rounding + neighbour search, at the configuration the slow grid search
# found. At or below the paper's Sollya column for every row except sigmoid', whose Sollya
# value is below the floor of the form (test below). Exact values are recorded (1e-6 relative:
# the fits are deterministic float64 code; LAPACK's last bits may differ between CPUs).
BEST = {
    "sigmoid D3": 4.3510e-3,
    "tanh D4": 6.6696e-3,
    "SiLU D3": 16.1186e-3,
    "GELU D5": 0.49864e-3,
    "sigmoid' D4": 3.7090e-3,
}


@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_improved_fits(row):
    ps = row.best.fit("remez+search")
    err = ps.meta["errors"]["max_abs_error"]
    assert err == pytest.approx(BEST[row.name], rel=1e-4)
    assert ps.fmt == "bfloat16"  # PolySpec checks every coefficient is a bf16 value
    if row.name != "sigmoid' D4":
        assert err <= row.paper_sollya
    assert err < row.paper_ls


def test_sigmoid_grad_sollya_value_is_below_the_floor_of_the_form():
    # The floor over clamps in [5.3, 5.9] (the optimum is inside: floor() checks it) has a
    # proven lower bound of 3.6e-3 > 1.97e-3; with bf16 coefficients we stay within 5 % of it.
    row = table2.get_row("sigmoid' D4")
    fl = table2.floor(row.best, (5.3, 5.9), step=1 / 32)
    assert fl.lower > 1.8 * row.paper_sollya
    assert fl.lower <= fl.upper
    assert BEST[row.name] <= 1.05 * fl.lower


def test_gelu_ls_form_cannot_reach_the_sollya_column():
    # x/2 + u P5(z): the form that matches the LS column has a real floor of 0.73e-3 > 0.50e-3;
    # our x/2 + u^2 P5(z) (also 6 coefficients) reaches 0.499e-3 with bf16 coefficients.
    row = table2.get_row("GELU D5")
    fl = table2.floor(row.ls, (3.3, 3.8), step=1 / 32)
    assert fl.lower > 1.4 * row.paper_sollya


def test_floor_brackets_and_rejects_a_range_without_the_optimum():
    cfg = table2.get_row("sigmoid D3").best
    fl = table2.floor(cfg, (5.0, 6.0), step=1 / 16)
    assert 0 < fl.lower <= fl.upper <= 1.02 * fl.lower
    with pytest.raises(ValueError, match="widen"):
        table2.floor(cfg, (4.5, 5.0), step=1 / 16)  # tail-dominated


@pytest.mark.skipif(shutil.which("sollya") is None, reason="sollya not installed")
def test_sollya_control_agrees_with_our_error_model():
    # Sollya's dirtyinfnorm of its own polynomial on the window and our measurement of the
    # same polynomial (tail included; the window dominates for sigmoid at L_c 5.44) agree.
    res = table2.sollya_control(table2.get_row("sigmoid D3").best)
    assert res["max_abs_error"] == pytest.approx(res["sollya_window_estimate"], rel=1e-3)
    assert res["max_abs_error"] > BEST["sigmoid D3"]  # our search beats fpminimax here


def test_render_markdown_and_cli(tmp_path, monkeypatch):
    from turbogelu.__main__ import main

    monkeypatch.setattr(table2, "ROWS", ROWS[:1])
    out, md = tmp_path / "t2.json", tmp_path / "t2.md"
    main(["table2", "--no-floors", "--no-sollya", "--out", str(out), "--md", str(md)])
    rows = json.loads(out.read_text())
    assert [r["name"] for r in rows] == ["sigmoid D3"]
    text = md.read_text()
    assert "| sigmoid D3 | 5.440 / 5.470 |" in text and "**4.351**" in text


# ---------------------------------------------------------------- slow: the full table


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_best_configuration_is_the_grid_optimum(row):
    b = row.best
    rows = search.grid_search(
        b.target,
        [b.degree],
        search.parse_values(row.best_grid[0]),
        search.parse_values(row.best_grid[1]),
        "bf16",
        "remez+search",
        b.variable,
        b.factor,
        shift=b.shift,
    )
    (top,) = search.best_per_degree(rows)
    assert top["max_abs_error"] == pytest.approx(BEST[row.name], rel=1e-4)
    assert (top["L_i"], top["L_c"]) == pytest.approx((b.fit_interval, b.clamp))


@pytest.mark.slow
def test_full_table_with_floors():
    res = table2.evaluate(sollya=False)
    for r in res:
        best_floor = r["floors"][0]
        assert best_floor["lower"] <= r["best"]["max_abs_error"]
        # every form's floor that is recorded is below the paper's Sollya value or not:
        # the note's table says which; here only that the bracket is tight
        for f in r["floors"]:
            assert f["lower"] <= f["upper"] <= 1.03 * f["lower"]
    text = table2.render_markdown(res)
    assert text.count("\n| ") >= len(ROWS) + 2
