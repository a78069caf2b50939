// Streaming loops over contiguous arrays, shared by every CPU instruction set.
//
// Each loop takes a traits struct `Isa` with
//   using V;                       // a vector of float lanes (float itself when scalar)
//   static constexpr int K, B;     // vectors per block, elements per block
//   load(const T*, V (&)[K]), store(T*, const V (&)[K])   for each element type T
// A block is two vectors on the SIMD paths: bfloat16 is widened by interleaving 32 values
// with zeros (vpunpck{l,h}wd) and narrowed by the inverse pack, which is cheaper than
// converting 16 at a time; float16 and float32 simply unroll by two.
// The tail (under one block) is copied through a zero-padded buffer and goes through the
// same block code, so each element gets the same bits whatever the chunking: results do not
// depend on the thread count.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {

inline namespace TG_ISA_NAMESPACE {

// out[i] = f(x[i]) block by block; f maps one vector of lanes.
template <class Isa, class T, class F>
TG_INLINE void map1(const void* xv, void* ov, int64_t n, F f) {
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  typename Isa::V v[Isa::K];
  int64_t i = 0;
  for (; i + Isa::B <= n; i += Isa::B) {
    Isa::load(x + i, v);
    for (int j = 0; j < Isa::K; ++j) v[j] = f(v[j]);
    Isa::store(out + i, v);
  }
  if (i < n) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(n - i);
    T xb[Isa::B], ob[Isa::B];
    std::memset(xb, 0, sizeof xb);
    std::memcpy(xb, x + i, bytes);
    Isa::load(xb, v);
    for (int j = 0; j < Isa::K; ++j) v[j] = f(v[j]);
    Isa::store(ob, v);
    std::memcpy(out + i, ob, bytes);
  }
}

// out[i] = f(g[i], x[i]).
template <class Isa, class T, class F>
TG_INLINE void map2(const void* gv, const void* xv, void* ov, int64_t n, F f) {
  const T* g = static_cast<const T*>(gv);
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  typename Isa::V a[Isa::K], b[Isa::K];
  int64_t i = 0;
  for (; i + Isa::B <= n; i += Isa::B) {
    Isa::load(g + i, a);
    Isa::load(x + i, b);
    for (int j = 0; j < Isa::K; ++j) a[j] = f(a[j], b[j]);
    Isa::store(out + i, a);
  }
  if (i < n) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(n - i);
    T gb[Isa::B], xb[Isa::B], ob[Isa::B];
    std::memset(gb, 0, sizeof gb);
    std::memset(xb, 0, sizeof xb);
    std::memcpy(gb, g + i, bytes);
    std::memcpy(xb, x + i, bytes);
    Isa::load(gb, a);
    Isa::load(xb, b);
    for (int j = 0; j < Isa::K; ++j) a[j] = f(a[j], b[j]);
    Isa::store(ob, a);
    std::memcpy(out + i, ob, bytes);
  }
}

// The coefficients are copied to a local first: stores to `out` cannot alias them, so the
// compiler keeps them (and the cells' tables) in registers across the loop.
template <class Isa, class T, int N, Scheme S>
bool forward_loop(const void* x, void* out, int64_t n, const PolyCoeffs& kref) {
  const PolyCoeffs k = kref;
  using V = typename Isa::V;
  map1<Isa, T>(x, out, n, [&](V v) { return gelu_forward<N, S>(v, k); });
  return true;
}

template <class Isa, class T, int N, Scheme S>
bool backward_loop(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& kref) {
  const PolyCoeffs k = kref;
  using V = typename Isa::V;
  map2<Isa, T>(g, x, out, n, [&](V gv, V xv) { return gelu_backward<N, S>(gv, xv, k); });
  return true;
}

template <class Isa, class T>
void forward_cells(const void* x, void* out, int64_t n, const CellTable& tref) {
  const CellTable t = tref;
  using V = typename Isa::V;
  map1<Isa, T>(x, out, n, [&](V v) { return gelu_forward_cells(v, t); });
}

template <class Isa, class T>
void backward_cells(const void* g, const void* x, void* out, int64_t n, const CellTable& tref) {
  const CellTable t = tref;
  using V = typename Isa::V;
  map2<Isa, T>(g, x, out, n, [&](V gv, V xv) { return gelu_backward_cells(gv, xv, t); });
}

template <class Isa, class T>
bool forward_any(const void* x, void* out, int64_t n, const PolyCoeffs& k, Scheme s) {
  switch (k.degree) {
#define TG_CASE(D)                                                                         \
  case D:                                                                                  \
    return s == Scheme::Horner ? forward_loop<Isa, T, D + 1, Scheme::Horner>(x, out, n, k) \
                               : forward_loop<Isa, T, D + 1, Scheme::Estrin>(x, out, n, k);
    TG_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

template <class Isa, class T>
bool backward_any(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                  Scheme s) {
  switch (k.degree) {
#define TG_CASE(D)                                                                             \
  case D:                                                                                      \
    return s == Scheme::Horner ? backward_loop<Isa, T, D + 1, Scheme::Horner>(g, x, out, n, k) \
                               : backward_loop<Isa, T, D + 1, Scheme::Estrin>(g, x, out, n, k);
    TG_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
