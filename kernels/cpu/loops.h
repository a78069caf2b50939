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

template <class Isa, class T, int N, Scheme S>
TG_INLINE void forward_block(const T* x, T* out, const PolyCoeffs& k) {
  typename Isa::V v[Isa::K];
  Isa::load(x, v);
  for (int j = 0; j < Isa::K; ++j) v[j] = gelu_forward<N, S>(v[j], k);
  Isa::store(out, v);
}

template <class Isa, class T, int N, Scheme S>
TG_INLINE void backward_block(const T* g, const T* x, T* out, const PolyCoeffs& k) {
  typename Isa::V gv[Isa::K], xv[Isa::K];
  Isa::load(g, gv);
  Isa::load(x, xv);
  for (int j = 0; j < Isa::K; ++j) gv[j] = gelu_backward<N, S>(gv[j], xv[j], k);
  Isa::store(out, gv);
}

template <class Isa, class T, int N, Scheme S>
bool forward_loop(const void* xv, void* ov, int64_t n, const PolyCoeffs& kref) {
  const PolyCoeffs k = kref;  // a local copy: stores to `out` cannot alias the coefficients
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  int64_t i = 0;
  for (; i + Isa::B <= n; i += Isa::B) forward_block<Isa, T, N, S>(x + i, out + i, k);
  if (i < n) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(n - i);
    T xb[Isa::B], ob[Isa::B];
    std::memset(xb, 0, sizeof xb);
    std::memcpy(xb, x + i, bytes);
    forward_block<Isa, T, N, S>(xb, ob, k);
    std::memcpy(out + i, ob, bytes);
  }
  return true;
}

template <class Isa, class T, int N, Scheme S>
bool backward_loop(const void* gv, const void* xv, void* ov, int64_t n, const PolyCoeffs& kref) {
  const PolyCoeffs k = kref;
  const T* g = static_cast<const T*>(gv);
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  int64_t i = 0;
  for (; i + Isa::B <= n; i += Isa::B) backward_block<Isa, T, N, S>(g + i, x + i, out + i, k);
  if (i < n) {
    const size_t bytes = sizeof(T) * static_cast<size_t>(n - i);
    T gb[Isa::B], xb[Isa::B], ob[Isa::B];
    std::memset(gb, 0, sizeof gb);
    std::memset(xb, 0, sizeof xb);
    std::memcpy(gb, g + i, bytes);
    std::memcpy(xb, x + i, bytes);
    backward_block<Isa, T, N, S>(gb, xb, ob, k);
    std::memcpy(out + i, ob, bytes);
  }
  return true;
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
