"""Build turbogelu._C (the C++ operators) with torch.utils.cpp_extension.

    pip install --no-build-isolation -e .

No -march=native: the AVX2 and AVX-512 kernels are compiled for their targets by pragmas in
their own files and chosen at run time, so the library runs on any x86-64 (and the portable
scalar kernels elsewhere). CUDA sources are added by the GPU backend issue; TURBOGELU_CUDA=0|1
is reserved for that switch.
"""

import glob
import os
import sys

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))


def sources():
    return sorted(
        os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "kernels/cpu/*.cpp"))
    )


CXX_FLAGS = [
    "-O3",
    "-std=c++20",  # torch 2.14 headers need C++20
    # The kernels call fma() explicitly where they want one; no other multiply and add may be
    # fused, or the results would depend on the compiler (the tests compare them bit for bit
    # with a numpy replay and across instruction sets).
    "-ffp-contract=off",
    "-fvisibility=hidden",
    "-Wall",
    "-Wno-unknown-pragmas",
]
# at::parallel_for only splits work when the extension itself is compiled with OpenMP (as
# torch is); without it every call runs on one thread. Apple's clang has no -fopenmp.
OPENMP = [] if sys.platform == "darwin" else ["-fopenmp"]

setup(
    ext_modules=[
        CppExtension(
            "turbogelu._C",
            sources(),
            include_dirs=[
                os.path.join(HERE, "kernels", "include"),
                os.path.join(HERE, "kernels", "cpu"),
            ],
            extra_compile_args={"cxx": CXX_FLAGS + OPENMP},
            extra_link_args=OPENMP,
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
