// The activation family's CPU kernels for one instruction set: the element functions of
// family_eval.h run through loops.h's streaming loops (the GELU kernels' loops, stores and
// tails), plus a loop with two outputs for the gated backward. Included by each instruction
// set's file after its traits, like loops.h; `family_kernels<Isa, Isa64>()` is its table.
#pragma once

#include <cmath>
#include <type_traits>

#include "convert.h"
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

// ---------------------------------------------------------------- softmax rows by exp2
// Per row, in float32: m = the row's max; e = exp2(fl(fl(x - m) log2(e))) by the exp2 op's
// element function, kept in the float32 scratch; s = the sum of e in a fixed order; y =
// e * fl(1/s), rounded once to T. A NaN in the row (or a row of -inf, or +inf in it) makes s
// NaN and so the whole row NaN, as torch.softmax's; m itself need not see the NaN.
//
// The sum order is the same on every instruction set, whatever its vector width: element j
// is added, in increasing j, to partial sum j mod 16 (AVX-512: one vector of 16 lanes, AVX2:
// two of 8, scalar: 16 floats), all starting at +0; then the 16 partials p[0..15] are halved
// in place, p[k] += p[k + w] for w = 8, 4, 2, 1 (k < w), and s = p[0]. A row's tail is
// padded with e = +0, which leaves the partials as they were.
constexpr float kSoftmaxLog2e = 0x1.715476p+0f;  // log2(e) rounded to float32
constexpr int kSoftmaxPartials = 16;

// A 16-bit row widened to float32 in element order (and back): the traits' bfloat16 load
// interleaves lanes (loops.h), fine for elementwise maps but not for a sum whose order
// follows the element index. bfloat16 by plain loops (vectorised by the compiler) with
// convert.h's rounding, the integer steps of the SIMD stores; float16's load is in order.
template <class Isa, class T>
TG_INLINE void softmax_widen(const T* p, float* out, int64_t n) {
  if constexpr (std::is_same_v<T, bf16_t>) {
    for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i].bits);
  } else {
    typename Isa::V v[Isa::K];
    int64_t i = 0;
    for (; i + Isa::B <= n; i += Isa::B) {
      Isa::load(p + i, v);
      Isa::store(out + i, v);
    }
    for (; i < n; ++i) out[i] = f16_to_f32(p[i].bits);
  }
}

// y = e * inv into T, one rounding (e: the scratch, overwritten for bfloat16).
template <class Isa, class T>
TG_INLINE void softmax_scale(float* e, T* y, int64_t n, float inv) {
  using V = typename Isa::V;
  const V iv = tg_splat(V{}, inv);
  V v[Isa::K];
  int64_t i = 0;
  constexpr bool kBf16 = std::is_same_v<T, bf16_t>;
  for (; i + Isa::B <= n; i += Isa::B) {
    Isa::load(e + i, v);
    for (int j = 0; j < Isa::K; ++j) v[j] = tg_mul(v[j], iv);
    if constexpr (kBf16) {
      Isa::store(e + i, v);
    } else {
      Isa::store(y + i, v);
    }
  }
  for (; i < n; ++i) {
    const float r = e[i] * inv;
    if constexpr (kBf16) {
      e[i] = r;
    } else if constexpr (std::is_same_v<T, float>) {
      y[i] = r;
    } else {
      y[i].bits = f32_to_f16(r);
    }
  }
  if constexpr (kBf16) {
    for (int64_t k = 0; k < n; ++k) y[k].bits = f32_to_bf16(e[k]);
  }
}

