"""The Apple GPU backend (kernels/mps/family_kernels.metal, turbogelu/mps.py) without a Mac,
for every row of the kernels' table: GELU's two forms and the activation family's ops.

* the Metal source is what the specs generate; it holds every program (GELU's, the family's
  in both tiers, exp2's) with its coefficients, clamp, scale and asymptotes bit for bit as
  family_coeffs.h and gelu_coeffs.h do (the CPU's), and its op list and program shapes are
  family.h's;
* it is valid C++ against the stub of <metal_stdlib> (tests/metal_stub) for Metal 3.0, 3.1, 3.2;
* compiled against that stub and run on the CPU (tests/metal_stub/family_harness.cpp), every
  op's kernels in each tier give the CPU ops' bits (torch.ops.turbogelu.* on the CPU with that
  tier), forward and both derivatives, for every float16 / bfloat16 input and dense float32
  samples with NaN, +-inf, +-0, subnormals and the neighbours of each clamp: the Metal code
  does family_eval.h's arithmetic (what remains unproven is Apple's compiler and GPU); and so
  they do compiled with floating-point contraction, which Metal before 3.2 may apply;
* mps.py's kernels: registered for every schema; with a fake ``compile_shader`` whose
  kernels compute only from the arguments they are given (with the CPU ops) and the device
  check pointed at the CPU, every op's checks (the CPU's messages), layouts, out= and in-place
  handling and its choice of kernel (op and tier) and program run.
"""

from __future__ import annotations

import fnmatch
import functools
import platform
import re
import shutil
import subprocess
import tomllib
from decimal import Decimal

import numpy as np
import pytest
import torch
from conftest import APPROXIMATES, ROOT, assert_same_bits, load_spec

from turbogelu import _checks, _spec_names, mps, ops
from turbogelu import _table as function_table
from turbogelu.approx import codegen, family_programs

# Metal runs the polynomials, so the CPU ops it is compared with do too (on AVX-512 CPUs
# GELU's, sigmoid's, tanh's and SiLU's default is their cells program).
pytestmark = pytest.mark.usefixtures("poly_program")

OPS = torch.ops.turbogelu
STUB = ROOT / "tests" / "metal_stub"
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not installed")
SOURCE = codegen.FAMILY_METAL.read_text()
INCLUDE = ROOT / "kernels" / "include" / "turbogelu"
DTYPES = {"float": torch.float32, "half": torch.float16, "bfloat": torch.bfloat16}
TIERS = _spec_names.FAMILY_TIERS
# The family's ops, {op: kind}; GELU's rows, {row: approximate} (both Plain).
KINDS = {op: kind for op, _, kind in _spec_names.FAMILY_OPS}
GELU_ROWS = {row: mode for mode, row in function_table.APPROXIMATE.items()}
# (row, tier) for every tier each row of the kernels' table has (softplus: the accurate one
# only, the ops refuse the paper tier before any kernel runs; GELU's rows: both, the paper
# tier's their D5 family programs).
GELU_TIERS = [(row, t) for row in GELU_ROWS for t in _spec_names.GELU_TIERS[row]]
OP_TIERS = [(op, t) for op in KINDS for t in function_table.op(op).tiers] + GELU_TIERS


def _kinds_in(tier: str) -> dict[str, str]:
    """KINDS of the family's ops that have ``tier``."""
    return {op: kind for op, kind in KINDS.items() if (op, tier) in OP_TIERS}


# {row: the function whose programs it runs}, every row of the kernels' table.
FUNCTION = {op: fn for op, (fn, _) in mps.ROWS.items()}


def _cpu_forward(row: str, x, tier: str):
    """The CPU op's result for a Plain row of the table (GELU's: gelu with its approximate)."""
    if row in GELU_ROWS:
        return OPS.gelu(x, GELU_ROWS[row], tier=tier)
    return getattr(OPS, row)(x, tier=tier)


def _cpu_backward(row: str, grad, x, backward: str, tier: str):
    if row in GELU_ROWS:
        return OPS.gelu_backward(grad, x, GELU_ROWS[row], backward, tier)
    return getattr(OPS, f"{row}_backward")(grad, x, backward, tier)


CAPS = (30.0, 0.7)  # softcap's caps: 1/cap inexact in float32 both; 0.7 itself inexact too
# Views, transposes and offsets the ops must take in any layout.
LAYOUTS = {
    "n17": lambda t: t[:17],
    "2d": lambda t: t[:205].reshape(5, 41),
    "transposed": lambda t: t[:205].reshape(41, 5).t(),
    "step2": lambda t: t[:204].reshape(6, 34)[:, ::2],
    "expanded": lambda t: t[:9].reshape(1, 9).expand(4, 9),
    "channels_last": lambda t: t[:120].reshape(2, 3, 4, 5).to(memory_format=torch.channels_last),
    "offset": lambda t: t[3:1000],
    "0dim": lambda t: t[5],
    "empty": lambda t: t[:0].reshape(0, 3),
}


# ------------------------------------------------------------------ the generated source


def test_source_is_generated_from_the_specs():
    assert SOURCE == codegen.generate_family_metal()
    assert codegen.FAMILY_METAL in codegen.outputs()
    assert SOURCE.startswith(
        "// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen`"
    )
    assert mps.FAMILY_SOURCE == codegen.FAMILY_METAL
    assert mps.FAMILY_PROGRAMS == codegen.FAMILY_METAL_PROGRAMS


