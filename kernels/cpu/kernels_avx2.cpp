// AVX2 + FMA + F16C kernels: 8 float32 lanes; the tail goes through a padded local buffer.
// Compiled for that target by the pragma below, not by the build's flags (see
// kernels_avx512.cpp); dispatch.cpp calls in here only when cpuid reports the features.
// cpu_kernels.h (and poly_eval.h through it) is included only after the target pragma and
// the namespace macro, so its inline templates are compiled for this target, under names of
// their own.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#define TG_ISA_NAMESPACE avx2
#include "cpu_kernels.h"
#include "family_loops.h"
#include "loops.h"

namespace turbogelu {
namespace cpu {
inline namespace avx2 {
namespace {

struct V8 {
  __m256 v;
};
struct M8 {  // a lane mask: all ones or all zeros per lane
  __m256 m;
};
TG_INLINE V8 tg_fma(V8 a, V8 b, V8 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
TG_INLINE V8 tg_mul(V8 a, V8 b) { return {_mm256_mul_ps(a.v, b.v)}; }
TG_INLINE V8 tg_add(V8 a, V8 b) { return {_mm256_add_ps(a.v, b.v)}; }
TG_INLINE M8 tg_gt(V8 a, V8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)}; }
TG_INLINE M8 tg_lt(V8 a, V8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
TG_INLINE V8 tg_select(M8 m, V8 a, V8 b) { return {_mm256_blendv_ps(b.v, a.v, m.m)}; }
TG_INLINE V8 tg_tail_select(M8 m, V8 x, V8 other) {
  return {_mm256_blendv_ps(other.v, _mm256_max_ps(x.v, _mm256_set1_ps(-0.0f)), m.m)};
}
TG_INLINE V8 tg_splat(V8, float v) { return {_mm256_set1_ps(v)}; }
TG_INLINE V8 tg_abs(V8 x) { return {_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x.v)}; }
TG_INLINE V8 tg_copysign(V8 p, V8 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  return {_mm256_or_ps(_mm256_andnot_ps(sign, p.v), _mm256_and_ps(sign, x.v))};
}
// exp2's 2^floor(n/2), 2^ceil(n/2) from k's bits (family_eval.h's pow2_split_bits).
TG_INLINE Pow2<V8> tg_pow2_split(V8 k) {
  const __m256i i = _mm256_castps_si256(k.v), h = _mm256_srli_epi32(i, 1);
  const __m256i bias = _mm256_set1_epi32(127 << 23);
  return {
      {_mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(h, 23), bias))},
      {_mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(i, h), 23), bias))}};
}
// The cells kernel: max/min with the bound first return x itself when x is NaN.
TG_INLINE V8 tg_clamp_below(V8 x, V8 lo) { return {_mm256_max_ps(lo.v, x.v)}; }
TG_INLINE V8 tg_clamp_above(V8 x, V8 hi) { return {_mm256_min_ps(hi.v, x.v)}; }
// The cell number k sits in the low five bits of each lane of `bits`. AVX2 permutes read
// eight entries (the low three bits of k), so a lookup takes four of them and picks among
// the four results by bits 3 and 4 of k, moved into the sign bit that blendv reads (the
// shifted copies are computed once per vector and shared by the four coefficients).
// Gathers give the same values but are several times slower on the build machine.
struct Cell8 {
  __m256i k;
  __m256 bit3, bit4;
};
TG_INLINE Cell8 tg_cell(V8 xi, const CellTable& t) {
  const __m256i k =
      _mm256_castps_si256(_mm256_fmadd_ps(xi.v, _mm256_set1_ps(t.scale), _mm256_set1_ps(t.offset)));
  return {k, _mm256_castsi256_ps(_mm256_slli_epi32(k, 28)),
          _mm256_castsi256_ps(_mm256_slli_epi32(k, 27))};
}
TG_INLINE V8 tg_lookup(V8, const Cell8& c, const float* table) {
  const __m256 q0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), c.k);
  const __m256 q1 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 8), c.k);
  const __m256 q2 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 16), c.k);
  const __m256 q3 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 24), c.k);
  const __m256 lo = _mm256_blendv_ps(q0, q1, c.bit3);
  const __m256 hi = _mm256_blendv_ps(q2, q3, c.bit3);
  return {_mm256_blendv_ps(lo, hi, c.bit4)};
}

// bfloat16 <-> float32 on 16 values at once, as in kernels_avx512.cpp (interleave with
// zeros to widen, round to nearest even in integers and pack the high halves to narrow; the
// same reasoning about NaN payloads applies).
TG_INLINE __m256i bf16_round_high(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb),
                           16);
}
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

