// __nv_bfloat162 as a vector type of the activation family's element templates
// (kernels/include/turbogelu/family_eval.h): two bfloat16 lanes per value, every operation one
// packed instruction rounded once to bfloat16 (fma.rn.bf16x2, mul.rn.bf16x2, add.rn.bf16x2),
// so that family_eval<...>(x, program) runs the paper tier's programs two elements at a time
// in bfloat16 arithmetic. turbogelu/approx/packed_family.py replays exactly this.
//
// A wrapper struct, like AVX-512's V16 (kernels/cpu/avx512_isa.h): the templates find these
// overloads by argument-dependent lookup, whatever the order of the includes. Constants
// (tg_splat) are the programs' float32 values rounded to bfloat16 to nearest even, once per
// launch (the compiler hoists the conversions out of the loops). The _rn multiply and add:
// PTX may fuse a mul and an add that carry no rounding modifier; these must round one by one.
#pragma once

#include <cuda_bf16.h>

#include <cstring>

namespace turbogelu {
namespace cuda {
namespace {

struct Bf16x2 {
  __nv_bfloat162 v;
};
// A comparison's result per lane: 0xFFFF where it holds, 0 where not (NaN: not).
struct Bf16x2Mask {
  unsigned bits;
};

__device__ __forceinline__ unsigned bits_of(Bf16x2 a) {
  unsigned u;
  memcpy(&u, &a.v, sizeof u);
  return u;
}
__device__ __forceinline__ Bf16x2 from_bits(unsigned u) {
  Bf16x2 r;
  memcpy(&r.v, &u, sizeof u);
  return r;
}

__device__ __forceinline__ Bf16x2 tg_fma(Bf16x2 a, Bf16x2 b, Bf16x2 c) {
  return {__hfma2(a.v, b.v, c.v)};
}
__device__ __forceinline__ Bf16x2 tg_mul(Bf16x2 a, Bf16x2 b) { return {__hmul2_rn(a.v, b.v)}; }
__device__ __forceinline__ Bf16x2 tg_add(Bf16x2 a, Bf16x2 b) { return {__hadd2_rn(a.v, b.v)}; }
__device__ __forceinline__ Bf16x2 tg_abs(Bf16x2 a) { return {__habs2(a.v)}; }
__device__ __forceinline__ Bf16x2 tg_splat(Bf16x2, float c) { return {__float2bfloat162_rn(c)}; }
__device__ __forceinline__ Bf16x2Mask tg_gt(Bf16x2 a, Bf16x2 b) { return {__hgt2_mask(a.v, b.v)}; }
__device__ __forceinline__ Bf16x2Mask tg_lt(Bf16x2 a, Bf16x2 b) { return {__hlt2_mask(a.v, b.v)}; }
__device__ __forceinline__ Bf16x2 tg_select(Bf16x2Mask m, Bf16x2 a, Bf16x2 b) {
  return from_bits((bits_of(a) & m.bits) | (bits_of(b) & ~m.bits));
}
// |p| with x's sign per lane (family_eval.h's HalfPlusSigned), by bits.
__device__ __forceinline__ Bf16x2 tg_copysign(Bf16x2 p, Bf16x2 x) {
  return from_bits((bits_of(p) & 0x7fff7fffu) | (bits_of(x) & 0x80008000u));
}
// m ? max(x, -0.0) : other per lane (x beyond +clamp, -0.0 below -clamp), by bits.
__device__ __forceinline__ Bf16x2 tg_tail_select(Bf16x2Mask m, Bf16x2 x, Bf16x2 other) {
  const unsigned pos = __hgt2_mask(x.v, __float2bfloat162_rn(0.0f));
  return tg_select(m, from_bits((bits_of(x) & pos) | (0x80008000u & ~pos)), other);
}

// The lanes policy of elementwise_pairs (elementwise.cuh's ScalarLanes is the one-element
// one): one Bf16x2 of two neighbouring bfloat16 elements and back; a single element (the head
// and the tail) goes in both lanes (a lane never depends on the other), its result the low lane.
struct Bf16Pairs {
  using T = __nv_bfloat16;
  using Acc = Bf16x2;
  static constexpr int kWidth = 2;
  template <class P>
  __device__ __forceinline__ static Acc get(const P& in, int j) {
    return {__halves2bfloat162(in.v[j], in.v[j + 1])};
  }
  template <class P>
  __device__ __forceinline__ static void put(P& out, int j, Acc o) {
    out.v[j] = __low2bfloat16(o.v);
    out.v[j + 1] = __high2bfloat16(o.v);
  }
  __device__ __forceinline__ static Acc edge(T x) { return {__bfloat162bfloat162(x)}; }
  __device__ __forceinline__ static T unedge(Acc o) { return __low2bfloat16(o.v); }
};

}  // namespace
}  // namespace cuda
}  // namespace turbogelu
