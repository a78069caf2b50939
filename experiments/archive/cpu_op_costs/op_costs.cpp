// What each part of a GELU program costs on this CPU at 1M float32 elements (4 MiB in, 4 MiB
// out: in the last-level cache, or beyond the caches a core reaches fast), in a loop shaped like
// the library's (two 16-lane vectors per
// iteration, unaligned loads and stores), into a preallocated output. Each variant adds or
// swaps a few vector operations; all are timed interleaved, medians of 30 rounds.
// The tables hold placeholder values: what is timed is the instruction mix, not GELU.
// Build and run: bash experiments/archive/cpu_op_costs/run.sh  (README.md there has a run's output).
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

#define TARGET __attribute__((target("avx512f,avx512bw,avx512bf16,fma"), noinline))

namespace {

float table[4][32];
const float kScale = 2.9f, kClamp = 5.1724138f, kOffset = 16.0f + 1.5f * 8388608.0f;

// One loop per variant; the body (the variadic part: it may hold commas) maps the __m512 `v`
// in place. VSTORE is the store of the variants defined after it: _mm512_storeu_ps (plain) or
// _mm512_stream_ps (non-temporal; the output is 64-byte aligned, as the library's streaming
// loops align each chunk).
#define VSTORE _mm512_storeu_ps
#define VARIANT(NAME, SETUP, ...)                                         \
  TARGET void NAME(const float* x, float* o, long n) {                    \
    SETUP;                                                                \
    for (long i = 0; i < n; i += 32) {                                    \
      __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16); \
      {                                                                   \
        __m512& v = a;                                                    \
        __VA_ARGS__;                                                      \
      }                                                                   \
      {                                                                   \
        __m512& v = b;                                                    \
        __VA_ARGS__;                                                      \
      }                                                                   \
      VSTORE(o + i, a);                                                   \
      VSTORE(o + i + 16, b);                                              \
    }                                                                     \
    _mm_sfence();                                                         \
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

VARIANT(copy_loop, , (void)v)
VARIANT(clamp, CONSTS, v = _mm512_min_ps(hi, _mm512_max_ps(lo, v)))
VARIANT(fma3, const __m512 c = _mm512_set1_ps(0.3f), v = _mm512_fmadd_ps(v, c, c);
        v = _mm512_fmadd_ps(v, c, c); v = _mm512_fmadd_ps(v, c, c))
VARIANT(permute4, TABLES32, {
  const __m512i k = _mm512_castps_si512(v);
  __m512 p = LOOKUP(t3, k);
  p = _mm512_add_ps(p, LOOKUP(t2, k));
  p = _mm512_add_ps(p, LOOKUP(t1, k));
  v = _mm512_add_ps(p, LOOKUP(t0, k));
})
// The shipped cells program: 2 clamps, index FMA, 4 lookups, 3 FMAs, 1 multiply.
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
VARIANT(cells, TABLES32; CONSTS, CELLS_BODY)
// Without the final multiply (a cubic for gelu itself): 10 operations.
VARIANT(cells_no_mul, TABLES32; CONSTS, {
  const __m512 xc = _mm512_max_ps(lo, v), xi = _mm512_min_ps(hi, xc);
  const __m512i k = _mm512_castps_si512(_mm512_fmadd_ps(xi, sc, off));
  __m512 p = LOOKUP(t3, k);
  p = _mm512_fmadd_ps(p, xi, LOOKUP(t2, k));
  p = _mm512_fmadd_ps(p, xi, LOOKUP(t1, k));
  v = _mm512_fmadd_ps(p, xc, LOOKUP(t0, k));
})
// The same with 16-entry tables (one-table vpermps): half the cells.
VARIANT(cells16_no_mul, CONSTS; const __m512 u0 = _mm512_loadu_ps(table[0]);
        const __m512 u1 = _mm512_loadu_ps(table[1]); const __m512 u2 = _mm512_loadu_ps(table[2]);
        const __m512 u3 = _mm512_loadu_ps(table[3]), {
          const __m512 xc = _mm512_max_ps(lo, v), xi = _mm512_min_ps(hi, xc);
          const __m512i k = _mm512_castps_si512(_mm512_fmadd_ps(xi, sc, off));
          __m512 p = _mm512_permutexvar_ps(k, u3);
          p = _mm512_fmadd_ps(p, xi, _mm512_permutexvar_ps(k, u2));
          p = _mm512_fmadd_ps(p, xi, _mm512_permutexvar_ps(k, u1));
          v = _mm512_fmadd_ps(p, xc, _mm512_permutexvar_ps(k, u0));
        })
// The shipped polynomial's shape: y, z, 8 Horner FMAs, 1/2 + x P, x * that, tail compare and
// masked max.
VARIANT(poly8, const __m512 r2 = _mm512_set1_ps(19.26f); const __m512 s = _mm512_set1_ps(0.1038f);
        const __m512 m1 = _mm512_set1_ps(-1.f); const __m512 h = _mm512_set1_ps(0.5f);
        const __m512 nz = _mm512_set1_ps(-0.0f); __m512 c[9];
        for (int j = 0; j < 9; j++) c[j] = _mm512_set1_ps(0.01f * (j + 1)), {
          const __m512 y = _mm512_mul_ps(v, v), z = _mm512_fmadd_ps(y, s, m1);
          __m512 p = c[8];
          for (int j = 7; j >= 0; j--) p = _mm512_fmadd_ps(p, z, c[j]);
          const __m512 inner = _mm512_fmadd_ps(v, p, h);
          const __mmask16 tail = _mm512_cmp_ps_mask(y, r2, _CMP_GT_OQ);
          v = _mm512_mask_max_ps(_mm512_mul_ps(v, inner), tail, v, nz);
        })

// The same loops with non-temporal stores.
#undef VSTORE
#define VSTORE _mm512_stream_ps
VARIANT(copy_loop_nt, , (void)v)
VARIANT(cells_nt, TABLES32; CONSTS, CELLS_BODY)

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 1L << 20;
  const int rounds = 30, calls = 50;
  float* x = static_cast<float*>(aligned_alloc(64, n * 4));
  float* o = static_cast<float*>(aligned_alloc(64, n * 4));
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (long i = 0; i < n; i++) x[i] = normal(gen);
  for (int j = 0; j < 4; j++)
    for (int k = 0; k < 32; k++) table[j][k] = 0.01f * k;
  const std::vector<std::pair<const char*, std::function<void()>>> variants = {
      {"memcpy", [&] { std::memcpy(o, x, n * 4); }},
      {"loop: load + store", [&] { copy_loop(x, o, n); }},
      {"loop: load + streaming store", [&] { copy_loop_nt(x, o, n); }},
      {"+ clamp (max, min)", [&] { clamp(x, o, n); }},
      {"+ 3 dependent FMAs", [&] { fma3(x, o, n); }},
      {"4 two-table permutes + 3 adds", [&] { permute4(x, o, n); }},
      {"cells (shipped, 11 ops)", [&] { cells(x, o, n); }},
      {"cells, streaming stores", [&] { cells_nt(x, o, n); }},
      {"cells without the multiply (10)", [&] { cells_no_mul(x, o, n); }},
      {"16-entry cells, no multiply (10)", [&] { cells16_no_mul(x, o, n); }},
      {"degree-8 polynomial (13 ops)", [&] { poly8(x, o, n); }},
  };
  std::vector<std::vector<double>> us(variants.size());
  for (int r = 0; r < rounds; r++)
    for (size_t j = 0; j < variants.size(); j++) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; c++) variants[j].second();
      const auto t1 = std::chrono::steady_clock::now();
      us[j].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    }
  std::printf("%ld float32 elements, out= (no allocation), median of %d rounds x %d calls\n", n,
              rounds, calls);
  for (size_t j = 0; j < variants.size(); j++) {
    std::sort(us[j].begin(), us[j].end());
    const double med = us[j][rounds / 2];
    std::printf("%-34s %8.1f us  %5.2fx memcpy\n", variants[j].first, med, med / us[0][rounds / 2]);
  }
}
