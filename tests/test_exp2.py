"""turbogelu.approx.exp2: the paper's Table 8 (fits of 2^f on [0, 1]) reproduced.

Every row of the paper is reproduced to the 4 significant digits it prints (and within 0.05 %),
with "least squares" = unweighted least squares of the absolute residual, "sampled minimax" =
minimax of the relative error on samples, PWL2's hinge fixed at f = 1/2, both endpoints exact.
The other interpretations are checked to *miss* the paper, so the choice is not arbitrary.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from turbogelu.approx import exp2

# Relative tolerance of a reproduced value against the paper's (printed to 4 digits).
RTOL = 5e-4


@pytest.fixture(scope="module")
def rows():
    return exp2.table8()


def test_table8_reproduces_paper(rows):
    paper_rows = [r for r in rows if r["paper_max_rel"] is not None]
    assert {(r["family"], r["objective"]) for r in paper_rows} == set(exp2.PAPER_TABLE8)
    for r in paper_rows:
        for key in ("max_rel", "rms_rel"):
            ours, paper = r[key], r[f"paper_{key}"]
            assert float(f"{ours:.3e}") == paper, (r["family"], r["objective"], key, ours, paper)
            assert ours == pytest.approx(paper, rel=RTOL)
    # Our own degree-3 minimax (p(0) = 1 only) beats FA4's quantized Sollya coefficients.
    d3 = next(r for r in rows if r["family"] == "D3")
    fa4 = next(r for r in rows if r["family"] == "D3 (FA4)")
    assert d3["max_rel"] < fa4["max_rel"] < 1.03 * d3["max_rel"]
    assert sum(d3["coefficients"]["monomial"]) == pytest.approx(1.99983, abs=1e-5)
    assert sum(exp2.FA4_D3) == pytest.approx(1.99983, abs=1e-5)


def test_d1_closed_form():
    # (1 + f) / 2^f peaks at f = 1/ln 2 - 1.
    f0 = 1 / math.log(2) - 1
    peak = (1 + f0) * 2.0**-f0 - 1
    f = exp2.dense_grid()
    assert exp2.error_stats(exp2.D1.evaluate([], f), f)["max_rel"] == pytest.approx(peak, rel=1e-9)


@pytest.mark.parametrize("family", [exp2.D1, exp2.PWL2, exp2.D2, exp2.Family("D4", degree=4)])
def test_endpoints_exact(family):
    for params in (exp2.fit_least_squares(family), exp2.fit_minimax(family)):
        assert family.evaluate(params, [0.0, 1.0]).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("family", [exp2.D2, exp2.D3_LEFT, exp2.Family("D4", degree=4)])
def test_coefficients_are_the_polynomial(family):
    f = np.linspace(0, 1, 101)
    a = exp2.fit_minimax(family)
    c = family.coefficients(a)["monomial"]
    assert len(c) == family.degree + 1
    np.testing.assert_allclose(np.polynomial.polynomial.polyval(f, c), family.evaluate(a, f))


def test_pwl2_shape():
    a = exp2.fit_least_squares(exp2.PWL2)
    f = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    v = float(a[0])
    np.testing.assert_allclose(exp2.PWL2.evaluate(a, f), [1, (1 + v) / 2, v, (v + 2) / 2, 2])
    assert exp2.PWL2.coefficients(a) == {"hinge": 0.5, "value": v}


@pytest.mark.parametrize("family", [exp2.PWL2, exp2.D2])
def test_fits_are_optimal(family):
    f = exp2.dense_grid(20_001)
    ls = exp2.fit_least_squares(family, f)
    mm = exp2.fit_minimax(family, f)

    def sse(a):
        return np.sum((family.evaluate(a, f) - np.exp2(f)) ** 2)

    def maxrel(a):
        return np.abs(exp2.rel_errors(family.evaluate(a, f), f)).max()

    for step in (1e-4, -1e-4):
        assert sse(ls) < sse(ls + step)
        assert maxrel(mm) < maxrel(mm + step)
    # The minimax is sampled: on a denser grid it can only be worse by a hair.
    dense = exp2.dense_grid()
    e = exp2.error_stats(family.evaluate(mm, dense), dense)["max_rel"]
    assert e == pytest.approx(maxrel(mm), rel=1e-6)


def _stats(family, params):
    f = exp2.dense_grid()
    return exp2.error_stats(family.evaluate(params, f), f)


def test_other_interpretations_miss_the_paper():
    """Relative least squares, absolute minimax, a free PWL2 hinge: none gives the paper's
    numbers (each misses by more than 1 %), which is why they are not the ones used."""
    paper = exp2.PAPER_TABLE8
    misses = {
        ("PWL2", "least squares"): _stats(
            exp2.PWL2, exp2.fit_least_squares(exp2.PWL2, relative=True)
        ),
        ("D2", "least squares"): _stats(exp2.D2, exp2.fit_least_squares(exp2.D2, relative=True)),
        ("PWL2", "sampled minimax"): _stats(exp2.PWL2, exp2.fit_minimax(exp2.PWL2, relative=False)),
        ("D2", "sampled minimax"): _stats(exp2.D2, exp2.fit_minimax(exp2.D2, relative=False)),
    }
    for key, s in misses.items():
        assert abs(s["max_rel"] / paper[key][0] - 1) > 0.01, key
    # A hinge away from 1/2 changes the PWL2 rows too.
    off = exp2.Family("PWL2", "pwl", hinge=0.52)
    s = _stats(off, exp2.fit_least_squares(off))
    assert abs(s["max_rel"] / paper[("PWL2", "least squares")][0] - 1) > 0.01


def test_render(rows):
    text = exp2.render_table8(rows)
    assert text.count("\n") == len(rows) + 1
    assert "| D2 | sampled minimax | 2 packed FMAs | 2.679e-03 | 2.679e-03 |" in text