struct Avx2Isa {
  using V = V8;
  static constexpr int K = 2, B = 16;
  static void load(const float* p, V (&v)[K]) {
    v[0] = {_mm256_loadu_ps(p)};
    v[1] = {_mm256_loadu_ps(p + 8)};
  }
  static void store(float* p, const V (&v)[K]) {
    _mm256_storeu_ps(p, v[0].v);
    _mm256_storeu_ps(p + 8, v[1].v);
  }
  static void load(const f16_t* p, V (&v)[K]) {
    v[0] = {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
    v[1] = {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
  }
  static void store(f16_t* p, const V (&v)[K]) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v[0].v, kRound));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(v[1].v, kRound));
  }
  static void load(const bf16_t* p, V (&v)[K]) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i zero = _mm256_setzero_si256();
    v[0] = {_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, w))};
    v[1] = {_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, w))};
  }
  static void store(bf16_t* p, const V (&v)[K]) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm256_packus_epi32(bf16_round_high(v[0].v), bf16_round_high(v[1].v)));
  }
  // d[c ds + r] = s[r ss + c] (times scale[c] when given) for r, c < 8: an 8 x 8 float32
  // transpose in registers (the softmax's short rows to lanes and back), as avx512_isa.h's.
  static void transpose(const float* s, int64_t ss, float* d, int64_t ds, const float* scale) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * ss);
    if (scale != nullptr)
      for (int i = 0; i < 8; ++i) r[i] = _mm256_mul_ps(r[i], _mm256_loadu_ps(scale));
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // r[4 g + c], lane l: column 4 l + c of rows 4 g .. 4 g + 3
    for (int g = 0; g < 2; ++g) {
      const __m256d a = _mm256_castps_pd(t[4 * g]), b = _mm256_castps_pd(t[4 * g + 2]);
      const __m256d a2 = _mm256_castps_pd(t[4 * g + 1]), b2 = _mm256_castps_pd(t[4 * g + 3]);
      r[4 * g] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
      r[4 * g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
      r[4 * g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(a2, b2));
      r[4 * g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(a2, b2));
    }
    for (int c = 0; c < 4; ++c) {
      _mm256_storeu_ps(d + c * ds, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
      _mm256_storeu_ps(d + (4 + c) * ds, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
    }
  }
  // float32 and bfloat16 blocks with non-temporal stores straight from the registers (p
  // 32-byte aligned), as float16's below.
  static void stream_store(float* p, const V (&v)[K]) {
    _mm256_stream_ps(p, v[0].v);
    _mm256_stream_ps(p + 8, v[1].v);
  }
  static void stream_store(bf16_t* p, const V (&v)[K]) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p),
                        _mm256_packus_epi32(bf16_round_high(v[0].v), bf16_round_high(v[1].v)));
  }
  // float16 blocks with non-temporal stores straight from the registers (p 32-byte aligned):
  // through the buffer, the 32-byte load of what two 16-byte stores had just written could
  // not be forwarded and stalled every block (the same bits either way).
  static void stream_store(f16_t* p, const V (&v)[K]) {
    const __m256i w =
        _mm256_set_m128i(_mm256_cvtps_ph(v[1].v, kRound), _mm256_cvtps_ph(v[0].v, kRound));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), w);
  }
  // Non-temporal stores (loops.h's streaming loops): `bytes`, a multiple of 32, from an
  // aligned buffer to a 32-byte-aligned destination.
  static void stream_block(void* dst, const void* src, size_t bytes) {
    for (size_t b = 0; b < bytes; b += 32)
      _mm256_stream_si256(
          reinterpret_cast<__m256i*>(static_cast<char*>(dst) + b),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(static_cast<const char*>(src) + b)));
  }
  static void stream_fence() { _mm_sfence(); }
};

}  // namespace
}  // namespace avx2

const KernelTable* avx2_table() {
  static const KernelTable table = {
      "avx2",
      {forward_any<Avx2Isa, float>, forward_any<Avx2Isa, f16_t>, forward_any<Avx2Isa, bf16_t>,
       nullptr},
      {backward_any<Avx2Isa, float>, backward_any<Avx2Isa, f16_t>, backward_any<Avx2Isa, bf16_t>,
       nullptr},
      family_kernels<Avx2Isa>(),
      program_forward<Avx2Isa>,
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

#else  // not x86-64 with GCC/clang: no AVX2 code in this build

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
const KernelTable* avx2_table() { return nullptr; }
}  // namespace cpu
}  // namespace turbogelu

#endif
