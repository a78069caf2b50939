"""The paper's Table 2: fits at the paper's own forms (shape, errors, floors), the LS column
reproduced, the better forms as different programs, the headline built from the same-form rows
only, and the Sollya control."""

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


# The paper's forms as we read them (table2's module docstring): degree in x, number of
# coefficients, and whether the function inside the clamp is a polynomial in x. Written out
# here, not taken from table2.ROWS, so that a change of reading has to change this table too.
PAPER_SHAPES = {
    "sigmoid D3": {"degree_in_x": 3, "coefficients": 3, "polynomial_in_x": False},
    "tanh D4": {"degree_in_x": 4, "coefficients": 4, "polynomial_in_x": False},
    "SiLU D3": {"degree_in_x": 6, "coefficients": 4, "polynomial_in_x": True},
    "GELU D5": {"degree_in_x": 10, "coefficients": 6, "polynomial_in_x": True},
    "sigmoid' D4": {"degree_in_x": 4, "coefficients": 5, "polynomial_in_x": False},
}


@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_same_form_fits_have_the_papers_shape(row):
    for cfg, method in ((row.same, "remez+search"), (row.same_ls, "endpoint-ls")):
        ps = cfg.fit(method)
        st = table2.structure(ps)
        assert {k: st[k] for k in PAPER_SHAPES[row.name]} == PAPER_SHAPES[row.name]
        assert tuple(st["powers_of_abs_x"]) == row.paper_powers
        # continuous at 0 with the rounded coefficients themselves: exactly no jump
        assert st["jump_at_0"] == 0.0
        left, right = ps.evaluate(np.array([-(2.0**-30), 2.0**-30]))
        assert abs(right - left) < 1e-8
        assert table2.same_program(row, ps)


# Ours at the paper's form: minimax + bf16 rounding + neighbour search at the configuration
# the slow grid search found (recorded values, 1e-4 relative: the fits are deterministic
# float64 code; LAPACK's last bits may differ between CPUs). At or below the paper's Sollya
# figure for sigmoid only; for the others that figure is below the floor of the form (below).
SAME = {
    "sigmoid D3": 5.2223e-3,
    "tanh D4": 7.6726e-3,
    "SiLU D3": 26.324e-3,
    "GELU D5": 1.4648e-3,
    "sigmoid' D4": 3.7090e-3,
}
# The paper's LS at the paper's form: within 5 % for three rows; SiLU and GELU come nowhere near.
SAME_LS = {
    "sigmoid D3": 5.5022e-3,
    "tanh D4": 9.4825e-3,
    "SiLU D3": 31.184e-3,
    "GELU D5": 1.8753e-3,
    "sigmoid' D4": 4.4670e-3,
}


@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_same_form_errors(row):
    err = row.same.fit("remez+search").meta["errors"]["max_abs_error"]
    assert err == pytest.approx(SAME[row.name], rel=1e-4)
    assert (err <= row.paper_sollya) == (row.name == "sigmoid D3")
    ls = row.same_ls.fit("endpoint-ls").meta["errors"]["max_abs_error"]
    assert ls == pytest.approx(SAME_LS[row.name], rel=1e-4)
    within = abs(ls / row.paper_ls - 1) <= table2.LS_TOLERANCE
    assert within == (row.name not in ("SiLU D3", "GELU D5"))


# The floors of the paper's forms. Where the paper's Sollya figure is below the lower bound, no
# real coefficients of that form reach it (under our error measure). A coarser clamp step than
# the table's keeps this fast: it only lowers the lower bound, so the claims below still hold;
# tanh keeps the table's fine step (its paper figure is 0.5 % below the floor).
FLOOR_STEP = {"tanh D4": None, "GELU D5": 1 / 16}
SOLLYA_BELOW_FLOOR = {"tanh D4", "SiLU D3", "GELU D5", "sigmoid' D4"}


@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_same_form_floors(row):
    lo, hi, step = row.same_floor
    step = FLOOR_STEP.get(row.name, 1 / 32) or step
    fl = table2.floor(row.same, (lo, hi), step=step)
    # The coarse step loosens the bracket (GELU: 15 %); the table's own step makes it tight
    # within 3 % (test_full_table_with_floors).
    assert 0 < fl.lower <= fl.upper <= 1.2 * fl.lower
    assert fl.lower <= SAME[row.name]  # the bf16 fit is above the real-coefficient floor
    assert (row.paper_sollya < fl.lower) == (row.name in SOLLYA_BELOW_FLOOR)
    assert (row.paper_ls < fl.lower) == (row.name == "SiLU D3")
    if row.name == "sigmoid D3":  # reachable, and reached with bf16 coefficients
        assert fl.upper <= row.paper_sollya and SAME[row.name] <= row.paper_sollya