template <class Isa, class T, class S>
void family_softmax(const void* xv, void* yv, int64_t rows, int64_t cols, const FamilyCall& cref,
                    float* e) {
  const FamilyCall c = cref;
  using V = typename Isa::V;
  constexpr int K = Isa::K, B = Isa::B, L = B / K;  // L: lanes per vector
  constexpr int P = kSoftmaxPartials, NA = P / L;   // NA: vectors of partial sums
  constexpr int C = B > P ? B : P;      // elements per step: whole blocks, whole sets of partials
  constexpr int NS = (NA + K - 1) / K;  // blocks that hold the partials
  static_assert(P % L == 0 && C % B == 0 && C % P == 0, "softmax: lanes must divide 16");
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const V log2e = tg_splat(V{}, kSoftmaxLog2e), zero = tg_splat(V{}, 0.0f);
  const int64_t full = cols - cols % C;
  V v[K];
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const float* xf;
    if constexpr (std::is_same_v<T, float>) {
      xf = xr;
    } else {
      softmax_widen<Isa>(xr, e, cols);
      xf = e;  // pass 2 overwrites each block after reading it
    }
    // pass 1: the max (exact, so its order is free)
    V mv[K];
    for (int j = 0; j < K; ++j) mv[j] = tg_splat(V{}, -INFINITY);
    int64_t i = 0;
    for (; i + B <= cols; i += B) {
      Isa::load(xf + i, v);
      for (int j = 0; j < K; ++j) mv[j] = tg_clamp_below(v[j], mv[j]);
    }
    for (int j = 1; j < K; ++j) mv[0] = tg_clamp_below(mv[j], mv[0]);  // K vectors to one
    for (int j = 1; j < K; ++j) mv[j] = mv[0];
    float lanes[B];
    Isa::store(lanes, mv);
    for (int w = L / 2; w >= 1; w /= 2)  // halving: a chain of log2(L), not L, dependent steps
      for (int k = 0; k < w; ++k) lanes[k] = lanes[k + w] > lanes[k] ? lanes[k + w] : lanes[k];
    float m = lanes[0];
    for (; i < cols; ++i) m = xf[i] > m ? xf[i] : m;
    // pass 2: e, to the scratch and into the partial sums
    const V neg_m = tg_splat(V{}, -m);  // x + (-m) is x - m, bit for bit
    V acc[NS * K];
    for (int a = 0; a < NS * K; ++a) acc[a] = zero;
    const auto exp_block = [&](const float* src, float* dst) {
      Isa::load(src, v);
      for (int j = 0; j < K; ++j) v[j] = family_forward<S>(tg_mul(tg_add(v[j], neg_m), log2e), c);
      Isa::store(dst, v);
    };
    // v holds e of elements b B + j L + (0 .. L-1) of a step: partial vector ((b B + j L) % P) / L
    const auto add_block = [&](int b) {
      for (int j = 0; j < K; ++j) {
        const int a = ((b * B + j * L) % P) / L;
        acc[a] = tg_add(acc[a], v[j]);
      }
    };
    for (i = 0; i < full; i += C) {
      for (int b = 0; b < C / B; ++b) {
        exp_block(xf + i + b * B, e + i + b * B);
        add_block(b);
      }
    }
    if (full < cols) {
      const int64_t n = cols - full;
      float buf[C];
      std::memset(buf, 0, sizeof buf);
      std::memcpy(buf, xf + full, sizeof(float) * static_cast<size_t>(n));
      for (int b = 0; b < C / B; ++b) exp_block(buf + b * B, buf + b * B);
      std::memcpy(e + full, buf, sizeof(float) * static_cast<size_t>(n));
      std::memset(buf + n, 0, sizeof(float) * static_cast<size_t>(C - n));  // e = +0 beyond
      for (int b = 0; b < C / B; ++b) {
        Isa::load(buf + b * B, v);
        add_block(b);
      }
    }
    // the 16 partials (vector a holds p[a L ...]), halved in the stated order
    float part[NS * B];
    for (int g = 0; g < NS; ++g) {
      V t[K];
      for (int j = 0; j < K; ++j) t[j] = acc[g * K + j];
      Isa::store(part + g * B, t);
    }
    for (int w = P / 2; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) part[k] += part[k + w];
    // pass 3
    softmax_scale<Isa>(e, y + r * cols, cols, 1.0f / part[0]);
  }
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
  if constexpr (!std::is_same_v<T, double>) {
    constexpr int d = dtype_of<T>();
    table[family_index(kFamily_exp2, kTier_accurate)].softmax[d] =
        family_softmax<Isa, T, shapes::exp2_accurate>;
    table[family_index(kFamily_exp2, kTier_paper)].softmax[d] =
        family_softmax<Isa, T, shapes::exp2_paper>;
  }
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
