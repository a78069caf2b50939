// AVX-512 kernels (F + BW + VL): 16 float32 lanes, masked loads and stores for the tail.
// Compiled for that target by the pragma below, not by the build's flags, so the library
// runs on any x86-64; gelu_ops.cpp calls in here only when cpuid reports the features.
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
#include "cpu_kernels.h"
#include "loops.h"

namespace turbogelu {
namespace cpu {
inline namespace avx512 {
namespace {

struct V16 {
  __m512 v;
};
TG_INLINE V16 tg_fma(V16 a, V16 b, V16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
TG_INLINE V16 tg_mul(V16 a, V16 b) { return {_mm512_mul_ps(a.v, b.v)}; }
TG_INLINE __mmask16 tg_gt(V16 a, V16 b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ); }
TG_INLINE __mmask16 tg_lt(V16 a, V16 b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ); }
TG_INLINE V16 tg_select(__mmask16 m, V16 a, V16 b) { return {_mm512_mask_blend_ps(m, b.v, a.v)}; }
TG_INLINE V16 tg_splat(V16, float v) { return {_mm512_set1_ps(v)}; }

TG_INLINE __mmask16 first_n(int n) { return static_cast<__mmask16>((1u << n) - 1u); }

// bfloat16 -> float32 is a shift; float32 -> bfloat16 rounds to nearest even with integer
// arithmetic (not vcvtneps2bf16, which flushes subnormals to zero), NaN -> 0x7FC0.
TG_INLINE __m512 bf16_widen(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
TG_INLINE __m256i bf16_narrow(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb);
  r = _mm512_srli_epi32(r, 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  r = _mm512_mask_blend_epi32(nan, r, _mm512_set1_epi32(0x7FC0));
  return _mm512_cvtepi32_epi16(r);
}
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

struct Avx512Isa {
  static constexpr int W = 16;
  static V16 load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static V16 load(const f16_t* p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
  }
  static V16 load(const bf16_t* p) {
    return {bf16_widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
  }
  static void store(float* p, V16 v) { _mm512_storeu_ps(p, v.v); }
  static void store(f16_t* p, V16 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v.v, kRound));
  }
  static void store(bf16_t* p, V16 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bf16_narrow(v.v));
  }
  static V16 load_n(const float* p, int n) { return {_mm512_maskz_loadu_ps(first_n(n), p)}; }
  static V16 load_n(const f16_t* p, int n) {
    return {_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first_n(n), p))};
  }
  static V16 load_n(const bf16_t* p, int n) {
    return {bf16_widen(_mm256_maskz_loadu_epi16(first_n(n), p))};
  }
  static void store_n(float* p, V16 v, int n) { _mm512_mask_storeu_ps(p, first_n(n), v.v); }
  static void store_n(f16_t* p, V16 v, int n) {
    _mm256_mask_storeu_epi16(p, first_n(n), _mm512_cvtps_ph(v.v, kRound));
  }
  static void store_n(bf16_t* p, V16 v, int n) {
    _mm256_mask_storeu_epi16(p, first_n(n), bf16_narrow(v.v));
  }
};

}  // namespace
}  // namespace avx512

const KernelTable* avx512_table() {
  static const KernelTable table = {
      "avx512",
      {forward_any<Avx512Isa, float>, forward_any<Avx512Isa, f16_t>,
       forward_any<Avx512Isa, bf16_t>, nullptr},
      {backward_any<Avx512Isa, float>, backward_any<Avx512Isa, f16_t>,
       backward_any<Avx512Isa, bf16_t>, nullptr},
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
