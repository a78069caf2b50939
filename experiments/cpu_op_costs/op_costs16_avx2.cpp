// What the 16-bit rows cost on an AVX2 CPU (no AVX-512): bfloat16 / float16 data in the
// library's AVX2 loop shape (kernels/cpu/kernels_avx2.cpp: two 8-lane vectors per iteration,
// the same widenings and roundings), into a preallocated output, timed interleaved (medians)
// against copies of the same bytes. It asks how close to a copy a polynomial GELU program can
// come: the conversions alone, and the shipped program's form at degree 2 (far below the
// accuracy bound: a floor for any polynomial), 7 (the proven minimum for bfloat16 under the
// "bounded" criterion, notebooks/09_min_degree.ipynb) and 8 (the shipped degree, the proven
// minimum for float16), each with plain and with streaming stores. The coefficients are the
// shipped ones, truncated: what is timed is the instruction mix.
// Build and run: bash experiments/cpu_op_costs/run.sh avx2 [N [THREADS]] (README.md there).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#define TARGET __attribute__((target("avx2,fma,f16c"), noinline))
#define INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace {

// data/specs/gelu_exact.json's degree-8 P, its clamp and scale (x*(1/2 + x P(z)))
const float kCoeffs[9] = {0.16079850f,   -0.07877112f, 0.05529296f,   -0.04003104f, 0.02670387f,
                          -0.015884696f, 0.010854269f, -0.007735952f, 0.0026943428f};
const float kClamp = 4.389f, kScale = 0.10382462f;

// The library's AVX2 conversions (kernels_avx2.cpp's Avx2Isa): bfloat16 widened by
// interleaving with zeros and rounded to nearest even in integers; float16 by F16C.
struct Bf16 {
  static INLINE void load(const uint16_t* p, __m256& a, __m256& b) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    a = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w));
    b = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w));
  }
  static INLINE __m256i round_high(__m256 f) {
    const __m256i u = _mm256_castps_si256(f);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb),
                             16);
  }
  static INLINE __m256i pack(__m256 a, __m256 b) {
    return _mm256_packus_epi32(round_high(a), round_high(b));
  }
};
struct F16 {
  static INLINE void load(const uint16_t* p, __m256& a, __m256& b) {
    a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
  static INLINE __m256i pack(__m256 a, __m256 b) {
    constexpr int r = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    return _mm256_set_m128i(_mm256_cvtps_ph(b, r), _mm256_cvtps_ph(a, r));
  }
};

// The shipped program's form (poly_eval.h's gelu_forward), Horner, degree D.
template <int D>
INLINE __m256 gelu(__m256 x) {
  const __m256 y = _mm256_mul_ps(x, x);
  const __m256 z = _mm256_fmadd_ps(y, _mm256_set1_ps(kScale), _mm256_set1_ps(-1.0f));
  __m256 p = _mm256_set1_ps(kCoeffs[D]);
  for (int k = D - 1; k >= 0; --k) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kCoeffs[k]));
  const __m256 inner = _mm256_fmadd_ps(x, p, _mm256_set1_ps(0.5f));
  const __m256 out = _mm256_mul_ps(x, inner);
  const __m256 tail = _mm256_cmp_ps(y, _mm256_set1_ps(kClamp * kClamp), _CMP_GT_OQ);
  return _mm256_blendv_ps(out, _mm256_max_ps(x, _mm256_set1_ps(-0.0f)), tail);
}

// D < 0: no arithmetic (the conversions only).
template <class Fmt, int D, bool Stream>
TARGET void run(const uint16_t* x, uint16_t* o, long n) {
  for (long i = 0; i < n; i += 16) {
    __m256 a, b;
    Fmt::load(x + i, a, b);
    if constexpr (D >= 0) {
      a = gelu<D>(a);
      b = gelu<D>(b);
    }
    const __m256i w = Fmt::pack(a, b);
    if constexpr (Stream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(o + i), w);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), w);
  }
  if constexpr (Stream) _mm_sfence();
}

