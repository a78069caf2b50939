// GELU's float16 forward in half-precision arithmetic (turbogelu/approx/half16.py: 15
// operations per 32 lanes, AVX512-FP16), against the same loop running the shipped program's
// shape (widen to float32, the cells program's 11 operations per 16 lanes, round back) and a
// streaming copy, at N float16 elements (1M by default), into a preallocated 64-byte-aligned
// output; both programs stream their stores and prefetch each input line 2 KiB ahead into L1
// and 8 KiB ahead into L2, as the library's streamed 16-bit forwards do (kernels/cpu/loops.h).
// Interleaved, medians of 41 rounds of 20 calls. The float32 shape's tables are placeholders
// (it times the instruction mix); the half program's are the fitted ones, read from a file,
// and its block is the benchmark probe's own (kernels/bench/half_gelu.h).
//
//   op_costs_half TABLE [N]            time (TABLE: python -m turbogelu.approx.half16 --bin)
//   op_costs_half TABLE --check OUT    every 16-bit pattern through the half program, bits to OUT
//                                      (tests/test_cpu_op_costs.py compares them with the replay)
// Build and run: bash experiments/archive/cpu_op_costs/run.sh half [N]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../../kernels/bench/half_gelu.h"

#define TARGET __attribute__((target("avx512f,avx512bw,avx512fp16,fma"), noinline))
#define TARGET_INLINE \
  __attribute__((target("avx512f,avx512bw,avx512fp16,fma"), always_inline)) inline

namespace {

uint16_t half_table[6][32];  // origin, a, c0, q0, q1, q2 per cell (float16 bits)
float f32_table[4][32];
// half16.py's layout: k = trunc(4 xc + 18.5), xb = max(x, -4.625), xc = min(xb, HIGH).
const float kScale = 4.0f, kOffset = 18.5f, kLow = -4.625f, kHigh = 3.37109375f;
// The shipped float32 cells program's layout (data/specs/cells/gelu_none.json).
const float kScale32 = 2.9f, kClamp32 = 5.1724138f, kOffset32 = 16.0f + 1.5f * 8388608.0f;

TARGET uint16_t bits(float v) {
  const _Float16 h = static_cast<_Float16>(v);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

TARGET_INLINE void prefetch(const uint16_t* x) {
  _mm_prefetch(reinterpret_cast<const char*>(x) + 2048, _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char*>(x) + 8192, _MM_HINT_T1);
}

TARGET void stream_copy(const uint16_t* x, uint16_t* o, long n) {
  for (long i = 0; i < n; i += 64) {
    const __m512i a = _mm512_loadu_si512(x + i), b = _mm512_loadu_si512(x + i + 32);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i + 32), b);
  }
  _mm_sfence();
}

TARGET turbogelu::half16::Program half_program() {
  const uint16_t consts[4] = {bits(kLow), bits(kHigh), bits(kScale), bits(kOffset)};
  return turbogelu::half16::load(&half_table[0][0], consts);
}

TARGET void half_plain(const uint16_t* x, uint16_t* o, long n) {  // n: a multiple of 32
  const turbogelu::half16::Program p = half_program();
  for (long i = 0; i < n; i += 32) {
    const __m512h v = turbogelu::half16::gelu(_mm512_castsi512_ph(_mm512_loadu_si512(x + i)), p);
    _mm512_storeu_si512(o + i, _mm512_castph_si512(v));
  }
}

TARGET void half_stream(const uint16_t* x, uint16_t* o, long n) {
  const turbogelu::half16::Program p = half_program();
  for (long i = 0; i < n; i += 64) {
    prefetch(x + i);
    const __m512h a = turbogelu::half16::gelu(_mm512_castsi512_ph(_mm512_loadu_si512(x + i)), p);
    const __m512h b =
        turbogelu::half16::gelu(_mm512_castsi512_ph(_mm512_loadu_si512(x + i + 32)), p);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i), _mm512_castph_si512(a));
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i + 32), _mm512_castph_si512(b));
  }
  _mm_sfence();
}

