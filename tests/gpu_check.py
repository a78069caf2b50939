"""The Python half of tests/gpu_check.sh, and what tests/test_cuda.py shares with it.

    python tests/gpu_check.py machine      # python, torch, the GPU, the toolkit (markdown)
    python tests/gpu_check.py build        # setup.py build_ext --inplace, MAX_JOBS at a time
    python tests/gpu_check.py fresh        # exit 0: turbogelu._C imports and is up to date
    python tests/gpu_check.py resources    # the kernels' registers (markdown), see below
    python tests/gpu_check.py junit FILE   # counts and failures of a JUnit XML (markdown)
    python tests/gpu_check.py prefetch     # the tests' nvcc compiles into $GPU_CHECK_NVCC_CACHE
    python tests/gpu_check.py memcheck LOG --rc N --mode M   # the memcheck step's verdict

Resources: ``cuobjdump --dump-resource-usage`` of the built extension when it holds CUDA code
and a cuobjdump is found (the toolkit's, the PATH's, or the copy inside triton); else the
same numbers from ptxas, compiling kernels/cuda/gelu_kernels.cu and family_kernels.cu for
sm_90 with the build's flags (nvcc only). Per kernel: registers, stack and local memory
(spills), and the blocks of 256 threads that fit on one sm_90 SM, which is the grid the
kernels launch per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor). Standard library only
at module level: the GPU machine may lack anything else.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS_CU = ROOT / "kernels" / "cuda" / "gelu_kernels.cu"
FAMILY_CU = ROOT / "kernels" / "cuda" / "family_kernels.cu"  # the activation family's
CUDA_SOURCES = (KERNELS_CU, FAMILY_CU)
THREADS = 256  # kThreads in kernels/cuda/elementwise.cuh
# Sources of turbogelu._C (setup.py's globs) and the build's own files.
BUILD_INPUTS = (
    "kernels/common/*.cpp",
    "kernels/bench/*.cpp",
    "kernels/cpu/*.cpp",
    "kernels/cpu/*.h",
    "kernels/include/turbogelu/*.h",
    "kernels/cuda/*.cu",
    "kernels/cuda/*.cuh",
    "kernels/cuda/*.cpp",
    "kernels/cuda/*.h",
    "setup.py",
    "turbogelu/_build.py",
)
DTYPE_OF = {"f": "float32", "d": "float64", "6__half": "float16", "13__nv_bfloat16": "bfloat16"}


def _build_module():
    spec = importlib.util.spec_from_file_location("turbogelu_build", ROOT / "turbogelu/_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ the machine


def machine() -> int:
    """Print what the check runs on; 0 with a CUDA device, 4 without, 3 without torch."""
    import platform

    print(f"- python: {platform.python_version()} ({sys.executable})")
    try:
        import torch
    except ImportError as e:
        print(f"- torch: does not import: {e}")
        return 3
    print(
        f"- torch: {torch.__version__}, built with CUDA {torch.version.cuda}, cuda available:"
        f" {torch.cuda.is_available()}, devices: {torch.cuda.device_count()}"
    )
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        print(
            f"- device 0: {p.name}, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs,"
            f" {p.total_memory / 2**30:.0f} GiB"
        )
    mods = ["setuptools", "ninja", "pytest", "numpy", "scipy", "mpmath", "triton"]
    have = ", ".join(f"{m} {'yes' if importlib.util.find_spec(m) else 'MISSING'}" for m in mods)
    print(f"- modules: {have}")
    home = _build_module().find_cuda_home()
    print(f"- CUDA toolkit: {home or 'NOT FOUND (set CUDA_HOME)'}")
    print(f"- cuobjdump: {find_cuobjdump() or 'not found'}")
    return 0 if torch.cuda.is_available() else 4


# ------------------------------------------------------------------ the build


def build(jobs: int) -> None:
    """``setup.py build_ext --inplace``, compiling `jobs` sources at a time even without ninja.

    With ninja (torch's default) MAX_JOBS already runs the compilers in parallel. Without it,
    torch's BuildExtension compiles one source after the other, which on the GPU machine could
    take most of the check's time; there, distutils' compile loop is replaced by one that runs
    the C++ sources on `jobs` threads. The CUDA sources go first, one at a time: torch's
    compile wrapper swaps the compiler to nvcc on the shared compiler object for them; and no
    ccache wrapper (TORCH_NO_COMPILER_WRAPPER), which that swap would stack up across threads.
    """
    import runpy
    from concurrent.futures import ThreadPoolExecutor

    os.chdir(ROOT)
    sys.argv = ["setup.py", "build_ext", "--inplace"]
    os.environ["TURBOGELU_BENCH_PROBES"] = "1"  # the bench and _cuda_last_launch need them
    try:
        import setuptools  # noqa: F401  (its distutils)
        from setuptools._distutils import ccompiler

        ccompiler.CCompiler._setup_compile  # noqa: B018  (what compile_parallel relies on)
    except (ImportError, AttributeError) as e:  # another setuptools: torch's own build
        print(f"gpu_check build: no parallel fallback ({e}); building as setup.py does")
        runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")
        return

    def compile_parallel(
        self,
        sources,
        output_dir=None,
        macros=None,
        include_dirs=None,
        debug=False,
        extra_preargs=None,
        extra_postargs=None,
        depends=None,
    ):
        macros, objects, extra_postargs, pp_opts, todo = self._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs
        )
        cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj):
            src, ext = todo[obj]
            self._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        cuda = [o for o in objects if o in todo and todo[o][0].endswith((".cu", ".cuh"))]
        for obj in cuda:
            one(obj)
        rest = [o for o in objects if o in todo and o not in cuda]
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            list(pool.map(one, rest))  # (raises the first CompileError)
        return objects

    ccompiler.CCompiler.compile = compile_parallel  # torch's ninja path overrides it per object
    os.environ.setdefault("TORCH_NO_COMPILER_WRAPPER", "1")
    runpy.run_path(str(ROOT / "setup.py"), run_name="__main__")


# ------------------------------------------------------------------ is the build current


def extension_path() -> Path | None:
    """The turbogelu/_C*.so of this checkout (what an in-place build writes)."""
    found = sorted(glob.glob(str(ROOT / "turbogelu" / "_C*.so")))
    return Path(found[-1]) if found else None


def fresh() -> tuple[bool, str]:
    """(can the in-place build be reused, why): turbogelu._C imports, is newer than every
    source and build file, and has CUDA kernels exactly when a build here would compile them."""
    so = extension_path()
    if so is None:
        return False, "no turbogelu/_C*.so"
    built = so.stat().st_mtime
    newer = [
        os.path.relpath(p, ROOT)
        for pattern in BUILD_INPUTS
        for p in glob.glob(str(ROOT / pattern))
        if os.path.getmtime(p) > built
    ]
    if newer:
        return False, f"{so.name} is older than {', '.join(sorted(newer)[:5])}"
    try:
        import torch

        import turbogelu.ops  # noqa: F401
    except Exception as e:  # an ABI mismatch surfaces here as an ImportError or OSError
        return False, f"turbogelu._C does not import: {e}"
    try:
        want = _build_module().want_cuda()[0]
    except (RuntimeError, ValueError) as e:
        return False, str(e)
    has = torch._C._dispatch_has_kernel_for_dispatch_key("turbogelu::gelu", "CUDA")
    if want != has:
        return False, f"built {'with' if has else 'without'} CUDA, a build here would not be"
    return True, f"{so.name} is newer than its sources ({'with' if has else 'without'} CUDA)"


# ------------------------------------------------------------------ resources


def find_cuobjdump() -> str | None:
    home = _build_module().find_cuda_home()
    candidates = [f"{home}/bin/cuobjdump"] if home else []
    candidates.append(shutil.which("cuobjdump") or "")
    spec = importlib.util.find_spec("triton")
    if spec and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            candidates.append(os.path.join(loc, "backends", "nvidia", "bin", "cuobjdump"))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def nvcc_device_flags() -> list[str]:
    """The build's nvcc flags for kernels/cuda/*.cu, with the defines torch's CUDAExtension adds."""
    flags = [f for f in _build_module().NVCC_FLAGS if not f.startswith("-Xcompiler")]
    return [
        *flags,
        "-D__CUDA_NO_HALF_OPERATORS__",
        "-D__CUDA_NO_HALF_CONVERSIONS__",
        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-D__CUDA_NO_HALF2_OPERATORS__",
        f"-I{ROOT / 'kernels' / 'include'}",
    ]


def parse_cuobjdump(text: str) -> dict[str, dict]:
    """{mangled kernel: {"arch", "regs", "stack", "local"}} from --dump-resource-usage."""
    out: dict[str, dict] = {}
    arch, name = "", None
    for line in text.splitlines():
        if m := re.match(r"\s*arch = (sm_\d+\w*)", line):
            arch = m[1]
        elif m := re.match(r"\s*Function (\S+):\s*$", line):
            name = m[1]
        elif name and (m := re.search(r"REG:(\d+) STACK:(\d+) .*LOCAL:(\d+)", line)):
            regs, stack, local = int(m[1]), int(m[2]), int(m[3])
            out[name] = {"arch": arch or "sm_90", "regs": regs, "stack": stack, "local": local}
            name = None
    return out


def parse_ptxas(text: str, arch: str = "sm_90") -> dict[str, dict]:
    """The same from ptxas's -v output (nvcc --resource-usage): local = spill stores."""
    out: dict[str, dict] = {}
    name, stack, spill = None, 0, 0
    for line in text.splitlines():
        if m := re.search(r"Function properties for (\S+)", line):
            name = m[1]
        elif name and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)):
            stack, spill = int(m[1]), int(m[2])
        elif name and (m := re.search(r"Used (\d+) registers", line)):
            out[name] = {"arch": arch, "regs": int(m[1]), "stack": stack, "local": spill}
            name, stack, spill = None, 0, 0
    return out