TARGET void copy_loop(const uint16_t* x, uint16_t* o, long n) {
  for (long i = 0; i < n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
}
TARGET void copy_loop_nt(const uint16_t* x, uint16_t* o, long n) {
  for (long i = 0; i < n; i += 16)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(o + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
  _mm_sfence();
}

using Kernel = void (*)(const uint16_t*, uint16_t*, long);

// One call split over `threads` contiguous chunks (multiples of 16 elements), as the library's
// thread split does.
void call(Kernel k, const uint16_t* x, uint16_t* o, long n, int threads) {
  if (threads == 1) return k(x, o, n);
  std::vector<std::thread> pool;
  const long chunk = (n / threads + 15) / 16 * 16;
  for (int t = 0; t < threads; ++t) {
    const long a = std::min(n, t * chunk), b = std::min(n, a + chunk);
    pool.emplace_back([=] { k(x + a, o + a, b - a); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  const long n = (argc > 1 ? atol(argv[1]) : 1L << 20) / 16 * 16;
  const int threads = argc > 2 ? atoi(argv[2]) : 1;
  const int calls = n >= (16L << 20) ? 3 : 50, rounds = 20;
  uint16_t* x = static_cast<uint16_t*>(aligned_alloc(64, n * 2));
  uint16_t* o = static_cast<uint16_t*>(aligned_alloc(64, n * 2));
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (long i = 0; i < n; i++) {  // bfloat16 bits of normal values (moderate float16 ones too)
    const float f = normal(gen);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    x[i] = static_cast<uint16_t>(u >> 16);
  }
  std::memset(o, 0, n * 2);
  using V = std::pair<const char*, Kernel>;
  const std::vector<V> variants = {
      {"loop: load + store", copy_loop},
      {"loop: load + streaming store", copy_loop_nt},
      {"bf16: widen + round", run<Bf16, -1, false>},
      {"bf16: widen + round, streaming", run<Bf16, -1, true>},
      {"bf16: degree 2", run<Bf16, 2, false>},
      {"bf16: degree 2, streaming", run<Bf16, 2, true>},
      {"bf16: degree 7", run<Bf16, 7, false>},
      {"bf16: degree 7, streaming", run<Bf16, 7, true>},
      {"bf16: degree 8 (shipped)", run<Bf16, 8, false>},
      {"bf16: degree 8, streaming", run<Bf16, 8, true>},
      {"f16: widen + round", run<F16, -1, false>},
      {"f16: widen + round, streaming", run<F16, -1, true>},
      {"f16: degree 2", run<F16, 2, false>},
      {"f16: degree 2, streaming", run<F16, 2, true>},
      {"f16: degree 8 (shipped)", run<F16, 8, false>},
      {"f16: degree 8, streaming", run<F16, 8, true>},
  };
  std::vector<std::vector<double>> us(variants.size() + 1);
  for (int r = 0; r < rounds; r++) {
    for (size_t j = 0; j <= variants.size(); j++) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; c++) {
        if (j == variants.size())
          std::memcpy(o, x, n * 2);  // memcpy: one thread
        else
          call(variants[j].second, x, o, n, threads);
      }
      const auto t1 = std::chrono::steady_clock::now();
      us[j].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    }
  }
  std::vector<double> med(us.size());
  for (size_t j = 0; j < us.size(); j++) {
    std::sort(us[j].begin(), us[j].end());
    med[j] = us[j][rounds / 2];
  }
  const double fastest_copy = std::min(med[0], med[1]);
  std::printf(
      "%ld 16-bit elements, %d thread(s), out= (no allocation), median of %d rounds x %d "
      "calls;\ntime / the fastest copy loop (issue 13's DRAM target: 1.03x at 64M elements)\n",
      n, threads, rounds, calls);
  std::printf("%-34s %10.1f us  %5.2fx\n", "memcpy (one thread)", med.back(),
              med.back() / fastest_copy);
  for (size_t j = 0; j < variants.size(); j++)
    std::printf("%-34s %10.1f us  %5.2fx\n", variants[j].first, med[j], med[j] / fastest_copy);
}
