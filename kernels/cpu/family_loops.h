// The activation family's CPU kernels for one instruction set: the element functions of
// family_eval.h run through loops.h's streaming loops (the GELU kernels' loops, stores and
// tails), plus a loop with two outputs for the gated backward. Included by each instruction
// set's file after its traits, like loops.h; `family_kernels<Isa, Isa64>()` is its table.
#pragma once

#include <type_traits>

#include "loops.h"
#include "turbogelu/family.h"

namespace turbogelu {
namespace cpu {

inline namespace TG_ISA_NAMESPACE {

// One pass over (g, a, b) writing two outputs, block by block with the tail through a
// zero-padded buffer (as map_n). Plain stores: the gated backward is the one op with two
// outputs, and the streaming head would have to align both.
template <class Isa, class T, class F>
TG_INLINE void map_pair(const void* gv, const void* av, const void* bv, void* oav, void* obv,
                        int64_t n, F f) {
  using V = typename Isa::V;
  const T* const in[3] = {static_cast<const T*>(gv), static_cast<const T*>(av),
                          static_cast<const T*>(bv)};
  T* const out[2] = {static_cast<T*>(oav), static_cast<T*>(obv)};
  V v[3][Isa::K], r[2][Isa::K];
  const auto block = [&] {
    for (int j = 0; j < Isa::K; ++j) {
      const auto p = f(v[0][j], v[1][j], v[2][j]);
      r[0][j] = p.first;
      r[1][j] = p.second;
    }
  };
  int64_t i = 0;
  for (; i + Isa::B <= n; i += Isa::B) {
    for (int a = 0; a < 3; ++a) Isa::load(in[a] + i, v[a]);
    block();
    Isa::store(out[0] + i, r[0]);
    Isa::store(out[1] + i, r[1]);
  }
  if (i < n) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(n - i);
    T ib[3][Isa::B], ob[2][Isa::B];
    for (int a = 0; a < 3; ++a) {
      std::memset(ib[a], 0, sizeof ib[a]);
      std::memcpy(ib[a], in[a] + i, bytes);
      Isa::load(ib[a], v[a]);
    }
    block();
    for (int o = 0; o < 2; ++o) {
      Isa::store(ob[o], r[o]);
      std::memcpy(out[o] + i, ob[o], bytes);
    }
  }
}

// map1 / map2 with the store chosen at run time (streaming where the traits can).
template <class Isa, class T, class F>
TG_INLINE void map1_any(const void* x, void* out, int64_t n, bool stream, F f) {
  if constexpr (CanStream<Isa>::value) {
    if (stream) return map1<Isa, T, true>(x, out, n, f);
  }
  map1<Isa, T, false>(x, out, n, f);
}
template <class Isa, class T, class F>
TG_INLINE void map2_any(const void* a, const void* b, void* out, int64_t n, bool stream, F f) {
  if constexpr (CanStream<Isa>::value) {
    if (stream) return map2<Isa, T, true>(a, b, out, n, f);
  }
  map2<Isa, T, false>(a, b, out, n, f);
}

// The call is copied to a local first (as forward_loop's coefficients): stores to `out`
// cannot alias it, so its constants stay in registers.
template <class Isa, class T, class S, Kind K>
void family_unary(const void* x, void* out, int64_t n, const FamilyCall& cref, bool stream) {
  const FamilyCall c = cref;
  using V = typename Isa::V;
  if constexpr (K == Kind::Scaled) {
    map1_any<Isa, T>(x, out, n, stream, [&](V v) { return scaled_forward<S>(v, c); });
  } else {
    map1_any<Isa, T>(x, out, n, stream, [&](V v) { return family_forward<S>(v, c); });
  }
}

template <class Isa, class T, class S, Kind K>
void family_binary(const void* a, const void* b, void* out, int64_t n, const FamilyCall& cref,
                   bool stream) {
  const FamilyCall c = cref;
  using V = typename Isa::V;
  if constexpr (K == Kind::Gated) {
    map2_any<Isa, T>(a, b, out, n, stream, [&](V av, V bv) { return gated_forward<S>(av, bv, c); });
  } else if constexpr (K == Kind::Scaled) {
    map2_any<Isa, T>(a, b, out, n, stream, [&](V g, V x) { return scaled_backward<S>(g, x, c); });
  } else {
    map2_any<Isa, T>(a, b, out, n, stream, [&](V g, V x) { return family_backward<S>(g, x, c); });
  }
}

template <class Isa, class T, class S>
void family_pair(const void* g, const void* a, const void* b, void* oa, void* ob, int64_t n,
                 const FamilyCall& cref) {
  const FamilyCall c = cref;
  using V = typename Isa::V;
  map_pair<Isa, T>(g, a, b, oa, ob, n,
                   [&](V gv, V av, V bv) { return gated_backward<S>(gv, av, bv, c); });
}

template <class T>
constexpr int dtype_of() {
  if constexpr (std::is_same_v<T, float>) return kF32;
  if constexpr (std::is_same_v<T, f16_t>) return kF16;
  if constexpr (std::is_same_v<T, bf16_t>) return kBF16;
  return kF64;
}

// One op's kernels for the element type T on Isa.
template <class Isa, class T, class S, Kind K>
void family_fill_one(FamilyKernels& e) {
  constexpr int d = dtype_of<T>();
  if constexpr (K == Kind::Gated) {
    e.pair[d] = family_pair<Isa, T, S>;
  } else {
    e.unary[d] = family_unary<Isa, T, S, K>;
  }
  e.binary[d] = family_binary<Isa, T, S, K>;
}

// Every op's kernels in every tier for the element type T on Isa, into
// table[kNumFamilyOps * kNumTiers] (family.h's family_index).
template <class Isa, class T>
void family_fill(FamilyKernels* table) {
#define TG_FILL(op, fn, kind)                                 \
  family_fill_one<Isa, T, shapes::fn##_accurate, Kind::kind>( \
      table[family_index(kFamily_##op, kTier_accurate)]);     \
  family_fill_one<Isa, T, shapes::fn##_paper, Kind::kind>(    \
      table[family_index(kFamily_##op, kTier_paper)]);
  TG_FAMILY_OPS(TG_FILL)
#undef TG_FILL
}

// The table of an instruction set: float32, float16 and bfloat16 on Isa; float64 on Isa64
// (void: none, the scalar table's is used).
template <class Isa, class Isa64 = void>
const FamilyKernels* family_kernels() {
  static const auto table = [] {
    struct Table {
      FamilyKernels ops[kNumFamilyOps * kNumTiers]{};
    } t;
    family_fill<Isa, float>(t.ops);
    family_fill<Isa, f16_t>(t.ops);
    family_fill<Isa, bf16_t>(t.ops);
    if constexpr (!std::is_void_v<Isa64>) family_fill<Isa64, double>(t.ops);
    return t;
  }();
  return table.ops;
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