def test_the_lists_are_the_table_s():
    assert _spec_names.FAMILY_FUNCTIONS == family_programs.FUNCTIONS
    assert _spec_names.FAMILY_TIERS == family_programs.TIERS
    generated = (INCLUDE / "family_coeffs.h").read_text()
    body = re.search(r"#define TG_FAMILY_OPS\(X\)((?:.*\\\n)*.*)", generated)[1]
    listed = tuple(re.findall(r"X\((\w+), (\w+), (\w+)\)", body))
    assert (
        listed
        == _spec_names.FAMILY_OPS
        == tuple((o.name, o.program, o.kind) for o in function_table.OPS)
    )
    from_output = re.search(r"#define TG_FROM_OUTPUT_OPS\(X\) (.*)", generated)[1]
    assert tuple(re.findall(r"X\((\w+)\)", from_output)) == ops.FROM_OUTPUT_FUNCTIONS
    text = (INCLUDE / "family.h").read_text()
    kinds = re.search(r"enum class Kind : int \{(.*?)\}", text)[1]
    assert tuple(k.strip() for k in kinds.split(",")) == function_table.KINDS
    tiers = re.search(r"enum Tier : int \{(.*?)\}", text)[1]
    assert re.findall(r"kTier_(\w+) = (\d+)", tiers) == [(t, str(i)) for i, t in enumerate(TIERS)]
    # The Metal op list: each (op, tier)'s kind, forward program and shapes, as
    # TG_FAMILY_SHAPES has them for its function and tier (family_coeffs.h).
    shapes = {
        (fn, tier): (ff, int(nf) + 1, yf, fd, int(nd) + 1, yd)
        for fn, tier, ff, nf, yf, fd, nd, yd in re.findall(
            r"X\((\w+), (\w+), (\w+), (\d+), (true|false), (\w+), (\d+), (true|false)\)",
            (INCLUDE / "family_coeffs.h").read_text(),
        )
    }
    functions = (*_spec_names.FAMILY_FUNCTIONS, "exp2")  # exp2: data/specs/exp2/
    gelu_paper = {(row, t) for row, t in GELU_TIERS if t == "paper"}  # family programs
    assert set(shapes) == {(fn, t) for fn in functions for t in TIERS} | gelu_paper
    assert {s[2] for s in shapes.values()} == {"true", "false"}  # (both variables are in use)
    forms = {"HalfPlusOdd": "TG_HALF_PLUS_ODD", "Odd": "TG_ODD",
             "XHalfPlusEven": "TG_X_HALF_PLUS_EVEN", "XHalfPlus": "TG_X_HALF_PLUS",
             "Even": "TG_EVEN", "Exp2Nearest": "TG_EXP2_NEAREST",
             "Exp2Floor": "TG_EXP2_FLOOR", "HalfPlusSigned": "TG_HALF_PLUS_SIGNED",
             "XHalfPlusNonNeg": "TG_X_HALF_PLUS_NON_NEG"}  # fmt: skip
    # GELU's rows: family.h's TG_GELU_SHAPE, XHalfPlusEven and HalfPlusOdd in x^2 with the
    # window on x^2, at gelu_coeffs.h's degrees (its two derivatives share one)
    gelu_header = (INCLUDE / "gelu_coeffs.h").read_text()
    for row in GELU_ROWS:
        degree = {
            part: int(re.search(rf"PolyCoeffs {row}_{part} = {{\s*(\d+),", gelu_header)[1])
            for part in ("forward", "backward_direct", "backward_matched")
        }
        assert degree["backward_direct"] == degree["backward_matched"]
        nf, nd = degree["forward"] + 1, degree["backward_direct"] + 1
        shapes[(row, "accurate")] = ("XHalfPlusEven", nf, "window", "HalfPlusOdd", nd, "window")
    assert "static constexpr bool w = true;" in text  # (family.h's GELU shapes)
    variables = {"false": "TG_ABS", "true": "TG_SQUARE", "window": "TG_SQUARE_WINDOW"}
    shape = r"(\w+), (\d+), (TG_ABS|TG_SQUARE|TG_SQUARE_WINDOW)"  # form, coefficients, variable
    metal = re.findall(rf"  X\((\w+), (\w+), (\w+), (\d+), {shape}, {shape}\)", SOURCE)
    assert [m[:2] for m in metal] == [
        (op, t) for op, _, _ in _spec_names.FAMILY_OPS for t in TIERS
    ] + GELU_TIERS
    for op, tier, kind, pf, ff, nf, yf, fd, nd, yd in metal:
        fn = FUNCTION[op]
        assert kind == mps.ROWS[op][1].upper()
        assert mps.FAMILY_PROGRAMS[int(pf)] == (fn, tier, "forward")
        sf, snf, syf, sd, snd, syd = shapes[(fn, tier)]
        got = (ff, int(nf), yf, fd, int(nd), yd)
        want = (forms[sf], snf, variables[syf], forms[sd], snd, variables[syd])
        assert got == want, (op, tier)
    assert "#define TG_KERNEL_OPS(X) TG_FAMILY_OPS(X) TG_GELU_OPS(X)" in SOURCE


def _table(name: str) -> list[str]:
    body = re.search(rf"constant float {name}\[[^=]*= \{{(.*?)\n\}};", SOURCE, re.S)[1]
    return re.findall(r"(-?\d+\.\d+)f,", body)


def _f32_bits(literal: str) -> int:
    """The float32 a literal denotes (decimal or C hex), asserting that it is exactly one."""
    v = float.fromhex(literal) if "0x" in literal else float(literal)
    f = np.float32(v)
    assert float(f) == v, f"{literal} is not exactly a float32"
    return int(f.view(np.uint32))


def _cpu_programs() -> dict[str, list[str]]:
    """family_coeffs.h's FamilyProgram constants: {name: [degree, clamp, scale, below, above,
    c0, c1, ...]} as their C++ literals; an alias (a tier a function lacks, which holds another
    tier's programs: softplus's paper tier) as the values of the constant it names."""
    text = (INCLUDE / "family_coeffs.h").read_text()
    out = {}
    for name, body in re.findall(r"FamilyProgram (\w+) = \{(.*?)\}\};", text, re.S):
        out[name] = [v.strip().removesuffix("f") for v in body.replace("{", "").split(",")]
    for name, other in re.findall(r"FamilyProgram (\w+) = (\w+);", text):
        out[name] = out[other]
    # GELU's: gelu_coeffs.h's PolyCoeffs {degree, clamp, scale, {c}}, with the asymptotes that
    # family.h's gelu_as_program gives each part
    asymptotes = dict(
        re.findall(
            r"gelu_as_program\(fn##_(\w+), (-?[\d.]+f, -?[\d.]+f)\)",
            (INCLUDE / "family.h").read_text(),
        )
    )
    gelu = (INCLUDE / "gelu_coeffs.h").read_text()
    for row in GELU_ROWS:
        for part in ("forward", "backward_direct", "backward_matched"):
            body = re.search(rf"PolyCoeffs {row}_{part} = \{{(.*?)\}}\}};", gelu, re.S)[1]
            degree, clamp, scale, *c = [v.strip().removesuffix("f") for v in
                                        body.replace("{", "").split(",")]  # fmt: skip
            lo, hi = (v.strip().removesuffix("f") for v in asymptotes[part].split(","))
            out[f"{row}_accurate_{part}"] = [degree, clamp, scale, lo, hi, *c]
    return out


def test_source_holds_the_cpu_programs_bit_for_bit():
    clamps, scales = _table("TG_FAMILY_CLAMP"), _table("TG_FAMILY_SCALE")
    below, above = _table("TG_FAMILY_BELOW"), _table("TG_FAMILY_ABOVE")
    coeffs = _table("TG_FAMILY_COEFFS")
    n = int(re.search(r"#define TG_FAMILY_N (\d+)", SOURCE)[1])
    programs = mps.FAMILY_PROGRAMS
    # the family's and exp2's in every tier, GELU's two forms in their tiers
    assert len(programs) == 3 * (len(_spec_names.FAMILY_FUNCTIONS) + 1) * len(TIERS) + 3 * len(
        GELU_TIERS
    )
    assert len(clamps) == len(scales) == len(below) == len(above) == len(programs)
    assert len(coeffs) == n * len(programs)
    cpu = _cpu_programs()  # every program of every tier, the padded derivatives padded
    assert set(cpu) == {f"{fn}_{tier}_{part}" for fn, tier, part in programs}
    for i, (fn, tier, part) in enumerate(programs):
        degree, clamp, scale, lo, hi, *c = cpu[f"{fn}_{tier}_{part}"]
        assert len(c) == int(degree) + 1
        got = [clamps[i], scales[i], below[i], above[i]]
        assert [_f32_bits(v) for v in got] == [_f32_bits(v) for v in (clamp, scale, lo, hi)]
        row = [_f32_bits(v) for v in coeffs[i * n : (i + 1) * n]]
        assert row == [_f32_bits(v) for v in c] + [0] * (n - len(c)), (fn, tier, part)


