// What the 16-bit rows cost on this CPU at 1M bfloat16 / float16 elements (2 MiB in, 2 MiB
// out), in the library's loop shape (two 16-lane vectors per iteration: load 16-bit lanes,
// widen to float32, compute, round back once, store), into a preallocated output, timed
// interleaved (medians of 30 rounds of 50 calls) against a copy of the same bytes. Issue 13
// asks the 16-bit forward at 1M elements to run within max(PyTorch / 2.5, 1.30 x the fastest
// copy): this measures how much of that the conversions alone use, before any program.
// The tables hold placeholder values: what is timed is the instruction mix.
// Build and run: bash experiments/archive/cpu_op_costs/run.sh 16   (README.md there has a run).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,f16c,fma"), noinline))

namespace {

float table[4][32];
const float kScale = 2.9f, kClamp = 5.1724138f, kOffset = 16.0f + 1.5f * 8388608.0f;

// The two widenings and roundings the library uses: bfloat16 by a 16-bit shift and
// vcvtne2ps2bf16 / vcvtneps2bf16 (AVX512-BF16), float16 by vcvtph2ps / vcvtps2ph (F16C).
TARGET __m512 widen_bf16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
TARGET __m256i narrow_bf16(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }
TARGET __m512 widen_f16(__m256i h) { return _mm512_cvtph_ps(h); }
TARGET __m256i narrow_f16(__m512 v) {
  return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

#define STORE_PLAIN(p, v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v)
#define STORE_NT(p, v) _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v)

// One loop per (variant, format, store); the body maps the __m512 `v` in place.
#define VARIANT16(NAME, FMT, STORE, SETUP, ...)                                                 \
  TARGET void NAME(const uint16_t* x, uint16_t* o, long n) {                                    \
    SETUP;                                                                                      \
    for (long i = 0; i < n; i += 32) {                                                          \
      __m512 a = widen_##FMT(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));      \
      __m512 b = widen_##FMT(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16))); \
      {                                                                                         \
        __m512& v = a;                                                                          \
        __VA_ARGS__;                                                                            \
      }                                                                                         \
      {                                                                                         \
        __m512& v = b;                                                                          \
        __VA_ARGS__;                                                                            \
      }                                                                                         \
      STORE(o + i, narrow_##FMT(a));                                                            \
      STORE(o + i + 16, narrow_##FMT(b));                                                       \
    }                                                                                           \
    _mm_sfence();                                                                               \
  }

// The same loop streaming two lines at a time (64 elements an iteration, all four 32-byte
// non-temporal stores at its end), as the library's streaming loops write since issue 41: on
// a Sapphire Rapids-class Xeon, one streamed line per iteration made the kernels slower than
// plain stores.
#define VARIANT16_2LINES(NAME, FMT, SETUP, ...)                                              \
  TARGET void NAME(const uint16_t* x, uint16_t* o, long n) {                                 \
    SETUP;                                                                                   \
    for (long i = 0; i < n; i += 64) {                                                       \
      __m512 w[4];                                                                           \
      _Pragma("GCC unroll 4") for (int q = 0; q < 4; ++q) w[q] =                             \
          widen_##FMT(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16 * q))); \
      _Pragma("GCC unroll 4") for (int q = 0; q < 4; ++q) {                                  \
        __m512& v = w[q];                                                                    \
        __VA_ARGS__;                                                                         \
      }                                                                                      \
      _Pragma("GCC unroll 4") for (int q = 0; q < 4; ++q)                                    \
          STORE_NT(o + i + 16 * q, narrow_##FMT(w[q]));                                      \
    }                                                                                        \
    _mm_sfence();                                                                            \
  }

// The plain 16-bit copy loop (no conversion), for the loop's own cost.
TARGET void copy16(const uint16_t* x, uint16_t* o, long n) {
  for (long i = 0; i < n; i += 32) {
    const __m512i v = _mm512_loadu_si512(x + i);
    _mm512_storeu_si512(o + i, v);
  }
}
TARGET void copy16_nt(const uint16_t* x, uint16_t* o, long n) {
  for (long i = 0; i < n; i += 32)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i), _mm512_loadu_si512(x + i));
  _mm_sfence();
}

#define TABLES32                                                                      \
  const __m512 t0a = _mm512_loadu_ps(table[0]), t0b = _mm512_loadu_ps(table[0] + 16); \
  const __m512 t1a = _mm512_loadu_ps(table[1]), t1b = _mm512_loadu_ps(table[1] + 16); \
  const __m512 t2a = _mm512_loadu_ps(table[2]), t2b = _mm512_loadu_ps(table[2] + 16); \
  const __m512 t3a = _mm512_loadu_ps(table[3]), t3b = _mm512_loadu_ps(table[3] + 16)
#define CONSTS                                                            \
  const __m512 lo = _mm512_set1_ps(-kClamp), hi = _mm512_set1_ps(kClamp); \
  const __m512 sc = _mm512_set1_ps(kScale), off = _mm512_set1_ps(kOffset)
#define LOOKUP(t, k) _mm512_permutex2var_ps(t##a, k, t##b)
// GELU's shipped cells program: 2 clamps, index FMA, 4 lookups, 3 FMAs, 1 multiply (11).
#define CELLS_BODY                                                       \
  {                                                                      \
    const __m512 xc = _mm512_max_ps(lo, v), xi = _mm512_min_ps(hi, xc);  \
    const __m512i k = _mm512_castps_si512(_mm512_fmadd_ps(xi, sc, off)); \
    __m512 p = LOOKUP(t3, k);                                            \
    p = _mm512_fmadd_ps(p, xi, LOOKUP(t2, k));                           \
    p = _mm512_fmadd_ps(p, xi, LOOKUP(t1, k));                           \
    p = _mm512_fmadd_ps(p, xi, LOOKUP(t0, k));                           \
    v = _mm512_mul_ps(xc, p);                                            \
  }
// A quadratic per cell (3 lookups, 2 FMAs: 9 operations), the shortest cells program.
#define QUAD_BODY                                                        \
  {                                                                      \
    const __m512 xc = _mm512_max_ps(lo, v), xi = _mm512_min_ps(hi, xc);  \
    const __m512i k = _mm512_castps_si512(_mm512_fmadd_ps(xi, sc, off)); \
    __m512 p = LOOKUP(t2, k);                                            \
    p = _mm512_fmadd_ps(p, xi, LOOKUP(t1, k));                           \
    p = _mm512_fmadd_ps(p, xi, LOOKUP(t0, k));                           \
    v = _mm512_mul_ps(xc, p);                                            \
  }

VARIANT16(conv_bf16, bf16, STORE_PLAIN, , (void)v)
VARIANT16(conv_bf16_nt, bf16, STORE_NT, , (void)v)
VARIANT16(cells_bf16, bf16, STORE_PLAIN, TABLES32; CONSTS, CELLS_BODY)
VARIANT16(cells_bf16_nt, bf16, STORE_NT, TABLES32; CONSTS, CELLS_BODY)
VARIANT16(quad_bf16_nt, bf16, STORE_NT, TABLES32; CONSTS, QUAD_BODY)
VARIANT16_2LINES(conv_bf16_nt2, bf16, , (void)v)
VARIANT16_2LINES(cells_bf16_nt2, bf16, TABLES32; CONSTS, CELLS_BODY)
VARIANT16_2LINES(quad_bf16_nt2, bf16, TABLES32; CONSTS, QUAD_BODY)
VARIANT16(conv_f16, f16, STORE_PLAIN, , (void)v)
VARIANT16(conv_f16_nt, f16, STORE_NT, , (void)v)
VARIANT16(cells_f16, f16, STORE_PLAIN, TABLES32; CONSTS, CELLS_BODY)
VARIANT16(cells_f16_nt, f16, STORE_NT, TABLES32; CONSTS, CELLS_BODY)
VARIANT16(quad_f16_nt, f16, STORE_NT, TABLES32; CONSTS, QUAD_BODY)
VARIANT16_2LINES(conv_f16_nt2, f16, , (void)v)
VARIANT16_2LINES(cells_f16_nt2, f16, TABLES32; CONSTS, CELLS_BODY)
VARIANT16_2LINES(quad_f16_nt2, f16, TABLES32; CONSTS, QUAD_BODY)

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1L << 20;
  const int rounds = 30, calls = 50;
  uint16_t* x = static_cast<uint16_t*>(aligned_alloc(64, n * 2));
  uint16_t* o = static_cast<uint16_t*>(aligned_alloc(64, n * 2));
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, 3.f);
  // bfloat16 bits of normal values (also finite, moderate float16 bit patterns: the timing does
  // not depend on the values)
  for (long i = 0; i < n; i++) {
    const float f = normal(gen);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    x[i] = static_cast<uint16_t>(u >> 16);
  }
  for (int j = 0; j < 4; j++)
    for (int k = 0; k < 32; k++) table[j][k] = 0.01f * k;
  using V = std::pair<const char*, std::function<void()>>;
  const std::vector<V> variants = {
      {"memcpy (16-bit data)", [&] { std::memcpy(o, x, n * 2); }},
      {"loop: load + store", [&] { copy16(x, o, n); }},
      {"loop: load + streaming store", [&] { copy16_nt(x, o, n); }},
      {"bf16: widen + round", [&] { conv_bf16(x, o, n); }},
      {"bf16: widen + round, streaming", [&] { conv_bf16_nt(x, o, n); }},
      {"bf16: cells (11 ops)", [&] { cells_bf16(x, o, n); }},
      {"bf16: cells, streaming", [&] { cells_bf16_nt(x, o, n); }},
      {"bf16: quadratic cells (9), streaming", [&] { quad_bf16_nt(x, o, n); }},
      {"bf16: widen + round, streaming 2 lines", [&] { conv_bf16_nt2(x, o, n); }},
      {"bf16: cells, streaming 2 lines", [&] { cells_bf16_nt2(x, o, n); }},
      {"bf16: quadratic cells, streaming 2 lines", [&] { quad_bf16_nt2(x, o, n); }},
      {"f16: widen + round", [&] { conv_f16(x, o, n); }},
      {"f16: widen + round, streaming", [&] { conv_f16_nt(x, o, n); }},
      {"f16: cells (11 ops)", [&] { cells_f16(x, o, n); }},
      {"f16: cells, streaming", [&] { cells_f16_nt(x, o, n); }},
      {"f16: quadratic cells (9), streaming", [&] { quad_f16_nt(x, o, n); }},
      {"f16: widen + round, streaming 2 lines", [&] { conv_f16_nt2(x, o, n); }},
      {"f16: cells, streaming 2 lines", [&] { cells_f16_nt2(x, o, n); }},
      {"f16: quadratic cells, streaming 2 lines", [&] { quad_f16_nt2(x, o, n); }},
  };
  std::vector<std::vector<double>> us(variants.size());
  for (int r = 0; r < rounds; r++)
    for (size_t j = 0; j < variants.size(); j++) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; c++) variants[j].second();
      const auto t1 = std::chrono::steady_clock::now();
      us[j].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    }
  std::vector<double> med(variants.size());
  for (size_t j = 0; j < variants.size(); j++) {
    std::sort(us[j].begin(), us[j].end());
    med[j] = us[j][rounds / 2];
  }
  const double fastest_copy = std::min({med[0], med[1], med[2]});
  std::printf(
      "%ld 16-bit elements, out= (no allocation), median of %d rounds x %d calls; the last\n"
      "column is time / (1.30 x the fastest copy), issue 13's L bound for the 16-bit rows\n",
      n, rounds, calls);
  for (size_t j = 0; j < variants.size(); j++)
    std::printf("%-42s %8.1f us  %5.2fx fastest copy  %5.2fx L bound\n", variants[j].first, med[j],
                med[j] / fastest_copy, med[j] / (1.30 * fastest_copy));
}
