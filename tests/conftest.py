"""Shared fixtures and helpers for the turbogelu tests.

* ``isa``: every CPU instruction set this machine can run, switched with ``use_cpu_isa``;
* ``poly_program``: the polynomial forced on the CPU, whatever the machine's default;
* ``dtype`` / ``approximate``: the supported dtypes and GELU forms;
* ``load_spec`` / ``clamp_radius``: the fitted specs in data/specs and their window R;
* ``assert_same_bits``: bitwise equality that treats any NaN as equal to any NaN;
* ``subprocess_env``: an environment for child interpreters (no inherited ISA override);
* ``llm_quick_all``: one ``python -m experiments llm all --quick`` per session, its folder
  (the protocols' and the bfloat16 study's tests read it; skipped without the corpus).

Any machine by rule, not by luck: a test (or a ``--check``) holds bit for bit only what is
exactly specified: float32 and 16-bit values (coefficients rounded from a fit defined far below
their ulp, clamps, settings), the kernels' and the replay's bits, integer counts, correctly
rounded sums (``rounding.exact_mean``), mpmath at a fixed precision. A float64 figure computed
through something whose last bits depend on the CPU (numpy's SIMD-dispatched or libm's exp /
tanh / erfc, scipy.special, BLAS / LAPACK solves and fits, an LP or other iterative solver,
np.sum / np.mean's pairwise order) is held to a stated relative tolerance with its reason
written beside it: ``spec.MEASURED_RTOL`` (1e-7) for spec figures, compared only through
``spec.differences`` (never as text), and ``compare.FLOAT64_RTOL`` (the same) for make
reproduce's exact figures. What an LP defines only to its tolerance (the cells' float32
tables) is held to that tolerance (``cells.refit_differences``). CI runs the suite
under an imitation of another CPU (.ci/run: numpy without its AVX-512 / AVX2 loops, another
OpenBLAS kernel, the AVX2 kernels) to catch a test that holds such a figure bit for bit.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path

import pytest

# Inductor's on-disk kernel cache (torch 2.14.1) is not keyed by the vector ISA that
# ATEN_CPU_CAPABILITY selects: a C++ kernel generated for 8-lane AVX2 vectors and compiled
# for 16-lane AVX-512 ones (or the reverse) is reused across the two, and then stores 16
# lanes where it loads 8 -- wrong values and heap corruption ("free(): invalid pointer"),
# found with `torch.compile(lambda x: turbogelu.sigmoid(x) * 2)` at 257 elements once CI's
# AVX2 pass had shared /tmp/torchinductor_<user> with the default pass. One cache per ATen
# ISA setting (set before anything compiles; children such as the notebooks inherit it).
INDUCTOR_CACHE_KEY = "ATEN_CPU_CAPABILITY"


def inductor_cache_dir(env: dict) -> str:
    """The Inductor cache of an environment: one per ATEN_CPU_CAPABILITY value."""
    isa = env.get(INDUCTOR_CACHE_KEY, "native") or "native"
    user = os.environ.get("USER") or str(os.getuid())
    return str(Path(tempfile.gettempdir()) / f"turbogelu_inductor_{user}_{isa}")


os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir(os.environ))

import torch  # noqa: E402

try:  # the compiled extension; the pure-Python tests must not depend on it
    from turbogelu import ops as tg_ops
except ImportError:  # not built: tests that need it fail at their own import
    tg_ops = None

ROOT = Path(__file__).resolve().parents[1]
SPEC_DIR = ROOT / "data" / "specs"
SPEC_FILES = {"none": "gelu_exact.json", "tanh": "gelu_tanh.json"}

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
HALF_DTYPES = [torch.float16, torch.bfloat16]
APPROXIMATES = ["none", "tanh"]
BACKWARDS = ["default", "direct", "matched"]
ISAS = tg_ops.cpu_isas_available() if tg_ops is not None else []

# Integer views of each dtype's bits, for bitwise comparisons.
BITS_DTYPE = {
    torch.float32: torch.int32,
    torch.float64: torch.int64,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}


@functools.cache
def load_spec(approximate: str) -> dict:
    """The fitted spec (data/specs/*.json) behind the kernels of one GELU form."""
    return json.loads((SPEC_DIR / SPEC_FILES[approximate]).read_text())


def clamp_radius(approximate: str) -> float:
    """R: the polynomial is used on |x| <= R, x / -0.0 outside (a float32 value)."""
    return float.fromhex(load_spec(approximate)["forward"]["clamp"])


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bit patterns of a floating tensor (as a contiguous integer tensor)."""
    return t.detach().contiguous().view(BITS_DTYPE[t.dtype])


def assert_same_bits(actual: torch.Tensor, expected: torch.Tensor, msg: str = "") -> None:
    """Equal dtype, shape, NaN positions and bit patterns of every non-NaN element (so
    -0.0 differs from +0.0); NaN payloads are not compared."""
    assert actual.dtype == expected.dtype, msg
    assert actual.shape == expected.shape, msg
    nan_a, nan_e = torch.isnan(actual), torch.isnan(expected)
    assert torch.equal(nan_a, nan_e), f"NaN positions differ {msg}"
    keep = ~nan_a
    ba, be = bits(actual)[keep], bits(expected)[keep]
    if not torch.equal(ba, be):
        bad = (ba != be).nonzero().flatten()[:8]
        got, want = actual.detach()[keep][bad].tolist(), expected.detach()[keep][bad].tolist()
        raise AssertionError(
            f"bits differ at {bad.numel()}+ elements {msg}: actual {got} expected {want}"
        )


def subprocess_env(**overrides: str) -> dict:
    """os.environ without TURBOGELU_CPU_ISA, plus ``overrides`` (with the Inductor cache of
    the ATEN_CPU_CAPABILITY they set, when they set one)."""
    env = {k: v for k, v in os.environ.items() if k != "TURBOGELU_CPU_ISA"}
    env.update(overrides)
    if INDUCTOR_CACHE_KEY in overrides and "TORCHINDUCTOR_CACHE_DIR" not in overrides:
        env["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(env)
    return env


@pytest.fixture(params=ISAS)
def isa(request):
    """Run the test under each instruction set the CPU offers (restored afterwards)."""
    with tg_ops.use_cpu_isa(request.param):
        assert tg_ops.cpu_isa() == request.param
        yield request.param


@pytest.fixture
def poly_program():
    """Force the degree-8 polynomial on the CPU (the default is cells on AVX-512, the
    polynomial elsewhere): for tests of the polynomial's bits, its replay and its bounds,
    which must hold on every machine whatever its default; the same switch forces the
    activation family's polynomials for sigmoid, tanh and SiLU. The cells programs have their own
    tests (test_cells.py), and test_program.py checks which program runs
    by default."""
    with tg_ops.use_cpu_kernel("poly"):
        assert tg_ops.cpu_kernel() == "poly"
        yield


@pytest.fixture(params=DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def dtype(request):
    return request.param


@pytest.fixture(params=APPROXIMATES)
def approximate(request):
    return request.param


@pytest.fixture
def dynamo_reset():
    """torch._dynamo.reset() (and cleared dynamo counters) before and after a compile test.
    (Inductor's prepacked-weight linear used to be switched off here for a heap corruption on
    a Sapphire Rapids-class Xeon; the cause was the Inductor cache shared between ISAs, see
    inductor_cache_dir above, and the compile tests pass with it on under both ISAs.)"""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    yield
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()


def layout_cases(scale: float) -> dict[str, torch.Tensor]:
    """Tensors of every layout an elementwise op must keep (its result strided as
    torch.empty_like(x)): contiguous, transposed, sliced, channels_last, empty and 0-d;
    normal values times ``scale`` (seeded)."""
    x = torch.randn(6, 40, 33, generator=torch.Generator().manual_seed(4)) * scale
    return {
        "contiguous": x,
        "transposed": x.transpose(0, 2),
        "sliced": x[:, ::3, 1:],
        "channels_last": torch.randn(2, 5, 7, 9).to(memory_format=torch.channels_last),
        "empty": torch.empty(0, 3),
        "scalar": torch.tensor(0.75),
    }


@pytest.fixture(scope="session")
def llm_quick_all(tmp_path_factory):
    """The folder of one quick run of every language-model protocol, shared by the test files
    that read its records (each running its own cost the suite a second run)."""
    from experiments import cli, llm_protocols, shakespeare

    try:
        llm_protocols.load_corpus()
    except shakespeare.CorpusUnavailable as exc:
        pytest.skip(f"no corpus: {exc}")
    out = tmp_path_factory.mktemp("llm")
    assert cli.main(["llm", "all", "--quick", "--out-dir", str(out), "--no-progress"]) == 0
    return out