def test_source_names_the_default_backward():
    text = (INCLUDE / "family_coeffs.h").read_text()
    for tier in TIERS:
        want = {
            fn: doc["default_backward"]
            for (fn, t), doc in codegen.load_family().items()
            if t == tier
        }
        want["exp2"] = codegen.load_exp2()[tier]["default_backward"]
        assert mps.family_default_backward(tier) == want
        for fn, bw in want.items():
            flag = "true" if bw == "direct" else "false"
            own = tier if tier in function_table.program_tiers(fn) else "accurate"
            if own != tier:  # an alias of the tier it ships (softplus's paper tier)
                alias = f"{fn}_{own}_default_backward_is_direct"
                assert f"{fn}_{tier}_default_backward_is_direct = {alias};" in text
            assert f"{fn}_{own}_default_backward_is_direct = {flag};" in text
    assert mps.family_default_backward() == mps.family_default_backward("accurate")
    assert mps.default_backward() == {m: load_spec(m)["default_backward"] for m in APPROXIMATES}
    for row, mode in GELU_ROWS.items():
        assert f"{row}={load_spec(mode)['default_backward']}" in SOURCE
    for (row, _), doc in codegen.load_gelu_paper().items():  # GELU's paper tier: its own spec
        flag = "true" if doc["default_backward"] == "direct" else "false"
        assert f"{row}_paper_default_backward_is_direct = {flag};" in text
        assert f"{row}={doc['default_backward']}" in SOURCE.split("(GELU, paper)")[1].split("\n")[0]
    # the tiers' defaults differ (tanh: direct, and matched in the paper tier)
    assert mps.family_default_backward("paper") != mps.family_default_backward("accurate")


def test_codegen_check_covers_the_family_source(tmp_path, monkeypatch, capsys):
    from turbogelu.cli import main as cli

    stale = tmp_path / "family_kernels.metal"
    first = re.search(r"-?\d+\.\d+f,  // c\[0\]", SOURCE)[0]
    stale.write_text(SOURCE.replace(first, "0.5f,  // c[0]", 1))
    monkeypatch.setattr(codegen, "FAMILY_METAL", stale)
    assert cli(["codegen", "--check"]) == 1
    assert f"{stale} differs" in capsys.readouterr().err
    stale.write_text(SOURCE)
    assert cli(["codegen", "--check"]) == 0


def test_the_source_is_package_data():
    """Shipped in the wheel: a link in turbogelu/_data/ to the generated file, matched by
    pyproject's package data (tests/test_wheel.py installs and reads it)."""
    link = ROOT / "turbogelu" / "_data" / "family_kernels.metal"
    assert link.is_symlink() and link.resolve() == codegen.FAMILY_METAL
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["turbogelu"]
    assert any(fnmatch.fnmatch("_data/family_kernels.metal", p) for p in patterns)


# ------------------------------------------------------------------ C++ against the stub

FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Wno-attributes", "-Wno-unknown-pragmas", "-Werror"]