def _nvcc_path() -> str:
    home = _build_module().find_cuda_home()
    if home is None:
        raise FileNotFoundError("no CUDA toolkit (nvcc)")
    return f"{home}/bin/nvcc"


# A folder for nvcc's outputs (tests/gpu_check.sh sets it on the GPU machine and fills it
# in the background while the extension builds, which leaves most of the cores idle): the
# PTX and ptxas tests of test_cuda.py then read their four compiles
# (about 45 s of one core) instead of running them inside the tests step's time limit.
NVCC_CACHE_ENV = "GPU_CHECK_NVCC_CACHE"
PREFETCH_WAIT = 90  # s: the most a test waits for a compile the prefetch started (~25 s here)


def _nvcc_key(cmd: list[str]) -> str:
    """The command and every kernel source's bytes (what the .cu files can include)."""
    h = hashlib.sha256(json.dumps(cmd).encode())
    for path in sorted((ROOT / "kernels").rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:32]


def _running(pending: Path) -> bool:
    """Whether the process named in a .pending file (the prefetch) is still alive."""
    try:
        os.kill(int(pending.read_text()), 0)
        return True
    except (OSError, ValueError):  # no file, no such process, or not a pid
        return False


def run_nvcc(cmd: list[str], timeout: float, wait: bool = True) -> tuple[str, str]:
    """(stdout, stderr) of an nvcc command that must succeed; through $GPU_CHECK_NVCC_CACHE
    when set: a result there is reused, one that the prefetch is running (a .pending file
    naming a live process) is waited for (`wait`), up to PREFETCH_WAIT, before compiling here
    after all."""
    folder = os.environ.get(NVCC_CACHE_ENV)
    if not folder:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
        return done.stdout, done.stderr
    key = _nvcc_key(cmd)
    result, pending = Path(folder) / f"{key}.json", Path(folder) / f"{key}.pending"
    deadline = time.monotonic() + PREFETCH_WAIT
    while wait and not result.exists() and _running(pending) and time.monotonic() < deadline:
        time.sleep(0.2)
    if result.exists():
        try:
            out = json.loads(result.read_text())
            return out["stdout"], out["stderr"]
        except (OSError, ValueError, KeyError):
            pass  # a damaged entry: compile again
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    tmp = result.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"cmd": cmd, "stdout": done.stdout, "stderr": done.stderr}))
    os.replace(tmp, result)  # whole or absent, for a reader in another process
    return done.stdout, done.stderr


