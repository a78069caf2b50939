"""Build turbogelu._C (the C++ operators) with torch.utils.cpp_extension.

    pip install --no-build-isolation -e .

No -march=native: the AVX2 and AVX-512 kernels are compiled for their targets by pragmas in
their own files and chosen at run time, so the library runs on any x86-64; on ARM64 the NEON
kernels (kernels/cpu/kernels_neon*.cpp) are built the same way, AdvSIMD being in every ARMv8-A
core and the BF16 store compiled for its extension by a pragma and chosen at run time (Linux
tested under qemu by tests/test_neon.py; macOS not compiled here: untested). On any other CPU
the portable scalar kernels run. Each instruction set's file compiles to a stub elsewhere.

CUDA (kernels/cuda/) is compiled when a CUDA toolkit and a CUDA build of torch are present;
TURBOGELU_CUDA=1 forces it (an error without them), TURBOGELU_CUDA=0 turns it off. No GPU is
needed to build. CUDA_HOME is found through a wrapper-script nvcc (turbogelu/_build.py), and
TORCH_CUDA_ARCH_LIST defaults to 9.0+PTX (the H200, plus PTX for newer GPUs).

The benchmark's probes (torch.ops.turbogelu_bench: streaming-store limits, the kernels'
benchmark switches; kernels/bench/) are compiled only with TURBOGELU_BENCH_PROBES=1, which
`make build` and the GPU check set: the shipped extension holds the product's ops alone.
"""

import glob
import importlib.util
import os
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_build_module():
    # By path: importing the package turbogelu from setup.py is not needed.
    spec = importlib.util.spec_from_file_location(
        "turbogelu_build", os.path.join(HERE, "turbogelu", "_build.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_build = _load_build_module()
WITH_CUDA, WHY = _build.want_cuda()
if WITH_CUDA:
    # Before torch.utils.cpp_extension is imported: it reads CUDA_HOME once, at import.
    os.environ.setdefault("CUDA_HOME", _build.find_cuda_home())
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", _build.DEFAULT_ARCH_LIST)
WITH_PROBES = _build.want_probes()
print(
    f"turbogelu: the benchmark's probes {'ON' if WITH_PROBES else 'OFF'} "
    "(TURBOGELU_BENCH_PROBES=1 builds them, as `make build` does)",
    file=sys.stderr,
)
print(
    f"turbogelu: CUDA kernels {'ON' if WITH_CUDA else 'OFF'} ({WHY})"
    + (f"; arch list {os.environ['TORCH_CUDA_ARCH_LIST']}" if WITH_CUDA else ""),
    file=sys.stderr,
)

from torch.utils.cpp_extension import (  # noqa: E402
    BuildExtension,
    CppExtension,
    CUDAExtension,
)


def sources(with_cuda: bool, with_probes: bool):
    patterns = ["kernels/common/*.cpp", "kernels/cpu/*.cpp"] + (
        ["kernels/cuda/*.cpp", "kernels/cuda/*.cu"] if with_cuda else []
    )
    if with_probes:  # the benchmark's probes: kernels/bench/, its cuda_* files with CUDA only
        patterns += ["kernels/bench/*.cpp"]
    found = (
        os.path.relpath(p, HERE) for pat in patterns for p in glob.glob(os.path.join(HERE, pat))
    )
    return sorted(p for p in found if with_cuda or not os.path.basename(p).startswith("cuda_"))


CXX_FLAGS = _build.CXX_FLAGS
# at::parallel_for only splits work when the extension itself is compiled with OpenMP (as
# torch is); without it every call runs on one thread. Apple's clang has no -fopenmp.
OPENMP = [] if sys.platform == "darwin" else ["-fopenmp"]
NVCC_FLAGS = _build.NVCC_FLAGS

Extension = CUDAExtension if WITH_CUDA else CppExtension
compile_args = {"cxx": CXX_FLAGS + OPENMP}
if WITH_CUDA:
    compile_args["nvcc"] = NVCC_FLAGS

setup(
    ext_modules=[
        Extension(
            "turbogelu._C",
            sources(WITH_CUDA, WITH_PROBES),
            include_dirs=[
                os.path.join(HERE, "kernels", "include"),
                os.path.join(HERE, "kernels", "cpu"),
            ],
            extra_compile_args=compile_args,
            extra_link_args=_build.link_args(),
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