@needs_gxx
@pytest.mark.parametrize("metal_version", [300, 310, 320])
def test_source_passes_a_syntax_check(metal_version):
    cmd = [GXX, "-fsyntax-only", "-x", "c++", *FLAGS, f"-D__METAL_VERSION__={metal_version}"]
    proc = subprocess.run(
        [*cmd, f"-I{STUB}", str(codegen.FAMILY_METAL)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


@needs_gxx
def test_source_defines_the_kernels_mps_py_calls():
    proc = subprocess.run(
        [GXX, "-E", "-P", "-x", "c++", "-std=c++17", f"-I{STUB}", str(codegen.FAMILY_METAL)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    names = set(re.findall(r"\bvoid (\w+_(?:forward|backward)_\w+)\(", proc.stdout))
    want = {
        f"{op}_{tier}_{d}_{t}"
        for op, tier in [(op, t) for op in mps.FAMILY for t in TIERS] + GELU_TIERS
        for d in ("forward", "backward")
        for t in mps.KERNEL_SUFFIX.values()
    }
    assert names == want


# g++ fuses x * y + z into one fma with -ffp-contract=fast from -O2 on, given an FMA
# instruction; this program prints what fl(x * 1/2) + p comes to, fused or not.
CONTRACTION_CANARY = r"""
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {
  const float x = std::strtof(argv[1], nullptr), p = std::strtof(argv[2], nullptr);
  const float h = x * 0.5f;
  const float r = h + p;
  std::printf("%a\n", r);
  return argc == 3 ? 0 : 1;
}
"""


def _contracting_flags() -> list[str] | None:
    """g++ flags that let it contract a product and a sum into an fma, or None where this
    machine has no FMA instruction that we know of."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        try:
            cpuinfo = open("/proc/cpuinfo").read()
        except OSError:
            return None
        if not re.search(r"^flags\s*:.*\bfma\b", cpuinfo, re.M):
            return None
        return ["-O2", "-ffp-contract=fast", "-mfma"]
    if machine in ("aarch64", "arm64"):
        return ["-O2", "-ffp-contract=fast"]
    return None


def _build(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


HARNESSES = {"metal3.0": (300, False), "metal3.1": (310, False), "metal3.1-contracted": (310, True)}


@pytest.fixture(scope="module", params=list(HARNESSES))
def harness(request, tmp_path_factory):
    """The harness built for one Metal version; "contracted": compiled so that g++ fuses each
    product feeding a sum into an fma (as Metal before 3.2 may, having no fp contract(off)),
    which must not change a bit either."""
    if GXX is None:
        pytest.skip("g++ not installed")
    version, contracted = HARNESSES[request.param]
    tmp = tmp_path_factory.mktemp("family_harness")
    flags = ["-O1", "-ffp-contract=off"]
    if contracted:
        flags = _contracting_flags()
        if flags is None:
            pytest.skip(f"no FMA instruction known on {platform.machine()}")
        # the canary: with these flags g++ does fuse fl(x * 1/2) + p, where that changes the
        # result (x = 2^-149: x/2 + 2^-149 rounds to 2^-148, fl(x/2) + 2^-149 is 2^-149)
        (tmp / "canary.cpp").write_text(CONTRACTION_CANARY)
        _build([GXX, *flags, "-x", "c++", str(tmp / "canary.cpp"), "-o", str(tmp / "canary")])
        proc = subprocess.run([str(tmp / "canary"), "0x1p-149", "0x1p-149"], capture_output=True,
                              text=True, check=True, timeout=60)  # fmt: skip
        assert proc.stdout.strip() == "0x1p-148", proc.stdout  # fused (unfused: 0x1p-149)
    exe = tmp / "family_harness"
    cmd = [GXX, *flags, *FLAGS, "-Wno-unused-parameter"]
    cmd += [f"-D__METAL_VERSION__={version}", f"-I{STUB}", f"-I{codegen.FAMILY_METAL.parent}"]
    _build([*cmd, "-x", "c++", str(STUB / "family_harness.cpp"), "-o", str(exe)])
    return exe


def _run_harness(exe, tmp_path, op, tier, kind, grad, a, b, d, inv=1.0, cap=1.0):
    n = a.numel()
    raw = lambda t: t.contiguous().view(torch.uint8).numpy().tobytes()  # noqa: E731
    head = np.array([n, *d], dtype=np.int64).tobytes() + np.array([inv, cap], np.float32).tobytes()
    (tmp_path / "in").write_bytes(head + raw(grad) + raw(a) + raw(b))
    cmd = [str(exe), op, tier, kind, str(tmp_path / "in"), str(tmp_path / "out")]
    subprocess.run(cmd, check=True, timeout=300)
    out = torch.from_numpy(np.frombuffer((tmp_path / "out").read_bytes(), dtype=np.uint8).copy())
    return out.view(a.dtype).reshape(-1, n)


def _all16(dtype):
    return torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)


def _float32_sample() -> torch.Tensor:
    """Every bfloat16 value (as float32: NaN, +-inf, +-0, float32 subnormals among them), the
    float32 specials and subnormal extremes, float32 subnormals whose half is inexact (odd
    last bit), a dense grid over [-16, 16], random values, and the float32 neighbours of every
    program's clamp (GELU's and the family's in either tier; and of softcap's cap * clamp)."""
    f32 = np.float32
    tiny = np.finfo(f32).smallest_subnormal
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny,
                np.finfo(f32).smallest_normal * (1 - 2.0**-23), np.finfo(f32).smallest_normal,
                np.finfo(f32).max, -np.finfo(f32).max, 1.0, -1.0, 0.5]  # fmt: skip
    odd = np.array([1, 3, 5, 0x7FFFFF, 0x400001, 0x12345], dtype=np.int32).view(f32)
    edges = [odd, -odd]
    docs = [*codegen.load_family().values(), *codegen.load_specs().values()]
    clamps = {
        float.fromhex(doc[part]["clamp"])
        for doc in docs
        for part in ("forward", "backward_direct", "backward_matched")
    }
    for clamp in sorted(clamps):
        clamp = f32(clamp)
        for c in [clamp] + [f32(clamp * f32(cap)) for cap in CAPS]:
            # the 17 float32 around c, by their bits
            bits = np.array(c, dtype=f32).view(np.int32) + np.arange(-8, 9, dtype=np.int32)
            near = bits.view(f32)
            edges += [near, -near]
    g = torch.Generator().manual_seed(0)
    return torch.cat(
        [
            _all16(torch.bfloat16).float(),
            torch.tensor(np.array(specials, dtype=f32)),
            torch.from_numpy(np.concatenate(edges)),
            torch.linspace(-16, 16, 1 << 16),
            torch.randn(1 << 15, generator=g) * 6,
        ]
    )


def _sample(dtype):
    return _float32_sample() if dtype == torch.float32 else _all16(dtype)


def _partner(x: torch.Tensor, seed: int) -> torch.Tensor:
    """A second operand (grad, or swiglu's b): random, with every fourth element a value of x
    in another order (so specials meet every kind of input)."""
    g = torch.Generator().manual_seed(seed)
    out = torch.randn(x.numel(), generator=g).to(x.dtype)
    out[::4] = x[torch.randperm(x.numel(), generator=g)][::4]
    return out


def _distinct_derivatives(fn: str, tier: str) -> bool:
    """Whether the direct and matched derivative programs differ (the paper tier's tanh and
    SiLU have no fit of f' of their own: both are the forward's derivative)."""
    cpu = _cpu_programs()
    return cpu[f"{fn}_{tier}_backward_direct"] != cpu[f"{fn}_{tier}_backward_matched"]


@pytest.mark.parametrize("kind", list(DTYPES))
@pytest.mark.parametrize(("op", "tier"), OP_TIERS)
def test_metal_kernels_give_the_cpu_bits(harness, tmp_path, op, tier, kind):
    dtype = DTYPES[kind]
    fn = FUNCTION[op]
    x = _sample(dtype)
    grad, b = _partner(x, 1), _partner(x, 2)
    assert torch.isnan(x).any() and torch.isinf(x).any() and (x == 0).any()
    d = [mps.FAMILY_PROGRAMS.index((fn, tier, f"backward_{bw}")) for bw in ("direct", "matched")]
    run = functools.partial(_run_harness, harness, tmp_path, op, tier, kind, grad, x, b, d)
    kind = mps.ROWS[op][1]
    if kind == "Plain":
        got = run()
        assert_same_bits(got[0], _cpu_forward(op, x, tier), "forward")
        for i, bw in enumerate(("direct", "matched")):
            assert_same_bits(got[1 + i], _cpu_backward(op, grad, x, bw, tier), bw)
        if _distinct_derivatives(fn, tier):
            assert not torch.equal(got[1], got[2])  # the two derivatives are told apart
    elif kind == "Scaled":
        for cap in CAPS:
            cap32, inv32 = _checks.check_cap(cap)
            got = run(inv32, cap32)
            assert_same_bits(got[0], OPS.softcap(x, cap, tier=tier), f"forward cap={cap}")
            for i, bw in enumerate(("direct", "matched")):
                want = OPS.softcap_backward(grad, x, cap, bw, tier)
                assert_same_bits(got[1 + i], want, f"{bw} cap={cap}")
    else:
        got = run()
        assert_same_bits(got[0], OPS.swiglu(x, b, tier=tier), "forward")
        for i, bw in enumerate(("direct", "matched")):
            ga, gb = OPS.swiglu_backward(grad, x, b, bw, tier)
            assert_same_bits(got[1 + 2 * i], ga, f"{bw} grad_a")
            assert_same_bits(got[2 + 2 * i], gb, f"{bw} grad_b")


def test_the_windows_decide_alike():
    """GELU's programs decide their window on fl(x^2) <= fl(clamp^2) (TG_SQUARE_WINDOW), the
    family's on |x| <= clamp: for GELU's clamps the two agree on every float32 within 2^16
    ulps of the clamp and at the specials (family_eval.h's W says why)."""
    f32 = np.float32
    for doc in codegen.load_specs().values():
        for part in ("forward", "backward_direct", "backward_matched"):
            c = f32(float.fromhex(doc[part]["clamp"]))
            bits = np.array(c).view(np.int32) + np.arange(-(1 << 16), 1 << 16, dtype=np.int32)
            x = np.concatenate([bits.view(f32), [np.inf, 0.0, f32(2.0**-149), f32(1e19)]])
            with np.errstate(over="ignore"):
                assert ((x * x > c * c) == (x > c)).all(), part
            assert np.isfinite(c * c) and c * c >= np.finfo(f32).tiny


def test_contraction_cannot_change_x_half_plus():
    """XHalfPlus, fl(x * 1/2) + p, is the only product feeding a sum outside fma() in the
    family's Metal source; Metal before 3.2 has no fp contract(off), so a compiler may fuse it
    into fma(x, 1/2, p). The two differ only where x * 1/2 is inexact, |x| < 2^-125 (x/2
    below the normal range); there P's variable is 0 or tiny, z rounds to -1 and p is P(-1),
    so for every such x both give P(-1) when |x/2| <= 2^-126 is under half the gap from P(-1)
    to its float32 neighbours. This holds for every XHalfPlus program of the specs."""
    from turbogelu.approx.polyspec import PolySpec, replay

    f32 = np.float32
    top = np.array(2.0**-125, dtype=f32).view(np.int32) - np.arange(1, 6, dtype=np.int32)
    band = np.concatenate([top.view(f32), np.array([2.0**-149, 3 * 2.0**-149, 2.0**-130], f32)])
    assert (band.astype(np.float64) / 2 != band * f32(0.5)).any()  # inexact halves among them
    found = []
    for (fn, tier), doc in codegen.load_family().items():
        for part in ("forward", "backward_direct", "backward_matched"):
            ps = PolySpec.from_dict(doc[part])
            if codegen.family_form(ps)[0] != "XHalfPlus":
                continue
            found.append((fn, tier, part))
            p0 = replay(ps, np.zeros(1))[0]  # x = 0: z = -1, the result is P(-1) itself
            assert np.isfinite(p0) and p0 != 0
            for x in (band, -band):
                assert (replay(ps, x) == p0).all(), (fn, tier, part)  # the band sees P(-1)
            # half the smaller gap around p0 (a power of two has a half-size gap below)
            assert np.spacing(abs(p0)) / 4 > 2.0**-126, (fn, tier, part)
    assert ("silu", "paper", "forward") in found


def test_cap_rounds_as_the_cpu_does():
    """check_cap's (cap, 1/cap) are the float32 values family_call computes: the rounded cap,
    and its float32 reciprocal (here from torch's float32 division)."""
    g = torch.Generator().manual_seed(3)
    caps = [30.0, 0.7, 50.1, 1e-3, 3e-38, 1e38, 2.0**-126, 7.0] + (
        torch.rand(2000, generator=g, dtype=torch.float64) * 200
    ).tolist()
    for cap in caps:
        cap32, inv32 = _checks.check_cap(cap)
        c = torch.tensor(cap, dtype=torch.float32)
        assert cap32 == float(c)
        assert inv32 == float(torch.ones((), dtype=torch.float32) / c), cap
    # 1e-40: positive in float32 (a subnormal) but 1/cap is not finite there
    for bad in (1e-40, 0.0, -1.0, float("inf"), float("nan"), 1e39):
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            _checks.check_cap(bad)
        with pytest.raises(ValueError, match="cap must be positive and finite"):
            OPS.softcap(torch.ones(2), bad)
    with pytest.raises(TypeError, match="cap must be a real number"):
        _checks.check_cap(True)  # (the schema's float turns True into 1.0 before a kernel)


# ------------------------------------------------------------------ turbogelu/mps.py


def _schemas() -> list[str]:
    """Every family overload name of the schemas (kernels/common/schema.cpp)."""
    names = []
    for op, kind in KINDS.items():
        for base in (op, f"{op}_backward"):
            packet = getattr(OPS, base)
            names += [base if o == "default" else f"{base}.{o}" for o in packet.overloads()]
        if kind != "Gated":
            names.append(f"{op}_")
    return sorted(names)


def test_kernels_are_registered_for_every_schema():
    assert sorted(mps.FAMILY_OPS_MPS) == _schemas()
    # sigmoid, tanh, silu, exp2, softplus; softcap; swiglu
    assert len(mps.FAMILY_OPS_MPS) == 5 * 5 + 5 + 4
    assert sorted(mps.OPS) == ["gelu", "gelu.out", "gelu_", "gelu_backward", "gelu_backward.out"]
    for name in [*mps.OPS, *mps.FAMILY_OPS_MPS]:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"turbogelu::{name}", "MPS"), name


class _FakeKernel:
    """Stands for one Metal kernel, <row>_<tier>_<direction>_<type>: checks the arguments
    the way the real binding takes them (1-D contiguous tensors of n elements, then n and d as
    ints, inv and cap as floats that are float32 values, threads=n) and computes from those
    arguments alone with the CPU ops in the kernel's tier (softcap's backward as tanh's at
    q = x * inv, computed in float32 as the kernel does)."""

    def __init__(self, name, calls):
        self.op, self.tier, self.direction, self.kind = name.rsplit("_", 3)
        assert self.op in mps.ROWS, name
        assert self.tier in TIERS and self.direction in ("forward", "backward"), name
        self.calls = calls

    def __call__(self, *args, threads):
        op, kind, tier = self.op, mps.ROWS[self.op][1], self.tier
        n_tensors = {("forward", "Gated"): 3, ("backward", "Gated"): 5}.get(
            (self.direction, kind), 2 if self.direction == "forward" else 3
        )
        tensors, rest = args[:n_tensors], args[n_tensors:]
        assert all(isinstance(t, torch.Tensor) for t in tensors)
        assert not any(isinstance(v, torch.Tensor) for v in rest)
        n = rest[0]
        assert isinstance(n, int) and threads == n
        assert all(t.dim() == 1 and t.is_contiguous() and t.numel() == n for t in tensors)
        dtype = tensors[0].dtype
        assert all(t.dtype == dtype for t in tensors)
        assert mps.KERNEL_SUFFIX[dtype] == self.kind
        for v in rest[1:]:
            assert isinstance(v, (int, float))
            if isinstance(v, float):  # inv and cap reach Metal as float32: exactly so
                assert float(np.float32(v)) == v
        bw = None
        if self.direction == "backward":
            d = rest[1]
            assert isinstance(d, int)
            fn, program_tier, part = mps.FAMILY_PROGRAMS[d]
            assert fn == FUNCTION[op] and part.startswith("backward_")
            assert program_tier == tier  # the kernel's own tier's derivative
            bw = part.removeprefix("backward_")
        if kind == "Plain":
            assert len(rest) == (1 if self.direction == "forward" else 2)
            if self.direction == "forward":
                x, out = tensors
                out.copy_(_cpu_forward(op, x, tier))
            else:
                g, x, out = tensors
                out.copy_(_cpu_backward(op, g, x, bw, tier))
        elif kind == "Scaled":
            fn = FUNCTION[op]
            if self.direction == "forward":
                x, out = tensors
                _, inv, cap = rest
                assert _checks.check_cap(cap) == (cap, inv)
                out.copy_(OPS.softcap(x, cap, tier=tier))
            else:
                g, x, out = tensors
                _, _, inv = rest
                q = x.float() * inv  # float32 products, as the kernel's
                out.copy_(getattr(OPS, f"{fn}_backward")(g.float(), q, bw, tier).to(dtype))
        else:
            assert len(rest) == (1 if self.direction == "forward" else 2)
            if self.direction == "forward":
                a, b, out = tensors
                out.copy_(OPS.swiglu(a, b, tier=tier))
            else:
                g, a, b, out_a, out_b = tensors
                ga, gb = OPS.swiglu_backward(g, a, b, bw, tier)
                out_a.copy_(ga)
                out_b.copy_(gb)
        self.calls.append((op, tier, self.direction, self.kind, n, bw))


class _FakeLibrary:
    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        if name.count("_") < 3 or name.rsplit("_", 3)[0] not in mps.ROWS:
            raise AttributeError(name)
        return _FakeKernel(name, self.calls)


@pytest.fixture
def fake_mps(monkeypatch):
    """mps.py with a fake compile_shader and its device check pointed at the CPU; yields the
    list of kernel calls."""
    calls, sources = [], []

    def compile_shader(src):
        sources.append(src)
        return _FakeLibrary(calls)

    mps.family_library.cache_clear()
    monkeypatch.setattr(torch.mps, "compile_shader", compile_shader, raising=False)
    monkeypatch.setattr(mps, "DEVICE", "cpu")
    yield calls
    assert len(sources) <= 1 and all(s == SOURCE for s in sources)  # compiled once, this file
    mps.family_library.cache_clear()


BACKWARDS = ("default", "direct", "matched")


def _inputs(dtype, layout):
    g = torch.Generator().manual_seed(2)
    make = lambda s: LAYOUTS[layout]((torch.randn(4096, generator=g) * s).to(dtype))  # noqa: E731
    return make(8.0), make(1.0), make(2.0)


def _strided_like(x):
    return torch.empty(*x.shape, 2, dtype=x.dtype)[..., 0]  # not dense: via a temporary


def _same(actual, expected):
    assert actual.stride() == expected.stride()
    assert_same_bits(actual, expected)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=str)
def test_plain_and_scaled_ops_with_a_fake_shader(fake_mps, dtype, layout, tier):
    x, grad, _ = _inputs(dtype, layout)
    impl = mps.FAMILY_OPS_MPS
    for op, kind in _kinds_in(tier).items():
        if kind == "Gated":
            continue
        args = (3.5,) if kind == "Scaled" else ()  # softcap's cap
        ref, ref_bw = getattr(OPS, op), getattr(OPS, f"{op}_backward")
        want = ref(x, *args, tier=tier)
        _same(impl[op](x, *args, tier=tier), want)
        for bw in BACKWARDS:
            want_bw = ref_bw(grad, x, *args, bw, tier)
            _same(impl[op](x, *args, backward=bw, tier=tier), want)
            _same(impl[f"{op}_backward"](grad, x, *args, bw, tier), want_bw)
            out = _strided_like(x)
            impl[f"{op}_backward.out"](grad, x, *args, bw, tier, out=out)
            assert_same_bits(out, want_bw)
        out = torch.empty_like(x)
        impl[f"{op}.out"](x, *args, tier=tier, out=out)
        assert_same_bits(out, want)
        out = _strided_like(x)
        impl[f"{op}.out"](x, *args, tier=tier, out=out)
        assert_same_bits(out, want)
        if layout != "expanded":
            z = x.clone()
            impl[f"{op}_"](z, *args, tier)
            _same(z, want)
            g = grad.clone()  # out= is grad itself: read before written
            impl[f"{op}_backward.out"](g, x, *args, "matched", tier, out=g)
            assert_same_bits(g, ref_bw(grad, x, *args, "matched", tier))
    assert (not fake_mps) == (x.numel() == 0)  # the kernels ran (not for an empty tensor)
    assert all(c[1] == tier for c in fake_mps)  # and only the tier's own


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=str)
def test_swiglu_ops_with_a_fake_shader(fake_mps, dtype, layout, tier):
    a, grad, b = _inputs(dtype, layout)
    impl = mps.FAMILY_OPS_MPS
    fwd = OPS.swiglu(a, b, tier=tier)
    _same(impl["swiglu"](a, b, tier=tier), fwd)
    out = _strided_like(a)
    impl["swiglu.out"](a, b, tier=tier, out=out)
    assert_same_bits(out, fwd)
    for bw in BACKWARDS:
        _same(impl["swiglu"](a, b, backward=bw, tier=tier), fwd)
        got = impl["swiglu_backward"](grad, a, b, bw, tier)
        want = OPS.swiglu_backward(grad, a, b, bw, tier)
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        for ga, gb in [
            (torch.empty_like(a), torch.empty_like(a)),
            (_strided_like(a), torch.empty_like(a)),  # one not dense: both via temporaries
            (torch.empty_like(a), _strided_like(a)),
        ]:
            impl["swiglu_backward.out"](grad, a, b, bw, tier, grad_a=ga, grad_b=gb)
            assert_same_bits(ga, want[0])
            assert_same_bits(gb, want[1])
    if layout != "expanded":
        want = OPS.swiglu_backward(grad, a, b, "direct", tier)
        aa, bb = a.clone(), b.clone()  # outputs are the inputs a and b themselves
        impl["swiglu_backward.out"](grad, aa, bb, "direct", tier, grad_a=aa, grad_b=bb)
        assert_same_bits(aa, want[0])
        assert_same_bits(bb, want[1])
        out = a.clone()
        impl["swiglu.out"](out, b, tier=tier, out=out)
        assert_same_bits(out, fwd)
    assert (not fake_mps) == (a.numel() == 0)
    assert all(c[1] == tier for c in fake_mps)


@pytest.mark.parametrize("tier", TIERS)
def test_family_programs_chosen(fake_mps, tier):
    x = torch.randn(10)
    impl = mps.FAMILY_OPS_MPS
    for op, kind in _kinds_in(tier).items():
        args = (x, x) if kind == "Gated" else (x, 2.0) if kind == "Scaled" else (x,)
        impl[op](*args, tier=tier)
        for bw in BACKWARDS:
            impl[f"{op}_backward"](x, *args, bw, tier)
    default = {
        fn: doc["default_backward"] for (fn, t), doc in codegen.load_family().items() if t == tier
    }
    default["exp2"] = codegen.load_exp2()[tier]["default_backward"]
    want = []
    for op in _kinds_in(tier):
        want.append((op, tier, "forward", "float", 10, None))
        for bw in BACKWARDS:
            chosen = default[FUNCTION[op]] if bw == "default" else bw
            want.append((op, tier, "backward", "float", 10, chosen))
    assert fake_mps == want


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=str)
def test_gelu_ops_with_a_fake_shader(fake_mps, dtype, layout, tier):
    x, grad, _ = _inputs(dtype, layout)
    for ap in APPROXIMATES:
        want = OPS.gelu(x, ap, tier=tier)
        _same(mps.gelu(x, ap, tier=tier), want)
        for bw in BACKWARDS:
            want_bw = OPS.gelu_backward(grad, x, ap, bw, tier)
            _same(mps.gelu(x, ap, backward=bw, tier=tier), want)
            _same(mps.gelu_backward(grad, x, ap, bw, tier), want_bw)
            out = _strided_like(x)
            mps.gelu_backward_out(grad, x, ap, bw, tier, out=out)
            assert_same_bits(out, want_bw)
        for out in (torch.empty_like(x), _strided_like(x)):
            mps.gelu_out(x, ap, tier=tier, out=out)
            assert_same_bits(out, want)
        if layout != "expanded":
            z = x.clone()
            mps.gelu_inplace(z, ap, tier)
            _same(z, want)
            g = grad.clone()  # out= is grad itself: read before written
            mps.gelu_backward_out(g, x, ap, "matched", tier, out=g)
            assert_same_bits(g, OPS.gelu_backward(grad, x, ap, "matched", tier))
    assert (not fake_mps) == (x.numel() == 0)  # the kernels ran (not for an empty tensor)
    assert {c[:2] for c in fake_mps} <= {(row, tier) for row in GELU_ROWS}


@pytest.mark.parametrize("tier", TIERS)
def test_gelu_programs_chosen(fake_mps, tier):
    """gelu(x, approximate, tier) runs its form's row (gelu_none, gelu_tanh) in its tier and
    the derivative program its backward names (default: the tier's spec's)."""
    x = torch.randn(10)
    for ap in APPROXIMATES:
        mps.gelu(x, ap, tier=tier)
        for bw in BACKWARDS:
            mps.gelu_backward(x, x, ap, bw, tier)
    paper = {row: doc for (row, _), doc in codegen.load_gelu_paper().items()}
    want = []
    for row, ap in GELU_ROWS.items():
        doc = load_spec(ap) if tier == "accurate" else paper[row]
        want.append((row, tier, "forward", "float", 10, None))
        for bw in BACKWARDS:
            chosen = doc["default_backward"] if bw == "default" else bw
            want.append((row, tier, "backward", "float", 10, chosen))
    assert fake_mps == want


def _errors():
    """(name, call, cpu_too, exception, message): each check of the MPS kernels; where
    cpu_too the CPU op refuses the same call with the same words (not so for the MPS kernels'
    own checks: float64, an expanded out, the device)."""
    x = torch.randn(4)
    base, y = torch.zeros(8), torch.zeros(8)
    overlap = "elements of the input tensor and the written-to tensor refer to a single memory"
    cap_msg = r"turbogelu\.softcap: cap must be positive and finite"
    # dtypes as Python names them (family.py's fakes, these kernels) or as C++ does
    F16, BF16, F32 = (
        r"(torch\.float16|Half)",
        r"(torch\.bfloat16|BFloat16)",
        r"(torch\.float32|Float)",
    )
    cases = [
        (
            "gelu_approximate",
            lambda o: o.gelu(x, "foo"),
            True,
            ValueError,
            r"turbogelu: approximate must be 'none' or 'tanh', got 'foo'",
        ),
        (
            "gelu_backward",
            lambda o: o.gelu(x, backward="foo"),
            True,
            ValueError,
            r"turbogelu: backward must be 'default', 'direct' or 'matched', got 'foo'",
        ),
        (
            "gelu_backward_op",
            lambda o: o.gelu_backward(x, x, "none", "foo"),
            True,
            ValueError,
            "backward must be",
        ),
        (
            "gelu_out_dtype",
            lambda o: o.gelu.out(x, out=torch.empty(4, dtype=torch.float16)),
            True,
            TypeError,
            rf"turbogelu\.gelu: out has dtype {F16} but x has dtype {F32}",
        ),
        (
            "gelu_out_shape",
            lambda o: o.gelu.out(x, out=torch.empty(5)),
            True,
            RuntimeError,
            r"turbogelu\.gelu: out has shape \[5\] but x has shape \[4\]",
        ),
        (
            "gelu_grad_dtype",
            lambda o: o.gelu_backward(x.half(), x),
            True,
            TypeError,
            rf"turbogelu\.gelu_backward: grad has dtype {F16} but x has dtype {F32}",
        ),
        (
            "gelu_grad_shape",
            lambda o: o.gelu_backward(torch.randn(3), x),
            True,
            RuntimeError,
            r"turbogelu\.gelu_backward: grad has shape \[3\] but x has shape \[4\]",
        ),
        (
            "gelu_partial_overlap",
            lambda o: o.gelu.out(base[:4], out=base[1:5]),
            True,
            RuntimeError,
            overlap,
        ),
        (
            "gelu_backward_partial_overlap",
            lambda o: o.gelu_backward.out(base[2:6], base[:4], out=base[1:5]),
            True,
            RuntimeError,
            overlap,
        ),
        (
            "gelu_float64",
            lambda o: o.gelu(x.double()),
            False,
            TypeError,
            "float64 is not supported on MPS",
        ),
        (
            "gelu_expanded_out",
            lambda o: o.gelu.out(x, out=torch.empty(1).expand(4)),
            False,
            RuntimeError,
            "internal overlap",
        ),
        (
            "gelu_device",
            lambda o: o.gelu.out(x, out=torch.empty(4, device="meta")),
            False,
            RuntimeError,
            "this is the MPS kernel",
        ),
        (
            "int",
            lambda o: o.sigmoid(torch.ones(3, dtype=torch.int32)),
            True,
            TypeError,
            r"turbogelu\.sigmoid: unsupported dtype .*supported dtypes are float32",
        ),
        (
            "backward",
            lambda o: o.tanh(x, backward="foo"),
            True,
            ValueError,
            r"turbogelu\.tanh: backward must be 'default', 'direct' or 'matched', got 'foo'",
        ),
        (
            "backward_op",
            lambda o: o.silu_backward(x, x, "foo"),
            True,
            ValueError,
            r"turbogelu\.silu: backward must be",
        ),
        (
            "swiglu_backward",
            lambda o: o.swiglu(x, x, backward="x"),
            True,
            ValueError,
            r"turbogelu\.swiglu: backward must be",
        ),
        (
            "cap_inplace",
            lambda o: o.softcap_(x.clone(), 0.0),
            True,
            ValueError,
            cap_msg,
        ),
        (
            "out_dtype",
            lambda o: o.sigmoid.out(x, out=torch.empty(4, dtype=torch.float16)),
            True,
            TypeError,
            rf"turbogelu\.sigmoid: out has dtype {F16} but x has dtype {F32}",
        ),
        (
            "out_shape",
            lambda o: o.silu.out(x, out=torch.empty(5)),
            True,
            RuntimeError,
            r"turbogelu\.silu: out has shape \[5\] but x has shape \[4\] \(out= tensors are",
        ),
        (
            "backward_out_shape",
            lambda o: o.tanh_backward.out(x, x, out=torch.empty(5)),
            True,
            RuntimeError,
            r"turbogelu\.tanh_backward: out has shape \[5\] but x has shape \[4\] "
            r"\(no broadcasting",
        ),
        (
            "grad_dtype",
            lambda o: o.sigmoid_backward(x.half(), x),
            True,
            TypeError,
            rf"turbogelu\.sigmoid_backward: grad has dtype {F16} but x has dtype {F32}",
        ),
        (
            "grad_shape",
            lambda o: o.softcap_backward(torch.randn(3), x, 2.0),
            True,
            RuntimeError,
            r"turbogelu\.softcap_backward: grad has shape \[3\] but x has shape \[4\] \(no",
        ),
        (
            "b_shape",
            lambda o: o.swiglu(x, torch.randn(3)),
            True,
            RuntimeError,
            r"turbogelu\.swiglu: b has shape \[3\] but a has shape \[4\]",
        ),
        (
            "b_dtype",
            lambda o: o.swiglu(x, x.bfloat16()),
            True,
            TypeError,
            rf"turbogelu\.swiglu: b has dtype {BF16} but a has dtype {F32}",
        ),
        (
            "swiglu_grad_shape",
            lambda o: o.swiglu_backward(torch.randn(2, 2), x, x),
            True,
            RuntimeError,
            r"turbogelu\.swiglu_backward: grad has shape",
        ),
        (
            "swiglu_out_shape",
            lambda o: o.swiglu_backward.out(x, x, x, grad_a=torch.empty(4), grad_b=torch.empty(3)),
            True,
            RuntimeError,
            r"turbogelu\.swiglu_backward: out has shape \[3\] but a has shape \[4\]",
        ),
        (
            "partial_overlap",
            lambda o: o.sigmoid.out(base[:4], out=base[1:5]),
            True,
            RuntimeError,
            overlap,
        ),
        (
            "partial_overlap_grad",
            lambda o: o.tanh_backward.out(base[2:6], base[:4], out=base[1:5]),
            True,
            RuntimeError,
            overlap,
        ),
        (
            "pair_overlap",
            lambda o: o.swiglu_backward.out(x, x, x, grad_a=y[:4], grad_b=y[2:6]),
            True,
            RuntimeError,
            overlap,
        ),
        (
            "pair_same_memory",
            lambda o: o.swiglu_backward.out(x, x, x, grad_a=y[:4], grad_b=y[:4]),
            True,
            RuntimeError,
            overlap,
        ),
        (
            "float64",
            lambda o: o.sigmoid(x.double()),
            False,
            TypeError,
            "float64 is not supported on MPS",
        ),
        (
            "expanded_out",
            lambda o: o.silu.out(x, out=torch.empty(1).expand(4)),
            False,
            RuntimeError,
            "internal overlap",
        ),
        (
            "device",
            lambda o: o.swiglu.out(x, x, out=torch.empty(4, device="meta")),
            False,
            RuntimeError,
            "this is the MPS kernel",
        ),
    ]
    for cap in (0.0, -2.0, float("inf"), float("nan"), 1e39, 1e-40):
        cases.append((f"cap={cap}", lambda o, c=cap: o.softcap(x, c), True, ValueError, cap_msg))
        cases.append(
            (f"backward_cap={cap}", lambda o, c=cap: o.softcap_backward(x, x, c), True,
             ValueError, cap_msg)
        )  # fmt: skip
    return cases


MPS_OPS = {**mps.OPS, **mps.FAMILY_OPS_MPS}  # every schema's MPS kernel


class _Impl:
    """torch.ops.turbogelu's calling conventions over MPS_OPS (op.overload(...))."""

    def __getattr__(self, name):
        return _Overloads(name)


class _Overloads:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kw):
        return MPS_OPS[self.name](*args, **kw)

    @property
    def out(self):
        return MPS_OPS[f"{self.name}.out"]


