// The building blocks of every turbogelu kernel's per-element math (CPU scalar and SIMD,
// CUDA): the coefficient and cell-table types, the scalar overloads (fma, mul, splat,
// compare, select) that SIMD wrappers in kernels/cpu provide for their vectors, P(z) by
// Horner or Estrin, and the cells' cubic lookup. The programs built from them, GELU's
// included, are family_eval.h's forms.
//
// The templates are written once over a value type V: float and double here, SIMD wrappers
// in kernels/cpu, and the same code compiles as __host__ __device__ for CUDA.
// turbogelu/approx/replay.py replays the programs' exact sequence of roundings in numpy, and
// the tests compare the two bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define TG_HD __host__ __device__
#define TG_INLINE __forceinline__
#define TG_UNROLL _Pragma("unroll")
#else
#define TG_HD
#define TG_INLINE inline __attribute__((always_inline))
#if defined(__clang__)
#define TG_UNROLL _Pragma("unroll")
#else
#define TG_UNROLL _Pragma("GCC unroll 32")
#endif
#endif

// Each CPU instruction-set file defines TG_ISA_NAMESPACE before including this header, so
// inline functions compiled with different target flags never share a (COMDAT) symbol.
#ifndef TG_ISA_NAMESPACE
#define TG_ISA_NAMESPACE generic
#endif