// The shipped float16 program's shape: widen, clamp, cell by the float32 rounding trick, four
// two-table permutes, three Horner fmas, the multiply by max(x, -clamp), round to float16.
TARGET_INLINE __m512 cells32(__m512 x, const __m512* t) {
  const __m512 lo = _mm512_set1_ps(-kClamp32), hi = _mm512_set1_ps(kClamp32);
  const __m512 xi = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
  const __m512i k =
      _mm512_castps_si512(_mm512_fmadd_ps(xi, _mm512_set1_ps(kScale32), _mm512_set1_ps(kOffset32)));
  __m512 p = _mm512_permutex2var_ps(t[6], k, t[7]);
  p = _mm512_fmadd_ps(p, xi, _mm512_permutex2var_ps(t[4], k, t[5]));
  p = _mm512_fmadd_ps(p, xi, _mm512_permutex2var_ps(t[2], k, t[3]));
  p = _mm512_fmadd_ps(p, xi, _mm512_permutex2var_ps(t[0], k, t[1]));
  return _mm512_mul_ps(p, _mm512_max_ps(lo, x));
}

TARGET void widened_stream(const uint16_t* x, uint16_t* o, long n) {
  __m512 t[8];
  for (int j = 0; j < 4; ++j) {
    t[2 * j] = _mm512_loadu_ps(f32_table[j]);
    t[2 * j + 1] = _mm512_loadu_ps(f32_table[j] + 16);
  }
  for (long i = 0; i < n; i += 64) {
    prefetch(x + i);
    for (long h = 0; h < 64; h += 32) {
      const __m256i* in = reinterpret_cast<const __m256i*>(x + i + h);
      const __m512 a = cells32(_mm512_cvtph_ps(_mm256_loadu_si256(in)), t);
      const __m512 b = cells32(_mm512_cvtph_ps(_mm256_loadu_si256(in + 1)), t);
      const __m512i ab =
          _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)),
                             _mm512_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT), 1);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i + h), ab);
    }
  }
  _mm_sfence();
}

bool read_table(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  const bool ok = std::fread(half_table, 2, 6 * 32, f) == 6 * 32;
  std::fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !read_table(argv[1])) {
    std::fprintf(stderr,
                 "usage: op_costs_half TABLE [N | --check OUT]: TABLE of 6x32 float16 "
                 "(python -m turbogelu.approx.half16 --bin TABLE)\n");
    return 2;
  }
  if (!__builtin_cpu_supports("avx512fp16")) {
    std::fprintf(stderr, "op_costs_half: this CPU has no AVX512-FP16\n");
    return 3;
  }
  if (argc == 4 && std::strcmp(argv[2], "--check") == 0) {
    std::vector<uint16_t> x(65536), y(65536);
    for (int i = 0; i < 65536; ++i) x[i] = static_cast<uint16_t>(i);
    half_plain(x.data(), y.data(), 65536);
    FILE* f = std::fopen(argv[3], "wb");
    if (f == nullptr || std::fwrite(y.data(), 2, 65536, f) != 65536) return 1;
    std::fclose(f);
    return 0;
  }
  const long n = (argc > 2 ? std::atol(argv[2]) : 1L << 20) / 64 * 64;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 32; ++i) f32_table[j][i] = 0.01f * static_cast<float>(i + j);
  auto* x = static_cast<uint16_t*>(std::aligned_alloc(64, n * 2));
  auto* o = static_cast<uint16_t*>(std::aligned_alloc(64, n * 2));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-6.0f, 6.0f);
  for (long i = 0; i < n; ++i) {
    const _Float16 v = static_cast<_Float16>(u(rng));
    std::memcpy(x + i, &v, 2);
  }
  std::memset(o, 0, n * 2);
  struct Variant {
    const char* name;
    void (*run)(const uint16_t*, uint16_t*, long);
  };
  const Variant variants[] = {{"stream copy", stream_copy},
                              {"half program (15 ops / 32 lanes)", half_stream},
                              {"widened float32 cells shape", widened_stream}};
  const int rounds = 41, calls = 20;
  std::vector<std::vector<double>> times(3);
  for (int r = 0; r < rounds; ++r)
    for (int v = 0; v < 3; ++v) {
      const auto a = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) variants[v].run(x, o, n);
      const auto b = std::chrono::steady_clock::now();
      times[v].push_back(std::chrono::duration<double, std::micro>(b - a).count() / calls);
    }
  std::printf("%ld float16 elements, out= (no allocation), median of %d rounds x %d calls\n", n,
              rounds, calls);
  double base = 0;
  for (int v = 0; v < 3; ++v) {
    std::sort(times[v].begin(), times[v].end());
    const double med = times[v][rounds / 2];
    if (v == 0) base = med;
    std::printf("%-34s %9.1f us  %.2fx the copy\n", variants[v].name, med, med / base);
  }
  std::free(x);
  std::free(o);
  return 0;
}
