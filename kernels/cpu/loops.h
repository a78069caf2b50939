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
#include <utility>

#include "cpu_kernels.h"
#include "turbogelu/family_eval.h"

namespace turbogelu {
namespace cpu {

inline namespace TG_ISA_NAMESPACE {

// One block (or the part of one under `bytes`) through a zero-padded buffer: the loops' head
// and tail, so that every element goes through the same block code.
template <class Isa, class T, int NIn, class F>
TG_INLINE void one_block_buffered(const T* const (&in)[NIn], T* out, int64_t count, F f) {
  const size_t bytes = sizeof(T) * static_cast<size_t>(count);
  T ib[NIn][Isa::B], ob[Isa::B];
  typename Isa::V v[NIn][Isa::K];
  for (int a = 0; a < NIn; ++a) {
    std::memset(ib[a], 0, sizeof ib[a]);
    std::memcpy(ib[a], in[a], bytes);
    Isa::load(ib[a], v[a]);
  }
  for (int j = 0; j < Isa::K; ++j) {
    if constexpr (NIn == 1) {
      v[0][j] = f(v[0][j]);
    } else {
      v[0][j] = f(v[0][j], v[1][j]);
    }
  }
  Isa::store(ob, v[0]);
  std::memcpy(out, ob, bytes);
}

// Elements before the first 64-byte-aligned output address: the head that a streaming loop
// writes through the block buffer (non-temporal stores need aligned addresses; starting on a
// line, consecutive blocks fill whole lines).
template <class T>
TG_INLINE int64_t head_elements(const T* out, int64_t n) {
  const auto mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) & 63);
  const int64_t h = mis == 0 ? 0 : (64 - mis) / static_cast<int64_t>(sizeof(T));
  return h < n ? h : n;
}

// HasStreamStore<Isa, T>: the traits store a block of T with non-temporal stores directly
// (float32: the vectors are the stored data), rather than through the buffer.
template <class Isa, class T, class = void>
struct HasStreamStore {
  static constexpr bool value = false;
};
template <class Isa, class T>
struct HasStreamStore<Isa, T,
                      decltype(Isa::stream_store(static_cast<T*>(nullptr),
                                                 std::declval<const typename Isa::V (&)[Isa::K]>()),
                               void())> {
  static constexpr bool value = true;
};

// Streaming stores pay only when whole lines leave back to back. Measured on a Sapphire
// Rapids-class Xeon (one thread, out=, 16M elements): a loop that streamed one 64-byte line
// per block (float16 and bfloat16 under AVX-512, float32 under AVX2) took 1.3-1.6x the time
// of the same loop with plain stores, while float32 under AVX-512 (two lines a block) took
// 0.83x; streaming two lines at a time, the float16 cells loop went from 9.9 to 5.3 ms (plain
// 5.5). So a streamed iteration computes StreamGroup blocks and then stores their
// kStreamBytes together (python -m experiments.bench_accounting times both stores).
constexpr int64_t kStreamBytes = 128;
template <class Isa, class T>
struct StreamGroup {
  static constexpr int bytes = static_cast<int>(sizeof(T)) * Isa::B;
  static constexpr int blocks = bytes >= kStreamBytes ? 1 : static_cast<int>(kStreamBytes) / bytes;
};

// Streamed calls are the large ones, whose inputs come from memory: the hardware prefetchers
// of one thread do not keep enough of their lines in flight while the loop computes, so the
// streamed loops ask for each input line kPrefetchBytes ahead (prefetcht0). Measured on the
// Sapphire Rapids-class Xeon (one thread, 64M elements, out=, x the streaming copy or
// read2): AVX-512 (cells) float16 GELU forward 2.19 -> 1.29, bfloat16 1.48 -> 1.19, both
// backwards 1.48 -> 1.15, float32 backward 1.08 -> 1.04; AVX2 (polynomial) float16 forward
// 4.17 -> 1.68, bfloat16 3.93 -> 1.79, float32 backward 1.40 -> 1.11. At 1M (in cache) it
// changed nothing beyond the noise. float32 loops with one input keep without: AVX-512's
// float32 forward measured 1.05-1.07 without and 1.18-1.19 with. The distance: float16's
// forward took 1.32x at 0.5 KiB, 1.22x at 2 KiB, 1.24x at 4 KiB, 1.62x with prefetchnta. The
// address is formed as an integer: it may lie past the input's end, which a prefetch does
// not touch.
// The 16-bit one-input loops (the forwards) also ask for each line kPrefetchL2Bytes ahead into
// L2 (prefetcht1): same machine, 64M, x the streaming copy, two runs each: float16 forward
// 1.22-1.27 -> 1.04-1.07, bfloat16 1.27-1.29 -> 1.05-1.06 (16 KiB: 1.07 / 1.07). With two
// inputs the backwards got slower with it (1.08 -> 1.15), so they keep one prefetch.
constexpr int64_t kPrefetchBytes = 2048;
constexpr int64_t kPrefetchL2Bytes = 8192;
template <class T, int NIn>
TG_INLINE void prefetch_ahead(const T* const (&in)[NIn], int64_t i, int64_t bytes) {
  if constexpr (sizeof(T) != 2 && NIn == 1) return;  // float32's one-input loops: see above
  for (int a = 0; a < NIn; ++a) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(in[a] + i);
    for (int64_t b = 0; b < bytes; b += 64) {
      __builtin_prefetch(reinterpret_cast<const void*>(at + kPrefetchBytes + b), 0, 3);
      if constexpr (NIn == 1)
        __builtin_prefetch(reinterpret_cast<const void*>(at + kPrefetchL2Bytes + b), 0, 2);
    }
  }
}

