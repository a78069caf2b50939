// Bandwidth probes for the benchmark's limit rows: the same bytes as a GELU call moved with
// non-temporal (streaming) stores, which write whole cache lines to memory without first
// reading them (no read-for-ownership) and without evicting the inputs from the caches.
// Where the output does not fit in the caches that is faster than an ordinary copy, so the
// machine's limit for a large tensor is the faster of the two (python -m experiments bench).
//
//   _stream_copy(x)      one input, one output: the forward's traffic
//   _stream_read2(a, b)  two inputs, one output (the bytes of a XOR b): the backward's traffic
//   and each .out(..., out=): into a preallocated contiguous output
//
// The AVX-512 and AVX2 loops are compiled for their targets by function attributes and run
// only when cpuid reports them; SSE2 (every x86-64) otherwise; a plain loop elsewhere.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <cstring>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TG_STREAM_X86 1
#else
#define TG_STREAM_X86 0
#endif

namespace turbogelu {
namespace {

constexpr int64_t kLine = 64;
constexpr int64_t kGrainLines = 1024;  // 64 KiB per parallel chunk at least

// Bytes before the first 64-byte-aligned address of p (at most n).
int64_t head_bytes(const char* p, int64_t n) {
  const int64_t mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) & (kLine - 1));
  return mis == 0 ? 0 : std::min(n, kLine - mis);
}

void plain(const char* a, const char* b, char* out, int64_t n) {
  if (b == nullptr) {
    std::memcpy(out, a, static_cast<size_t>(n));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<char>(a[i] ^ b[i]);
  }
}

#if TG_STREAM_X86
__attribute__((target("avx512f"))) void stream_avx512(const char* a, const char* b, char* out,
                                                      int64_t n) {
  const int64_t h = head_bytes(out, n);
  plain(a, b, out, h);
  int64_t i = h;
  for (; i + kLine <= n; i += kLine) {
    __m512i v = _mm512_loadu_si512(a + i);
    if (b != nullptr) v = _mm512_xor_si512(v, _mm512_loadu_si512(b + i));
    _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i), v);
  }
  plain(a + i, b == nullptr ? nullptr : b + i, out + i, n - i);
  _mm_sfence();
}

// 32-byte vectors where there is no AVX-512: on an AVX2-only AMD EPYC the SSE2 loop moved two
// 64M-float inputs and one output 15-20 % slower than this one, so it was not the limit.
__attribute__((target("avx2"))) void stream_avx2(const char* a, const char* b, char* out,
                                                 int64_t n) {
  const int64_t h = head_bytes(out, n);
  plain(a, b, out, h);
  int64_t i = h;
  for (; i + 32 <= n; i += 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    if (b != nullptr)
      v = _mm256_xor_si256(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), v);
  }
  plain(a + i, b == nullptr ? nullptr : b + i, out + i, n - i);
  _mm_sfence();
}

void stream_sse2(const char* a, const char* b, char* out, int64_t n) {
  const int64_t h = head_bytes(out, n);
  plain(a, b, out, h);
  int64_t i = h;
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    if (b != nullptr)
      v = _mm_xor_si128(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), v);
  }
  plain(a + i, b == nullptr ? nullptr : b + i, out + i, n - i);
  _mm_sfence();
}
#endif

std::string stream_isa() {
#if TG_STREAM_X86
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
  return "sse2";
#else
  return "none";
#endif
}

void run(const char* a, const char* b, char* out, int64_t n) {
#if TG_STREAM_X86
  static const auto fn = __builtin_cpu_supports("avx512f") ? &stream_avx512
                         : __builtin_cpu_supports("avx2")  ? &stream_avx2
                                                           : &stream_sse2;
#else
  const auto fn = &plain;
#endif
  const int64_t lines = (n + kLine - 1) / kLine;
  at::parallel_for(0, lines, kGrainLines, [&](int64_t lb, int64_t le) {
    const int64_t s = lb * kLine, e = std::min(n, le * kLine);
    fn(a + s, b == nullptr ? nullptr : b + s, out + s, e - s);
  });
}

at::Tensor dense(const at::Tensor& t) {
  return t.is_non_overlapping_and_dense() ? t : t.contiguous();
}

// The out= forms write into a contiguous `out` of the input's shape and dtype (the benchmark's
// limit rows at DRAM sizes, where allocating the output would be most of the time).
void check_out(const at::Tensor& like, const at::Tensor& out, const char* op) {
  TORCH_CHECK(out.device().is_cpu(), "turbogelu_bench.", op, ": out must be on the CPU");
  TORCH_CHECK(out.scalar_type() == like.scalar_type() && out.sizes() == like.sizes(),
              "turbogelu_bench.", op, ": out must have the input's shape and dtype");
  TORCH_CHECK(out.is_contiguous(), "turbogelu_bench.", op, ": out must be contiguous");
  at::assert_no_partial_overlap(out, like);
}

void stream_copy_out_cpu(const at::Tensor& x, const at::Tensor& out) {
  check_out(x, out, "_stream_copy");
  const at::Tensor xs = x.contiguous();
  run(static_cast<const char*>(xs.const_data_ptr()), nullptr,
      static_cast<char*>(out.mutable_data_ptr()), xs.numel() * xs.element_size());
}

at::Tensor stream_copy_cpu(const at::Tensor& x) {
  const at::Tensor xs = dense(x);
  at::Tensor out = at::empty_like(xs);
  run(static_cast<const char*>(xs.const_data_ptr()), nullptr,
      static_cast<char*>(out.mutable_data_ptr()), xs.numel() * xs.element_size());
  return out;
}

void check_pair(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type(),
              "turbogelu_bench._stream_read2: a and b must have the same shape and dtype");
}

void stream_read2_out_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  check_pair(a, b);
  check_out(a, out, "_stream_read2");
  at::assert_no_partial_overlap(out, b);
  const at::Tensor as = a.contiguous(), bs = b.contiguous();
  run(static_cast<const char*>(as.const_data_ptr()), static_cast<const char*>(bs.const_data_ptr()),
      static_cast<char*>(out.mutable_data_ptr()), as.numel() * as.element_size());
}

at::Tensor stream_read2_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_pair(a, b);
  at::Tensor out = at::empty(a.sizes(), a.options());  // contiguous
  stream_read2_out_cpu(a, b, out);
  return out;
}

}  // namespace

// The benchmark's probes, in their own namespace (torch.ops.turbogelu_bench), apart from the
// product's ops: x's bytes, and a's bytes XOR b's, written by streaming stores. cpu_hooks.cpp
// and cuda_probes.cpp add to it; all of kernels/bench/ is compiled only with
// TURBOGELU_BENCH_PROBES=1 (make build), so the shipped extension has none of it.
TORCH_LIBRARY(turbogelu_bench, m) {
  m.def("_stream_copy(Tensor x) -> Tensor");
  m.def("_stream_read2(Tensor a, Tensor b) -> Tensor");
  m.def("_stream_copy.out(Tensor x, *, Tensor(a!) out) -> ()");
  m.def("_stream_read2.out(Tensor a, Tensor b, *, Tensor(a!) out) -> ()");
  m.def("_stream_isa() -> str", &stream_isa);
}

TORCH_LIBRARY_IMPL(turbogelu_bench, CPU, m) {
  m.impl("_stream_copy", &stream_copy_cpu);
  m.impl("_stream_read2", &stream_read2_cpu);
  m.impl("_stream_copy.out", &stream_copy_out_cpu);
  m.impl("_stream_read2.out", &stream_read2_out_cpu);
}

}  // namespace turbogelu
