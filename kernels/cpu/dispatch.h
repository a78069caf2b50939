// The CPU dispatch choices that every operator file shares (defined in dispatch.cpp, where
// the switches live): the instruction set the calling thread runs, the program, the parallel
// grain and the store choice. So every op (ops.cpp) and the run-time-coefficient ops
// (poly_ops.cpp) split, store and dispatch alike.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {

// The kernel table of the instruction set the calling thread uses now.
const KernelTable& current_kernel_table();
// Whether the CPU program this thread runs now is "cells" (use_cpu_kernel,
// TURBOGELU_CPU_KERNEL, else the instruction set's default): GELU and the family's sigmoid,
// tanh and SiLU then run their cells programs.
bool runs_cells();
// Whether 16-bit cells calls take their format's own tables (family.h's sized_cells_call):
// always, but for the benchmark's switch (hooks.h's set_sized_cells).
bool sized_cells();
// Elements per at::parallel_for chunk.
int64_t parallel_grain();
// Whether a call of n elements of size es, moving `bytes` in all, writing to `out`, streams.
bool stream_output(const void* out, int64_t es, int64_t n, int64_t bytes, int64_t grain);
// The kernel tables' index of t's dtype, or a clear error naming `op`.
int dtype_index_of(const at::Tensor& t, const char* op);
int dtype_index_of(at::ScalarType dtype, const char* op);
// t must be on the CPU (this is the CPU kernel).
void check_on_cpu(const at::Tensor& t, const char* op, const char* what);

}  // namespace cpu
}  // namespace turbogelu
