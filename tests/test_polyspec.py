"""PolySpec: validation, JSON, basis, float64 evaluation, operation counts, and the replay of
kernel arithmetic (one rounding per operation, FMA or split), including bit-for-bit equality
with the shipped kernels' replay."""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import numpy as np
import pytest

from turbogelu.approx import polyspec, replay, rounding, spec, targets
from turbogelu.approx.polyspec import PolySpec

F32 = np.float32
U32 = 2.0**-24  # float32 unit roundoff


@functools.cache
def _fitted(name: str, fmt: str = "float32", degree: int = 10, **form) -> PolySpec:
    """A least-squares fit of a target's residual in its natural form (a test fixture, not a
    fitting method: those live in methods.py)."""
    t = targets.TARGETS[name]
    L = 1.0 if t.asymptote_kind is None else 6.0
    tpl = PolySpec.template(name, degree, L, fmt=fmt, **form)
    u = np.linspace(0.0, L, 2001)
    c, *_ = np.linalg.lstsq(tpl.basis(u), t.residual(u), rcond=None)
    return tpl.with_coefficients(c, round_to_fmt=True, method="lstsq (test)", meta={"n": 2001})


def _scale(ps: PolySpec, x: np.ndarray) -> np.ndarray:
    """|simple part| + |u|^factor sum |c_k|: what the rounding errors of a program scale with."""
    u = np.abs(x)
    with np.errstate(invalid="ignore", over="ignore"):
        lin = {"x/2 + even": u / 2, "1/2 + odd": 0.5 + 0 * u}.get(ps.tgt.reduction, 0 * u)
        return lin + u**ps.factor * np.abs(ps.coefficients).sum()


# ---------------------------------------------------------------- form, validation, storage


def test_template_and_with_coefficients():
    tpl = PolySpec.template("gelu", 6, 4.0)
    assert (tpl.variable, tpl.factor, tpl.shift, tpl.clamp, tpl.fmt) == (
        "y",
        2,
        True,
        4.0,
        "float32",
    )
    assert tpl.coefficients == (0.0,) * 7
    e = PolySpec.template("exp2_frac", 5, 1.0)
    assert (e.variable, e.factor, e.clamp) == ("u", 0, math.inf)
    with pytest.raises(ValueError, match="not finite values of float32"):
        tpl.with_coefficients([0.1, 0.2])
    ps = tpl.with_coefficients([0.1, 0.2], round_to_fmt=True, method="x")
    assert ps.degree == 1 and ps.coefficients == (float(F32(0.1)), float(F32(0.2)))
    assert ps.method == "x" and tpl.method == ""


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"fmt": "float16", "coefficients": (0.1, 0.0, 0.0)}, "not finite values of float16"),
        ({"fmt": "bfloat16", "coefficients": (1 + 2.0**-8, 0.0, 0.0)}, "bfloat16"),
        ({"fmt": "float32", "coefficients": (1 / 3, 0.0, 0.0)}, "float32"),
        ({"fmt": "float64", "coefficients": (math.nan, 0.0, 0.0)}, "float64"),
        ({"coefficients": (1.0, 2.0)}, "needs 3 coefficients"),
        ({"target": "relu"}, "target must be one of"),
        ({"variable": "x"}, "variable must be"),
        ({"fmt": "int8"}, "fmt must be"),
        ({"factor": -1}, "factor"),
        ({"factor": 1.0}, "factor"),
        ({"fit_interval": 0.0}, "fit_interval"),
        ({"clamp": -1.0}, "clamp"),
        ({"program": "fast"}, "program must be"),
        ({"program": "turbogelu", "factor": 1}, "program 'turbogelu'"),
        ({"program": "turbogelu", "target": "tanh", "factor": 1}, "program 'turbogelu'"),
        ({"target": "exp2_frac", "factor": 0}, "clamp must be inf"),
    ],
)
def test_validation(changes, message):
    good = dict(
        target="gelu",
        variable="y",
        factor=2,
        shift=True,
        degree=2,
        fit_interval=4.0,
        clamp=4.0,
        fmt="float32",
        coefficients=(0.25, -0.125, 0.0),
    )
    PolySpec(**good)
    with pytest.raises(ValueError, match=message):
        PolySpec(**{**good, **changes})


def _examples() -> list[PolySpec]:
    sig64 = _fitted("sigmoid", "float64")
    return [
        spec.turbogelu_form(),
        spec.turbogelu_form("tanh", "backward_direct"),
        _fitted("silu", "float16"),
        _fitted("tanh", "bfloat16"),
        sig64,
        _fitted("exp2_frac"),
        _fitted("tanh_grad", variable="u", factor=0, shift=False, degree=6),
    ]


