"""turbogelu::poly_gelu / poly_gelu_backward: the shipped kernels with coefficients passed at
run time (kernels/cpu/poly_ops.cpp), which the benchmark uses to time specs of any degree."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from conftest import ROOT

from experiments.probes import OPS as BENCH_OPS
from turbogelu import ops
from turbogelu.approx import family_fit, polyspec, spec

tg = torch.ops.turbogelu
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _x(n=40_000, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, generator=g) * 3
    R = spec.DEFAULTS["exact"].range  # the shipped clamp
    special = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), R, -R, 1e-40, -1e-40]
    return torch.cat([x, torch.tensor(special)]).to(dtype)


def _bits(t):
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


@pytest.fixture(params=["horner", "estrin"])
def scheme(request):
    prev = BENCH_OPS._set_poly_scheme(request.param)
    yield request.param
    BENCH_OPS._set_poly_scheme(prev)


def test_degrees_compiled():
    assert ops.poly_degrees() == list(range(2, 13))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["none", "tanh"])
@pytest.mark.usefixtures("poly_program")  # the op's polynomial (cells by default on AVX-512)
def test_shipped_spec_is_bit_identical_to_the_shipped_op(dtype, mode, scheme):
    x = _x(dtype=dtype)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    fwd = spec.turbogelu_form(mode, "forward")
    assert torch.equal(_bits(ops.poly_gelu(x, fwd)), _bits(tg.gelu(x, mode)))
    for part, backward in (("backward_direct", "direct"), ("backward_matched", "matched")):
        bwd = spec.turbogelu_form(mode, part)
        got = ops.poly_gelu_backward(g, x, bwd)
        assert torch.equal(_bits(got), _bits(tg.gelu_backward(g, x, mode, backward)))


@pytest.mark.parametrize("degree", [2, 5, 12])
def test_other_specs_match_the_replay(degree, scheme):
    x = _x()
    for target in ("gelu", "gelu_grad"):
        ps = family_fit.fit_polyspec(
            target, degree=degree, fit_interval=3.75, clamp=4.0, fmt="float32", method="ls",
            replay=False,
        )  # fmt: skip
        want = polyspec.replay(
            dataclasses.replace(ps, program="turbogelu"), x.numpy(), scheme=scheme
        )
        if target == "gelu":
            got = ops.poly_gelu(x, ps)
        else:
            got = ops.poly_gelu_backward(torch.ones_like(x), x, ps)
        np.testing.assert_array_equal(got.numpy().view(np.int32), want.view(np.int32))


def test_every_isa_gives_the_same_bits():
    x = _x()
    ps = family_fit.fit_polyspec("gelu", degree=6, fit_interval=4.0, fmt="float32", method="ls")
    results = []
    for isa in ops.cpu_isas_available():
        with ops.use_cpu_isa(isa):
            results.append(_bits(ops.poly_gelu(x, ps)))
    assert all(torch.equal(results[0], r) for r in results[1:])


def test_errors():
    x = _x(100)
    c = torch.ones(14)  # degree 13: not compiled
    with pytest.raises(ValueError, match="degree 13"):
        tg.poly_gelu(x, c, 4.0, 0.1)
    with pytest.raises(TypeError, match="float32"):
        tg.poly_gelu(x, torch.ones(5, dtype=torch.float64), 4.0, 0.1)
    with pytest.raises(ValueError, match="clamp"):
        tg.poly_gelu(x, torch.ones(5), -1.0, 0.1)
    with pytest.raises(TypeError, match="unsupported dtype"):
        tg.poly_gelu(torch.arange(4), torch.ones(5), 4.0, 0.1)
    odd = family_fit.fit_polyspec("tanh", degree=3, fit_interval=4.0, fmt="float32")
    with pytest.raises(ValueError, match="kernels evaluate"):
        ops.poly_args(odd)


def test_opcheck():
    ps = spec.turbogelu_form()
    coeffs, clamp, scale = ops.poly_args(ps)
    for dtype in DTYPES:
        x = (torch.randn(257, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
        torch.library.opcheck(tg.poly_gelu, (x, coeffs, clamp, scale))
        torch.library.opcheck(tg.poly_gelu_backward, (torch.ones_like(x), x, coeffs, clamp, scale))
        torch.library.opcheck(BENCH_OPS._stream_copy.default, (x,))
        torch.library.opcheck(BENCH_OPS._stream_read2.default, (x, x))
        out = torch.empty_like(x)
        torch.library.opcheck(BENCH_OPS._stream_copy.out, (x,), {"out": out})
        torch.library.opcheck(BENCH_OPS._stream_read2.out, (x, x), {"out": out})


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000, 100_003])
def test_stream_probes(n):
    x = torch.randn(n + 1)[1:]  # misaligned by 4 bytes
    y = torch.randn(n)
    assert torch.equal(BENCH_OPS._stream_copy(x), x)
    want = (x.view(torch.int32) ^ y.view(torch.int32)).view(torch.float32)
    assert torch.equal(_bits(BENCH_OPS._stream_read2(x, y)), _bits(want))
    assert BENCH_OPS._stream_isa() in ("avx512", "avx2", "sse2", "none")
    out = torch.full((n + 1,), 7.0)[1:]  # the out= forms, into a misaligned output too
    BENCH_OPS._stream_copy.out(x, out=out)
    assert torch.equal(out, x)
    BENCH_OPS._stream_read2.out(x, y, out=out)
    assert torch.equal(_bits(out), _bits(want))


def test_stream_probes_out_refuses_a_wrong_output():
    x = torch.randn(64)
    for bad, why in [
        (torch.empty(63), "shape and dtype"),
        (torch.empty(64, dtype=torch.float64), "shape and dtype"),
        (torch.empty(128)[::2], "contiguous"),
        (x, None),  # in place: whole overlap is allowed (each byte read before it is written)
    ]:
        for op, args in ((BENCH_OPS._stream_copy.out, (x,)),
                         (BENCH_OPS._stream_read2.out, (x, x.clone()))):  # fmt: skip
            if why is None:
                op(*args, out=bad)
            else:
                with pytest.raises(RuntimeError, match=why):
                    op(*args, out=bad)
    with pytest.raises(RuntimeError, match="single memory location"):
        BENCH_OPS._stream_copy.out(x[1:], out=x[:-1])


# ---------------------------------------------------------------- poly_family (issue 39)
# The float32 forward of a program of any of the family's forms with run-time coefficients,
# which the sweep times every function's candidates with.

FAMILY_TARGETS = ("sigmoid", "tanh", "softplus", "sigmoid_grad", "tanh_grad")


def _family_spec(target, degree, variable, clamp=5.0):
    ps = family_fit.fit_polyspec(
        target, variable=variable, degree=degree, fit_interval=clamp, clamp=clamp,
        fmt="float32", method="ls", replay=False,
    )  # fmt: skip
    if target == "silu":  # in |x| the kernels' sign-keeping order x (1/2 + x P)
        ps = dataclasses.replace(ps, program="turbogelu")
    return ps


@pytest.mark.parametrize("degree", [2, 7, 12])
@pytest.mark.parametrize("variable", ["u", "y"])
def test_family_forms_match_the_replay_on_every_isa(degree, variable):
    x = torch.cat([_x(20_000) * 2, torch.tensor([5.0, -5.0, 5.000001, -5.000001])])
    cases = [(t, variable) for t in FAMILY_TARGETS] + ([("silu", "u")] if variable == "u" else [])
    for target, var in cases:
        ps = _family_spec(target, degree, var)
        want = polyspec.replay(ps, x.numpy()).view(np.int32)
        for isa in ops.cpu_isas_available():
            with ops.use_cpu_isa(isa):
                got = ops.poly_family(x, ps).numpy().view(np.int32)
            np.testing.assert_array_equal(got, want, err_msg=f"{target} {var} {degree} {isa}")


@pytest.mark.parametrize("degree", [2, 5, 12])
def test_exp2_fractions_run_as_the_exp2_kernels_do(degree):
    # 2^x = 2^n P(f), n = rint(x - 1/2): on [0, 1) n = 0 and the result is P(x), the replay's
    # bits; elsewhere the exponent scales it, as the exp2 op's program (Exp2Floor)
    ps = family_fit.fit_polyspec(
        "exp2_frac", degree=degree, fit_interval=1.0, fmt="float32", method="remez",
        shift=False, replay=False,
    )  # fmt: skip
    x = torch.linspace(0, 1, 50_001)[:-1]
    want = polyspec.replay(ps, x.numpy()).view(np.int32)
    far = torch.tensor([-3.25, 10.5, 200.0, -200.0, float("inf"), -float("inf"), float("nan")])
    for isa in ops.cpu_isas_available():
        with ops.use_cpu_isa(isa):
            np.testing.assert_array_equal(ops.poly_family(x, ps).numpy().view(np.int32), want)
            y = ops.poly_family(far, ps)
        rel = 2 * ps.meta["errors"]["max_abs_error"] + 1e-6  # P's error on [0, 1], 2^f >= 1
        assert y[1] == pytest.approx(2**10.5, rel=rel) and y[0] == pytest.approx(2**-3.25, rel=rel)
        assert y[2] == y[4] == float("inf") and y[3] == y[5] == 0 and y[6].isnan()


def test_poly_family_form_codes_are_the_kernels():
    import re

    from turbogelu.approx import codegen

    header = (ROOT / "kernels/include/turbogelu/family_eval.h").read_text()
    body = re.search(r"enum class Form : int \{(.*?)\};", header, re.S).group(1)
    declared = {m[0]: int(m[1]) for m in re.findall(r"(\w+) = (\d+)", body)}
    assert declared == codegen.FORM_CODES


def test_poly_family_errors():
    x = _x(100)
    sig = _family_spec("sigmoid", 4, "u")
    args = ops.program_args(sig)
    with pytest.raises(TypeError, match="float32"):
        tg.poly_family(x.to(torch.bfloat16), *args)
    for form in (9, -1):
        with pytest.raises(ValueError, match="not a program form"):
            tg.poly_family(x, args[0], form, *args[2:])
    with pytest.raises(ValueError, match="exp2 forms take P in f itself"):
        tg.poly_family(x, args[0], 6, True, *args[3:])
    shifted = family_fit.fit_polyspec("exp2_frac", degree=4, fit_interval=1.0, fmt="float32")
    with pytest.raises(ValueError, match="no shift"):
        ops.program_args(shifted)
    with pytest.raises(ValueError, match="GELU's form"):
        tg.poly_family(x, args[0], 2, True, *args[3:])
    with pytest.raises(ValueError, match="degree 13"):
        tg.poly_family(x, torch.ones(14), *args[1:])
    gelu = family_fit.fit_polyspec("gelu", degree=4, fit_interval=4.0, fmt="float32")
    with pytest.raises(ValueError, match="no family kernel|poly_gelu"):
        ops.program_args(gelu)
    finite = torch.randn(257, generator=torch.Generator().manual_seed(0)) * 6  # NaN != NaN
    torch.library.opcheck(tg.poly_family, (finite, *args))
