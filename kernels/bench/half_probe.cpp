// A probe of the benchmark's namespace: GELU's float16 forward in half-precision arithmetic
// (turbogelu/approx/half16.py), run in the library's loop shape so that the benchmark can time
// it beside the shipped ops before the kernels adopt it (issue 41). Not a product op: it
// takes its program as a tensor (half16_program() in experiments/probes.py), needs a CPU with
// AVX512-FP16, and runs float16 only.
//
//   _half16_available() -> bool                    the CPU runs AVX512-FP16 (and x86-64 GCC/Clang)
//   _gelu_half16(x, program, stream) -> Tensor      program: (7, 32) float16, half16's columns
//   _gelu_half16.out(x, program, stream, *, out)    and a row of LOW, HIGH, SCALE, OFFSET
//
// stream: whole 64-byte lines written by non-temporal stores after a head that aligns the
// output, each input line prefetched 2 KiB ahead into L1 and 8 KiB ahead into L2, as the
// library's streamed 16-bit forwards do (kernels/cpu/loops.h); else plain stores.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) && __GNUC__ >= 12 || defined(__clang__))
#include "half_gelu.h"
#define TG_HALF_PROBE 1
#else
#define TG_HALF_PROBE 0
#endif

namespace turbogelu {
namespace {

constexpr int64_t kColumns = 6, kCells = 32;  // half_gelu.h's
constexpr int64_t kGrain = 1 << 16;           // elements a parallel chunk at least (128 KiB)

bool available() {
#if TG_HALF_PROBE
  return __builtin_cpu_supports("avx512fp16");
#else
  return false;
#endif
}

#if TG_HALF_PROBE
using half16::Program;

// Up to 32 elements through masked loads and stores (the head and the tail).
TG_FP16 inline void masked(const uint16_t* x, uint16_t* o, int64_t count, const Program& p) {
  const __mmask32 m = count >= 32 ? ~__mmask32{0} : (__mmask32{1} << count) - 1;
  const __m512h v = half16::gelu(_mm512_castsi512_ph(_mm512_maskz_loadu_epi16(m, x)), p);
  _mm512_mask_storeu_epi16(o, m, _mm512_castph_si512(v));
}

TG_FP16 void run(const uint16_t* x, uint16_t* o, int64_t n, const uint16_t* prog, bool stream) {
  const Program p = half16::load(prog, prog + kColumns * kCells);
  int64_t i = 0;
  if (stream) {  // float16 addresses are even: a head of whole elements aligns the output
    const int64_t mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(o) & 63);
    i = mis == 0 ? 0 : std::min<int64_t>(n, (64 - mis) / 2);
    if (i > 0) masked(x, o, i, p);
    for (; i + 64 <= n; i += 64) {
      const char* ahead = reinterpret_cast<const char*>(x + i);
      _mm_prefetch(ahead + 2048, _MM_HINT_T0);
      _mm_prefetch(ahead + 8192, _MM_HINT_T1);
      const __m512h a = half16::gelu(_mm512_castsi512_ph(_mm512_loadu_si512(x + i)), p);
      const __m512h b = half16::gelu(_mm512_castsi512_ph(_mm512_loadu_si512(x + i + 32)), p);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i), _mm512_castph_si512(a));
      _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i + 32), _mm512_castph_si512(b));
    }
  }
  for (; i + 32 <= n; i += 32) {
    const __m512h v = half16::gelu(_mm512_castsi512_ph(_mm512_loadu_si512(x + i)), p);
    _mm512_storeu_si512(o + i, _mm512_castph_si512(v));
  }
  if (i < n) masked(x + i, o + i, n - i, p);
  if (stream) _mm_sfence();
}
#endif

void check_args(const at::Tensor& x, const at::Tensor& program) {
  TORCH_CHECK(available(), "turbogelu_bench._gelu_half16: this CPU has no AVX512-FP16");
  TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kHalf,
              "turbogelu_bench._gelu_half16: x must be a float16 CPU tensor, got ", x.scalar_type(),
              " on ", x.device());
  TORCH_CHECK(program.device().is_cpu() && program.scalar_type() == at::kHalf &&
                  program.dim() == 2 && program.size(0) == kColumns + 1 &&
                  program.size(1) == kCells,
              "turbogelu_bench._gelu_half16: program must be a (7, 32) float16 CPU tensor "
              "(experiments.probes.half16_program())");
}

void gelu_half16_out(const at::Tensor& x, const at::Tensor& program, bool stream,
                     const at::Tensor& out) {
  check_args(x, program);
  TORCH_CHECK(out.device().is_cpu() && out.scalar_type() == at::kHalf && out.sizes() == x.sizes() &&
                  out.is_contiguous(),
              "turbogelu_bench._gelu_half16: out must be a contiguous float16 CPU tensor of "
              "x's shape");
  at::assert_no_partial_overlap(out, x);  // out may be x itself: each block reads, then writes
#if TG_HALF_PROBE
  const at::Tensor xs = x.contiguous(), ps = program.contiguous();
  const auto* in = static_cast<const uint16_t*>(xs.const_data_ptr());
  const auto* prog = static_cast<const uint16_t*>(ps.const_data_ptr());
  auto* o = static_cast<uint16_t*>(out.mutable_data_ptr());
  at::parallel_for(0, xs.numel(), kGrain,
                   [&](int64_t b, int64_t e) { run(in + b, o + b, e - b, prog, stream); });
#endif
}

at::Tensor gelu_half16(const at::Tensor& x, const at::Tensor& program, bool stream) {
  check_args(x, program);
  at::Tensor out = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  gelu_half16_out(x, program, stream, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(turbogelu_bench, m) {
  m.def("_half16_available() -> bool", &available);
  m.def("_gelu_half16(Tensor x, Tensor program, bool stream=True) -> Tensor");
  m.def("_gelu_half16.out(Tensor x, Tensor program, bool stream=True, *, Tensor(a!) out) -> ()");
}

TORCH_LIBRARY_IMPL(turbogelu_bench, CPU, m) {
  m.impl("_gelu_half16", &gelu_half16);
  m.impl("_gelu_half16.out", &gelu_half16_out);
}

}  // namespace turbogelu
