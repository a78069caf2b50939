"""turbogelu.approx.report: exhaustive 16-bit ulp reports, dense-grid errors, tables, figure.

The known numbers of the shipped kernel (replayed in numpy) are checked against an independent
computation: inputs from bit patterns via ``rounding.from_bits``, results rounded by torch
(``Tensor.to``, round to nearest even), ulps as differences of ordered bit patterns.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from turbogelu.approx import reference, replay, report, rounding, spec

F32 = np.float32
F64 = np.float64
FMTS = ("bfloat16", "float16")
N_FINITE = {"bfloat16": (1 << 16) - 2 - 2 * 127, "float16": (1 << 16) - 2 - 2 * 1023}


def _part(mode="none", which="forward"):
    return spec.part_values(spec.load(spec.spec_path(mode))[which])


def _shipped(mode="none"):
    part = _part(mode)
    return lambda x: replay.forward32(x, part)


def _exact32(name):
    f64 = rounding.FUNCTIONS[name][0]
    return lambda x: np.asarray(f64(np.asarray(x, F64)), F64).astype(F32)


# ---------------------------------------------------------------- inputs and rounding


@pytest.mark.parametrize("fmt", FMTS)
def test_all_finite(fmt):
    x = report.all_finite(fmt)
    assert x.dtype == F32 and x.size == N_FINITE[fmt]
    assert np.all(np.isfinite(x))
    assert np.all(rounding.is_representable(x.astype(F64), fmt))
    # Every finite value once (+0 and -0 both in: distinct bits, equal values).
    ref = rounding.from_bits(np.arange(1 << 16), fmt)
    ref = ref[np.isfinite(ref)]
    np.testing.assert_array_equal(x.astype(F64), ref)
    assert np.unique(x.view(np.uint32)).size == x.size
    assert np.unique(x).size == x.size - 1


def _rounding_probe(rng) -> np.ndarray:
    """float32 values at, next to and between 16-bit midpoints, normal and subnormal."""
    vals = [rng.standard_normal(400) * 10.0 ** rng.uniform(-9, 5, 400)]
    for fmt in FMTS:
        y = rounding.from_bits(rng.integers(0, 1 << 16, 600), fmt)
        y = y[np.isfinite(y)]
        mid = y + rounding.ulp_of(y, fmt) / 2  # exact in float64, a float32 value
        vals += [mid, np.nextafter(mid.astype(F32), F32(np.inf)), mid - 2.0**-149]
    # Every subnormal of each format (and the first normals), with the midpoints above them.
    for fmt, n in (("float16", 0x0402), ("bfloat16", 0x0082)):
        y = rounding.from_bits(np.arange(n), fmt)
        mid = y + rounding.ulp_of(y, fmt) / 2
        vals += [y, mid, np.nextafter(mid.astype(F32), F32(0)), mid + 2.0**-149]
    vals.append(np.array([65504.0, 65519.99, 65520.0, 3.4028234663852886e38, 2.0**-24, 2.0**-25]))
    v = np.concatenate(vals).astype(F32)
    return np.concatenate([v, -v])


def test_round_output_is_round_to_nearest_even():
    """Against exact rational rounding (subnormals, midpoints and overflow included)."""
    x = _rounding_probe(np.random.default_rng(0))
    for fmt in FMTS:
        got = report.round_output(x, fmt)
        want = np.array([rounding.round_exact(float(v), fmt) for v in x.astype(F64)])
        bad = got != want
        assert not np.any(bad), f"{fmt}: {x[bad][:5]} -> {got[bad][:5]}, want {want[bad][:5]}"
    out = report.round_output(np.array([np.nan, np.inf, -np.inf], F32), "bfloat16")
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf


def test_round_output_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << 32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(F32)
    x = x[np.isfinite(x)]
    t = torch.from_numpy(x)
    for fmt, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16)):
        np.testing.assert_array_equal(report.round_output(x, fmt), t.to(dt).double().numpy())


# ---------------------------------------------------------------- the shipped kernel


def _ordered16(values, fmt):
    """Ordered integers of 16-bit values (for ulp distances), computed with torch views."""
    torch = pytest.importorskip("torch")
    dt = torch.bfloat16 if fmt == "bfloat16" else torch.float16
    b = torch.from_numpy(np.asarray(values, F64)).to(dt).view(torch.int16).numpy().astype(np.int64)
    b &= 0xFFFF
    mag = b & 0x7FFF
    return np.where(b >> 15, -mag, mag)


@pytest.mark.parametrize("fmt", FMTS)
def test_shipped_kernel_known_numbers(fmt):
    torch = pytest.importorskip("torch")
    rep = report.exhaustive(_shipped(), "gelu", fmt, label="shipped")
    assert [r.region for r in rep.regions] == [r[0] for r in rounding.REGIONS]
    assert sum(r.count for r in rep.regions) == N_FINITE[fmt]

    # Independent: inputs from bit patterns, float32 replay rounded by torch, ordered bits.
    x64 = rounding.from_bits(np.arange(1 << 16), fmt)
    x64 = x64[np.isfinite(x64)]
    y = replay.forward32(x64.astype(F32), _part())
    dt = torch.bfloat16 if fmt == "bfloat16" else torch.float16
    got = torch.from_numpy(y).to(dt).double().numpy()
    cr = rounding.correctly_rounded(x64, fmt, "gelu")
    ulps = np.abs(_ordered16(got, fmt) - _ordered16(cr, fmt))
    exact = reference.gelu(x64)
    for (_label, pred), r in zip(rounding.REGIONS, rep.regions, strict=True):
        m = pred(x64)
        d = ulps[m]
        assert r.count == m.sum()
        assert r.max_ulp == d.max()
        assert r.mean_ulp == pytest.approx(d.mean(), rel=1e-12)
        assert r.frac_correctly_rounded == pytest.approx(np.mean(d == 0), rel=1e-12)
        assert r.histogram["0"] == np.sum(d == 0) and r.histogram["1"] == np.sum(d == 1)
        assert r.histogram["3-4"] == np.sum((d >= 3) & (d <= 4))
        assert r.histogram[">16"] == np.sum(d > 16)
        assert sum(r.histogram.values()) == r.count
        err = np.abs(got[m] - exact[m])
        assert r.max_abs == pytest.approx(err.max(), rel=1e-12)
        assert r.mean_abs == pytest.approx(err.mean(), rel=1e-9)
        nz = cr[m] != 0
        assert r.max_rel == pytest.approx((err[nz] / np.abs(exact[m][nz])).max(), rel=1e-12)
        # The worst inputs, in decreasing ulps.
        w = [v.ulps for v in r.worst]
        assert w == sorted(w, reverse=True) and w[0] == r.max_ulp and len(w) == report.N_WORST
        for v in r.worst:
            i = int(np.flatnonzero(x64 == v.x)[0]) if v.x != 0 else None
            if i is not None:
                assert (got[i], cr[i], ulps[i]) == (v.got, v.want, v.ulps)

    # The kernel's documented accuracy.
    if fmt == "bfloat16":
        assert rep.region("-3 <= x < 0").max_ulp <= 1
        assert rep.region("x >= 0").max_ulp <= 1
    else:
        assert rep.region("x >= 0").max_ulp <= 1
        assert rep.region("-3 <= x < 0").max_ulp <= 8
    # Agrees with rounding.region_table on its own rounding path.
    rows = rounding.region_table(x64, {"k": rounding.round_to(y, fmt)}, cr, fmt)
    for row, r in zip(rows, rep.regions, strict=True):
        assert (row["count"], row["max_ulp"]) == (r.count, r.max_ulp)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("name", sorted(rounding.FUNCTIONS))
def test_exact_approximant_within_one_ulp(name, fmt):
    """float64 reference rounded to float32, then to the 16-bit format: double rounding costs
    at most one ulp."""
    rep = report.exhaustive(_exact32(name), name, fmt)
    valid = ~np.isnan(rep.want)
    assert sum(r.count for r in rep.regions) == valid.sum()
    for r in rep.regions:
        assert r.max_ulp <= 1, (name, fmt, r.region, r.worst[:2])
        assert r.nan_outputs == 0
        assert sum(r.histogram.values()) == r.count
        assert r.frac_correctly_rounded > 0.99


def test_gelu_mode_names_and_errors():
    rep = report.exhaustive(_exact32("gelu"), "none", "float16")
    assert rep.fn == "gelu" and rep.max_ulp <= 1
    if "tanh" in rounding.FUNCTIONS:  # the function, not the GELU mode of that name
        rep = report.exhaustive(np.tanh, "tanh", "bfloat16")
        assert rep.fn == "tanh" and rep.max_ulp <= 1
    with pytest.raises(ValueError, match="format"):
        report.exhaustive(_exact32("gelu"), "gelu", "float32")
    with pytest.raises(ValueError, match="fn must be"):
        report.exhaustive(_exact32("gelu"), "nope", "float16")
    with pytest.raises(ValueError, match="shape"):
        report.exhaustive(lambda x: x[:10], "gelu", "float16")


def test_custom_regions_nan_outputs_and_histogram():
    def approx(x):
        y = _exact32("gelu")(x)
        y[(x > 1) & (x < 2)] = np.nan  # a broken approximation
        y[x >= 2] += F32(0.01)
        return y

    regions = [("x < 1", (-np.inf, 1.0)), ("[1, 2)", (1.0, 2.0)), ("x >= 2", lambda x: x >= 2)]
    rep = report.exhaustive(approx, "gelu", "bfloat16", regions=regions)
    assert [r.region for r in rep.regions] == ["x < 1", "[1, 2)", "x >= 2"]
    assert sum(r.count for r in rep.regions) == N_FINITE["bfloat16"]
    mid = rep.region("[1, 2)")
    assert mid.nan_outputs == mid.histogram["NaN"] == mid.count - 1  # x = 1 itself is fine
    assert rep.region("x < 1").max_ulp <= 1
    hi = rep.region("x >= 2")
    assert sum(hi.histogram.values()) == hi.count
    m = rep.x >= 2
    assert hi.histogram["0"] > 0 and hi.histogram["2"] > 0
    assert hi.max_ulp == rep.ulps[m].max() == 2  # 0.01 is under 2 ulps of bfloat16 at x >= 2
    text = report.render_markdown(rep)
    assert "| NaN |" in text
    json.dumps(report.to_json(rep), allow_nan=False)


def test_dense_errors():
    exact = report.dense_errors(_exact32("gelu"), "gelu", n=100_001)
    assert exact.max_abs <= 2.0**-24 * 6 and exact.max_rel <= 2.0**-24
    stored = spec.load(spec.spec_path("none"))["forward"]["errors"]
    d = report.dense_errors(_shipped(), "gelu", label="shipped")
    # spec.measure uses the same grid for its mean, and adds points near the clamp for its max;
    # a mean of float64 errors against scipy's erfc / numpy's exp (last bits CPU-dependent):
    # to spec.MEASURED_RTOL
    assert d.mean_abs == pytest.approx(stored["mean_abs_float32_grid"], rel=spec.MEASURED_RTOL)
    assert d.max_abs <= stored["max_abs_float32"]
    assert d.max_abs > 0.5 * stored["max_abs_float32"]
    assert -6 <= d.argmax_abs <= 6
    assert d.max_rel == 1.0  # -0.0 beyond the clamp for x < -R
    text = report.render_markdown([d])
    assert "shipped" in text and "max rel" in text
    assert report.to_json(d)["kind"] == "dense"


def test_markdown_and_json():
    reps = report.sweep(_shipped(), "gelu", label="shipped")
    text = report.render_markdown(reps, worst=True)
    assert text.count("#### shipped: gelu, every finite") == 2
    for r in rounding.REGIONS:
        assert f"| {r[0]} |" in text
    data = report.to_json(reps)
    s = json.dumps(data, allow_nan=False)
    back = json.loads(s)
    assert [b["format"] for b in back] == list(FMTS)
    bf = back[0]["regions"]
    assert [r["max_ulp"] for r in bf] == [r.max_ulp for r in reps[0].regions]
    assert sum(sum(r["histogram"].values()) for r in bf) == N_FINITE["bfloat16"]
    assert set(bf[0]["worst"][0]) == {"x", "got", "want", "ulps"}


def test_plot_abs_error(tmp_path):
    pytest.importorskip("matplotlib")
    curves = {"shipped (degree 8)": _shipped(), "x/2": lambda x: (x * F32(0.5)).astype(F32)}
    path = tmp_path / "sub" / "abs_error.png"
    fig = report.plot_abs_error(curves, "bfloat16", path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.lines) == 2
    xs = ax.lines[0].get_xdata()
    every = report.all_finite("bfloat16")
    assert xs.size == np.sum((every >= -6) & (every <= 6))  # +0 and -0 both drawn
    assert xs.min() == -6 and xs.max() == 6 and np.all(np.diff(xs) >= 0)
    assert np.all(ax.lines[0].get_ydata() >= 1e-12)


def test_sweep_cold_and_warm_agree():
    """One spec, bfloat16 + float16, every finite input, including the correctly rounded
    reference (cold) and with it cached (warm): the same result. The times are printed, not
    asserted (speed is the benchmark's business; these machines are shared)."""
    approx = _shipped()
    report.clear_cache()
    t0 = time.perf_counter()
    cold = report.sweep(approx, "gelu")
    t1 = time.perf_counter()
    warm = report.sweep(approx, "gelu")
    t2 = time.perf_counter()
    print(f"\nexhaustive bf16 + fp16 sweep: cold {t1 - t0:.3f} s, warm {t2 - t1:.3f} s")
    assert [r.max_ulp for r in cold] == [r.max_ulp for r in warm]
