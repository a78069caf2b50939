// The CPU kernel tables, one per instruction set, behind plain function pointers.
//
// Each instruction set lives in its own translation unit compiled for that target
// (kernels_scalar.cpp, kernels_avx2.cpp, kernels_avx512.cpp, kernels_avx512bf16.cpp,
// kernels_neon.cpp, kernels_neonbf16.cpp); none of them
// includes torch, so no inline torch function is ever compiled with AVX-512 enabled and picked by
// the linker for a machine without it. dispatch.cpp chooses a table at run time (cpuid).
#pragma once

#include <cstdint>

#include "turbogelu/family.h"
#include "turbogelu/poly_eval.h"

namespace turbogelu {
namespace cpu {

// 16-bit storage types, kept distinct so that load/store overloads pick the conversion.
struct f16_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};

// Element types, in the order of the tables below.
enum DType : int { kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3, kNumDTypes = 4 };

// GELU's run-time-coefficient kernels (loops.h). Return false when the coefficient set's
// degree has no compiled instantiation. `stream`
// asks for non-temporal stores (loops.h; the same bits), honoured where compiled (SIMD
// instruction sets; the polynomial at the shipped degree, Horner).
using ForwardFn = bool (*)(const void* x, void* out, int64_t n, const PolyCoeffs& k, Scheme s,
                           bool stream);
using BackwardFn = bool (*)(const void* grad, const void* x, void* out, int64_t n,
                            const PolyCoeffs& k, Scheme s, bool stream);

// The activation family's kernels of one op in one tier (turbogelu/family.h), by element type;
// nullptr where the kind has no such kernel or this instruction set none of its own (use the scalar
// table's).
//   unary   Plain and Scaled forward: out = f(x)
//   binary  Plain and Scaled backward: out = grad f'(x), (a, b) = (grad, x); Gated forward:
//           out = f(a) b
//   pair    Gated backward: (out_a, out_b) from (grad, a, b); `stream` only where the two
//           outputs share their offset in a cache line
using FamilyUnaryFn = void (*)(const void* x, void* out, int64_t n, const FamilyCall& c,
                               bool stream);
using FamilyBinaryFn = void (*)(const void* a, const void* b, void* out, int64_t n,
                                const FamilyCall& c, bool stream);
using FamilyPairFn = void (*)(const void* g, const void* a, const void* b, void* out_a, void* out_b,
                              int64_t n, const FamilyCall& c, bool stream);
//   from_output  grad f'(x) from the saved result y = f(x): out = from_output(grad, y)
//           (family.h's TG_FROM_OUTPUT_OPS; (a, b) = (grad, y), the binary signature)
//   softmax `rows` contiguous rows of `cols` elements, x to y, by exp2 (family_loops.h's
//           family_softmax; the exp2 op's entries only); `scratch`: cols floats of the caller's
//           (one per thread)
using FamilySoftmaxFn = void (*)(const void* x, void* y, int64_t rows, int64_t cols,
                                 const FamilyCall& c, float* scratch);
//   softmax_lanes  the same softmax of the lanes [lane0, lane1) of a contiguous tensor seen as
//           (outer, cols, inner) and softmaxed along its middle dim: lane l = o inner + i holds
//           elements o cols inner + j inner + i, j < cols (inner = 1: rows, for short ones).
//           Up to kSoftmaxLaneBlock lanes at a time side by side in SIMD lanes, through
//           `scratch` (cols kSoftmaxLaneBlock floats of the caller's, twice that for rows:
//           inner = 1); each lane gets the bits the row kernel gives its row
//           (family_loops.h's family_softmax_lanes)
constexpr int kSoftmaxLaneBlock = 32;
using FamilySoftmaxLanesFn = void (*)(const void* x, void* y, int64_t lane0, int64_t lane1,
                                      int64_t cols, int64_t inner, const FamilyCall& c,
                                      float* scratch);
struct FamilyKernels {
  FamilyUnaryFn unary[kNumDTypes];
  FamilyBinaryFn binary[kNumDTypes];
  FamilyPairFn pair[kNumDTypes];
  FamilyBinaryFn from_output[kNumDTypes];
  FamilySoftmaxFn softmax[kNumDTypes];
  FamilySoftmaxLanesFn softmax_lanes[kNumDTypes];
};

// A float32 forward of a program of the family chosen at run time (family_loops.h's
// program_forward: form, variable x^2 or |x|, degree); false where none is compiled.
using ProgramForwardFn = bool (*)(const float* x, float* out, int64_t n, const FamilyProgram& p,
                                  Form form, bool in_y);

struct KernelTable {
  const char* name;
  // GELU's run-time-coefficient kernels (loops.h: poly_gelu, the Estrin scheme); nullptr: use
  // the scalar table's entry.
  ForwardFn forward[kNumDTypes];
  BackwardFn backward[kNumDTypes];
  // Every op's kernels, GELU's shipped programs included: kFamilyTableSize entries (family.h:
  // family_index, family_cells_index).
  const FamilyKernels* family;
  // poly_family's run-time programs (float32 forward; nullptr: use the scalar table's).
  ProgramForwardFn program_forward;
};

const KernelTable& scalar_table();
// nullptr when the build has no such code (a non-x86 target).
const KernelTable* avx2_table();
const KernelTable* avx512_table();
// The avx512 table with the AVX512-BF16 bfloat16 store (kernels_avx512bf16.cpp).
const KernelTable* avx512bf16_table();
// ARM64: AdvSIMD (kernels_neon.cpp), and with the BF16 extension's store
// (kernels_neonbf16.cpp); nullptr on other targets.
const KernelTable* neon_table();
const KernelTable* neonbf16_table();

// Degrees (of P) with compiled kernels. A list rather than one value so that experiments can
// time other fitted specs through the same code (turbogelu::poly_gelu, poly_ops.cpp: the
// benchmark's operation-count curve); each degree costs compile time. The shipped specs use 8.
#define TG_KERNEL_DEGREES(X) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12)

}  // namespace cpu
}  // namespace turbogelu
