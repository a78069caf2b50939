// The ARM64 AdvSIMD (NEON) vector type, its operations and the loads / stores shared by
// kernels_neon.cpp and kernels_neonbf16.cpp. Include it after defining TG_ISA_NAMESPACE (and
// after the target pragma, for the BF16 file), like cpu_kernels.h, so that each file compiles
// it under names of its own. AdvSIMD and its float16 <-> float32 conversions (FCVTL, FCVTN)
// are in every ARMv8-A core, so only the BF16 store needs a feature check (dispatch.cpp).
//
// Every operation gives the bits of the scalar overloads (poly_eval.h, family_eval.h), which
// the replay (turbogelu/approx/replay.py) models, with the FPCR as Linux and macOS leave it
// (round to nearest even, no flush to zero): the comparisons and clamps are written as
// selects, not FMAX / FMIN, because a NaN must pass through a clamp as itself, as the scalar
// `x < lo ? lo : x` and x86's maxps(lo, x) let it (FMAX would quiet it, FMAXNM drop it).
// tests/neon_harness runs every kernel of these traits under qemu-aarch64 against the
// scalar table and the x86 kernels.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
inline namespace TG_ISA_NAMESPACE {
namespace {

struct V4 {
  float32x4_t v;
};
struct M4 {  // a lane mask: all ones or all zeros per lane
  uint32x4_t m;
};
TG_INLINE V4 tg_fma(V4 a, V4 b, V4 c) { return {vfmaq_f32(c.v, a.v, b.v)}; }  // c + a b, fused
TG_INLINE V4 tg_mul(V4 a, V4 b) { return {vmulq_f32(a.v, b.v)}; }
TG_INLINE V4 tg_add(V4 a, V4 b) { return {vaddq_f32(a.v, b.v)}; }
TG_INLINE M4 tg_gt(V4 a, V4 b) { return {vcgtq_f32(a.v, b.v)}; }  // false where either is NaN
TG_INLINE M4 tg_lt(V4 a, V4 b) { return {vcltq_f32(a.v, b.v)}; }
TG_INLINE V4 tg_select(M4 m, V4 a, V4 b) { return {vbslq_f32(m.m, a.v, b.v)}; }
// m ? (x > 0 ? x : -0.0) : other (poly_eval.h's scalar rule; +0 gives -0 as on x86)
TG_INLINE V4 tg_tail_select(M4 m, V4 x, V4 other) {
  const float32x4_t t = vbslq_f32(vcgtq_f32(x.v, vdupq_n_f32(0.0f)), x.v, vdupq_n_f32(-0.0f));
  return {vbslq_f32(m.m, t, other.v)};
}
TG_INLINE V4 tg_splat(V4, float v) { return {vdupq_n_f32(v)}; }
TG_INLINE V4 tg_abs(V4 x) { return {vabsq_f32(x.v)}; }
TG_INLINE V4 tg_copysign(V4 p, V4 x) {
  return {vbslq_f32(vdupq_n_u32(0x80000000u), x.v, p.v)};  // the sign bit from x, the rest from p
}
// exp2's 2^floor(n/2), 2^ceil(n/2) from k's bits (family_eval.h's pow2_split_bits).
TG_INLINE Pow2<V4> tg_pow2_split(V4 k) {
  const uint32x4_t i = vreinterpretq_u32_f32(k.v), h = vshrq_n_u32(i, 1);
  const uint32x4_t bias = vdupq_n_u32(127u << 23);
  return {{vreinterpretq_f32_u32(vaddq_u32(vshlq_n_u32(h, 23), bias))},
          {vreinterpretq_f32_u32(vaddq_u32(vshlq_n_u32(vsubq_u32(i, h), 23), bias))}};
}
// x < lo ? lo : x and x > hi ? hi : x, NaN passing as itself (see the top).
TG_INLINE V4 tg_clamp_below(V4 x, V4 lo) { return {vbslq_f32(vcltq_f32(x.v, lo.v), lo.v, x.v)}; }
TG_INLINE V4 tg_clamp_above(V4 x, V4 hi) { return {vbslq_f32(vcgtq_f32(x.v, hi.v), hi.v, x.v)}; }
// The cells kernel: the cell numbers (the low five bits of fma(xi, scale, offset)) and one
// load per lane. Not the default program on ARM64 (dispatch.cpp): a 32-entry float lookup
// is two four-register TBLs there, and its speed has not been measured.
struct Cell4 {
  uint32_t k[4];
};
TG_INLINE Cell4 tg_cell(V4 xi, const CellTable& t) {
  const float32x4_t s = vfmaq_f32(vdupq_n_f32(t.offset), xi.v, vdupq_n_f32(t.scale));
  Cell4 c;
  vst1q_u32(c.k, vandq_u32(vreinterpretq_u32_f32(s), vdupq_n_u32(kCells - 1)));
  return c;
}
TG_INLINE V4 tg_lookup(V4, const Cell4& c, const float* table) {
  const float lanes[4] = {table[c.k[0]], table[c.k[1]], table[c.k[2]], table[c.k[3]]};
  return {vld1q_f32(lanes)};
}

// bfloat16 rounding to nearest even in integers, as convert.h's f32_to_bf16 (the same
// reasoning about NaN payloads), on four lanes: the high halves, still in 32-bit lanes.
TG_INLINE uint32x4_t bf16_round_high(float32x4_t f) {
  const uint32x4_t u = vreinterpretq_u32_f32(f);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
  return vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), lsb);
}

