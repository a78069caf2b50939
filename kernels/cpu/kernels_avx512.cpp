// AVX-512 kernels (F + BW + VL): 16 float32 lanes, two vectors per block.
// Compiled for that target by the pragma below, not by the build's flags, so the library
// runs on any x86-64; dispatch.cpp calls in here only when cpuid reports the features.
// cpu_kernels.h (and poly_eval.h through it) is included only after the target pragma and
// the namespace macro, so its inline templates are compiled for this target, under names of
// their own.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

// Everything included before the pragma keeps the default target.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma,f16c")
#endif

#define TG_ISA_NAMESPACE avx512
#include "avx512_isa.h"
#include "cpu_kernels.h"
#include "family_loops.h"
#include "loops.h"

namespace turbogelu {
namespace cpu {
const KernelTable* avx512_table() {
  static const KernelTable table = {
      "avx512",
      {forward_any<Avx512Isa, float>, forward_any<Avx512Isa, f16_t>, forward_any<Avx512Isa, bf16_t>,
       nullptr},
      {backward_any<Avx512Isa, float>, backward_any<Avx512Isa, f16_t>,
       backward_any<Avx512Isa, bf16_t>, nullptr},
      family_kernels<Avx512Isa>(),
      program_forward<Avx512Isa>,
  };
  return &table;
}

}  // namespace cpu
}  // namespace turbogelu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64 with GCC/clang: no AVX-512 code in this build

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
const KernelTable* avx512_table() { return nullptr; }
}  // namespace cpu
}  // namespace turbogelu

#endif