namespace turbogelu {

// Upper bound on the number of coefficients a kernel accepts (degree <= 16).
constexpr int kMaxCoeffs = 17;

// One fitted coefficient set of GELU's form (family_eval.h's gelu_forward: x/2 + x^2 P(z) and
// 1/2 + x Q(z), z = fma(x^2, scale, -1)); the generated gelu_coeffs.h holds the shipped ones,
// and the run-time-coefficient kernels (poly_gelu) take any of a compiled degree.
struct PolyCoeffs {
  int degree;   // P has degree + 1 coefficients
  float clamp;  // R: the polynomial is used on |x| <= R
  float scale;  // 2 / R^2, rounded to float32
  float c[kMaxCoeffs];
};

// How to evaluate P: Horner (fewest operations, one dependency chain) or Estrin (more
// operations, short chains). Which is faster is measured (python -m experiments bench), not
// assumed.
enum class Scheme { Horner, Estrin };

// The table of one of the CPU's "cells" programs (cells_poly below; family_eval.h's cells_eval).
constexpr int kCells = 32;
constexpr int kCellCoeffs = 4;  // up to a cubic in each cell

struct CellTable {
  // The polynomial's degree in every cell: 3 (the float32 programs), or 2 for a program
  // sized for a 16-bit format (turbogelu/approx/cells16.py; c[3] is then zero and unread).
  int degree;
  float scale;   // cells per unit of x
  float clamp;   // x is clamped to [-clamp, clamp]; s(+-clamp) lands in cells 1 and 31
  float offset;  // 16 + 1.5 * 2^23: fma(xi, scale, offset) is rint(16 + xi*scale) + 1.5*2^23
  float c[kCellCoeffs][kCells];  // c[j][k]: the coefficient of x^j in cell k
};

inline namespace TG_ISA_NAMESPACE {

// Scalar overloads; SIMD types provide the same names.
TG_HD TG_INLINE float tg_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fmaf(a, b, c);
#endif
}
TG_HD TG_INLINE double tg_fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
template <class V>
TG_HD TG_INLINE V tg_mul(V a, V b) {
  return a * b;
}
// tg_splat(V{}, c): c broadcast to the type of the first argument (which only picks the
// overload, so SIMD wrappers can add their own next to their other operations).
TG_HD TG_INLINE float tg_splat(float, float v) { return v; }
TG_HD TG_INLINE double tg_splat(double, float v) { return v; }
TG_HD TG_INLINE bool tg_gt(float a, float b) { return a > b; }
TG_HD TG_INLINE bool tg_gt(double a, double b) { return a > b; }
TG_HD TG_INLINE bool tg_lt(float a, float b) { return a < b; }
TG_HD TG_INLINE bool tg_lt(double a, double b) { return a < b; }
template <class V>
TG_HD TG_INLINE V tg_select(bool m, V a, V b) {
  return m ? a : b;
}
// m ? max(x, -0.0) : other, where max(x, -0.0) is x for x > 0 and -0.0 for x < 0
// (one masked max on AVX-512). Only used where x is not NaN.
template <class V>
TG_HD TG_INLINE V tg_tail_select(bool m, V x, V other) {
  return m ? (x > V(0) ? x : V(-0.0)) : other;
}

// P(z) = sum_k c[k] z^k, N = degree + 1 coefficients.
template <int N, Scheme S, class V>
TG_HD TG_INLINE V eval_poly(V z, const float* c) {
  static_assert(N >= 1 && N <= kMaxCoeffs, "unsupported degree");
  if constexpr (S == Scheme::Horner) {
    V p = tg_splat(V{}, c[N - 1]);
    TG_UNROLL
    for (int k = N - 2; k >= 0; --k) p = tg_fma(p, z, tg_splat(V{}, c[k]));
    return p;
  } else {
    // Estrin: t[i] = c[2i] + c[2i+1] z, then pairs of those with z^2, z^4, ...; an odd one
    // out is carried up unchanged. turbogelu/approx/replay.py builds the same tree.
    V t[N];
    TG_UNROLL
    for (int k = 0; k < N; ++k) t[k] = tg_splat(V{}, c[k]);
    V power = z;
    int n = N;
    TG_UNROLL
    for (int level = 0; level < 5; ++level) {
      if (n <= 1) break;
      const int half = n / 2;
      TG_UNROLL
      for (int i = 0; i < half; ++i) t[i] = tg_fma(t[2 * i + 1], power, t[2 * i]);
      if (n % 2) t[half] = t[n - 1];
      n = half + n % 2;
      if (n > 1) power = tg_mul(power, power);
    }
    return t[0];
  }
}

// ---------------------------------------------------------------- cells (CPU)
//
// The table-driven programs (turbogelu/approx/cells.py and family_cells.py fit them and
// explain the layout): k = the cell of xi (32 cells), p = ((c3[k] xi + c2[k]) xi + c1[k]) xi
// + c0[k], then the function's form (family_eval.h's cells_eval). Four multiply-adds and
// four table lookups instead of a polynomial's twelve operations or more.
// x < lo ? lo : x and x > hi ? hi : x: a NaN compares false and stays.
template <class V>
TG_HD TG_INLINE V tg_clamp_below(V x, V lo) {
  return x < lo ? lo : x;
}
template <class V>
TG_HD TG_INLINE V tg_clamp_above(V x, V hi) {
  return x > hi ? hi : x;
}

// The cell of xi: the low five bits of fma(xi, scale, offset), whose float32 value is an
// integer (round to nearest, ties to even, in one rounding). Host code: only the CPU runs
// this program so far.
TG_INLINE int tg_cell(float xi, const CellTable& t) {
  const float s = tg_fma(xi, t.scale, t.offset);
  uint32_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  return static_cast<int>(bits & (kCells - 1));
}
// float64: rint(centre + xi*scale) in double, the centre being offset - 1.5*2^23 (16 for
// GELU's cells, 0 for the family's; turbogelu/approx/cells.py's and family_cells.py's float64
// replays).
TG_INLINE int tg_cell(double xi, const CellTable& t) {
  const double centre = static_cast<double>(t.offset) - 0x1.8p23;
  const double s = std::nearbyint(xi * static_cast<double>(t.scale) + centre);
  return s == s ? static_cast<int>(s) & (kCells - 1) : 0;
}
TG_INLINE float tg_lookup(float, int k, const float* c) { return c[k]; }
TG_INLINE double tg_lookup(double, int k, const float* c) { return c[k]; }

// D: the table's degree, fixed at compile time (the loops pick the instantiation from
// t.degree once per call): a quadratic is three lookups and two multiply-adds.
template <int D = kCellCoeffs - 1, class V>
TG_HD TG_INLINE V cells_poly(V xi, const CellTable& t) {
  static_assert(D == 2 || D == 3, "the cells programs are quadratic or cubic");
  const auto k = tg_cell(xi, t);
  V p = tg_lookup(xi, k, t.c[D]);
  TG_UNROLL
  for (int j = D - 1; j >= 0; --j) p = tg_fma(p, xi, tg_lookup(xi, k, t.c[j]));
  return p;
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace turbogelu
