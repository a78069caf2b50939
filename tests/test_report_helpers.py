"""The lab helpers the notebooks call: clamping scan, dependency depth, alternations,
rounding error of a replay."""

from __future__ import annotations

import numpy as np
import pytest

from turbogelu.approx import clamping, family_fit, methods, polyspec, spec


def test_crossing_of_degree_8_is_near_the_shipped_clamp():
    rows = clamping.scan("gelu", 8, [4.25, 4.5], grid_points=2049)
    assert rows[0]["decided_by"] == "tail" and rows[1]["decided_by"] == "polynomial"
    c = clamping.crossing(rows)
    # The minimax degree-8 fit's crossing sits within 0.05 of the kernels' R.
    assert c is not None and abs(c["range"] - spec.DEFAULTS["exact"].range) < 0.05
    assert 2e-5 < c["error"] < 3e-5
    assert clamping.best(rows) in rows
    assert clamping.crossing(rows[:1]) is None


def test_dependency_depth_of_the_shipped_form():
    ps = spec.turbogelu_form()
    # x*x, z = fma, 8 Horner FMAs, fma(x, p, 1/2), x * h.
    assert ps.dependency_depth("horner") == 12 == ps.op_count("horner")["total"]
    # Estrin: 4 levels of FMAs on z, z^2, z^4, z^8 instead of 8.
    assert ps.dependency_depth("estrin") == 8
    assert ps.dependency_depth("horner", fma=False) == 22
    assert ps.dependency_depth("estrin", fma=False) == 13
    for d in range(1, 13):
        tpl = polyspec.PolySpec.template("gelu", d, 4.0, program="turbogelu")
        assert tpl.dependency_depth("estrin") <= tpl.dependency_depth("horner")
        assert tpl.dependency_depth("horner") == d + 4


def test_alternations():
    u = np.linspace(0, 1, 2001)
    assert methods.alternations(np.cos(5 * np.pi * u)) == 6
    assert methods.alternations(u) == 1
    assert methods.alternations(np.zeros(5)) == 0
    ps = family_fit.fit_polyspec("gelu", degree=4, fit_interval=4.0, fmt="float64", method="remez")
    e = family_fit.ErrorModel(ps).signed_curve(ps.coefficients)
    assert methods.alternations(e, 1e-3) == ps.degree + 2


@pytest.mark.parametrize("scheme", ["horner", "estrin"])
def test_rounding_error_is_small(scheme):
    ps = spec.turbogelu_form()
    x = np.linspace(-ps.clamp, ps.clamp, 20001)
    fused = family_fit.rounding_error(ps, x, scheme=scheme)
    split = family_fit.rounding_error(ps, x, scheme=scheme, fma=False)
    assert 0 < fused["max_abs"] < 1e-6 and 0 < split["max_abs"] < 1e-6
    assert fused["max_ulps_positive"] < 8
    assert fused["points"] == x.size


def test_bench_run_methods_times_only_the_asked_rows():
    from experiments import bench

    # malloc="default": leave this (pytest) process's glibc settings alone.
    rows = bench.run_methods(
        ["turbogelu", "turbogelu (Estrin)"], ("forward",), ("float32",), 4096, 2, 2,
        malloc="default",
    )  # fmt: skip
    assert [r["method"] for r in rows] == ["turbogelu", "turbogelu (Estrin)"]
    assert all(r["p50_us"] > 0 and r["rounds"] == 2 and r["malloc"] == "default" for r in rows)
    with pytest.raises(ValueError):
        bench.run_methods(["nope"], size=16, rounds=1, calls=1)
    with pytest.raises(ValueError, match="malloc must be"):
        bench.run_methods(["turbogelu"], size=16, rounds=1, calls=1, malloc="fast")
