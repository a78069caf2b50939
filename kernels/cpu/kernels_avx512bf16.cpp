// AVX-512 kernels with the AVX512-BF16 conversion: the "avx512bf16" instruction set.
//
// Only the bfloat16 store differs from kernels_avx512.cpp. There, narrowing 32 float32 values
// takes ten integer operations (round to nearest even by hand, then pack); here one
// vcvtne2ps2bf16 does it, plus one permute that restores the element order of the load's
// interleave. That instruction rounds to nearest even like the integer code, but it treats
// subnormal inputs as zero and flushes subnormal results: a block that holds a subnormal
// float32 (one vfpclassps per vector finds them) takes the integer code instead. Both give
// the same bits for every input (tests/test_replay.py and the exhaustive bfloat16 tests run
// under every instruction set). float32 and float16 reuse the avx512 table's kernels.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__clang__)
#pragma clang attribute push(                                                          \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")
#endif

#define TG_ISA_NAMESPACE avx512bf16
#include "avx512_isa.h"
#include "cpu_kernels.h"
#include "family_loops.h"
#include "loops.h"

namespace turbogelu {
namespace cpu {
inline namespace avx512bf16 {
namespace {

// Output element e of a block sits in word kOrder[e] of vcvtne2ps2bf16(v[1], v[0]): the
// load put elements 0-3, 8-11, 16-19, 24-27 in v[0] and 4-7, 12-15, 20-23, 28-31 in v[1],
// and the conversion writes v[0]'s 16 lanes to words 0-15, v[1]'s to words 16-31.
alignas(64) constexpr uint16_t kOrder[32] = {0,  1,  2,  3,  16, 17, 18, 19, 4,  5,  6,
                                             7,  20, 21, 22, 23, 8,  9,  10, 11, 24, 25,
                                             26, 27, 12, 13, 14, 15, 28, 29, 30, 31};
constexpr int kSubnormal = 0x20;  // vfpclassps category: denormal

struct Avx512Bf16Isa : Avx512Isa {
  using Avx512Isa::load;
  using Avx512Isa::store;
  using Avx512Isa::stream_store;
  static void store(bf16_t* p, const V (&v)[K]) {
    if (__builtin_expect(has_subnormal(v), 0)) {
      Avx512Isa::store(p, v);
      return;
    }
    _mm512_storeu_si512(p, words(v));
  }
  // The streaming loops' store (p 64-byte aligned), with the same fall-back.
  static void stream_store(bf16_t* p, const V (&v)[K]) {
    if (__builtin_expect(has_subnormal(v), 0)) {
      Avx512Isa::stream_store(p, v);
      return;
    }
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), words(v));
  }

 private:
  static bool has_subnormal(const V (&v)[K]) {
    return (_mm512_fpclass_ps_mask(v[0].v, kSubnormal) |
            _mm512_fpclass_ps_mask(v[1].v, kSubnormal)) != 0;
  }
  // The block's 32 bfloat16 words in element order.
  static __m512i words(const V (&v)[K]) {
    const __m512i w = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v[1].v, v[0].v));
    return _mm512_permutexvar_epi16(_mm512_load_si512(kOrder), w);
  }
};

}  // namespace
}  // namespace avx512bf16

const KernelTable* avx512bf16_table() {
  static const KernelTable table = bf16_table_over<Avx512Bf16Isa>("avx512bf16", avx512_table());
  return &table;
}

}  // namespace cpu
}  // namespace turbogelu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not x86-64 with GCC/clang: no AVX-512 code in this build

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
const KernelTable* avx512bf16_table() { return nullptr; }
}  // namespace cpu
}  // namespace turbogelu

#endif