ERRORS = _errors()


@pytest.mark.parametrize(("call", "cpu_too", "exc", "msg"), [c[1:] for c in ERRORS],
                         ids=[c[0] for c in ERRORS])  # fmt: skip
def test_errors_are_the_cpu_s(fake_mps, call, cpu_too, exc, msg):
    with pytest.raises(exc, match=msg):
        call(_Impl())
    if cpu_too:  # the CPU op refuses the same call with the same words
        with pytest.raises(exc, match=msg):
            call(OPS)
    assert not fake_mps  # every check before any kernel


def test_one_library_compiled_once_for_every_op(fake_mps):
    """GELU's and the family's kernels are one Metal library, compiled at the first op (the
    fixture checks that it is compiled once, from the committed source)."""
    assert mps.family_library.cache_info().currsize == 0
    x = torch.randn(5)
    mps.FAMILY_OPS_MPS["sigmoid"](x)
    mps.gelu(x, "tanh")
    mps.FAMILY_OPS_MPS["swiglu"](x, x)
    assert mps.family_library.cache_info().currsize == 1
    assert [c[0] for c in fake_mps] == ["sigmoid", "gelu_tanh", "swiglu"]


def test_mps_without_compile_shader(monkeypatch):
    mps.family_library.cache_clear()
    monkeypatch.delattr(torch.mps, "compile_shader", raising=False)
    with pytest.raises(RuntimeError, match=r"torch.mps.compile_shader \(PyTorch >= 2.7\)"):
        mps.family_library()
    mps.family_library.cache_clear()


