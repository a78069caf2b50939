"""The activation family's accurate tier (issue 17): the committed specs under
data/specs/<function>/accurate.json refit bit for bit, and their programs, replayed in float32,
hold the tier's bounds on every bfloat16 and float16 input and on the float32 grid."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from turbogelu import _table
from turbogelu.approx import family_programs as fp
from turbogelu.approx import report, rounding, spec
from turbogelu.approx.polyspec import PolySpec, replay

FUNCTIONS = fp.FUNCTIONS
# The functions with a paper tier (the source paper has no softplus program).
PAPER_FUNCTIONS = [f for f in FUNCTIONS if "paper" in _table.program_tiers(f)]


def committed(function: str) -> dict:
    return json.loads(spec.spec_path(function, "accurate").read_text())


# ---------------------------------------------------------------- reproducibility


@pytest.mark.parametrize("function", FUNCTIONS)
def test_command_reproduces_committed_spec(function, tmp_path, capsys):
    want = committed(function)
    assert want["generated_by"] == spec.FIT_ALL  # (its step runs this module's command)
    out = tmp_path / "accurate.json"
    assert fp.main([function, "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    # Coefficients, clamp, degree, settings: identical; measured figures to spec.MEASURED_RTOL.
    assert spec.differences(want, got) == []
    for part in spec.PARTS:
        assert got[part]["coefficients"] == want[part]["coefficients"], part
    # The committed file itself is left as it is (only `fit --all` may write it).
    assert fp.main([function]) == 0
    assert "unchanged" in capsys.readouterr().err
    with pytest.raises(spec.NotTheFitCommand, match="written only by `python -m turbogelu fit"):
        spec.write_checked(spec.spec_path(function, "accurate"), "{}\n", force=True)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_committed_spec_follows_the_defaults_table(function):
    s = spec.FAMILY_DEFAULTS[function]
    doc = fp.load(function)
    ps = fp.programs(doc)
    assert ps["forward"].degree == ps["backward_direct"].degree == s.degree
    assert ps["forward"].program == s.order and ps["forward"].target == function
    assert {p.variable for p in ps.values()} == {s.variable}
    for p in ps.values():
        assert p.clamp == p.fit_interval == float(np.float32(s.clamp))
    assert doc["holds_tier"] is True


def test_load_names_the_file_and_its_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="family_programs"):
        fp.load("sigmoid", root=tmp_path)
    doc = committed("tanh")
    doc["forward"]["target"] = "sigmoid"
    (tmp_path / "tanh").mkdir()
    (tmp_path / "tanh" / "accurate.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="accurate-tier spec .* malformed"):
        fp.load("tanh", root=tmp_path)


# ---------------------------------------------------------------- the tier's bounds


def _forward(function: str) -> PolySpec:
    return fp.programs(fp.load(function))["forward"]


@pytest.mark.parametrize("fmt", fp.FORMATS)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_forward_every_16bit_input(function, fmt):
    """Judged here from the replay itself, not from the stored figures."""
    ps = _forward(function)
    rep = report.exhaustive(lambda x: replay(ps, x), function, fmt)
    exact = report.reference_table(function, fmt)[2]
    x, ulps = rep.x, rep.ulps
    assert not np.any(np.isnan(rep.got)), "NaN for a finite input"
    one = x >= fp.ONE_ULP_FROM[function]
    assert ulps[one].max() <= 1, f"{function} {fmt}: {int(np.sum(ulps[one] > 1))} over 1 ulp"
    tail = ~one
    err = np.abs(rep.got - exact)
    bound = fp.ABS_BOUND + rounding.ulp_of(rep.got, fmt) / 2
    assert np.all(err[tail] <= bound[tail]), f"{function} {fmt}: tail over 3e-5"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_forward_float32_whole_line(function):
    e = fp.float32_errors(_forward(function))
    assert e["window_max_abs_float32"] <= fp.ABS_BOUND
    assert e["tail_error"] <= fp.ABS_BOUND
    # Far beyond the clamp the program returns the asymptote itself.
    ps = _forward(function)
    x = np.array([-1e30, -100.0, 100.0, 1e30, -np.inf, np.inf], np.float32)
    np.testing.assert_array_equal(replay(ps, x), ps.tgt.asymptote(x.astype(np.float64)))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_stored_figures_are_the_replays(function):
    doc = fp.load(function)
    for part, ps in fp.programs(doc).items():
        got = fp.measure(ps, part == "forward")
        # Under "errors" floats compare to spec.MEASURED_RTOL, counts exactly.
        assert spec.differences({"errors": doc[part]["errors"]}, {"errors": got}) == [], part
    assert fp.holds_tier(doc["forward"]["errors"])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_matched_backward_is_the_forward_derivative(function):
    ps = fp.programs(fp.load(function))
    fwd, m = ps["forward"], ps["backward_matched"]
    # The derivative's coefficients in exact arithmetic, then rounded once to float32.
    # r = u^f P(z), z = u s - 1: r' = u^(f-1) (f P + (z + 1) P'(z)); for f = 0 (softplus)
    # r' = s P'(z), factor 0 and degree one less.
    f = fwd.factor
    c = [Fraction(v) for v in fwd.coefficients] + [Fraction(0)]
    assert fwd.variable == "u"
    if f == 0:
        assert (m.factor, m.degree) == (0, fwd.degree - 1)
        q = [Fraction(fwd.scale) * (k + 1) * c[k + 1] for k in range(fwd.degree)]
    else:
        assert m.factor == f - 1
        q = [(f + k) * c[k] + (k + 1) * c[k + 1] for k in range(fwd.degree + 1)]
    assert list(m.coefficients) == [rounding.round_exact(v, "float32") for v in q]
    # ... and they are the derivative: against central differences of the forward (float64),
    # away from x = 0 (an even number of points), where a factor-0 derivative jumps by
    # 2 s P'(-1) (the fit's slope at u = 0).
    exact = m.with_coefficients([float(v) for v in q], fmt="float64")
    x = np.linspace(-0.99, 0.99, 2000) * fwd.clamp
    h = 1e-6
    fd = (fwd.evaluate(x + h) - fwd.evaluate(x - h)) / (2 * h)
    np.testing.assert_allclose(exact.evaluate(x), fd, rtol=0, atol=1e-7)
    assert m.method == "derivative of forward"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_default_backward_is_the_more_accurate(function):
    doc = fp.load(function)
    d = doc["backward_direct"]["errors"]["float32"]["max_abs_float32"]
    m = doc["backward_matched"]["errors"]["float32"]["max_abs_float32"]
    assert doc["default_backward"] == ("direct" if d <= m else "matched")


def test_x_squared_variable_cannot_hold_silu():
    """Why the programs use |x|, not x^2 as GELU's do (family_programs' docstring)."""
    (row,) = fp.scan("silu", [20], 13.0, "y")
    # The float64 fit is near the bound; the float32 replay is several times over it.
    assert row["float64_fit_error"] < 1e-4 and row["float32_window"] > 3 * fp.ABS_BOUND
    assert not row["holds_tier"]
    (row,) = fp.scan("silu", [spec.FAMILY_DEFAULTS["silu"].degree], 13.0, "u")
    assert row["holds_tier"]


# ---------------------------------------------------------------- the paper tier


@pytest.mark.parametrize("function", PAPER_FUNCTIONS)
def test_paper_command_reproduces_committed_spec(function, tmp_path):
    want = json.loads(spec.spec_path(function, "paper").read_text())
    assert want["generated_by"] == spec.FIT_ALL
    out = tmp_path / "paper.json"
    assert fp.main([function, "--tier", "paper", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert spec.differences(want, got) == []
    for part in spec.PARTS:
        assert got[part]["coefficients"] == want[part]["coefficients"], part


@pytest.mark.parametrize("function", PAPER_FUNCTIONS)
def test_paper_programs_are_table2s(function):
    """The forward is table2's same-form program (its row, form and bfloat16 coefficients);
    the backward the paper's derivative row where it has one, else the matched derivative."""
    from turbogelu.approx import table2

    doc = fp.load(function, tier="paper")
    ps = fp.programs(doc)
    fwd_row, bwd_row = fp.PAPER_ROWS[function]
    cfg = table2.get_row(fwd_row).same
    f = ps["forward"]
    assert (f.variable, f.factor, f.degree, f.fmt) == (cfg.variable, cfg.factor, cfg.degree,
                                                      "bfloat16")  # fmt: skip
    assert f.clamp == cfg.clamp and f.fit_interval == cfg.fit_interval
    if bwd_row is None:
        assert ps["backward_direct"] == ps["backward_matched"]
        assert doc["default_backward"] == "matched"
    else:
        assert ps["backward_direct"].degree == table2.get_row(bwd_row).same.degree
    assert doc["holds_tier"] is False  # the paper's programs trade accuracy for operations


def test_matched_derivative_of_a_polynomial_in_x_squared():
    """SiLU's paper form x/2 + P(z(x^2)): r' = 2 s u P'(z), factor 1, degree one less."""
    ps = fp.programs(fp.load("silu", tier="paper"))
    fwd, m = ps["forward"], ps["backward_matched"]
    assert (fwd.variable, fwd.factor, m.factor, m.degree) == ("y", 0, 1, fwd.degree - 1)
    x = np.linspace(-0.99, 0.99, 2001) * fwd.clamp
    h = 1e-6
    fd = (fwd.evaluate(x + h) - fwd.evaluate(x - h)) / (2 * h)
    # m's coefficients are rounded to float32: a few float32 ulps of |q| * |z|^k.
    np.testing.assert_allclose(m.evaluate(x), fd, rtol=0, atol=2e-6)