// Two vectors per block (eight elements), in element order: unlike x86's bfloat16 unpack,
// NEON's widening keeps the order, so no permutation is involved anywhere.
struct NeonIsa {
  using V = V4;
  static constexpr int K = 2, B = 8;
  static void load(const float* p, V (&v)[K]) {
    v[0] = {vld1q_f32(p)};
    v[1] = {vld1q_f32(p + 4)};
  }
  static void store(float* p, const V (&v)[K]) {
    vst1q_f32(p, v[0].v);
    vst1q_f32(p + 4, v[1].v);
  }
  static void load(const f16_t* p, V (&v)[K]) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p)));
    v[0] = {vcvt_f32_f16(vget_low_f16(h))};
    v[1] = {vcvt_high_f32_f16(h)};
  }
  static void store(f16_t* p, const V (&v)[K]) {  // FCVTN: to nearest even, as F16C's
    const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(v[0].v), v[1].v);
    vst1q_u16(reinterpret_cast<uint16_t*>(p), vreinterpretq_u16_f16(h));
  }
  static void load(const bf16_t* p, V (&v)[K]) {
    const uint16x8_t w = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
    v[0] = {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(w), 16))};
    v[1] = {vreinterpretq_f32_u32(vshll_high_n_u16(w, 16))};
  }
  static void store(bf16_t* p, const V (&v)[K]) {
    const uint16x8_t w =
        vshrn_high_n_u32(vshrn_n_u32(bf16_round_high(v[0].v), 16), bf16_round_high(v[1].v), 16);
    vst1q_u16(reinterpret_cast<uint16_t*>(p), w);
  }
  // d[c ds + r] = s[r ss + c] (times scale[c] when given) for r, c < 4: a 4 x 4 float32
  // transpose in registers (the softmax's short rows to lanes and back), by 32-bit then
  // 64-bit TRN.
  static void transpose(const float* s, int64_t ss, float* d, int64_t ds, const float* scale) {
    float32x4_t r[4];
    for (int i = 0; i < 4; ++i) r[i] = vld1q_f32(s + i * ss);
    if (scale != nullptr)
      for (int i = 0; i < 4; ++i) r[i] = vmulq_f32(r[i], vld1q_f32(scale));
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    const auto f64 = [](float32x4_t x) { return vreinterpretq_f64_f32(x); };
    const auto f32 = [](float64x2_t x) { return vreinterpretq_f32_f64(x); };
    vst1q_f32(d, f32(vtrn1q_f64(f64(t0), f64(t2))));
    vst1q_f32(d + ds, f32(vtrn1q_f64(f64(t1), f64(t3))));
    vst1q_f32(d + 2 * ds, f32(vtrn2q_f64(f64(t0), f64(t2))));
    vst1q_f32(d + 3 * ds, f32(vtrn2q_f64(f64(t1), f64(t3))));
  }
  // No stream_block / stream_fence: plain stores on ARM64 until a measurement there says
  // that non-temporal ones (STNP) pay; a request to stream takes them (the same bits).
};

}  // namespace
}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