def resources_cmd(arch: str = "sm_90", source: Path = KERNELS_CU) -> list[str]:
    """Compile `source` to a cubin (discarded), printing ptxas's resource usage."""
    return [_nvcc_path(), "-cubin", f"-arch={arch}", *nvcc_device_flags(),
            "--resource-usage", str(source), "-o", os.devnull]  # fmt: skip


def ptx_cmd(source: Path, arch: str = "compute_90") -> list[str]:
    return [_nvcc_path(), "-ptx", f"-arch={arch}", *nvcc_device_flags(), str(source), "-o", "-"]


def compile_resources(
    arch: str = "sm_90", timeout: float = 120, source: Path = KERNELS_CU
) -> dict[str, dict]:
    """ptxas's resource usage of `source` (gelu_kernels.cu) compiled for `arch`."""
    out, err = run_nvcc(resources_cmd(arch, source), timeout)
    return parse_ptxas(out + err, arch)


def compile_ptx(source: Path, arch: str = "compute_90", timeout: float = 300) -> dict[str, str]:
    """{mangled kernel name: its PTX body} of `source`, compiled with the build's flags."""
    ptx, _ = run_nvcc(ptx_cmd(source, arch), timeout)
    parts = re.split(r"^\.visible \.entry |^\.entry ", ptx, flags=re.M)[1:]
    return {p.split("(", 1)[0]: p for p in parts}


