// The AVX-512 (F + BW + VL) vector type and loads/stores shared by kernels_avx512.cpp and
// kernels_avx512bf16.cpp. Include it after the target pragma and after defining
// TG_ISA_NAMESPACE, like cpu_kernels.h, so that each file compiles it for its own target
// under names of its own.
#pragma once

#include <immintrin.h>

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
inline namespace TG_ISA_NAMESPACE {
namespace {

struct V16 {
  __m512 v;
};
TG_INLINE V16 tg_fma(V16 a, V16 b, V16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
TG_INLINE V16 tg_mul(V16 a, V16 b) { return {_mm512_mul_ps(a.v, b.v)}; }
TG_INLINE V16 tg_add(V16 a, V16 b) { return {_mm512_add_ps(a.v, b.v)}; }
TG_INLINE __mmask16 tg_gt(V16 a, V16 b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ); }
TG_INLINE __mmask16 tg_lt(V16 a, V16 b) { return _mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ); }
TG_INLINE V16 tg_select(__mmask16 m, V16 a, V16 b) { return {_mm512_mask_blend_ps(m, b.v, a.v)}; }
TG_INLINE V16 tg_tail_select(__mmask16 m, V16 x, V16 other) {
  return {_mm512_mask_max_ps(other.v, m, x.v, _mm512_set1_ps(-0.0f))};
}
TG_INLINE V16 tg_splat(V16, float v) { return {_mm512_set1_ps(v)}; }
TG_INLINE V16 tg_abs(V16 x) { return {_mm512_abs_ps(x.v)}; }
// copysign(p, x): bits from x where the mask (the sign bit) is set, else from p; 0xCA is the
// ternary-logic table of (mask ? x : p), bit a*4 + b*2 + c for operands (mask, x, p).
TG_INLINE V16 tg_copysign(V16 p, V16 x) {
  return {_mm512_castsi512_ps(_mm512_ternarylogic_epi32(
      _mm512_set1_epi32(INT32_MIN), _mm512_castps_si512(x.v), _mm512_castps_si512(p.v), 0xCA))};
}
// exp2's 2^floor(n/2), 2^ceil(n/2) from k's bits (family_eval.h's pow2_split_bits).
TG_INLINE Pow2<V16> tg_pow2_split(V16 k) {
  const __m512i i = _mm512_castps_si512(k.v), h = _mm512_srli_epi32(i, 1);
  const __m512i bias = _mm512_set1_epi32(127 << 23);
  return {
      {_mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(h, 23), bias))},
      {_mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(_mm512_sub_epi32(i, h), 23), bias))}};
}
// The cells kernel: max/min with the bound first return x itself when x is NaN; the lookup
// is one two-table permute, which reads only the low five bits of each index.
TG_INLINE V16 tg_clamp_below(V16 x, V16 lo) { return {_mm512_max_ps(lo.v, x.v)}; }
TG_INLINE V16 tg_clamp_above(V16 x, V16 hi) { return {_mm512_min_ps(hi.v, x.v)}; }
TG_INLINE __m512i tg_cell(V16 xi, const CellTable& t) {
  return _mm512_castps_si512(
      _mm512_fmadd_ps(xi.v, _mm512_set1_ps(t.scale), _mm512_set1_ps(t.offset)));
}
TG_INLINE V16 tg_lookup(V16, __m512i k, const float* c) {
  return {_mm512_permutex2var_ps(_mm512_loadu_ps(c), k, _mm512_loadu_ps(c + 16))};
}

// bfloat16 <-> float32 on 32 values at once. Widening interleaves zeros below each 16-bit
// value (within 128-bit lanes: elements come out permuted, the same way for every input),
// narrowing rounds each float to nearest even in integer arithmetic and packs the high
// halves back (the inverse permutation). Not vcvtneps2bf16: it flushes subnormals to zero.
// The rounding carries into the sign only for a NaN with low bits set, which cannot occur
// here: the values come from bfloat16 data (low 16 bits zero; x86 arithmetic keeps an input
// NaN's payload, and its default NaN 0xFFC00000 has them zero too).
TG_INLINE __m512i bf16_round_high(__m512 f) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb),
                           16);
}
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