def test_json_round_trip():
    for ps in _examples():
        text = ps.to_json()
        back = PolySpec.from_json(text)
        assert back == ps and back.meta == ps.meta
        assert [float.hex(c) for c in back.coefficients] == [float.hex(c) for c in ps.coefficients]
        assert back.clamp == ps.clamp and back.fit_interval == ps.fit_interval
    # Coefficients are stored as hex (the shipped ones as in data/specs, C-literal style).
    d = spec.turbogelu_form().to_dict()
    shipped = spec.load(spec.spec_path("none"))["forward"]
    assert d["coefficients"] == shipped["coefficients"]
    assert d["clamp"] == float.hex(float.fromhex(shipped["clamp"]))
    # float64 coefficients keep all their bits.
    sig64 = _fitted("sigmoid", "float64")
    assert any(float(F32(c)) != c for c in sig64.coefficients)
    assert PolySpec.from_dict(sig64.to_dict()).coefficients == sig64.coefficients


def test_from_dict_rejects_malformed_data():
    d = spec.turbogelu_form().to_dict()
    with pytest.raises(ValueError, match="malformed"):
        PolySpec.from_dict({k: v for k, v in d.items() if k != "fmt"})
    with pytest.raises(ValueError, match="not a"):
        PolySpec.from_dict({**d, "version": 99})
    with pytest.raises(ValueError, match="not finite values of float16"):
        PolySpec.from_dict({**d, "fmt": "float16"})


# ---------------------------------------------------------------- the function in float64


@pytest.mark.parametrize(
    "form",
    [
        {"variable": "y", "factor": 2, "shift": True},
        {"variable": "u", "factor": 1, "shift": False},
        {"variable": "y", "factor": 0, "shift": False},
        {"variable": "u", "factor": 3, "shift": True},
    ],
)
def test_basis_and_residual_approx(form):
    L = 5.0
    ps = PolySpec.template("gelu", 4, L, **form).with_coefficients([0.5, -0.25, 0.125, 1.0, 2.0])
    u = np.linspace(0.0, L, 101)
    v = u if ps.variable == "u" else u * u
    t = v * ps.scale - 1.0 if ps.shift else v
    B = ps.basis(u)
    assert B.shape == (101, 5)
    for k in range(5):
        np.testing.assert_allclose(B[:, k], u**ps.factor * t**k, rtol=1e-15, atol=0)
    np.testing.assert_allclose(ps.residual_approx(u), B @ np.array(ps.coefficients), rtol=1e-15)
    assert ps.residual_approx(u.reshape(101, 1)).shape == (101, 1)
    if ps.shift:  # z runs over [-1, 1] up to the scale's float32 rounding
        assert ps.poly_variable(0.0) == -1.0
        assert abs(ps.poly_variable(L) - 1.0) <= 4 * U32
        assert ps.scale == float(F32(2.0 / (L if ps.variable == "u" else L * L)))
    else:
        assert ps.scale is None


def test_evaluate_is_reconstruction_inside_and_asymptote_outside():
    ps = spec.turbogelu_form()
    R = ps.clamp
    x = np.concatenate([np.linspace(-8.0, 8.0, 1601), [R, -R, np.inf, -np.inf, np.nan, -0.0]])
    got = ps.evaluate(x)
    inside = np.abs(x) <= R
    want = ps.tgt.reconstruct(x[inside], ps.residual_approx(np.abs(x[inside])))
    np.testing.assert_array_equal(got[inside], want)
    outside = np.abs(x) > R
    np.testing.assert_array_equal(got[outside], np.where(x[outside] > 0, x[outside], -0.0))
    assert np.isnan(got[-2]) and np.signbit(got[-1])
    # The shipped spec's error, as data/specs records it (float64 evaluation, max over the grid).
    grid = np.linspace(-6.0, 6.0, 100001)
    err = np.abs(ps.evaluate(grid) - targets.TARGETS["gelu"].f(grid)).max()
    assert 2.0e-5 < err <= 2.5e-5