def prefetch_nvcc() -> int:
    """Run the tests' four nvcc compiles at once into $GPU_CHECK_NVCC_CACHE (marking each
    .pending while it runs, so that a test asking for it meanwhile waits rather than compiles
    it a second time). 0 when all four are there."""
    from concurrent.futures import ThreadPoolExecutor

    folder = os.environ.get(NVCC_CACHE_ENV)
    if not folder:
        print(f"prefetch: {NVCC_CACHE_ENV} is not set")
        return 2
    Path(folder).mkdir(parents=True, exist_ok=True)
    cmds = [ptx_cmd(KERNELS_CU), ptx_cmd(FAMILY_CU)]
    cmds += [resources_cmd(source=s) for s in CUDA_SOURCES]
    pending = [Path(folder) / f"{_nvcc_key(c)}.pending" for c in cmds]
    for path in pending:
        path.write_text(str(os.getpid()))

    def one(i: int) -> str:
        t, what = time.monotonic(), f"{cmds[i][1]} {Path(cmds[i][-3]).name}"
        try:
            run_nvcc(cmds[i], timeout=120, wait=False)
            return f"ok in {time.monotonic() - t:.0f} s: {what}"
        except (OSError, subprocess.SubprocessError) as e:
            return f"FAILED ({type(e).__name__}): {what}: {e}"
        finally:
            pending[i].unlink(missing_ok=True)

    with ThreadPoolExecutor(len(cmds)) as pool:
        lines = list(pool.map(one, range(len(cmds))))
    print("\n".join(lines))
    return 0 if all(line.startswith("ok") for line in lines) else 1


def extension_resources(so: Path, cuobjdump: str) -> dict[str, dict]:
    """The kernels inside the built extension ({} when it holds no CUDA code: cuobjdump
    then fails)."""
    done = subprocess.run(
        [cuobjdump, "--dump-resource-usage", str(so)], capture_output=True, text=True, timeout=60
    )
    return parse_cuobjdump(done.stdout) if done.returncode == 0 else {}


