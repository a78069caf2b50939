// Portable scalar kernels: the fallback on any CPU, and the float64 path on every CPU.
// No target flags: std::fma is a correctly rounded fused multiply-add everywhere, so these
// give the same bits as the SIMD kernels, only more slowly.
#define TG_ISA_NAMESPACE scalar

#include "convert.h"
#include "cpu_kernels.h"
#include "loops.h"

namespace turbogelu {
namespace cpu {
inline namespace scalar {
namespace {

// One lane at a time; V is float for float32 / float16 / bfloat16 and double for float64.
struct ScalarIsa {
  static constexpr int W = 1;
  static float load(const float* p) { return *p; }
  static float load(const f16_t* p) { return f16_to_f32(p->bits); }
  static float load(const bf16_t* p) { return bf16_to_f32(p->bits); }
  static double load(const double* p) { return *p; }
  static void store(float* p, float v) { *p = v; }
  static void store(f16_t* p, float v) { p->bits = f32_to_f16(v); }
  static void store(bf16_t* p, float v) { p->bits = f32_to_bf16(v); }
  static void store(double* p, double v) { *p = v; }
  // W == 1: the loops never have a partial vector.
  template <class T>
  static auto load_n(const T* p, int) {
    return load(p);
  }
  template <class T, class V>
  static void store_n(T* p, V v, int) {
    store(p, v);
  }
};

}  // namespace
}  // namespace scalar

const KernelTable& scalar_table() {
  static const KernelTable table = {
      "scalar",
      {forward_any<ScalarIsa, float>, forward_any<ScalarIsa, f16_t>,
       forward_any<ScalarIsa, bf16_t>, forward_any<ScalarIsa, double>},
      {backward_any<ScalarIsa, float>, backward_any<ScalarIsa, f16_t>,
       backward_any<ScalarIsa, bf16_t>, backward_any<ScalarIsa, double>},
  };
  return table;
}

}  // namespace cpu
}  // namespace turbogelu
