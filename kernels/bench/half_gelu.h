// GELU's float16 program in half-precision arithmetic (turbogelu/approx/half16.py) as one
// AVX512-FP16 block of 32 lanes: what half16.replay replays, operation for operation. Shared
// by the benchmark's probe (half_probe.cpp) and the microbenchmark
// (experiments/archive/cpu_op_costs/op_costs_half.cpp); needs only <immintrin.h>, and the
// caller compiles it for x86-64 with GCC 12+ or Clang.
#pragma once
#include <immintrin.h>

#include <cstdint>

#define TG_FP16 __attribute__((target("avx512f,avx512bw,avx512fp16,fma")))

namespace turbogelu {
namespace half16 {

constexpr int kColumns = 6, kCells = 32;  // origin, a, c0, q0, q1, q2 per cell

struct Program {
  __m512i column[kColumns];
  __m512h low, high, scale, offset;
};

TG_FP16 inline __m512h broadcast(uint16_t bits) {
  return _mm512_castsi512_ph(_mm512_set1_epi16(static_cast<short>(bits)));
}

// columns: kColumns x kCells float16 bits; consts: LOW, HIGH, SCALE, OFFSET as float16 bits.
TG_FP16 inline Program load(const uint16_t* columns, const uint16_t* consts) {
  Program p;
  for (int j = 0; j < kColumns; ++j) p.column[j] = _mm512_loadu_si512(columns + j * kCells);
  p.low = broadcast(consts[0]);
  p.high = broadcast(consts[1]);
  p.scale = broadcast(consts[2]);
  p.offset = broadcast(consts[3]);
  return p;
}

TG_FP16 inline __m512h lookup(const __m512i& column, __m512i k) {
  return _mm512_castsi512_ph(_mm512_permutexvar_epi16(k, column));
}

// x goes second to max and min: AVX-512 returns the second operand when either is NaN, so a
// NaN stays NaN (its cell, the low five bits of the integer indefinite 0x8000, is 0).
TG_FP16 inline __m512h gelu(__m512h x, const Program& p) {
  const __m512h xb = _mm512_max_ph(p.low, x);
  const __m512h xc = _mm512_min_ph(p.high, xb);
  const __m512i k = _mm512_cvttph_epi16(_mm512_fmadd_ph(xc, p.scale, p.offset));
  const __m512h t = _mm512_sub_ph(xc, lookup(p.column[0], k));
  __m512h q = _mm512_fmadd_ph(t, lookup(p.column[5], k), lookup(p.column[4], k));
  q = _mm512_fmadd_ph(t, q, lookup(p.column[3], k));
  return _mm512_fmadd_ph(xb, lookup(p.column[1], k), _mm512_fmadd_ph(t, q, lookup(p.column[2], k)));
}

}  // namespace half16
}  // namespace turbogelu
