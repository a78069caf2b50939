// Scalar float32 <-> float16 / bfloat16 conversions, rounding to nearest even like the
// hardware instructions (and c10::Half / c10::BFloat16), so every instruction set stores the
// same bits. In the per-ISA namespace for the same reason as poly_eval.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "turbogelu/poly_eval.h"

namespace turbogelu {
namespace cpu {
inline namespace TG_ISA_NAMESPACE {

inline float bf16_to_f32(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even, as c10::BFloat16 does, in the same integer steps as the SIMD
// kernels (so all give the same bits, NaNs included). Like them it expects a value computed
// from bfloat16 data: a NaN's low 16 bits are then zero and the rounding cannot carry into
// the sign (c10 instead maps every NaN to 0x7FC0).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  uint32_t u;
  if (exp == 0x1F) {
    u = sign | 0x7F800000u | (mant << 13);
  } else if (exp == 0) {
    const float f = static_cast<float>(mant) * 0x1p-24f;  // exact: a subnormal half
    std::memcpy(&u, &f, sizeof u);
    u |= sign;
  } else {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even (as F16C's vcvtps2ph with _MM_FROUND_TO_NEAREST_INT).
inline uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7FFFFFFFu;
  if (u >= 0x7F800000u)  // inf stays inf; NaN stays NaN (quiet, top payload bits kept)
    return sign | (u > 0x7F800000u ? static_cast<uint16_t>(0x7E00u | ((u >> 13) & 0x3FFu))
                                   : static_cast<uint16_t>(0x7C00u));
  if (u >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to inf
  if (u < 0x38800000u) {                        // below 2^-14: a subnormal half (or zero)
    float a;
    std::memcpy(&a, &u, sizeof a);
    // a * 2^24 is exact; adding and removing 2^23 rounds it to an integer, ties to even.
    const float units = (a * 0x1p24f + 0x1p23f) - 0x1p23f;
    return sign | static_cast<uint16_t>(units);
  }
  u += 0xFFFu + ((u >> 13) & 1u);
  return sign | static_cast<uint16_t>((u - 0x38000000u) >> 13);
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