struct Avx512Isa {
  using V = V16;
  static constexpr int K = 2, B = 32;
  static void load(const float* p, V (&v)[K]) {
    v[0] = {_mm512_loadu_ps(p)};
    v[1] = {_mm512_loadu_ps(p + 16)};
  }
  static void store(float* p, const V (&v)[K]) {
    _mm512_storeu_ps(p, v[0].v);
    _mm512_storeu_ps(p + 16, v[1].v);
  }
  static void load(const f16_t* p, V (&v)[K]) {
    v[0] = {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
    v[1] = {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)))};
  }
  static void store(f16_t* p, const V (&v)[K]) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v[0].v, kRound));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 16), _mm512_cvtps_ph(v[1].v, kRound));
  }
  static void load(const bf16_t* p, V (&v)[K]) {
    const __m512i w = _mm512_loadu_si512(p);
    const __m512i zero = _mm512_setzero_si512();
    v[0] = {_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, w))};
    v[1] = {_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, w))};
  }
  static void store(bf16_t* p, const V (&v)[K]) {
    _mm512_storeu_si512(p, _mm512_packus_epi32(bf16_round_high(v[0].v), bf16_round_high(v[1].v)));
  }
  // d[c ds + r] = s[r ss + c] (times scale[c] when given) for r, c < 16: a 16 x 16 float32
  // transpose in registers (the softmax's short rows to lanes and back): pairs of rows interleaved
  // by 32 then 64 bits, then the 128-bit lanes of four vectors transposed in two rounds of
  // shuffles.
  static void transpose(const float* s, int64_t ss, float* d, int64_t ds, const float* scale) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * ss);
    if (scale != nullptr)
      for (int i = 0; i < 16; ++i) r[i] = _mm512_mul_ps(r[i], _mm512_loadu_ps(scale));
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // r[4 g + c], lane l: column 4 l + c of rows 4 g .. 4 g + 3
    for (int g = 0; g < 4; ++g) {
      const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 2]);
      const __m512d a2 = _mm512_castps_pd(t[4 * g + 1]), b2 = _mm512_castps_pd(t[4 * g + 3]);
      r[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
      r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a2, b2));
      r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a2, b2));
    }
    for (int c = 0; c < 4; ++c) {
      const __m512 lo01 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
      const __m512 hi01 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
      const __m512 lo23 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
      const __m512 hi23 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
      _mm512_storeu_ps(d + c * ds, _mm512_shuffle_f32x4(lo01, lo23, 0x88));
      _mm512_storeu_ps(d + (4 + c) * ds, _mm512_shuffle_f32x4(lo01, lo23, 0xDD));
      _mm512_storeu_ps(d + (8 + c) * ds, _mm512_shuffle_f32x4(hi01, hi23, 0x88));
      _mm512_storeu_ps(d + (12 + c) * ds, _mm512_shuffle_f32x4(hi01, hi23, 0xDD));
    }
  }
  // float32 blocks straight from the registers (p 64-byte aligned: loops.h aligns the head).
  static void stream_store(float* p, const V (&v)[K]) {
    _mm512_stream_ps(p, v[0].v);
    _mm512_stream_ps(p + 16, v[1].v);
  }
  // float16 blocks likewise, the two conversions joined in a register: through the buffer,
  // the 64-byte load of what two 32-byte stores had just written could not be forwarded from
  // the store buffer and stalled every block (the same bits either way).
  static void stream_store(f16_t* p, const V (&v)[K]) {
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtps_ph(v[0].v, kRound)),
                                         _mm512_cvtps_ph(v[1].v, kRound), 1);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), w);
  }
  // bfloat16 blocks likewise: the pack is one 64-byte vector.
  static void stream_store(bf16_t* p, const V (&v)[K]) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p),
                        _mm512_packus_epi32(bf16_round_high(v[0].v), bf16_round_high(v[1].v)));
  }
  // Non-temporal stores (loops.h's streaming loops): `bytes`, a multiple of 32, from an
  // aligned buffer to a 32-byte-aligned destination.
  static void stream_block(void* dst, const void* src, size_t bytes) {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    size_t b = 0;
    if ((reinterpret_cast<uintptr_t>(d) & 63) == 0)
      for (; b + 64 <= bytes; b += 64)
        _mm512_stream_si512(reinterpret_cast<__m512i*>(d + b), _mm512_load_si512(s + b));
    for (; b < bytes; b += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + b),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(s + b)));
  }
  static void stream_fence() { _mm_sfence(); }
};

}  // namespace
}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
