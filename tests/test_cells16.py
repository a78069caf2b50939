"""turbogelu.approx.cells16: cells programs sized for a 16-bit format (issue 41, item 2), proven
on every input of the format."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from turbogelu.approx import cells16, report, rounding, spec
from turbogelu.approx import family_programs as fp

# What the search finds (python -m turbogelu.approx.cells16): a quadratic per cell for every
# function in bfloat16, and for sigmoid and tanh in float16; GELU and SiLU in float16 keep the
# shipped cubic (a quadratic is proven short of the rule in one cell).
LOWEST = {("gelu", "bfloat16"): 2, ("gelu", "float16"): 3, ("gelu_tanh", "bfloat16"): 2,
          ("gelu_tanh", "float16"): 3, ("sigmoid", "bfloat16"): 2, ("sigmoid", "float16"): 2,
          ("tanh", "bfloat16"): 2, ("tanh", "float16"): 2, ("silu", "bfloat16"): 2,
          ("silu", "float16"): 3}  # fmt: skip


@pytest.fixture(scope="module")
def searched():
    return {(fn, fmt): cells16.search(fn, fmt) for fn, fmt in LOWEST}


@pytest.mark.parametrize(("fn", "fmt"), list(LOWEST))
def test_lowest_degree_and_the_proof_below_it(searched, fn, fmt):
    r = searched[(fn, fmt)]
    assert r["degree"] == LOWEST[(fn, fmt)] and r["shipped_degree"] == 3
    rows = {row["degree"]: row for row in r["rows"]}
    # every degree below the lowest: the LP proves that no real polynomial serves a cell
    for d in range(1, r["degree"]):
        assert rows[d]["proven_infeasible"] and rows[d]["t_star"] > 1 and rows[d]["failures"] > 0
    assert rows[r["degree"]]["t_star"] <= 1 and rows[r["degree"]]["failures"] == 0
    assert rows[r["degree"]]["inputs"] == report.all_finite(fmt).size
    assert max(rows) == r["degree"]  # no degree above the lowest is tried


@pytest.mark.parametrize(("fn", "fmt"), list(LOWEST))
def test_found_table_keeps_the_rule_judged_independently(searched, fn, fmt):
    """The table judged as the accurate tier's exhaustive tests judge the shipped programs
    (report.exhaustive's ulps against the correctly rounded value, the tail's absolute
    bound), not through the search's own intervals."""
    r = searched[(fn, fmt)]
    table = np.asarray(r["tables"][r["degree"]], np.float32)
    assert table.shape == (r["degree"] + 1, 32)
    rep = report.exhaustive(lambda v: cells16.replay32(fn, v, table), fn, fmt)
    exact = report.reference_table(fn, fmt)[2]
    one = rep.x >= fp.ONE_ULP_FROM[fn]
    assert not np.any(np.isnan(rep.got))
    assert rep.ulps[one].max() <= 1
    bound = fp.ABS_BOUND + rounding.ulp_of(rep.got, fmt) / 2
    assert np.all(np.abs(rep.got - exact)[~one] <= bound[~one])


def test_the_check_fails_a_spoiled_table(searched):
    r = searched[("gelu", "bfloat16")]
    table = np.asarray(r["tables"][2], np.float32).copy()
    table[2, 8] *= np.float32(1.01)  # one coefficient of the hardest cell, 1 % off
    assert cells16.verify("gelu", "bfloat16", table)["failures"] > 0


def test_refuses_unknown_names():
    with pytest.raises(ValueError, match="fn must be one of"):
        cells16.inputs("erf", "bfloat16")
    with pytest.raises(ValueError, match="fmt one of"):
        cells16.inputs("gelu", "float32")


def test_render_names_every_case(searched):
    text = cells16.render(list(searched.values()))
    assert text.count("\n") == len(LOWEST) + 1 and "| gelu | float16 | 3 |" in text


# ---------------------------------------------------------------- the committed specs


def _committed(fn, fmt):
    return spec.load(cells16.spec_path(fn, fmt), "cells16")