def blocks_per_sm(regs: int, arch: str = "sm_90", threads: int = THREADS) -> int | None:
    """Blocks of `threads` resident on one SM of sm_80 / sm_90 for this register count (no
    shared memory): registers are allocated per warp in units of 256 (8 per thread), 64K per
    SM, at most 2048 threads. None for another architecture."""
    if arch not in ("sm_80", "sm_90", "sm_90a"):
        return None
    per_thread = -(-max(regs, 1) // 8) * 8
    return min(2048 // threads, 65536 // (per_thread * threads))


def _macro_rows(path: Path, macro: str) -> list[list[str]]:
    """The X(...) rows of `#define <macro>(X)` in a header, each as its list of arguments."""
    text = path.read_text()
    m = re.search(rf"#define {macro}\(X\)((?:.*\\\n)*.*)", text)
    if m is None:
        raise ValueError(f"no #define {macro}(X) in {path}")
    return [[a.strip() for a in row.split(",")] for row in re.findall(r"X\(([^)]*)\)", m[1])]


def family_ops() -> list[tuple[str, str, str]]:
    """TG_FAMILY_OPS of the generated family_coeffs.h (the table of turbogelu/_table.py):
    (op, function, kind) rows."""
    rows = _macro_rows(ROOT / "kernels/include/turbogelu/family_coeffs.h", "TG_FAMILY_OPS")
    return [(op, fn, kind) for op, fn, kind in rows]


def gelu_ops() -> list[tuple[str, str, str]]:
    """TG_GELU_OPS of the generated family_coeffs.h: GELU's two programs as rows of the
    kernels' table, (op, function, kind) (family.h: approximate='none' and 'tanh' of gelu)."""
    rows = _macro_rows(ROOT / "kernels/include/turbogelu/family_coeffs.h", "TG_GELU_OPS")
    return [(op, fn, kind) for op, fn, kind in rows]


def gelu_shapes() -> dict[str, tuple[str, int, bool, str, int, bool]]:
    """The shapes of GELU's rows as family_shapes gives the family's (family.h's
    TG_GELU_SHAPE: x/2 + x^2 P and 1/2 + x Q, both in x^2, with the window decided on x^2),
    "<fn>_accurate" (its own programs; its paper tier is a family program, family_shapes) and
    "<fn>_packed" (the packed bfloat16 fits), their degrees
    from the generated gelu_coeffs.h."""
    text = (ROOT / "kernels/include/turbogelu/gelu_coeffs.h").read_text()

    def degree(name: str) -> int:
        return int(re.search(rf"PolyCoeffs {name} = \{{\s*(\d+),", text)[1])

    parts = {"accurate": ("forward", "backward_direct"),
             "packed": ("forward_packed_bf16", "backward_packed_bf16")}  # fmt: skip
    return {
        f"{fn}_{program}": (
            "XHalfPlusEven", degree(f"{fn}_{forward}"), True,
            "HalfPlusOdd", degree(f"{fn}_{backward}"), True,
        )
        for _, fn, _ in gelu_ops()
        for program, (forward, backward) in parts.items()
    }  # fmt: skip


def family_shapes() -> dict[str, tuple[str, int, bool, str, int, bool]]:
    """TG_FAMILY_SHAPES of the generated family_coeffs.h: {"<function>_<tier>": (forward
    form, degree, in x^2, derivative form, degree, in x^2)} (the name of family.h's
    shapes::<function>_<tier>)."""
    rows = _macro_rows(ROOT / "kernels/include/turbogelu/family_coeffs.h", "TG_FAMILY_SHAPES")
    return {
        f"{fn}_{tier}": (ff, int(df), yf == "true", fd, int(dd), yd == "true")
        for fn, tier, ff, df, yf, fd, dd, yd in rows
    }


FAMILY_KINDS = ("Plain", "Scaled", "Gated")  # enum class Kind in family.h, in its order


def family_kernel(name: str) -> tuple[str, str, str, str] | None:
    """(dtype, body: unary / binary / pair, shapes (function_tier), kind) of a
    family_kernel<T, Fn, ...> of family_kernels.cu, from its mangled name; None for any other
    kernel."""
    m = re.search(r"family_kernelI(f|d|6__half|13__nv_bfloat16)NS\d*_\d+(Unary|Binary|Pair)Fn"
                  r"INS_6shapes(\d+)", name)  # fmt: skip
    if m is None:
        return None
    fn = name[m.end() : m.end() + int(m[3])]
    kind = re.match(r"ELNS_4KindE(\d)E", name[m.end() + int(m[3]) :])
    kind = FAMILY_KINDS[int(kind[1])] if kind else "Gated"  # (the pair body has no kind)
    return DTYPE_OF[m[1]], m[2].lower(), fn, kind


def packed_family_kernel(name: str) -> tuple[str, str, str] | None:
    """(body: unary / binary / pair, shapes (function_tier), kind) of a
    packed_family_kernel<Fn, ...> of family_kernels.cu (the opt-in packed bfloat16 path), from
    its mangled name; None for any other kernel."""
    m = re.search(r"packed_family_kernelINS\d*_\d+(Unary|Binary|Pair)FnINS_6shapes(\d+)", name)
    if m is None:
        return None
    fn = name[m.end() : m.end() + int(m[2])]
    kind = re.match(r"ELNS_4KindE(\d)E", name[m.end() + int(m[2]) :])
    kind = FAMILY_KINDS[int(kind[1])] if kind else "Gated"  # (the pair body has no kind)
    return m[1].lower(), fn, kind


def _family_op_name(fn: str, kind: str) -> str:
    function = fn.rpartition("_")[0]
    rows = family_ops() + gelu_ops()
    return next((o for o, f, k in rows if (f, k) == (function, kind)), f"{fn} {kind}")


def describe(name: str) -> str | None:
    """A readable name for a kernel of gelu_kernels.cu or family_kernels.cu, None for anything
    else."""
    if m := re.search(r"gelu_kernelI(f|d|6__half|13__nv_bfloat16)Li(\d+)ELNS_6SchemeE(\d)ELb(\d)E",
                      name):  # fmt: skip
        scheme = "horner" if m[3] == "0" else "estrin"
        direction = "backward" if m[4] == "1" else "forward"
        return f"{DTYPE_OF[m[1]]} {direction} {scheme} (degree {int(m[2]) - 1})"
    if found := packed_family_kernel(name):
        body, fn, kind = found
        tier = fn.rpartition("_")[2]  # (GELU's rows: "packed", their packed fits)
        op = _family_op_name(fn, kind)
        shapes = {**family_shapes(), **gelu_shapes()}
        _, df, _, _, dd, _ = shapes.get(fn, ("?", -1, False, "?", -1, False))
        if body == "pair":
            return f"bfloat16 packed {op} ({tier}) backward (degrees {df}, {dd})"
        if body == "unary" or kind == "Gated":
            return f"bfloat16 packed {op} ({tier}) forward (degree {df})"
        return f"bfloat16 packed {op} ({tier}) backward (degree {dd})"
    if found := family_kernel(name):
        dtype, body, fn, kind = found
        tier = fn.rpartition("_")[2]
        op = _family_op_name(fn, kind)
        shapes = {**family_shapes(), **gelu_shapes()}
        _, df, _, _, dd, _ = shapes.get(fn, ("?", -1, False, "?", -1, False))
        if body == "pair":
            return f"{dtype} {op} ({tier}) backward (degrees {df}, {dd})"
        if body == "unary" or kind == "Gated":
            return f"{dtype} {op} ({tier}) forward (degree {df})"
        return f"{dtype} {op} ({tier}) backward (degree {dd})"
    return None


def resources() -> tuple[str, dict[str, dict]]:
    """(where the numbers come from, {mangled kernel: usage}) of this checkout's kernels."""
    so = extension_path()
    cuobjdump = find_cuobjdump()
    if so is not None and cuobjdump is not None:
        found = extension_resources(so, cuobjdump)
        if found:
            return f"cuobjdump --dump-resource-usage {so.name} ({cuobjdump})", found
    usage = {}
    for source in CUDA_SOURCES:
        usage.update(compile_resources(source=source))
    return (
        f"ptxas (nvcc --resource-usage), {' and '.join(s.name for s in CUDA_SOURCES)} compiled"
        f" for sm_90 with the build's flags{'' if cuobjdump else '; no cuobjdump found'}",
        usage,
    )


def render_resources(source: str, usage: dict[str, dict]) -> str:
    rows = sorted((describe(n) or n, u) for n, u in usage.items())
    lines = [
        f"Kernel resources, from {source}. Blocks/SM: blocks of {THREADS} threads resident on"
        " one SM (sm_80 / sm_90 rules), the grid per SM the launcher asks for;"
        " stack / local > 0 would be spills.",
        "",
        "| kernel | arch | registers | stack | local | blocks/SM |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, u in rows:
        b = blocks_per_sm(u["regs"], u["arch"])
        lines.append(
            f"| {name} | {u['arch']} | {u['regs']} | {u['stack']} | {u['local']}"
            f" | {'?' if b is None else b} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ JUnit


# ------------------------------------------------------------------ the memcheck step

# What compute-sanitizer --tool memcheck prints for a bad access by a kernel (its lines start
# with "========="); the program's own lines (size ..., MISMATCH ..., memcheck ...) are not it.
ACCESS_ERROR = re.compile(
    r"^=+ .*(invalid __global__|invalid __shared__|invalid __local__|misaligned|out of bounds"
    r"|illegal address|illegal memory access)",
    re.I,
)
TIMED_OUT = (124, 137)  # timeout(1): out of time, or killed after it
NOT_RUN = 125  # tests/gpu_check.sh: no time left to start the step


def memcheck_verdict(log: str, rc: int, mode: str) -> tuple[bool, str, list[str]]:
    """(passed, the steps table's cell, notes) for the memcheck step, from its log and exit
    status. mode: "sanitizer" (compute-sanitizer around tests/cuda_memcheck.py), "bare" (the
    cases alone on the GPU: no sanitizer found) or "dry" (on the CPU).

    A mismatch of the cases or a bad access the sanitizer saw fails it; so does a run that did
    not finish (no final count, or no sanitizer summary). The sanitizer's exit status alone
    does not: it also counts failed CUDA API calls made by torch, which are no access of the
    kernels. A run the cases' --budget cut short passes, marked PARTIAL, with a note naming
    the sizes it left out."""
    lines = log.splitlines()
    cases = next((x for x in lines if x.startswith("memcheck cases:")), "")
    counts = re.match(r"memcheck cases: (\d+) passed, (\d+) failed", cases)
    stopped = next((x for x in lines if x.startswith("memcheck stopped")), "")
    mismatches = sum(x.startswith("MISMATCH") for x in lines)
    access = sum(bool(ACCESS_ERROR.match(x)) for x in lines)
    summary = next((m[0] for x in lines if (m := re.search(r"ERROR SUMMARY: \d+ errors?", x))), "")
    last = next((x for x in reversed(lines) if x.startswith("size ")), "no size finished")
    notes = [f"- PARTIAL memcheck: {stopped.removeprefix('memcheck ')}"] if stopped else []
    partial = ", PARTIAL" if stopped else ""
    if mode == "bare":
        notes.append("- WARNING: no compute-sanitizer found: the cases ran without it, so")
        notes.append("  memcheck was not done (only the cases' own comparisons)")
    failed = int(counts[2]) if counts else 0
    if access or mismatches or failed:
        what = cases or f"the cases did not finish ({last})"
        bad = f"; {access} invalid or misaligned accesses; {summary or 'no error summary'}"
        return False, f"FAILED: {what}{bad if mode == 'sanitizer' else ''}", notes
    if rc in TIMED_OUT or rc == NOT_RUN or not counts or (mode == "sanitizer" and not summary):
        word = {NOT_RUN: "NOT RUN (no time left)"}.get(
            rc, "TIMED OUT" if rc in TIMED_OUT else "FAILED"
        )
        return False, f"{word}: did not finish ({last}; see memcheck.log)", notes
    if mode != "sanitizer" and rc != 0:
        return False, f"FAILED (exit {rc}): {cases}", notes
    where = {
        "sanitizer": f"no invalid access; {summary}(s) in all (API calls included)",
        "bare": "the cases ran WITHOUT the sanitizer (compute-sanitizer not found)",
        "dry": "tests/cuda_memcheck.py on the CPU, no sanitizer",
    }[mode]
    return True, f"ok{partial}: {cases.removeprefix('memcheck cases: ')}; {where}", notes


def junit_summary(path: str) -> str:
    """'N passed, N failed, N errors, N skipped' and the failures and skips, as markdown."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        return f"no JUnit report ({e})"
    cases = list(root.iter("testcase"))
    failed, skipped = [], []
    for c in cases:
        name = f"{c.get('classname', '')}::{c.get('name', '')}".removeprefix("tests.")
        for tag, into in (("failure", failed), ("error", failed), ("skipped", skipped)):
            e = c.find(tag)
            if e is not None:
                message = (e.get("message") or "").splitlines()
                into.append(f"{name}: {message[0][:200] if message else tag}")
                break
    passed = len(cases) - len(failed) - len(skipped)
    lines = [f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped"]
    lines += [f"  - FAILED {f}" for f in failed[:40]]
    if len(failed) > 40:
        lines.append(f"  - ... and {len(failed) - 40} more failures (see the log)")
    # Skips grouped by reason: parametrized tests repeat one reason many times.
    reasons: dict[str, int] = {}
    for s in skipped:
        reason = s.split(": ", 1)[-1]
        reasons[reason] = reasons.get(reason, 0) + 1
    lines += [f"  - skipped x{n}: {r}" for r, n in sorted(reasons.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python tests/gpu_check.py", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("machine", help="python, torch, the GPU, the toolkit")
    sub.add_parser("build", help="setup.py build_ext --inplace, MAX_JOBS sources at a time")
    sub.add_parser("fresh", help="exit 0 when turbogelu._C imports and is up to date")
    sub.add_parser("resources", help="the kernels' registers, as markdown")
    sub.add_parser("prefetch", help=f"the tests' nvcc compiles into ${NVCC_CACHE_ENV}")
    m = sub.add_parser("memcheck", help="the memcheck step's verdict from its log")
    m.add_argument("log")
    m.add_argument("--rc", type=int, required=True, help="the step's exit status")
    m.add_argument("--mode", choices=("sanitizer", "bare", "dry"), required=True)
    j = sub.add_parser("junit", help="counts and failures of a JUnit XML")
    j.add_argument("file")
    args = p.parse_args(argv)
    if args.cmd == "machine":
        return machine()
    if args.cmd == "build":
        build(int(os.environ.get("MAX_JOBS") or os.cpu_count() or 1))
        return 0
    if args.cmd == "fresh":
        ok, why = fresh()
        print(why)
        return 0 if ok else 1
    if args.cmd == "prefetch":
        return prefetch_nvcc()
    if args.cmd == "memcheck":
        try:
            log = Path(args.log).read_text(errors="replace")
        except OSError as e:
            log = f"(no log: {e})"
        passed, cell, notes = memcheck_verdict(log, args.rc, args.mode)
        print("\n".join([cell, *notes]))
        return 0 if passed else 1
    if args.cmd == "resources":
        try:
            source, usage = resources()
        except (OSError, subprocess.SubprocessError) as e:
            print(f"no resource usage: {e}")
            return 1
        print(render_resources(source, usage))
        return 0
    print(junit_summary(args.file))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
