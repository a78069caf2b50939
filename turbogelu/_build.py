"""Build-time decisions shared by setup.py and the tests: is CUDA compiled, and from where.

setup.py loads this file by path (not as the package), so it may import only the standard
library at module level; torch is imported inside ``want_cuda``.

* ``find_cuda_home()``: ``CUDA_HOME`` / ``CUDA_PATH`` when set; else the toolkit of the
  ``nvcc`` on PATH, following symlinks and *wrapper scripts* (a shell script that execs the
  real ``.../bin/nvcc``: torch's own guess then takes the script's folder, e.g. ``/usr/local``,
  and fails); else ``/usr/local/cuda`` or the newest ``/usr/local/cuda-*``; else an nvcc
  installed by pip into this Python (``site-packages/nvidia/*/bin/nvcc``).
* ``want_cuda()``: ``TURBOGELU_CUDA=1`` forces the CUDA sources on (an error if no toolkit or
  no CUDA build of torch), ``TURBOGELU_CUDA=0`` off; unset, they are built when both a toolkit
  and a CUDA build of torch are there. No GPU is needed to build.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys

# TORCH_CUDA_ARCH_LIST when the user sets none: the H200's sm_90 code, plus compute_90 PTX
# that the driver compiles for any newer GPU. One architecture keeps the build short.
DEFAULT_ARCH_LIST = "9.0+PTX"

# nvcc flags of kernels/cuda/*.cu (tests/test_cuda.py compiles the PTX with the same ones).
# The C++ flags of every target (setup.py; tests/test_neon.py cross-compiles with them).
CXX_FLAGS = [
    "-O3",
    "-std=c++20",  # torch 2.14 headers need C++20
    # The kernels call fma() explicitly where they want one; no other multiply and add may be
    # fused, or the results would depend on the compiler (the tests compare them bit for bit
    # with a numpy replay and across instruction sets). GCC's default on ARM64 fuses them.
    "-ffp-contract=off",
    "-fvisibility=hidden",
    "-Wall",
    "-Wno-unknown-pragmas",
]

NVCC_FLAGS = [
    "-O3",
    "-std=c++17",  # gelu_kernels.cu includes no torch header
    # As -ffp-contract=off for the C++: the kernels fuse only where family_eval.h and
    # poly_eval.h call __fmaf_rn, so the GPU gives the bits of the CPU kernels and of the numpy
    # replay. IEEE division, square root and subnormals (no fast math), stated rather than
    # assumed.
    "--fmad=false",
    "-ftz=false",
    "-prec-div=true",
    "-prec-sqrt=true",
    "-Xcompiler=-fvisibility=hidden",
]

# Link arguments that keep one libstdc++ in the process. A compiler that links a static copy
# of libstdc++ into shared objects (the GPU machine's g++ wrapper does: issue 16's first run
# on an H200) gives the extension a second libstdc++ beside the shared one torch loads; the
# static copy's functions then bind to the shared copy's data (locale facet ids), and every
# iostream in the extension misbehaves: `ifstream >> int` crashed in cpu_program(),
# ostringstream (c10::str, every TORCH_CHECK message) formatted garbage.
# tests/test_build.py shows both on a small library built with -static-libstdc++.
# - the shared libstdc++ named before the compiler's implicit (static) one, so that it
#   resolves every std:: symbol and no archive member is pulled in;
# - --exclude-libs: should a static copy still be linked, its symbols stay local to the
#   extension, a consistent copy of its own.
LIBSTDCXX_LINK_ARGS = [
    "-Wl,--push-state,--no-as-needed,-Bdynamic",
    "-lstdc++",
    "-Wl,--pop-state",
    "-Wl,--exclude-libs,ALL",
]


def link_args(platform: str = sys.platform) -> list[str]:
    """The extension's extra link arguments: OpenMP (torch's at::parallel_for splits work only
    in code compiled with it; Apple's clang has none) and, with GNU ld / lld on Linux, one
    libstdc++."""
    if platform == "darwin":
        return []
    return ["-fopenmp", *(LIBSTDCXX_LINK_ARGS if platform.startswith("linux") else [])]


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _toolkit_root(nvcc_binary: str) -> str | None:
    """.../bin/nvcc (a real executable) -> ... when that folder has include/."""
    root = os.path.dirname(os.path.dirname(nvcc_binary))
    ok = _is_elf(nvcc_binary) and os.path.isdir(os.path.join(root, "include"))
    return root if ok else None


def _wrapped_nvcc(script: str) -> list[str]:
    """Absolute paths ending in /bin/nvcc named in a (small) wrapper script."""
    try:
        with open(script, errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return []
    return re.findall(r"(/[^\s\"'$;`]*/bin/nvcc)\b", text)


def find_cuda_home() -> str | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value:
            return value
    candidates = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        real = os.path.realpath(nvcc)
        candidates.append(real)
        if not _is_elf(real):
            candidates += [os.path.realpath(p) for p in _wrapped_nvcc(real)]
    fallbacks = ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)]
    candidates += [os.path.join(os.path.realpath(d), "bin", "nvcc") for d in fallbacks]
    for entry in sys.path:  # pip's CUDA wheels (nvidia-cuda-nvcc)
        candidates += sorted(glob.glob(os.path.join(entry or ".", "nvidia", "*", "bin", "nvcc")))
    for binary in candidates:
        root = _toolkit_root(binary)
        if root is not None:
            return root
    return None


def cuda_switch() -> str | None:
    """TURBOGELU_CUDA as '0' / '1', or None when unset (auto)."""
    value = os.environ.get("TURBOGELU_CUDA", "").strip()
    if value in ("", "auto"):
        return None
    if value not in ("0", "1"):
        raise ValueError(f"TURBOGELU_CUDA must be 0, 1 or unset, got {value!r}")
    return value


def want_probes() -> bool:
    """Whether to compile the benchmark's probes (kernels/bench/): TURBOGELU_BENCH_PROBES=1,
    which `make build` and the GPU check set; off in a plain `pip install` (and the wheel)."""
    value = os.environ.get("TURBOGELU_BENCH_PROBES", "0").strip()
    if value not in ("0", "1", ""):
        raise RuntimeError(f"TURBOGELU_BENCH_PROBES must be 0 or 1, got {value!r}")
    return value == "1"


def want_cuda() -> tuple[bool, str]:
    """(build the CUDA sources?, why), from TURBOGELU_CUDA, the toolkit and torch."""
    switch = cuda_switch()
    if switch == "0":
        return False, "TURBOGELU_CUDA=0"
    import torch

    home = find_cuda_home()
    torch_cuda = torch.version.cuda
    if switch == "1":
        if home is None:
            raise RuntimeError("TURBOGELU_CUDA=1 but no CUDA toolkit (nvcc) was found")
        if torch_cuda is None:
            raise RuntimeError(f"TURBOGELU_CUDA=1 but torch {torch.__version__} has no CUDA")
        return True, f"TURBOGELU_CUDA=1, toolkit {home}"
    if home is None:
        return False, "no CUDA toolkit (nvcc) found"
    if torch_cuda is None:
        return False, f"torch {torch.__version__} is a CPU-only build"
    return True, f"toolkit {home}, torch CUDA {torch_cuda}"
