"""turbogelu.approx.cells16: cells programs sized for a 16-bit format (issue 41, item 2), proven
on every input of the format."""

from __future__ import annotations

import numpy as np
import pytest

from turbogelu.approx import cells16, report, rounding
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
