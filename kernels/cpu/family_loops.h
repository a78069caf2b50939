// The activation family's CPU kernels for one instruction set: the element functions of
// family_eval.h run through loops.h's streaming loops (the GELU kernels' loops, stores and
// tails), plus a loop with two outputs for the gated backward. Included by each instruction
// set's file after its traits, like loops.h; `family_kernels<Isa, Isa64>()` is its table.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "convert.h"
#include "loops.h"
#include "turbogelu/family.h"

namespace turbogelu {
namespace cpu {

inline namespace TG_ISA_NAMESPACE {

// One pass over (g, a, b) writing two outputs, block by block, the head and tail through
// zero-padded buffers (as map_n). Stream: whole blocks of both outputs are written with
// non-temporal stores, which the caller asks for only when the two outputs sit at the same
// offset in a cache line, so that one head aligns both (the bits are the plain loop's); as
// map_n, whole lines leave together and the inputs are prefetched ahead. SwiGLU's backward,
// AVX-512 Xeon, 64M elements, one thread, before / after (two runs): float16 50.4 / 39.2 ms
// (1.46 / 1.01-1.07x the fastest limit row), bfloat16 48.2 / 41.4-41.6 ms (1.40 /
// 1.09-1.14x), float32 72.4 / 68.9-71.1 ms.
template <class Isa, class T, bool Stream, class F>
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
  const auto buffered = [&](int64_t i, int64_t count) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(count);
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
  };
  const auto store = [&](T* p, const V(&x)[Isa::K]) {
    if constexpr (Stream && HasStreamStore<Isa, T>::value) {
      Isa::stream_store(p, x);
    } else if constexpr (Stream) {
      alignas(64) T ob[Isa::B];
      Isa::store(ob, x);
      Isa::stream_block(p, ob, sizeof ob);
    } else {
      Isa::store(p, x);
    }
  };
  int64_t i = 0;
  if constexpr (Stream) {
    const int64_t h = head_elements(out[0], n);
    for (int64_t count = 0; i < h; i += count) {
      count = h - i < Isa::B ? h - i : Isa::B;
      buffered(i, count);
    }
  }
  if constexpr (Stream && HasStreamStore<Isa, T>::value && StreamGroup<Isa, T>::blocks > 1) {
    // As map_n: whole groups, every block computed, then each output's lines stored together,
    // with the inputs prefetched ahead (loops.h).
    constexpr int G = StreamGroup<Isa, T>::blocks;
    V w[G][2][Isa::K];
    for (; i + G * Isa::B <= n; i += G * Isa::B) {
      prefetch_ahead<T, 3>(in, i, G * Isa::B * static_cast<int64_t>(sizeof(T)));
      for (int b = 0; b < G; ++b) {
        for (int a = 0; a < 3; ++a) Isa::load(in[a] + i + b * Isa::B, v[a]);
        block();
        for (int j = 0; j < Isa::K; ++j) {
          w[b][0][j] = r[0][j];
          w[b][1][j] = r[1][j];
        }
      }
      for (int o = 0; o < 2; ++o)
        for (int b = 0; b < G; ++b) Isa::stream_store(out[o] + i + b * Isa::B, w[b][o]);
    }
  }
  for (; i + Isa::B <= n; i += Isa::B) {
    if constexpr (Stream) prefetch_ahead<T, 3>(in, i, Isa::B * static_cast<int64_t>(sizeof(T)));
    for (int a = 0; a < 3; ++a) Isa::load(in[a] + i, v[a]);
    block();
    store(out[0] + i, r[0]);
    store(out[1] + i, r[1]);
  }
  if (i < n) buffered(i, n - i);
  if constexpr (Stream) Isa::stream_fence();
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
// cannot alias it, so its constants stay in registers; a cells shape's copy holds its two
// tables as well (family_eval.h's FamilyCellsCall).
template <class S>
TG_INLINE auto local_call(const FamilyCall& c) {
  if constexpr (S::cells) {
    return FamilyCellsCall{c, *c.fcells, *c.dcells};
  } else {
    return c;
  }
}

// Whether a cells kernel of T may be handed a 16-bit format's own tables (ops.cpp's
// for_dtype: the plain ops' forward and matched derivative), whose degree the loop then
// reads once per call to run the instantiation of it (shapes::sized).
template <class T, class S, Kind K>
constexpr bool takes_sized() {
  if constexpr (S::cells) {
    return K == Kind::Plain && S::df == 3 && S::dd == 3 &&
           (std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>);
  } else {
    return false;
  }
}

template <class Isa, class T, class S, Kind K>
void family_unary(const void* x, void* out, int64_t n, const FamilyCall& cref, bool stream) {
  if constexpr (takes_sized<T, S, K>()) {
    if (cref.fcells->degree == 2)
      return family_unary<Isa, T, shapes::sized<S, 2, 3>, K>(x, out, n, cref, stream);
  }
  const auto c = local_call<S>(cref);
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
  if constexpr (takes_sized<T, S, K>()) {
    if (cref.dcells->degree == 2)
      return family_binary<Isa, T, shapes::sized<S, 3, 2>, K>(a, b, out, n, cref, stream);
  }
  const auto c = local_call<S>(cref);
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
                 const FamilyCall& cref, bool stream) {
  const auto c = local_call<S>(cref);
  using V = typename Isa::V;
  const auto f = [&](V gv, V av, V bv) { return gated_backward<S>(gv, av, bv, c); };
  // Two streamed outputs only with 64-byte vectors. With AVX2's 32-byte stores the streamed
  // pair ran 1.7x slower than plain stores on a 2-vCPU AVX2-only AMD EPYC (64M elements, one
  // thread, SwiGLU's backward: float32 179 against 108 ms, bfloat16 201 against 114; one
  // streamed output there is as fast as plain or faster), while AVX-512's streamed pair was
  // the faster one on the Xeon. The same bits either way.
  if constexpr (CanStream<Isa>::value && sizeof(V) >= 64) {
    if (stream) return map_pair<Isa, T, true>(g, a, b, oa, ob, n, f);
  }
  map_pair<Isa, T, false>(g, a, b, oa, ob, n, f);
}

// grad f'(x) from the saved y = f(x) (family.h's from_output; the call: softcap's 1/cap).
template <class Isa, class T, FamilyOp Op>
void family_from_output(const void* g, const void* y, void* out, int64_t n, const FamilyCall& cref,
                        bool stream) {
  const FamilyCall c = cref;
  using V = typename Isa::V;
  map2_any<Isa, T>(g, y, out, n, stream, [&](V gv, V yv) { return from_output<Op>(gv, yv, c); });
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

// One element to float32 and back (16-bit: the one rounding), as the SIMD loads and stores.
template <class T>
TG_INLINE float softmax_in(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    return bf16_to_f32(v.bits);
  } else {
    return f16_to_f32(v.bits);
  }
}
template <class T>
TG_INLINE void softmax_out(float f, T* p) {
  if constexpr (std::is_same_v<T, float>) {
    *p = f;
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    p->bits = f32_to_bf16(f);
  } else {
    p->bits = f32_to_f16(f);
  }
}

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

// float32 values to T in element order (16-bit: the one rounding), as softmax_widen's inverse.
template <class Isa, class T>
TG_INLINE void softmax_narrow(const float* s, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, bf16_t>) {
    for (int64_t i = 0; i < n; ++i) y[i].bits = f32_to_bf16(s[i]);
  } else {
    typename Isa::V v[Isa::K];
    int64_t i = 0;
    for (; i + Isa::B <= n; i += Isa::B) {
      Isa::load(s + i, v);
      Isa::store(y + i, v);
    }
    for (; i < n; ++i) softmax_out(s[i], y + i);
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
    // meanwhile the row's output lines are fetched for writing (pass 3 then stores to cache)
    // and the next row's input lines for reading (the hardware's prefetch stops at pages)
    const char* const out = reinterpret_cast<const char*>(y + r * cols);
    const char* const next = reinterpret_cast<const char*>(xr + (r + 1 < rows ? cols : 0));
    for (i = 0; i < full; i += C) {
      for (int b = 0; b < C / B; ++b) {
        exp_block(xf + i + b * B, e + i + b * B);
        add_block(b);
      }
      for (size_t o = 0; o < C * sizeof(T); o += 64) {
        __builtin_prefetch(out + i * sizeof(T) + o, 1);
        __builtin_prefetch(next + i * sizeof(T) + o);
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

// ---------------------------------------------------------------- softmax across lanes
// The same softmax for many short or strided vectors at once: up to B (a block of Isa) side by
// side, vector t in lane t of every block, so that each one goes through the row kernel's
// steps on its own lane: the max, e = exp2(fl(fl(x - m) log2(e))), element j into partial sum
// j mod 16 in increasing j, the 16 halved 8/4/2/1, y = e * fl(1/s). Each vector thus gets the
// bits family_softmax gives it as a row, whichever vectors share its block. The data pass
// through the float32 scratch as cols blocks: e[j B + t] = element j of lane t (in the traits'
// lane order when whole blocks are loaded from memory; their store undoes it).

// One vector of float32 lanes from / to memory (any alignment).
template <class V>
TG_INLINE V softmax_load1(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
TG_INLINE void softmax_store1(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

template <class Isa, class T, class S>
void family_softmax_lanes(const void* xv, void* yv, int64_t lane0, int64_t lane1, int64_t cols,
                          int64_t inner, const FamilyCall& cref, float* e) {
  const FamilyCall c = cref;
  using V = typename Isa::V;
  constexpr int K = Isa::K, B = Isa::B, L = B / K, P = kSoftmaxPartials;
  static_assert(B <= kSoftmaxLaneBlock, "softmax lanes: the caller's scratch holds 32 lanes");
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const V log2e = tg_splat(V{}, kSoftmaxLog2e), minus_one = tg_splat(V{}, -1.0f);
  float* const stage = e + cols * B;  // short rows in memory order
  V v[K];
  int64_t off[B];
  for (int64_t l = lane0; l < lane1;) {
    const int64_t i = l % inner, base = (l / inner) * cols * inner + i;
    // whole: B neighbours of one slice, blocks straight from memory; rows: B whole short
    // rows, one contiguous stretch, transposed L x L at a time (at least L columns);
    // else lane by lane
    const bool whole = inner - i >= B && lane1 - l >= B;
    // runs: B lanes as K runs of L neighbours, each within one slice but not all next to each
    // other (a slice's last lanes and the next one's first, or inner under B, e.g. 16): the
    // runs copied side by side through a block buffer
    bool runs = !whole && inner >= L && lane1 - l >= B;
    int64_t run[K];
    for (int k = 0; k < K && runs; ++k) {
      const int64_t lk = l + k * L;
      runs = lk % inner + L <= inner;
      run[k] = (lk / inner) * cols * inner + lk % inner;
    }
    const int n = whole || runs
                      ? B
                      : static_cast<int>(std::min<int64_t>(inner >= B ? inner - i : B, lane1 - l));
    const bool rows = !whole && !runs && inner == 1 && n == B && cols >= L;
    T buf[B];
    if (whole) {
      // the next block's lines are fetched meanwhile: strided reads defeat the prefetchers
      const bool next = inner - i >= 2 * B;
      for (int64_t j = 0; j < cols; ++j) {
        if (next) __builtin_prefetch(x + base + j * inner + B);
        Isa::load(x + base + j * inner, v);
        Isa::store(e + j * B, v);
      }
    } else if (runs) {
      for (int64_t j = 0; j < cols; ++j) {
        for (int k = 0; k < K; ++k) std::memcpy(buf + k * L, x + run[k] + j * inner, sizeof(T) * L);
        Isa::load(buf, v);
        Isa::store(e + j * B, v);
      }
    } else if (rows) {
      const float* src;
      if constexpr (std::is_same_v<T, float>) {
        src = x + base;
      } else {
        softmax_widen<Isa>(x + base, stage, cols * B);
        src = stage;
      }
      for (int k = 0; k < K; ++k)
        for (int64_t j0 = 0; j0 < cols; j0 += L) {
          const int64_t j = j0 + L <= cols ? j0 : cols - L;  // overlap rather than run past
          Isa::transpose(src + k * L * cols + j, cols, e + j * B + k * L, B, nullptr);
        }
    } else {
      for (int t = 0; t < B; ++t) {
        off[t] = t < n ? ((l + t) / inner) * cols * inner + (l + t) % inner : 0;
        const T* src = x + off[t];
        for (int64_t j = 0; j < cols; ++j) e[j * B + t] = t < n ? softmax_in(src[j * inner]) : 0.0f;
      }
    }
    // one vector of lanes at a time: the max (exact, so its order is free; four chains), e,
    // and the 16 partial sums
    // short rows: the next block's lines and this one's output lines are fetched while this
    // block computes (one of each per step)
    const int64_t block_bytes = B * cols * static_cast<int64_t>(sizeof(T));
    const char* const next = reinterpret_cast<const char*>(x + base + B * cols);
    const int64_t next_bytes = rows && lane1 - l >= 2 * B ? block_bytes : 0;
    char* const out = reinterpret_cast<char*>(y + base);
    const int64_t out_bytes = rows ? block_bytes : 0;
    float inv[B];
    for (int k = 0; k < K; ++k) {
      float* const ek = e + k * L;
      V m4[4];
      for (int u = 0; u < 4; ++u) m4[u] = tg_splat(V{}, -INFINITY);
      int64_t j = 0;
      for (; j + 4 <= cols; j += 4)
        for (int u = 0; u < 4; ++u)
          m4[u] = tg_clamp_below(softmax_load1<V>(ek + (j + u) * B), m4[u]);
      for (; j < cols; ++j) m4[0] = tg_clamp_below(softmax_load1<V>(ek + j * B), m4[0]);
      const V m = tg_mul(tg_clamp_below(tg_clamp_below(m4[0], m4[1]), tg_clamp_below(m4[2], m4[3])),
                         minus_one);  // -max exactly
      for (j = 0; j < cols; ++j) {
        const V t = family_forward<S>(tg_mul(tg_add(softmax_load1<V>(ek + j * B), m), log2e), c);
        softmax_store1(ek + j * B, t);
        const int64_t line = (k * cols + j) * 64;
        if (line < next_bytes) __builtin_prefetch(next + line);
        if (line < out_bytes) __builtin_prefetch(out + line, 1);
      }
      // the partial sums in a pass of their own: beside the exp2 program's constants the 16
      // accumulators would not stay in registers
      V acc[P];
      for (int q = 0; q < P; ++q) acc[q] = tg_splat(V{}, 0.0f);
      for (j = 0; j + P <= cols; j += P) {
#pragma GCC unroll 16
        for (int q = 0; q < P; ++q) acc[q] = tg_add(acc[q], softmax_load1<V>(ek + (j + q) * B));
      }
#pragma GCC unroll 16
      for (int q = 0; q < P; ++q)
        if (j + q < cols) acc[q] = tg_add(acc[q], softmax_load1<V>(ek + (j + q) * B));
      for (int w = P / 2; w >= 1; w /= 2)
        for (int q = 0; q < w; ++q) acc[q] = tg_add(acc[q], acc[q + w]);
      softmax_store1(inv + k * L, acc[0]);
    }
    for (int t = 0; t < B; ++t) inv[t] = 1.0f / inv[t];
    // y = e * (1 / s) on the way to memory: by blocks (or runs); short rows transposed back
    // (the last L columns overlap the ones before rather than run past the row); else lane by
    // lane
    if (whole || runs) {
      V iv[K];
      Isa::load(inv, iv);
      for (int64_t j = 0; j < cols; ++j) {
        Isa::load(e + j * B, v);
        for (int k = 0; k < K; ++k) v[k] = tg_mul(v[k], iv[k]);
        if (whole) {
          Isa::store(y + base + j * inner, v);
        } else {
          Isa::store(buf, v);
          for (int k = 0; k < K; ++k)
            std::memcpy(y + run[k] + j * inner, buf + k * L, sizeof(T) * L);
        }
      }
    } else if (rows) {
      float* dst;
      if constexpr (std::is_same_v<T, float>) {
        dst = y + base;
      } else {
        dst = stage;
      }
      for (int k = 0; k < K; ++k)
        for (int64_t j0 = 0; j0 < cols; j0 += L) {
          const int64_t j = j0 + L <= cols ? j0 : cols - L;
          Isa::transpose(e + j * B + k * L, B, dst + k * L * cols + j, cols, inv + k * L);
        }
      if constexpr (!std::is_same_v<T, float>) softmax_narrow<Isa>(stage, y + base, cols * B);
    } else {
      for (int t = 0; t < n; ++t)
        for (int64_t j = 0; j < cols; ++j)
          softmax_out(e[j * B + t] * inv[t], y + off[t] + j * inner);
    }
    l += n;
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
  TG_KERNEL_OPS(TG_FILL)
#undef TG_FILL
  // The from-output backward has no program: both tiers' entries hold it.
#define TG_FILL_FROM_OUTPUT(op)                                                             \
  for (int tier = 0; tier < kNumTiers; ++tier)                                              \
    table[family_index(kFamily_##op, static_cast<Tier>(tier))].from_output[dtype_of<T>()] = \
        family_from_output<Isa, T, kFamily_##op>;
  TG_FROM_OUTPUT_OPS(TG_FILL_FROM_OUTPUT)
#undef TG_FILL_FROM_OUTPUT
  if constexpr (!std::is_same_v<T, double>) {
    constexpr int d = dtype_of<T>();
    table[family_index(kFamily_exp2, kTier_accurate)].softmax[d] =
        family_softmax<Isa, T, shapes::exp2_accurate>;
    table[family_index(kFamily_exp2, kTier_paper)].softmax[d] =
        family_softmax<Isa, T, shapes::exp2_paper>;
    table[family_index(kFamily_exp2, kTier_accurate)].softmax_lanes[d] =
        family_softmax_lanes<Isa, T, shapes::exp2_accurate>;
    table[family_index(kFamily_exp2, kTier_paper)].softmax_lanes[d] =
        family_softmax_lanes<Isa, T, shapes::exp2_paper>;
  }
}

// The cells kernels of the ops whose function has them (family.h's family_cells_index):
// sigmoid, tanh, SiLU, and softcap and SwiGLU through tanh's and SiLU's.
template <class Isa, class T>
void family_fill_cells(FamilyKernels* table) {
#define TG_FILL_CELLS(op, fn, kind)                           \
  if constexpr (coeffs::fn##_family_cells.forward != nullptr) \
    family_fill_one<Isa, T, shapes::fn##_cells, Kind::kind>(  \
        table[family_cells_index(kFamily_##op)]);
  TG_KERNEL_OPS(TG_FILL_CELLS)
#undef TG_FILL_CELLS
}

// ---------------------------------------------------------------- run-time programs
// poly_ops.cpp's poly_family: the float32 forward of a program whose form, variable and
// degree are chosen at run time (the sweep times fitted candidates with it), through the same
// element function and loop as the ops (family_eval, map1, plain stores). One instantiation
// per form, variable and degree of TG_KERNEL_DEGREES: false where there is none
// (XHalfPlusEven in x^2, GELU's form, which poly_gelu runs; the Exp2 forms in x^2).
template <class Isa, Form F, bool Y>
bool program_forward_in(const float* x, float* out, int64_t n, const FamilyProgram& p) {
  using V = typename Isa::V;
  const FamilyProgram k = p;  // a local copy: stores to `out` cannot alias it
  switch (k.degree) {
#define TG_CASE(D)                                                                           \
  case D:                                                                                    \
    map1<Isa, float, false>(x, out, n, [&](V v) { return family_eval<F, D + 1, Y>(v, k); }); \
    return true;
    TG_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

template <class Isa>
bool program_forward(const float* x, float* out, int64_t n, const FamilyProgram& p, Form form,
                     bool in_y) {
  switch (form) {
#define TG_FORM(F)                                                     \
  case Form::F:                                                        \
    return in_y ? program_forward_in<Isa, Form::F, true>(x, out, n, p) \
                : program_forward_in<Isa, Form::F, false>(x, out, n, p);
    TG_FORM(HalfPlusOdd)
    TG_FORM(Odd)
    TG_FORM(XHalfPlus)
    TG_FORM(Even)
    TG_FORM(HalfPlusSigned)
    TG_FORM(XHalfPlusNonNeg)
#undef TG_FORM
    case Form::XHalfPlusEven:
      return !in_y && program_forward_in<Isa, Form::XHalfPlusEven, false>(x, out, n, p);
    // exp2: 2^n P(f), P in f itself (the Exp2 forms read only the coefficients)
    case Form::Exp2Nearest:
      return !in_y && program_forward_in<Isa, Form::Exp2Nearest, false>(x, out, n, p);
    case Form::Exp2Floor:
      return !in_y && program_forward_in<Isa, Form::Exp2Floor, false>(x, out, n, p);
    default:
      return false;
  }
}

// The table of an instruction set: float32, float16 and bfloat16 on Isa; float64 on Isa64
// (void: none, the scalar table's is used).
template <class Isa, class Isa64 = void>
const FamilyKernels* family_kernels() {
  static const auto table = [] {
    struct Table {
      FamilyKernels ops[kFamilyTableSize]{};
    } t;
    family_fill<Isa, float>(t.ops);
    family_fill<Isa, f16_t>(t.ops);
    family_fill<Isa, bf16_t>(t.ops);
    family_fill_cells<Isa, float>(t.ops);
    family_fill_cells<Isa, f16_t>(t.ops);
    family_fill_cells<Isa, bf16_t>(t.ops);
    if constexpr (!std::is_void_v<Isa64>) {
      family_fill<Isa64, double>(t.ops);
      family_fill_cells<Isa64, double>(t.ops);
    }
    return t;
  }();
  return table.ops;
}

// The table of an instruction set that differs from `base` in its bfloat16 store only (the
// *bf16 sets: avx512bf16 over avx512, neonbf16 over neon): base's float32 and float16 kernels
// and run-time programs, Isa's bfloat16 ones.
template <class Isa>
KernelTable bf16_table_over(const char* name, const KernelTable* base) {
  static const auto family = [base] {
    struct Table {
      FamilyKernels ops[kFamilyTableSize];
    } t;
    for (int i = 0; i < kFamilyTableSize; ++i) t.ops[i] = base->family[i];
    family_fill<Isa, bf16_t>(t.ops);
    family_fill_cells<Isa, bf16_t>(t.ops);
    return t;
  }();
  return {
      name,
      {base->forward[kF32], base->forward[kF16], forward_any<Isa, bf16_t>, nullptr},
      {base->backward[kF32], base->backward[kF16], backward_any<Isa, bf16_t>, nullptr},
      family.ops,
      base->program_forward,  // float32: the base table's
  };
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
