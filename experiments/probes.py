"""The benchmark's probes, ``torch.ops.turbogelu_bench``: apart from the product's ops so that
``torch.ops.turbogelu`` holds only what a user calls.

* ``_stream_copy(x)`` and ``_stream_read2(a, b)`` (kernels/bench/stream_ops.cpp): x's bytes, and
  a's bytes XOR b's, written with streaming stores: the machine's limits for one and two
  inputs, against which the benchmark measures the kernels; their ``.out`` forms write into a
  preallocated contiguous ``out`` of the input's shape and dtype; ``_stream_isa()`` says
  which vector code moves them;
* ``_set_poly_scheme`` ("horner" | "estrin"), ``_set_parallel_grain`` and ``_set_sized_cells``
  (16-bit cells calls on their format's own tables, the default, or on float32's) (kernels/cpu/
  hooks.h, registered by kernels/bench/cpu_hooks.cpp): process-wide switches of the kernels
  that only the benchmark, the notebooks and the tests turn. Each returns the previous value.
* ``_gelu_half16(x, program, stream=True)`` and its ``.out`` (kernels/bench/half_probe.cpp):
  float16 GELU in half-precision arithmetic (``turbogelu.approx.half16``'s program, given as
  ``half16_program()``) in the library's loop shape, on a CPU with AVX512-FP16
  (``_half16_available()``): what the benchmark times before the kernels run it;
* ``_cuda_last_launch()`` (CUDA builds only, kernels/bench/cuda_probes.cpp): [blocks, blocks per
  SM, SMs] of the last CUDA kernel launch, which tests/test_cuda.py checks against the
  occupancy that the kernels' registers allow.

Importing this module loads the extension (through ``turbogelu.ops``) and registers the
probes' fake kernels, so that they trace like the ops (opcheck).
"""

from __future__ import annotations

import functools

import torch

import turbogelu.ops  # noqa: F401  (loads turbogelu._C, which defines the namespace)
from turbogelu._checks import check_same_device

OPS = torch.ops.turbogelu_bench
# The probes are compiled only into a build made with TURBOGELU_BENCH_PROBES=1 (`make build`);
# the shipped extension (a plain `pip install`) leaves them out.
if not hasattr(OPS, "_stream_copy"):
    raise ImportError(
        "the benchmark's probes (torch.ops.turbogelu_bench) are not in this build of "
        "turbogelu._C: rebuild it with TURBOGELU_BENCH_PROBES=1 (make build does)"
    )
HOOKS = ("_set_poly_scheme", "_set_parallel_grain", "_set_sized_cells")


@torch.library.register_fake("turbogelu_bench::_stream_copy")
def _stream_copy_fake(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _check_pair(a, b):
    check_same_device("_stream_read2", a, b=b)
    if a.shape != b.shape or a.dtype != b.dtype:
        raise RuntimeError(
            "turbogelu_bench._stream_read2: a and b must have the same shape and dtype"
        )


@torch.library.register_fake("turbogelu_bench::_stream_read2")
def _stream_read2_fake(a, b):
    _check_pair(a, b)
    return torch.empty_like(a, memory_format=torch.contiguous_format)


def _check_out(like, out, op):
    check_same_device(op, like, out=out)
    if out.dtype != like.dtype or out.shape != like.shape:
        raise RuntimeError(f"turbogelu_bench.{op}: out must have the input's shape and dtype")
    if not out.is_contiguous():
        raise RuntimeError(f"turbogelu_bench.{op}: out must be contiguous")


@torch.library.register_fake("turbogelu_bench::_stream_copy.out")
def _stream_copy_out_fake(x, *, out):
    _check_out(x, out, "_stream_copy")


@torch.library.register_fake("turbogelu_bench::_stream_read2.out")
def _stream_read2_out_fake(a, b, *, out):
    _check_pair(a, b)
    _check_out(a, out, "_stream_read2")


@functools.cache
def half16_program() -> torch.Tensor:
    """``turbogelu.approx.half16``'s program as ``_gelu_half16`` takes it: a (7, 32) float16
    tensor, the six columns of the fitted table and a row LOW, HIGH, SCALE, OFFSET."""
    import numpy as np

    from turbogelu.approx import half16

    consts = np.zeros(half16.CELLS, np.float16)
    consts[:4] = (half16.LOW, half16.high(), half16.SCALE, half16.OFFSET)
    rows = np.vstack([half16.fit().T, consts[None, :]])
    return torch.from_numpy(np.ascontiguousarray(rows))


@torch.library.register_fake("turbogelu_bench::_gelu_half16")
def _gelu_half16_fake(x, program, stream=True):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.register_fake("turbogelu_bench::_gelu_half16.out")
def _gelu_half16_out_fake(x, program, stream=True, *, out):
    _check_out(x, out, "_gelu_half16")