// out[i] = f(in[0][i], ..., in[NIn-1][i]) block by block; f maps one vector of lanes of each
// input. Stream: after a head that aligns the output to a line, whole blocks are written with
// non-temporal stores (Isa::stream_store straight from the registers, StreamGroup blocks at a
// time; traits without it through an aligned buffer, Isa::stream_block), then
// Isa::stream_fence; the bits are those of the plain loop.
template <class Isa, class T, int NIn, bool Stream, class F>
TG_INLINE void map_n(const T* const (&in)[NIn], T* out, int64_t n, F f) {
  typename Isa::V v[NIn][Isa::K];
  // The block at element i: loaded into r, mapped into r[0].
  const auto block = [&](int64_t i, typename Isa::V(&r)[NIn][Isa::K]) {
    for (int a = 0; a < NIn; ++a) Isa::load(in[a] + i, r[a]);
    for (int j = 0; j < Isa::K; ++j) {
      if constexpr (NIn == 1) {
        r[0][j] = f(r[0][j]);
      } else {
        r[0][j] = f(r[0][j], r[1][j]);
      }
    }
  };
  int64_t i = 0;
  if constexpr (Stream) {
    static_assert(sizeof(T) * Isa::B % 32 == 0, "a streamed block is whole 32-byte stores");
    const int64_t h = head_elements(out, n);
    while (i < h) {  // under 64 bytes: one or two blocks (AVX2 16-bit blocks are 32 bytes)
      const int64_t count = h - i < Isa::B ? h - i : Isa::B;
      const T* head[NIn];
      for (int a = 0; a < NIn; ++a) head[a] = in[a] + i;
      one_block_buffered<Isa, T, NIn>(head, out + i, count, f);
      i += count;
    }
  }
  if constexpr (Stream && HasStreamStore<Isa, T>::value && StreamGroup<Isa, T>::blocks > 1) {
    // Whole groups: every block of the group computed, then all its lines stored at once.
    constexpr int G = StreamGroup<Isa, T>::blocks;
    typename Isa::V w[G][NIn][Isa::K];
    for (; i + G * Isa::B <= n; i += G * Isa::B) {
      prefetch_ahead<T, NIn>(in, i, G * Isa::B * static_cast<int64_t>(sizeof(T)));
      for (int b = 0; b < G; ++b) block(i + b * Isa::B, w[b]);
      for (int b = 0; b < G; ++b) Isa::stream_store(out + i + b * Isa::B, w[b][0]);
    }
  }
  for (; i + Isa::B <= n; i += Isa::B) {
    if constexpr (Stream) prefetch_ahead<T, NIn>(in, i, Isa::B * static_cast<int64_t>(sizeof(T)));
    block(i, v);
    if constexpr (Stream && HasStreamStore<Isa, T>::value) {
      Isa::stream_store(out + i, v[0]);
    } else if constexpr (Stream) {
      alignas(64) T ob[Isa::B];
      Isa::store(ob, v[0]);
      Isa::stream_block(out + i, ob, sizeof ob);
    } else {
      Isa::store(out + i, v[0]);
    }
  }
  if (i < n) {
    const T* tail[NIn];
    for (int a = 0; a < NIn; ++a) tail[a] = in[a] + i;
    one_block_buffered<Isa, T, NIn>(tail, out + i, n - i, f);
  }
  if constexpr (Stream) Isa::stream_fence();
}