def test_every_target_fits_and_replays():
    # Degree-10 least squares in each target's natural form: the float64 function is close to
    # the target (a sanity bound), and the float32 replay is within a few float32 rounding
    # units of the float64 evaluation, on both signs.
    for name, t in targets.TARGETS.items():
        ps = _fitted(name)
        lo = -ps.fit_interval if t.domain[0] < 0 else 0.0
        x = np.linspace(lo, ps.fit_interval, 4001).astype(F32).astype(np.float64)
        ev = ps.evaluate(x)
        assert np.abs(ev - t.f(x)).max() < 3e-2, name
        got = polyspec.replay(ps, x)
        assert got.dtype == F32
        assert np.all(np.abs(got - ev) <= 16 * U32 * _scale(ps, x)), name


# ---------------------------------------------------------------- operation counts


def test_op_counts():
    ps = spec.turbogelu_form()  # degree 8
    assert ps.op_count() == {"fma": 10, "mul": 2, "add": 0, "total": 12}
    assert ps.op_count(fma=False) == {"fma": 0, "mul": 12, "add": 10, "total": 22}
    # Estrin on 9 coefficients: 4 + 2 + 1 + 1 pair FMAs and 3 squarings of z.
    assert ps.op_count("estrin") == {"fma": 10, "mul": 5, "add": 0, "total": 15}
    d = 5
    cases = {
        # target, form -> (fma, mul): y = x*x, z = fma(y, s, -1), d Horner FMAs, then the tail
        ("gelu", ()): (d + 2, 2),  # x/2 and fma(y, p, x/2)
        ("sigmoid", ()): (d + 2, 1),  # fma(x, p, 1/2)
        ("tanh", ()): (d + 1, 2),  # x * p
        ("sigmoid_grad", ()): (d + 1, 1),  # p
        ("exp2_frac", ()): (d + 1, 0),  # in u: no square
        ("exp2_frac", (("shift", False),)): (d, 0),
        ("silu", (("variable", "u"), ("shift", False))): (d + 1, 2),  # u*p, x/2, fma(u, ., x/2)
    }
    for (name, form), (n_fma, n_mul) in cases.items():
        ps = PolySpec.template(name, d, 4.0 if name != "exp2_frac" else 1.0, **dict(form))
        assert ps.op_count() == {"fma": n_fma, "mul": n_mul, "add": 0, "total": n_fma + n_mul}
        split = ps.op_count(fma=False)
        assert split == {"fma": 0, "mul": n_fma + n_mul, "add": n_fma, "total": 2 * n_fma + n_mul}


# ---------------------------------------------------------------- the replay


def _float32_inputs(R: float) -> np.ndarray:
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e-20, 3e38, -3e38, 1e19]
    return np.concatenate(
        [np.linspace(-8.0, 8.0, 200001).astype(F32), spec.floats_near(R, 1e-3), F32(specials)]
    ).astype(F32)


def _assert_same_bits(a: np.ndarray, b: np.ndarray, msg: str) -> None:
    assert a.dtype == b.dtype == F32
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b), err_msg=msg)
    bad = np.flatnonzero(a[~nan].view(np.uint32) != b[~nan].view(np.uint32))
    assert bad.size == 0, f"{msg}: {bad.size} differ, e.g. {a[~nan][bad[:3]]} vs {b[~nan][bad[:3]]}"


@pytest.mark.parametrize("mode", ["none", "tanh"])
def test_turbogelu_form_replays_the_kernel_bit_for_bit(mode):
    data = spec.load(spec.spec_path(mode))
    for part in spec.PARTS:
        ps = spec.turbogelu_form(mode, part)
        values = spec.part_values(data[part])
        assert ps.program == "turbogelu" and ps.fmt == "float32"
        assert ps.clamp == ps.fit_interval == values["clamp"] and ps.scale == values["scale"]
        x = _float32_inputs(ps.clamp)
        for scheme in ("horner", "estrin"):
            got = polyspec.replay(ps, x, scheme=scheme)
            if part == "forward":
                want = replay.forward32(x, values, scheme)
            else:
                want = replay.backward32(x, values, scheme=scheme)
            _assert_same_bits(got, want, f"{mode} {part} {scheme}")
    assert spec.turbogelu_form() == spec.turbogelu_form()
    assert spec.turbogelu_form().target == "gelu"
    assert spec.turbogelu_form("tanh", "backward_matched").target == "gelu_tanh_grad"


