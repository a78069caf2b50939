// What the GELU rows cost on an AVX2 CPU (no AVX-512), in the library's AVX2 loop shape
// (kernels/cpu/kernels_avx2.cpp: two 8-lane vectors per iteration, the same widenings and
// roundings), into a preallocated output, timed interleaved (medians) against the limit rows
// of the same bytes. It asks how close to the limit a polynomial GELU program can come.
// Forward (bfloat16, float16): the conversions alone, and the shipped program's form at degree
// 2 (far below the accuracy bound: a floor for any polynomial), 7 (the proven minimum for
// bfloat16 under the "bounded" criterion, notebooks/09_min_degree.ipynb) and 8 (the shipped
// degree, the proven minimum for float16), against copies. Backward (float32, bfloat16,
// float16): grad * gelu'(x) by the shipped direct fit's form at degree 2 and 8 (and 3 to 7 with
// streaming stores: how low a degree the 64M target needs; backward_degrees.py says which
// degrees hold the backward's bounds), against grad * x in the same loop (what the benchmark's
// `torch.mul` limit row computes). Each with plain and with streaming stores. The coefficients
// are the shipped ones, truncated: what is timed is the instruction mix.
// float32 forward (forward32): the same form at degree 2 and 8 against the copy loops.
// Build and run: bash experiments/archive/cpu_op_costs/run.sh avx2 [N [THREADS [backward|forward32]]]
// (README.md there).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#define TARGET __attribute__((target("avx2,fma,f16c"), noinline))
#define INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace {

// data/specs/gelu_exact.json's degree-8 P, its clamp and scale (x*(1/2 + x P(z)))
const float kCoeffs[9] = {0.16079850f,   -0.07877112f, 0.05529296f,   -0.04003104f, 0.02670387f,
                          -0.015884696f, 0.010854269f, -0.007735952f, 0.0026943428f};
const float kClamp = 4.389f, kScale = 0.10382426f;
// its direct backward fit's Q (1/2 + x Q(z)), the same clamp and scale
const float kDerivCoeffs[9] = {0.164015308f,  -0.0938645005f, 0.0931735039f,
                               -0.107058696f, 0.0984417647f,  -0.0593995117f,
                               0.0621024296f, -0.0812487006f, 0.0378224291f};

template <bool Stream>
INLINE void store16(uint16_t* o, __m256i w) {
  if constexpr (Stream)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(o), w);
  else
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), w);
}