template <class Isa, class T, bool Stream, class F>
TG_INLINE void map1(const void* xv, void* ov, int64_t n, F f) {
  const T* const in[1] = {static_cast<const T*>(xv)};
  map_n<Isa, T, 1, Stream>(in, static_cast<T*>(ov), n, f);
}

template <class Isa, class T, bool Stream, class F>
TG_INLINE void map2(const void* gv, const void* xv, void* ov, int64_t n, F f) {
  const T* const in[2] = {static_cast<const T*>(gv), static_cast<const T*>(xv)};
  map_n<Isa, T, 2, Stream>(in, static_cast<T*>(ov), n, f);
}

// GELU's run-time-coefficient kernels (poly_gelu, and the benchmark's Estrin scheme; the
// shipped ops run their rows of the family's table, family_loops.h): the coefficients are
// turned into a program held in a local first, so that stores to `out` cannot alias it and
// the compiler keeps it in registers across the loop.
template <class Isa, class T, int N, Scheme S, bool Stream>
bool forward_loop(const void* x, void* out, int64_t n, const PolyCoeffs& kref) {
  const FamilyProgram f = gelu_as_program(kref, -0.0f, 0.0f);
  using V = typename Isa::V;
  map1<Isa, T, Stream>(x, out, n, [&](V v) { return gelu_forward<N, S>(v, f); });
  return true;
}

template <class Isa, class T, int N, Scheme S, bool Stream>
bool backward_loop(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& kref) {
  const FamilyProgram d = gelu_as_program(kref, 0.0f, 1.0f);
  using V = typename Isa::V;
  map2<Isa, T, Stream>(g, x, out, n, [&](V gv, V xv) { return gelu_backward<N, S>(gv, xv, d); });
  return true;
}

// CanStream<Isa>: the traits have stream_block / stream_fence (the SIMD paths). A request to
// stream elsewhere takes plain stores: the same bits.
template <class Isa, class = void>
struct CanStream {
  static constexpr bool value = false;
};
template <class Isa>
struct CanStream<Isa, decltype(&Isa::stream_fence, void())> {
  static constexpr bool value = true;
};

// Streaming variants are compiled for the shipped degree with Horner's scheme only (each
// instantiation costs compile time; other degrees and Estrin are the benchmark's).
constexpr int kStreamDegree = 8;

template <class Isa, class T>
bool forward_any(const void* x, void* out, int64_t n, const PolyCoeffs& k, Scheme s, bool stream) {
  if constexpr (CanStream<Isa>::value) {
    if (stream && k.degree == kStreamDegree && s == Scheme::Horner)
      return forward_loop<Isa, T, kStreamDegree + 1, Scheme::Horner, true>(x, out, n, k);
  }
  switch (k.degree) {
#define TG_CASE(D)                                                                                \
  case D:                                                                                         \
    return s == Scheme::Horner ? forward_loop<Isa, T, D + 1, Scheme::Horner, false>(x, out, n, k) \
                               : forward_loop<Isa, T, D + 1, Scheme::Estrin, false>(x, out, n, k);
    TG_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

template <class Isa, class T>
bool backward_any(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k, Scheme s,
                  bool stream) {
  if constexpr (CanStream<Isa>::value) {
    if (stream && k.degree == kStreamDegree && s == Scheme::Horner)
      return backward_loop<Isa, T, kStreamDegree + 1, Scheme::Horner, true>(g, x, out, n, k);
  }
  switch (k.degree) {
#define TG_CASE(D)                                                                    \
  case D:                                                                             \
    return s == Scheme::Horner                                                        \
               ? backward_loop<Isa, T, D + 1, Scheme::Horner, false>(g, x, out, n, k) \
               : backward_loop<Isa, T, D + 1, Scheme::Estrin, false>(g, x, out, n, k);
    TG_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace cpu
}  // namespace turbogelu