# The better forms: different programs (a jump at 0, more coefficients, odd powers of |x|),
# recorded and labelled as such; at or below the paper's Sollya figure except for sigmoid',
# whose best is the paper's form itself.
BEST = {
    "sigmoid D3": 4.3510e-3,
    "tanh D4": 6.6696e-3,
    "SiLU D3": 16.1186e-3,
    "GELU D5": 0.49864e-3,
    "sigmoid' D4": 3.7090e-3,
}


@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_better_forms_are_labelled_different_programs(row):
    ps = row.best.fit("remez+search")
    err = ps.meta["errors"]["max_abs_error"]
    assert err == pytest.approx(BEST[row.name], rel=1e-4)
    assert ps.fmt == "bfloat16"  # PolySpec checks every coefficient is a bf16 value
    st, paper = table2.structure(ps), PAPER_SHAPES[row.name]
    different = {
        "sigmoid D3": st["jump_at_0"] > 8e-3,  # the constant term: 1/2 -+ P(0) either side of 0
        "tanh D4": st["jump_at_0"] > 1e-2,
        "SiLU D3": st["coefficients"] > paper["coefficients"],
        "GELU D5": not st["polynomial_in_x"] and 3 in st["powers_of_abs_x"],
    }
    if row.name in different:
        assert different[row.name] and not table2.same_program(row, ps)
        assert err <= row.paper_sollya
    else:
        assert table2.same_program(row, ps)


def _fake(name, same, same_ls, floor_lower=None, paper_ls=5e-3, paper_sollya=4e-3):
    r = {
        "name": name,
        "paper_ls": paper_ls,
        "paper_sollya": paper_sollya,
        "same": {"max_abs_error": same},
        "same_ls": {"max_abs_error": same_ls},
        "ls": {"max_abs_error": paper_ls},
        "best": {"max_abs_error": 1e-3},
    }
    if floor_lower is not None:
        r["same_floor"] = {"lower": floor_lower, "upper": 1.01 * floor_lower}
    return r


def test_claims_count_same_form_rows_only():
    rows = [
        _fake("a", same=3.9e-3, same_ls=5.1e-3, floor_lower=3e-3),
        _fake("b", same=6e-3, same_ls=9e-3, floor_lower=4.5e-3),
    ]
    c = table2.claims(rows)
    assert c["same_at_or_below_paper_sollya"] == ["a"]
    assert c["same_ls_within_5_percent"] == ["a"]
    assert c["paper_sollya_below_floor"] == ["b"] and c["paper_ls_below_floor"] == []
    # The different programs (best, ls) do not move any claim, however good they are ...
    for r in rows:
        r["best"]["max_abs_error"] = r["ls"]["max_abs_error"] = 0.0
    assert table2.claims(rows) == c
    text = table2.headline(rows)
    assert "in 1 of 2 rows (a)" in text and "below the proven floor" in text
    # ... and a same-form entry does.
    rows[1]["same"]["max_abs_error"] = 3e-3
    assert table2.claims(rows)["same_at_or_below_paper_sollya"] == ["a", "b"]
    # Without floors the headline says so and claims nothing about them.
    for r in rows:
        del r["same_floor"]
    assert "paper_sollya_below_floor" not in table2.claims(rows)
    assert "Floors not computed" in table2.headline(rows)


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
    from experiments.cli import main

    monkeypatch.setattr(table2, "ROWS", ROWS[:1])
    out, md = tmp_path / "t2.json", tmp_path / "t2.md"
    main(["table2", "--no-floors", "--no-sollya", "--out", str(out), "--md", str(md)])
    rows = json.loads(out.read_text())
    assert [r["name"] for r in rows] == ["sigmoid D3"]
    assert rows[0]["ls_same_program"] and not rows[0]["best_same_program"]
    assert (
        rows[0]["best"]["structure"]["jump_at_0"] > 0 == rows[0]["same"]["structure"]["jump_at_0"]
    )
    text = md.read_text()
    assert text.startswith(table2.headline(rows))
    assert "in 1 of 1 rows (sigmoid D3)" in text
    assert "| sigmoid D3 | 1/2 + sign(x) u P2(z(u)) | 3 / 3 | 0 | 4 FMA | 5.440 |" in text
    # the better form below, in the different-programs table, with its jump and 4 coefficients
    assert "| sigmoid D3 | better form | 1/2 + sign(x) P3(u) | 4 / 3 | 0.0085 |" in text
    assert text.index("**Same program") < text.index("**Different programs") < text.index("4.351")


