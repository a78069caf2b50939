// Streaming loops over contiguous arrays, shared by every CPU instruction set.
//
// Each loop takes a traits struct `Isa` with
//   using V;                      // W float lanes
//   static constexpr int W;
//   load(const T*), store(T*, V)              for T in float, f16_t, bf16_t
//   load_n(const T*, int n), store_n(T*, V, int n)   the first n < W lanes, others untouched
// The tail goes through the same vector code as the body (masked or padded), so each element
// gets the same bits whatever the chunking: results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {

inline namespace TG_ISA_NAMESPACE {

template <class Isa, class T, int N, Scheme S>
bool forward_loop(const void* xv, void* ov, int64_t n, const PolyCoeffs& kref) {
  const PolyCoeffs k = kref;  // a local copy: stores to `out` cannot alias the coefficients
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  int64_t i = 0;
  for (; i + Isa::W <= n; i += Isa::W) Isa::store(out + i, gelu_forward<N, S>(Isa::load(x + i), k));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    Isa::store_n(out + i, gelu_forward<N, S>(Isa::load_n(x + i, r), k), r);
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
  for (; i + Isa::W <= n; i += Isa::W)
    Isa::store(out + i, gelu_backward<N, S>(Isa::load(g + i), Isa::load(x + i), k));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    Isa::store_n(out + i, gelu_backward<N, S>(Isa::load_n(g + i, r), Isa::load_n(x + i, r), k),
                 r);
  }
  return true;
}

template <class Isa, class T>
bool forward_any(const void* x, void* out, int64_t n, const PolyCoeffs& k, Scheme s) {
  switch (k.degree) {
#define TG_CASE(D)                                                            \
  case D:                                                                     \
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
#define TG_CASE(D)                                                                  \
  case D:                                                                           \
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
