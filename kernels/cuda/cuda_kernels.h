// The CUDA kernels' launchers, between the .cu files (device code, compiled by nvcc, no
// torch headers: each compiles in seconds) and the ops (ops.cpp, compiled by the host
// compiler against c10/cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "turbogelu/family.h"
#include "turbogelu/poly_eval.h"

namespace turbogelu {
namespace cuda {

// Element types (the storage; the math runs in float32, or float64 for float64).
enum DType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3 };

// Degrees (of P) with compiled kernels: each costs compile time (see TG_KERNEL_DEGREES in
// kernels/cpu/cpu_kernels.h for the CPU's list).
#define TG_CUDA_KERNEL_DEGREES(X) X(8)

bool has_degree(int degree);

// GELU with the coefficient set k evaluated by Estrin's scheme (the benchmark's probe; the
// shipped Horner programs are GELU's rows of family_unary / family_binary below; any other
// scheme: cudaErrorInvalidValue).
// out[i] = gelu(x[i]) for i < n, on `stream` of the current device. x may equal out (in place);
// otherwise they must not overlap. Every pointer must be aligned to its element (a tensor's
// data is; cudaErrorMisalignedAddress otherwise), no more: 128-bit stores after a head peeled
// to out's 16-byte boundary, 128-bit loads of each input at the same 16-byte offset as out.
// Returns the launch's error (cudaSuccess when n = 0).
cudaError_t forward(DType dtype, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                    Scheme scheme, cudaStream_t stream);

// out[i] = grad[i] * gelu'(x[i]); out may equal grad or x.
cudaError_t backward(DType dtype, const void* grad, const void* x, void* out, int64_t n,
                     const PolyCoeffs& k, Scheme scheme, cudaStream_t stream);

// The activation family (family_kernels.cu): op's element function (family_eval.h, chosen by
// its kind in family.h) with the call c, over n elements of dtype, on `stream` of the current
// device; pointers as for forward (aligned to their element; an output may be an input, never
// a partial overlap). cudaErrorInvalidValue when op has no such launcher (unary: Plain and
// Scaled; pair: Gated); cudaSuccess when n = 0.
//   family_unary   out = f(x)                       Plain / Scaled forward
//   family_binary  out = f(a, b)                    their backward (a = grad, b = x), Gated forward
//   family_pair    out_a, out_b = f(g, a, b)        Gated backward
// packed: the opt-in packed bfloat16 path, the same element functions two lanes at a time in
// __nv_bfloat162 arithmetic (every operation rounded to bfloat16; turbogelu/approx/
// packed_family.py replays it bit for bit); only the paper tier on bfloat16 data has it
// (cudaErrorInvalidValue otherwise).
cudaError_t family_unary(FamilyOp op, Tier tier, bool packed, DType dtype, const void* x, void* out,
                         int64_t n, const FamilyCall& c, cudaStream_t stream);
cudaError_t family_binary(FamilyOp op, Tier tier, bool packed, DType dtype, const void* a,
                          const void* b, void* out, int64_t n, const FamilyCall& c,
                          cudaStream_t stream);
cudaError_t family_pair(FamilyOp op, Tier tier, bool packed, DType dtype, const void* g,
                        const void* a, const void* b, void* out_a, void* out_b, int64_t n,
                        const FamilyCall& c, cudaStream_t stream);

// The grid of the last launch in this process (any thread, any of the kernels above): its
// blocks, the blocks of that kernel resident per SM (from the occupancy API) and the SMs.
// Zeros before the first launch. For the tests and the GPU check (_cuda_last_launch).
struct LaunchRecord {
  int blocks;
  int blocks_per_sm;
  int sms;
};
LaunchRecord last_launch();

}  // namespace cuda
}  // namespace turbogelu
