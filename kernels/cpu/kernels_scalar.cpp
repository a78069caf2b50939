// Portable scalar kernels: the fallback on any CPU, and the float64 path on every CPU.
// No target flags: std::fma is a correctly rounded fused multiply-add everywhere, so these
// give the same bits as the SIMD kernels, only more slowly.
#define TG_ISA_NAMESPACE scalar

#include "convert.h"
#include "cpu_kernels.h"
#include "family_loops.h"
#include "loops.h"

namespace turbogelu {
namespace cpu {
inline namespace scalar {
namespace {

// One element per block; V is float for float32 / float16 / bfloat16.
struct ScalarIsa {
  using V = float;
  static constexpr int K = 1, B = 1;
  static void load(const float* p, V (&v)[K]) { v[0] = *p; }
  static void load(const f16_t* p, V (&v)[K]) { v[0] = f16_to_f32(p->bits); }
  static void load(const bf16_t* p, V (&v)[K]) { v[0] = bf16_to_f32(p->bits); }
  static void store(float* p, const V (&v)[K]) { *p = v[0]; }
  static void store(f16_t* p, const V (&v)[K]) { p->bits = f32_to_f16(v[0]); }
  static void store(bf16_t* p, const V (&v)[K]) { p->bits = f32_to_bf16(v[0]); }
  static void transpose(const float* s, int64_t, float* d, int64_t, const float* scale) {
    *d = scale != nullptr ? *s * *scale : *s;
  }
};

// float64: the same polynomial (float32 coefficients) evaluated in double.
struct ScalarF64Isa {
  using V = double;
  static constexpr int K = 1, B = 1;
  static void load(const double* p, V (&v)[K]) { v[0] = *p; }
  static void store(double* p, const V (&v)[K]) { *p = v[0]; }
};

}  // namespace
}  // namespace scalar

const KernelTable& scalar_table() {
  static const KernelTable table = {
      "scalar",
      {forward_any<ScalarIsa, float>, forward_any<ScalarIsa, f16_t>, forward_any<ScalarIsa, bf16_t>,
       forward_any<ScalarF64Isa, double>},
      {backward_any<ScalarIsa, float>, backward_any<ScalarIsa, f16_t>,
       backward_any<ScalarIsa, bf16_t>, backward_any<ScalarF64Isa, double>},
      family_kernels<ScalarIsa, ScalarF64Isa>(),
      program_forward<ScalarIsa>,
  };
  return table;
}

}  // namespace cpu
}  // namespace turbogelu