def test_generic_program_is_close_to_the_kernels():
    # The kernels decide the window on fl(x*x) > fl(R*R), the generic program on |x| > R: the
    # same for every float32 x, since the squares of neighbouring floats near R lie at least
    # sqrt(2) ulps of R^2 apart (2 R ulp(R) >= sqrt(2) ulp(R^2)), so rounding cannot merge
    # them. The same coefficients in the generic order (fma(y, p, x/2) against the kernel's
    # x fma(x, p, 1/2)) then differ by rounding only, and at -0.0 (+0.0 from the generic FMA).
    kern = spec.turbogelu_form()
    gen = dataclasses.replace(kern, program="generic")
    x = _float32_inputs(kern.clamp)
    R = F32(kern.clamp)
    with np.errstate(invalid="ignore", over="ignore"):
        np.testing.assert_array_equal((x * x) > R * R, np.abs(x) > R)
    a, b = polyspec.replay(kern, x), polyspec.replay(gen, x)
    finite = np.isfinite(a)
    np.testing.assert_array_equal(a[~finite], b[~finite])
    d = np.abs(a[finite].astype(np.float64) - b[finite])
    assert np.all(d <= 8 * U32 * _scale(kern, x[finite].astype(np.float64)))
    assert np.any(d > 0)
    z = polyspec.replay(gen, np.array([-0.0, 0.0]))
    assert z.tolist() == [0.0, 0.0] and not np.signbit(z[0])


def test_fma_and_split_differ_by_rounding_only():
    for ps in (spec.turbogelu_form(), _fitted("silu_grad"), _fitted("tanh")):
        x = np.linspace(-ps.clamp, ps.clamp, 20001).astype(F32)
        a = polyspec.replay(ps, x).astype(np.float64)
        b = polyspec.replay(ps, x, fma=False).astype(np.float64)
        assert np.any(a != b), ps.target
        assert np.all(np.abs(a - b) <= 8 * U32 * _scale(ps, x.astype(np.float64))), ps.target


def test_target_precision_is_coarser_and_float64_needs_split():
    x = np.linspace(-6.0, 6.0, 2001)
    for fmt, unit in (("float16", 2.0**-11), ("bfloat16", 2.0**-8)):
        ps = _fitted("sigmoid", fmt)
        got = polyspec.replay(ps, x, precision="target")
        assert got.dtype == F32 and np.all(rounding.is_representable(got, fmt))
        err = np.abs(got - ps.evaluate(rounding.round_to(x, fmt)))
        assert err.max() <= 16 * unit * 0.5 and err.max() > 4 * U32
    ps64 = _fitted("sigmoid", "float64")
    with pytest.raises(ValueError, match="float64 FMA"):
        polyspec.replay(ps64, x, precision="target")
    got = polyspec.replay(ps64, x, precision="target", fma=False)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ps64.evaluate(x), rtol=0, atol=1e-14)
    # precision="float32" rounds float64 coefficients to float32 first.
    r32 = ps64.with_coefficients(ps64.coefficients, round_to_fmt=True, fmt="float32")
    np.testing.assert_array_equal(polyspec.replay(ps64, x), polyspec.replay(r32, x))


# An independent, slow replay: the same programs in exact rational arithmetic, each operation
# rounded once by rounding.round_exact.


def _exact_replay(ps: PolySpec, x: float, fused: bool) -> float:
    def rnd(q):
        return Fraction(rounding.round_exact(q, ps.fmt))

    def fma(a, b, c):
        return rnd(a * b + c) if fused else rnd(rnd(a * b) + c)

    half = Fraction(1, 2)
    x = Fraction(x)
    y = rnd(x * x)
    p = Fraction(ps.coefficients[-1])
    z = fma(y, Fraction(ps.scale), -1)
    for c in reversed(ps.coefficients[:-1]):
        p = fma(p, z, Fraction(c))
    if ps.program == "turbogelu":
        return float(rnd(x * fma(x, p, half)))
    if ps.tgt.reduction == "x/2 + even":  # factor 2
        return float(fma(y, p, rnd(x * half)))
    return float(fma(x, p, half))  # "1/2 + odd", factor 1


@pytest.mark.parametrize("fmt", ["float32", "float16", "bfloat16"])
def test_replay_rounds_each_operation_once(fmt):
    specs = [
        _fitted("sigmoid", fmt, degree=6),
        _fitted("gelu", fmt, degree=6),
        dataclasses.replace(_fitted("gelu", fmt, degree=6), program="turbogelu"),
    ]
    x = rounding.round_to(np.linspace(-5.9, 5.9, 41), fmt)
    precision = "float32" if fmt == "float32" else "target"
    for ps in specs:
        for fused in (True, False):
            got = polyspec.replay(ps, x, precision=precision, fma=fused).astype(np.float64)
            want = np.array([_exact_replay(ps, v, fused) for v in x])
            np.testing.assert_array_equal(got, want, err_msg=f"{ps.target} {ps.program} {fused}")