// The library's AVX2 conversions (kernels_avx2.cpp's Avx2Isa): bfloat16 widened by
// interleaving with zeros and rounded to nearest even in integers; float16 by F16C.
struct Bf16 {
  using T = uint16_t;
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
  template <bool Stream>
  static INLINE void store(uint16_t* o, __m256 a, __m256 b) {
    store16<Stream>(o, pack(a, b));
  }
};
struct F16 {
  using T = uint16_t;
  static INLINE void load(const uint16_t* p, __m256& a, __m256& b) {
    a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
  static INLINE __m256i pack(__m256 a, __m256 b) {
    constexpr int r = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    return _mm256_set_m128i(_mm256_cvtps_ph(b, r), _mm256_cvtps_ph(a, r));
  }
  template <bool Stream>
  static INLINE void store(uint16_t* o, __m256 a, __m256 b) {
    store16<Stream>(o, pack(a, b));
  }
};
struct F32 {
  using T = float;
  static INLINE void load(const float* p, __m256& a, __m256& b) {
    a = _mm256_loadu_ps(p);
    b = _mm256_loadu_ps(p + 8);
  }
  template <bool Stream>
  static INLINE void store(float* o, __m256 a, __m256 b) {
    if constexpr (Stream) {
      _mm256_stream_ps(o, a);
      _mm256_stream_ps(o + 8, b);
    } else {
      _mm256_storeu_ps(o, a);
      _mm256_storeu_ps(o + 8, b);
    }
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

// The shipped backward's form (poly_eval.h's gelu_backward): gelu'(x) ~ 1/2 + x Q(z) inside,
// 1 / 0 beyond the clamp; the caller multiplies by grad.
template <int D>
INLINE __m256 dgelu(__m256 x) {
  const __m256 y = _mm256_mul_ps(x, x);
  const __m256 z = _mm256_fmadd_ps(y, _mm256_set1_ps(kScale), _mm256_set1_ps(-1.0f));
  __m256 p = _mm256_set1_ps(kDerivCoeffs[D]);
  for (int k = D - 1; k >= 0; --k) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(kDerivCoeffs[k]));
  const __m256 inner = _mm256_fmadd_ps(x, p, _mm256_set1_ps(0.5f));
  const __m256 step =
      _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_set1_ps(1.0f));
  const __m256 tail = _mm256_cmp_ps(y, _mm256_set1_ps(kClamp * kClamp), _CMP_GT_OQ);
  return _mm256_blendv_ps(inner, step, tail);
}

// D < 0: no arithmetic (the conversions only).
template <class Fmt, int D, bool Stream>
TARGET void run(const typename Fmt::T* x, typename Fmt::T* o, long n) {
  for (long i = 0; i < n; i += 16) {
    __m256 a, b;
    Fmt::load(x + i, a, b);
    if constexpr (D >= 0) {
      a = gelu<D>(a);
      b = gelu<D>(b);
    }
    Fmt::template store<Stream>(o + i, a, b);
  }
  if constexpr (Stream) _mm_sfence();
}

// grad * gelu'(x) at degree D; D < 0: grad * x (the mul limit in the same loop).
template <class Fmt, int D, bool Stream>
TARGET void run_bwd(const typename Fmt::T* g, const typename Fmt::T* x, typename Fmt::T* o,
                    long n) {
  for (long i = 0; i < n; i += 16) {
    __m256 ga, gb, xa, xb;
    Fmt::load(g + i, ga, gb);
    Fmt::load(x + i, xa, xb);
    if constexpr (D >= 0) {
      xa = dgelu<D>(xa);
      xb = dgelu<D>(xb);
    }
    Fmt::template store<Stream>(o + i, _mm256_mul_ps(ga, xa), _mm256_mul_ps(gb, xb));
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

// One call split over `threads` contiguous chunks (multiples of 16 elements), as the library's
// thread split does; `k(a, b)` runs elements [a, b).
using Chunk = std::function<void(long, long)>;
void call(const Chunk& k, long n, int threads) {
  if (threads == 1) return k(0, n);
  std::vector<std::thread> pool;
  const long chunk = (n / threads + 15) / 16 * 16;
  for (int t = 0; t < threads; ++t) {
    const long a = std::min(n, t * chunk), b = std::min(n, a + chunk);
    pool.emplace_back([=, &k] { k(a, b); });
  }
  for (auto& th : pool) th.join();
}

// Normal values (sd 3): bfloat16 bits (moderate float16 ones too), or floats.
void fill(uint16_t* p, long n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (long i = 0; i < n; i++) {
    const float f = normal(gen);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    p[i] = static_cast<uint16_t>(u >> 16);
  }
}
void fill(float* p, long n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (long i = 0; i < n; i++) p[i] = normal(gen);
}

using Variants = std::vector<std::pair<std::string, Chunk>>;

// Interleaved rounds, medians; prints each time and its ratio to the faster of variants
// `limit_a` and `limit_b`.
void time_and_print(const Variants& vs, long n, int threads, size_t limit_a, size_t limit_b,
                    const char* limit) {
  const int calls = n >= (16L << 20) ? 3 : 50, rounds = 20;
  std::vector<std::vector<double>> us(vs.size());
  for (int r = 0; r < rounds; r++) {
    for (size_t j = 0; j < vs.size(); j++) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; c++) call(vs[j].second, n, threads);
      const auto t1 = std::chrono::steady_clock::now();
      us[j].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    }
  }
  std::vector<double> med(us.size());
  for (size_t j = 0; j < us.size(); j++) {
    std::sort(us[j].begin(), us[j].end());
    med[j] = us[j][rounds / 2];
  }
  const double fastest = std::min(med[limit_a], med[limit_b]);
  std::printf(
      "%ld elements, %d thread(s), out= (no allocation), median of %d rounds x %d calls;\n"
      "time / %s (issue 13's DRAM target: 1.03x at 64M elements)\n",
      n, threads, rounds, calls, limit);
  for (size_t j = 0; j < vs.size(); j++)
    std::printf("%-34s %10.1f us  %5.2fx\n", vs[j].first.c_str(), med[j], med[j] / fastest);
}

void forward(long n, int threads) {
  uint16_t* x = static_cast<uint16_t*>(aligned_alloc(64, n * 2));
  uint16_t* o = static_cast<uint16_t*>(aligned_alloc(64, n * 2));
  fill(x, n, 1);
  std::memset(o, 0, n * 2);
  using K = void (*)(const uint16_t*, uint16_t*, long);
  auto v = [&](const char* name, K k) {
    return std::make_pair(std::string(name),
                          Chunk([=](long a, long b) { k(x + a, o + a, b - a); }));
  };
  const Variants vs = {
      v("loop: load + store", copy_loop),
      v("loop: load + streaming store", copy_loop_nt),
      v("bf16: widen + round", run<Bf16, -1, false>),
      v("bf16: widen + round, streaming", run<Bf16, -1, true>),
      v("bf16: degree 2", run<Bf16, 2, false>),
      v("bf16: degree 2, streaming", run<Bf16, 2, true>),
      v("bf16: degree 7", run<Bf16, 7, false>),
      v("bf16: degree 7, streaming", run<Bf16, 7, true>),
      v("bf16: degree 8 (shipped)", run<Bf16, 8, false>),
      v("bf16: degree 8, streaming", run<Bf16, 8, true>),
      v("f16: widen + round", run<F16, -1, false>),
      v("f16: widen + round, streaming", run<F16, -1, true>),
      v("f16: degree 2", run<F16, 2, false>),
      v("f16: degree 2, streaming", run<F16, 2, true>),
      v("f16: degree 8 (shipped)", run<F16, 8, false>),
      v("f16: degree 8, streaming", run<F16, 8, true>),
  };
  time_and_print(vs, n, threads, 0, 1, "the fastest copy loop");
  free(x);
  free(o);
}

// The float32 forward (the 64M target's float32 rows): the copy loop plain and streaming (the
// plain one is what the benchmark's `limit: copy` is, the streaming one its `limit: stream
// copy`), the shipped form at degree 2 (far below the bound: a floor) and 8 (shipped).
void forward32(long n, int threads) {
  float* x = static_cast<float*>(aligned_alloc(64, n * 4));
  float* o = static_cast<float*>(aligned_alloc(64, n * 4));
  fill(x, n, 1);
  std::memset(o, 0, n * 4);
  using K = void (*)(const float*, float*, long);
  auto v = [&](const char* name, K k) {
    return std::make_pair(std::string("f32: ") + name,
                          Chunk([=](long a, long b) { k(x + a, o + a, b - a); }));
  };
  const Variants vs = {
      v("copy loop", run<F32, -1, false>),         v("copy loop, streaming", run<F32, -1, true>),
      v("degree 2", run<F32, 2, false>),           v("degree 2, streaming", run<F32, 2, true>),
      v("degree 8 (shipped)", run<F32, 8, false>), v("degree 8, streaming", run<F32, 8, true>),
  };
  time_and_print(vs, n, threads, 0, 1, "the faster copy loop");
  free(x);
  free(o);
}

// One format's backward rows: grad * x (the mul limit) and grad * gelu'(x) at degree 2 and 8,
// each with plain and streaming stores, and at degrees 3 to 7 with streaming stores.
template <class Fmt>
void backward(const char* name, long n, int threads) {
  using T = typename Fmt::T;
  T* g = static_cast<T*>(aligned_alloc(64, n * sizeof(T)));
  T* x = static_cast<T*>(aligned_alloc(64, n * sizeof(T)));
  T* o = static_cast<T*>(aligned_alloc(64, n * sizeof(T)));
  fill(g, n, 2);
  fill(x, n, 1);
  std::memset(o, 0, n * sizeof(T));
  using K = void (*)(const T*, const T*, T*, long);
  auto v = [&](const char* what, K k) {
    return std::make_pair(std::string(name) + ": " + what,
                          Chunk([=](long a, long b) { k(g + a, x + a, o + a, b - a); }));
  };
  const Variants vs = {
      v("grad * x (mul)", run_bwd<Fmt, -1, false>),
      v("grad * x, streaming", run_bwd<Fmt, -1, true>),
      v("degree 2", run_bwd<Fmt, 2, false>),
      v("degree 2, streaming", run_bwd<Fmt, 2, true>),
      v("degree 3, streaming", run_bwd<Fmt, 3, true>),
      v("degree 4, streaming", run_bwd<Fmt, 4, true>),
      v("degree 5, streaming", run_bwd<Fmt, 5, true>),
      v("degree 6, streaming", run_bwd<Fmt, 6, true>),
      v("degree 7, streaming", run_bwd<Fmt, 7, true>),
      v("degree 8 (shipped)", run_bwd<Fmt, 8, false>),
      v("degree 8, streaming", run_bwd<Fmt, 8, true>),
  };
  time_and_print(vs, n, threads, 0, 1, "the faster grad * x loop");
  free(g);
  free(x);
  free(o);
}

}  // namespace

int main(int argc, char** argv) {
  const long n = (argc > 1 ? atol(argv[1]) : 1L << 20) / 16 * 16;
  const int threads = argc > 2 ? atoi(argv[2]) : 1;
  if (argc > 3 && std::strcmp(argv[3], "forward32") == 0) {
    forward32(n, threads);
  } else if (argc > 3 && std::strcmp(argv[3], "backward") == 0) {
    backward<F32>("f32", n, threads);
    backward<Bf16>("bf16", n, threads);
    backward<F16>("f16", n, threads);
  } else {
    forward(n, threads);
  }
}