def test_exact_decimal():
    assert codegen.exact_decimal("0x1p-2") == "0.25"
    assert codegen.exact_decimal("-0x1.8p+1") == "-3.0"
    assert Decimal(codegen.exact_decimal("0x1.4950bap-3")) == Decimal(
        float.fromhex("0x1.4950bap-3")
    )


def test_dispatch_reaches_the_python_kernels(fake_mps):
    """Through the dispatcher with the real schemas: each MPS kernel registered under a
    scratch library's CPU key with its op's schema, called as torch.ops calls the op."""
    lib = torch.library.Library("turbogelu_mps_test", "DEF")
    try:
        for name, fn in MPS_OPS.items():
            base, _, overload = name.partition(".")
            schema = str(getattr(getattr(OPS, base), overload or "default")._schema)
            lib.define(schema.removeprefix("turbogelu::"))
            lib.impl(name, fn, "CPU")
        t = torch.ops.turbogelu_mps_test
        x, g, b = torch.randn(33) * 4, torch.randn(33), torch.randn(33)
        assert_same_bits(t.gelu(x, "tanh"), OPS.gelu(x, "tanh"))
        assert_same_bits(t.gelu_backward(g, x, "none", "matched"),
                         OPS.gelu_backward(g, x, "none", "matched"))  # fmt: skip
        z = x.clone()
        t.gelu_(z)
        assert_same_bits(z, OPS.gelu(x))
        assert_same_bits(t.sigmoid(x, backward="matched"), OPS.sigmoid(x))
        assert_same_bits(t.silu_backward(g, x, "direct"), OPS.silu_backward(g, x, "direct"))
        assert_same_bits(t.softcap(x, 2.5), OPS.softcap(x, 2.5))
        assert_same_bits(t.softcap_backward(g, x, 2.5), OPS.softcap_backward(g, x, 2.5))
        z = x.clone()
        t.softcap_(z, 2.5)
        assert_same_bits(z, OPS.softcap(x, 2.5))
        out = torch.empty_like(x)
        t.tanh.out(x, out=out)
        assert_same_bits(out, OPS.tanh(x))
        ga, gb = t.swiglu_backward(g, x, b, "matched")
        want = OPS.swiglu_backward(g, x, b, "matched")
        assert_same_bits(ga, want[0])
        assert_same_bits(gb, want[1])
        ga, gb = torch.empty_like(x), torch.empty_like(x)
        t.swiglu_backward.out(g, x, b, grad_a=ga, grad_b=gb)
        want = OPS.swiglu_backward(g, x, b)
        assert_same_bits(ga, want[0])
        assert_same_bits(gb, want[1])
        want = {"gelu_none", "gelu_tanh", "sigmoid", "silu", "softcap", "tanh", "swiglu"}
        assert {c[0] for c in fake_mps} == want
        assert {c[1] for c in fake_mps} == {"accurate"}  # the schemas' default tier
    finally:
        del lib