@pytest.mark.parametrize(("fn", "fmt"), cells16.SIZED)
def test_committed_spec_is_the_refit(searched, fn, fmt):
    """data/specs/cells16/ holds one spec per format-sized program (SIZED: the search's
    outcome), each the refit by cells16's rule (the forwards within a twentieth of every
    input's margin where the LP lands on other float32 coefficients)."""
    doc = _committed(fn, fmt)
    assert doc["format"] == fmt and doc["degree"] == LOWEST[(fn, fmt)] < 3
    assert cells16.refit_differences(doc, cells16.build_spec(fn, fmt, searched[(fn, fmt)])) == []
    assert [r["degree"] for r in doc["search"]] == list(range(1, doc["degree"] + 1))
    assert doc["forward"]["errors"]["failures"] == 0 and doc["forward"]["errors"]["max_ulp"] <= 1


def test_sized_is_what_the_search_finds(searched):
    found = {k for k, r in searched.items() if r["degree"] < 3}
    assert found == set(cells16.SIZED)


@pytest.mark.parametrize(("fn", "fmt"), cells16.SIZED)
def test_committed_forward_keeps_the_rule_on_every_input(fn, fmt):
    table = cells16.part_table(_committed(fn, fmt)["forward"])
    assert cells16.verify(fn, fmt, table)["failures"] == 0
    rep = report.exhaustive(lambda v: cells16.replay32(fn, v, table), fn, fmt)
    one = rep.x >= fp.ONE_ULP_FROM[fn]
    assert rep.ulps[one].max() <= 1


@pytest.mark.parametrize(("fn", "fmt"), cells16.SIZED)
def test_matched_is_the_forwards_derivative(fn, fmt):
    """The matched table differentiates the forward's program cell by cell: its float64
    evaluation equals a central difference of the forward's inside each cell."""
    doc = _committed(fn, fmt)
    fwd = cells16.part_table(doc["forward"]).astype(np.float64)
    der = cells16.part_table(doc["backward_matched"]).astype(np.float64)
    v = np.linspace(0.3, 2.9, 7)  # inside cells, away from their edges for both layouts
    for k in (3, 8, 20):
        p = np.polynomial.polynomial.Polynomial(fwd[:, k])
        d = np.polynomial.polynomial.Polynomial(der[:, k])
        if fn in ("sigmoid", "tanh"):  # p'(u)
            want = p.deriv()(v)
        else:  # d/dv (v p(v)) (GELU: x p; SiLU: p + u p')
            want = (np.polynomial.polynomial.Polynomial([0, 1]) * p).deriv()(v)
        np.testing.assert_allclose(d(v), want, rtol=1e-6, atol=1e-6)
    # fitted to follow the function between the inputs (cells16.fit's smooth fit), the
    # quadratic's derivative follows f' to about an ulp of the format near 1 (measured
    # 2.1e-3 to 9.5e-3; fitted on the inputs alone it was 0.17 off for GELU)
    assert doc["backward_matched"]["errors"]["max_abs_float32"] < 0.02


def test_a_malformed_spec_is_refused(tmp_path):
    doc = _committed("gelu", "bfloat16")
    bad = tmp_path / "bad.json"
    for change, message in [
        ({"format": "float32"}, "format is 'float32'"),
        ({"degree": 3}, "below the float32 program's"),
        ({"parts": ["forward"]}, "a 16-bit cells spec holds"),
    ]:
        bad.write_text(json.dumps({**doc, **change}))
        with pytest.raises(ValueError, match=re.escape(message)):
            spec.load(bad, "cells16")


def test_operation_counts():
    """Each degree less is one lookup and one multiply-add less; GELU's cubic per cell is the
    eleven operations of the microbenchmark's cells loop (experiments/archive/cpu_op_costs)."""
    assert cells16.operations("gelu", 3) == 11 and cells16.operations("gelu", 2) == 9
    for fn in cells16.FUNCTIONS:
        for part in ("forward", "backward_matched"):
            assert cells16.operations(fn, 3, part) - cells16.operations(fn, 2, part) == 2
    with pytest.raises(ValueError, match="degree >= 1"):
        cells16.operations("gelu", 0)
