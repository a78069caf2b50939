"""exp2's programs in the lab (turbogelu/approx/exp2_programs.py): the committed specs are what
the recorded command fits (bit for bit) and measures, the replay's arithmetic, and the
degree choice."""

from __future__ import annotations

import numpy as np
import pytest

from turbogelu.approx import exp2_programs as ep
from turbogelu.approx import spec


@pytest.mark.parametrize("tier", ep.TIERS)
def test_refit_gives_the_committed_coefficients(tier):
    doc = ep.load(tier)
    c = ep.accurate_coefficients() if tier == "accurate" else ep.paper_coefficients()
    direct, matched = ep.derivative_programs(c)
    for part, want in (("forward", c), ("backward_direct", direct), ("backward_matched", matched)):
        assert doc[part]["coefficients"] == [spec.f32_hex(v) for v in want], part
        assert ep.coefficients(doc, part) == want
    assert doc["form"] == ep.FORMS[tier] and doc["window"] == [ep.LO, ep.HI]
    assert doc["generated_by"] == spec.FIT_ALL and doc["program"] == "exp2"


@pytest.mark.parametrize("tier", ep.TIERS)
def test_committed_errors_are_remeasured(tier):
    """The spec's forward errors are the program's (the float32 grid and every 16-bit input)."""
    doc = ep.load(tier)
    got = ep.measure(ep.coefficients(doc), doc["form"])
    for fmt in ("float32", *ep.FORMATS):
        want = doc["forward"]["errors"][fmt]
        assert got[fmt]["max_ulp"] == want["max_ulp"], fmt
        assert got[fmt]["inputs"] == want["inputs"], fmt
    assert got["float32"]["overflow_mismatches"] == 0
    assert got["float32"]["first_inf_input"] == 128.0


def test_accurate_tier_is_the_lowest_degree_within_2_ulp():
    doc = ep.load("accurate")
    f32 = doc["forward"]["errors"]["float32"]
    assert doc["holds_tier"] and f32["max_ulp"] <= ep.ULP_BOUND
    assert f32["max_ulp_subnormal_results"] <= ep.ULP_BOUND and f32["subnormal_results"] > 0
    scan = {row["degree"]: row for row in doc["degree_scan"]}
    d = doc["forward"]["degree"]
    assert scan[d]["holds"] and not scan[d - 1]["holds"]
    assert all(row["points"] == 2**24 + 1 for row in scan.values())


def test_paper_tier_is_table8s_d2_with_exact_endpoints():
    c = ep.paper_coefficients()
    assert c[0] == 1.0 and c[1] + c[2] == 1.0  # p(0) = 1 and p(1) = 2, exactly in float32
    x = np.array([0.0, 1.0, 2.0, -3.0, 0.999999940395], dtype=np.float32)
    r = ep.replay(c, x, "Exp2Floor")
    assert r[:4].tolist() == [1.0, 2.0, 4.0, 0.125]  # integers exact on either side of the tie
    # Table 8's D2 sampled-minimax row: max relative error 2.679e-3 (the fit is in float64).
    f = np.linspace(0, 1, 100_001)
    rel = np.polynomial.polynomial.polyval(f, c) / np.exp2(f) - 1
    assert abs(np.abs(rel).max() / 2.679e-3 - 1) < 5e-3


def test_replay_final_rounding_is_one_rounding():
    """fl(fl(p 2^floor(n/2)) 2^ceil(n/2)) is p 2^n rounded once to float32: on subnormal
    results, where a second rounding would show (p 2^n itself is exact in float64)."""
    c = ep.accurate_coefficients()
    x = np.linspace(-149.9, -126.1, 2001).astype(np.float32)
    n = np.rint(x.astype(np.float64))
    f = (x.astype(np.float64) - n).astype(np.float32)  # exact
    p = ep.replay(c, f).astype(np.float64)  # the same P(f), with n = 0
    want = (p * np.exp2(n)).astype(np.float32)
    assert np.array_equal(ep.replay(c, x), want)