# ---------------------------------------------------------------- slow: the full table


def _grid_top(cfg, grid, method):
    return search.grid_search(
        cfg.target,
        [cfg.degree],
        search.parse_values(grid[0]),
        search.parse_values(grid[1]),
        "bf16",
        method,
        cfg.variable,
        cfg.factor,
        shift=cfg.shift,
    )


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_best_configuration_is_the_grid_optimum(row):
    b = row.best
    (top,) = search.best_per_degree(_grid_top(b, row.best_grid, "remez+search"))
    assert top["max_abs_error"] == pytest.approx(BEST[row.name], rel=1e-4)
    assert (top["L_i"], top["L_c"]) == pytest.approx((b.fit_interval, b.clamp))


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_same_configuration_is_the_grid_optimum(row):
    # GELU's grid takes about 5 minutes on 2 cores.
    (top,) = search.best_per_degree(_grid_top(row.same, row.same_grid, "remez+search"))
    assert top["max_abs_error"] == pytest.approx(SAME[row.name], rel=1e-4)
    assert (top["L_i"], top["L_c"]) == pytest.approx((row.same.fit_interval, row.same.clamp))


@pytest.mark.slow
@pytest.mark.parametrize("row", ROWS, ids=NAMES)
def test_same_ls_is_the_closest_to_the_paper_on_its_grid(row):
    rows = _grid_top(row.same_ls, row.same_ls_grid, "endpoint-ls")
    near = min(rows, key=lambda r: abs(r["max_abs_error"] / row.paper_ls - 1))
    assert near["max_abs_error"] == pytest.approx(SAME_LS[row.name], rel=1e-4)
    assert (near["L_i"], near["L_c"]) == pytest.approx(
        (row.same_ls.fit_interval, row.same_ls.clamp)
    )


@pytest.mark.slow
def test_full_table_with_floors():
    res = table2.evaluate(sollya=False)
    for r in res:
        assert r["same_floor"]["lower"] <= r["same"]["max_abs_error"]
        assert r["floors"][0]["lower"] <= r["best"]["max_abs_error"]
        # every recorded floor's bracket is tight
        for f in [r["same_floor"], *r["floors"]]:
            assert f["lower"] <= f["upper"] <= 1.03 * f["lower"]
    c = table2.claims(res)
    assert c["same_at_or_below_paper_sollya"] == ["sigmoid D3"]
    assert set(c["paper_sollya_below_floor"]) == SOLLYA_BELOW_FLOOR
    text = table2.render_markdown(res)
    assert text.count("\n| ") >= 2 * len(ROWS) + 4


def test_the_table_says_which_sollya_made_its_column_or_why_none():
    made = {"max_abs_error": 5.5e-3, "sollya_version": "8.0"}
    assert table2.sollya_note([{"same_sollya": made, "sollya": made}]) == (
        "Sollya column: Sollya 8.0."
    )
    absent = {"skipped": "sollya is not installed (no 'sollya' on PATH)"}
    assert "not run: sollya is not installed" in table2.sollya_note([{"same_sollya": absent}])
    assert "--no-sollya" in table2.sollya_note([{"name": "GELU D5"}])
    mixed = table2.sollya_note([{"same_sollya": made, "sollya": {"skipped": "timed out"}}])
    assert mixed == "Sollya column: Sollya 8.0. Some rows failed: timed out."


def test_the_command_says_when_sollya_is_absent(monkeypatch, capsys, tmp_path):
    """make reproduce's table2 step says in its log that the column is empty and how to
    install Sollya, and the table's legend says why (issue 38, item 6)."""
    from experiments import cli as ecli

    monkeypatch.setattr(shutil, "which", lambda name: None)
    md = tmp_path / "t2.md"
    assert ecli.main(["table2", "--rows", "GELU D5", "--no-floors", "--md", str(md)]) == 0
    assert "Sollya is not on PATH" in capsys.readouterr().err
    assert "Sollya column not run: sollya is not installed" in md.read_text()