def test_paper_tier_runs_the_paper_programs(fake_mps):
    """tier="paper" reaches the paper tier's kernels (<op>_paper_*) and derivative programs,
    whose results are the CPU's paper-tier results and not the accurate tier's; the default
    backward is the paper tier's own (tanh's and SiLU's: matched)."""
    x = torch.linspace(-8, 8, 1001)
    g = torch.randn(1001, generator=torch.Generator().manual_seed(5))
    impl = mps.FAMILY_OPS_MPS
    calls = [
        ("sigmoid", lambda t: impl["sigmoid"](x, tier=t), lambda t: OPS.sigmoid(x, tier=t)),
        ("silu", lambda t: impl["silu_backward"](g, x, "default", t),
         lambda t: OPS.silu_backward(g, x, "default", t)),
        ("softcap", lambda t: impl["softcap"](x, 2.0, tier=t),
         lambda t: OPS.softcap(x, 2.0, tier=t)),
        ("tanh", lambda t: impl["tanh_backward"](g, x, "default", t),
         lambda t: OPS.tanh_backward(g, x, "default", t)),
        ("swiglu", lambda t: impl["swiglu_backward"](g, x, g, "direct", t)[0],
         lambda t: OPS.swiglu_backward(g, x, g, "direct", t)[0]),
    ]  # fmt: skip
    for op, mps_call, cpu_call in calls:
        fake_mps.clear()
        got = mps_call("paper")
        assert_same_bits(got, cpu_call("paper"))
        assert not torch.equal(got, cpu_call("accurate")), op
        assert [c[:3] for c in fake_mps] == [(op, "paper", fake_mps[0][2])], op
    bws = {fn: mps.family_default_backward("paper")[fn] for fn in ("silu", "tanh")}
    assert bws == {"silu": "matched", "tanh": "matched"}
    fake_mps.clear()
    impl["tanh_backward"](g, x, "default", "paper")
    assert fake_mps == [("tanh", "paper", "backward", "float", 1001, "matched")]
    with pytest.raises(ValueError, match="tier must be 'accurate' or 'paper', got 'fast'"):
        mps.FAMILY_OPS_MPS["tanh"](x, tier="fast")
    with pytest.raises(ValueError, match="tier must be 'accurate' or 'paper', got 'fast'"):
        OPS.tanh(x, tier="fast")
