// The streaming machinery of every elementwise CUDA kernel (GELU's in gelu_kernels.cu, the
// activation family's in family_kernels.cu): a kernel body is a functor over the widened
// elements of its inputs, and `elementwise` runs it over n elements of NIn inputs and NOut
// outputs the way GELU's kernels always have:
//
// Memory: the ops are memory-bound, so each thread moves 16 bytes per load and store (float4,
// 8 halves) and keeps kUnroll of them in flight. Every tensor goes through these 16-byte
// loops, whatever its address: the kernel first peels the elements before out[0]'s first
// 16-byte boundary (fewer than 16 / sizeof(T), one per thread, with the tail), then stores
// 16 bytes at a time; an operand at the same offset in its 16-byte line as out[0] is read (or
// written) 16 bytes at a time too, one at another offset (x[1:] into a fresh out) element by
// element (a warp's V accesses of its packs together touch whole lines). The grid is one
// wave: the SMs times the blocks of this kernel that fit on one
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor: its registers decide), striding over the rest.
//
// Each element is read and written by one thread in one loop trip, every input before any
// output: an output may be one of the inputs (in place), never a partial overlap of one.
//
// `elementwise_pairs` is the same loop (one PackLoop, over a lanes policy) for a body over two
// elements at a time (the family's packed bfloat16 path: one __nv_bfloat162 per two elements).
//
// Device code and the launch helpers only, no torch headers; included by the .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace turbogelu {
namespace cuda {

// The SMs of the current device (cached per device; 1 if the runtime cannot say) and the
// record of the last launch that cuda::last_launch() reports; defined in gelu_kernels.cu,
// shared by every kernel file.
int sm_count();
void record_launch(int blocks, int blocks_per_sm, int sms);

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 2;  // 16-byte loads per input per thread per loop trip (by default)
constexpr int kMaxDevices = 64;

// Storage <-> compute type, rounding to nearest even like c10::Half / c10::BFloat16 and the
// CPU kernels (kernels/cpu/convert.h).
template <class T>
struct Elem {
  using Acc = T;  // float, double
  __device__ __forceinline__ static Acc load(T v) { return v; }
  __device__ __forceinline__ static T store(Acc v) { return v; }
};
template <>
struct Elem<__half> {
  using Acc = float;
  __device__ __forceinline__ static float load(__half v) { return __half2float(v); }
  __device__ __forceinline__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<__nv_bfloat16> {
  using Acc = float;
  __device__ __forceinline__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ __forceinline__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

// V elements moved as one access (16 bytes when V = 16 / sizeof(T)).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Elements from p to its next 16-byte boundary (p is aligned to its element, as every
// tensor's data is).
template <class T>
__device__ __forceinline__ int64_t to_boundary(const T* p) {
  return static_cast<int64_t>((16u - (reinterpret_cast<uintptr_t>(p) & 15u)) & 15u) / sizeof(T);
}

// p and q at the same offset in their 16-byte lines: once one is aligned, so is the other.
__device__ __forceinline__ bool same_phase(const void* p, const void* q) {
  return ((reinterpret_cast<uintptr_t>(p) ^ reinterpret_cast<uintptr_t>(q)) & 15u) == 0;
}

// Pack i of p: one 16-byte load when p is 16-byte aligned (Vec), else V element loads.
template <bool Vec, class T, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p, int64_t i) {
  if constexpr (Vec) {
    return reinterpret_cast<const Pack<T, V>*>(p)[i];
  } else {
    Pack<T, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = p[i * V + j];
    return r;
  }
}

// Pack i of p written: one 16-byte store when p is 16-byte aligned (Vec), else V stores.
template <bool Vec, class T, int V>
__device__ __forceinline__ void store_pack(T* p, int64_t i, const Pack<T, V>& r) {
  if constexpr (Vec) {
    reinterpret_cast<Pack<T, V>*>(p)[i] = r;
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) p[i * V + j] = r.v[j];
  }
}

// The operands of one launch: NIn inputs and NOut outputs of n elements each, indexed alike.
template <class T, int NIn, int NOut>
struct Operands {
  const T* in[NIn];
  T* out[NOut];
};

// The widened values of one element's operands, the bodies' argument and result.
template <class A, int N>
struct Vals {
  A v[N];
};

// f(integral_constant<int, 0>), ..., f(integral_constant<int, N - 1>): every per-operand step
// is expanded at compile time, with the operand's index a constant (which also picks its
// access, 16 bytes or per element). Not a loop over the operands: with one, NVVM made GELU's
// float16 / bfloat16 backward kernels 64 registers instead of 60.
template <class F, int... I>
__device__ __forceinline__ void each_index(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
__device__ __forceinline__ void each(F&& f) {
  each_index(f, std::make_integer_sequence<int, N>{});
}
#define TG_INDEX(c) decltype(c)::value  // the index each() passed, as a constant expression

// The checked operands of a launch, whose offset in a 16-byte line is compared with out[0]'s:
// the inputs 0 .. NIn - 1, then the outputs 1 .. NOut - 1 (as NIn ..). Bit j of a mask: checked
// operand j is at out[0]'s offset, so it is read (or written) 16 bytes at a time.
template <int NIn, int NOut>
constexpr int kChecked = NIn + NOut - 1;

template <int J, class T, int NIn, int NOut>
__device__ __forceinline__ const void* checked(const Operands<T, NIn, NOut>& p) {
  if constexpr (J < NIn)
    return p.in[J];
  else
    return p.out[J - NIn + 1];
}

template <unsigned Mask, int J>
constexpr bool kVec = ((Mask >> J) & 1u) != 0;

// How a body sees a pack's elements: ScalarLanes<T> one at a time in Elem<T>'s compute type
// (every kernel's float path), or two neighbours as one packed value (bf16x2.cuh's
// Bf16Pairs). kWidth elements per value; get / put move one value out of / into a pack at
// element j; edge / unedge do it for the single elements of the head and the tail.
template <class Storage>
struct ScalarLanes {
  using T = Storage;
  using Acc = typename Elem<T>::Acc;
  static constexpr int kWidth = 1;
  template <class P>
  __device__ __forceinline__ static Acc get(const P& in, int j) {
    return Elem<T>::load(in.v[j]);
  }
  template <class P>
  __device__ __forceinline__ static void put(P& out, int j, Acc o) {
    out.v[j] = Elem<T>::store(o);
  }
  __device__ __forceinline__ static Acc edge(T v) { return Elem<T>::load(v); }
  __device__ __forceinline__ static T unedge(Acc o) { return Elem<T>::store(o); }
};

// The body of `elementwise`: packs [0, packs) of every operand (out[0] 16-byte aligned, the
// others too where Mask says so), Unroll packs of each input in flight per thread, each pack's
// elements handed to f L::kWidth at a time.
template <class L, int NIn, int NOut, class F, int Unroll>
struct PackLoop {
  using T = typename L::T;
  template <unsigned Mask>
  static __device__ __forceinline__ void run(const Operands<T, NIn, NOut>& p, int64_t packs,
                                             int64_t tid, int64_t stride, const F& f) {
    using A = typename L::Acc;
    constexpr int V = 16 / sizeof(T);
    static_assert(V % L::kWidth == 0, "a pack holds whole values");
    using P = Pack<T, V>;
    for (int64_t base = tid; base < packs; base += stride * Unroll) {
      P in[Unroll][NIn];
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const int64_t i = base + u * stride;
        if (i < packs) {
          each<NIn>([&](auto c) {
            constexpr int k = TG_INDEX(c);
            in[u][k] = load_pack<kVec<Mask, k>, T, V>(p.in[k], i);
          });
        }
      }
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const int64_t i = base + u * stride;
        if (i < packs) {
          P r[NOut];
#pragma unroll
          for (int j = 0; j < V; j += L::kWidth) {
            Vals<A, NIn> a;
            each<NIn>([&](auto c) { a.v[TG_INDEX(c)] = L::get(in[u][TG_INDEX(c)], j); });
            const Vals<A, NOut> o = f(a);
            each<NOut>([&](auto c) { L::put(r[TG_INDEX(c)], j, o.v[TG_INDEX(c)]); });
          }
          each<NOut>([&](auto c) {
            constexpr int q = TG_INDEX(c);
            store_pack<q == 0 || kVec<Mask, NIn + q - 1>, T, V>(p.out[q], i, r[q]);
          });
        }
      }
    }
  }
};

// Runs Loop::run<Mask>(args...) with the Mask of p's checked operands at p.out[0]'s offset,
// so that each case is a loop of its own with only its own registers live (one loop with
// run-time branches took up to 68 registers, 64 at most this way). With one or two checked
// operands every case has its loop (GELU's forward 2, backward 4); with more (the gated
// backward: three inputs and a second output) there are two: all of them at out[0]'s offset
// (fresh tensors, contiguous copies), or all of them element by element.
template <class Loop, class T, int NIn, int NOut, class... Args>
__device__ __forceinline__ void with_phases(const Operands<T, NIn, NOut>& p, const Args&... args) {
  constexpr int K = kChecked<NIn, NOut>;
  const void* const o = p.out[0];
  if constexpr (K == 1) {
    if (same_phase(checked<0>(p), o))
      Loop::template run<1u>(args...);
    else
      Loop::template run<0u>(args...);
  } else if constexpr (K == 2) {
    const bool v0 = same_phase(checked<0>(p), o);
    const bool v1 = same_phase(checked<1>(p), o);
    if (v0 && v1)
      Loop::template run<3u>(args...);
    else if (v1)  // GELU's backward: x elsewhere (the saved input of a view), grad and out fresh
      Loop::template run<2u>(args...);
    else if (v0)
      Loop::template run<1u>(args...);
    else
      Loop::template run<0u>(args...);
  } else {
    bool all = true;
    each<K>([&](auto c) { all = all && same_phase(checked<TG_INDEX(c)>(p), o); });
    if (all)
      Loop::template run<(1u << K) - 1u>(args...);
    else
      Loop::template run<0u>(args...);
  }
}

// The elements outside the 16-byte body (the head before out[0]'s first boundary, the tail
// after the last full pack: fewer than 2 V, so block 0 covers them), one per thread: thread
// t < head takes element t, the next ones the tail.
__device__ __forceinline__ int64_t edge_element(int64_t tid, int64_t head, int64_t body) {
  return tid < head ? tid : tid + body;
}

// out[q][i] = f(in[0][i], ..., in[NIn - 1][i])[q] for i < n, over the whole grid: the head
// peeled to out[0]'s 16-byte boundary, the 16-byte body (Unroll packs per thread per trip),
// the tail; f sees L's values (elementwise: ScalarLanes, one element each).
template <class L, int Unroll, class T, int NIn, int NOut, class F>
__device__ __forceinline__ void elementwise_lanes(const Operands<T, NIn, NOut>& p, int64_t n,
                                                  const F& f) {
  using A = typename L::Acc;
  constexpr int V = 16 / sizeof(T);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t head = min(n, to_boundary(p.out[0]));
  const int64_t packs = (n - head) / V;
  Operands<T, NIn, NOut> body;
  each<NIn>([&](auto c) { body.in[TG_INDEX(c)] = p.in[TG_INDEX(c)] + head; });
  each<NOut>([&](auto c) { body.out[TG_INDEX(c)] = p.out[TG_INDEX(c)] + head; });
  with_phases<PackLoop<L, NIn, NOut, F, Unroll>>(p, body, packs, tid, stride, f);
  if (tid < n - packs * V) {
    const int64_t i = edge_element(tid, head, packs * V);
    Vals<A, NIn> a;
    each<NIn>([&](auto c) { a.v[TG_INDEX(c)] = L::edge(p.in[TG_INDEX(c)][i]); });
    const Vals<A, NOut> o = f(a);
    each<NOut>([&](auto c) { p.out[TG_INDEX(c)][i] = L::unedge(o.v[TG_INDEX(c)]); });
  }
}

template <int Unroll = kUnroll, class T, int NIn, int NOut, class F>
__device__ __forceinline__ void elementwise(const Operands<T, NIn, NOut>& p, int64_t n,
                                            const F& f) {
  elementwise_lanes<ScalarLanes<T>, Unroll>(p, n, f);
}

// The same loop over two neighbouring elements per value (L: a pair policy such as
// bf16x2.cuh's Bf16Pairs, whose arithmetic is one packed instruction per two elements): the
// head and the tail one element per thread, in both lanes of a value, the result its low lane.
template <class L, int Unroll = kUnroll, class T, int NIn, int NOut, class F>
__device__ __forceinline__ void elementwise_pairs(const Operands<T, NIn, NOut>& p, int64_t n,
                                                  const F& f) {
  elementwise_lanes<L, Unroll>(p, n, f);
}

// ---------------------------------------------------------------- launch helpers (host)

// Blocks of Kernel resident on one SM at kThreads threads, asked of the runtime once per
// device: its register count decides it (a fixed guess of 8 made 1.33 or 2 waves of the
// kernels that use more than 32 registers, where 6 or 4 blocks fit).
template <auto Kernel>
cudaError_t resident_blocks(int* per_sm) {
  static std::atomic<int> cache[kMaxDevices];  // 0: not asked yet
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  std::atomic<int>& slot = cache[dev >= 0 && dev < kMaxDevices ? dev : 0];
  int blocks = slot.load(std::memory_order_relaxed);
  if (blocks == 0) {
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, kThreads, 0);
    if (err != cudaSuccess) return err;
    if (blocks < 1) blocks = 1;
    slot.store(blocks, std::memory_order_relaxed);
  }
  *per_sm = blocks;
  return cudaSuccess;
}

// The grid for `threads` threads of work: at most one wave of Kernel, at least one block
// (the head and tail alone). Recorded for last_launch().
template <auto Kernel>
cudaError_t grid_for(int64_t threads, unsigned* grid) {
  int per_sm = 0;
  const cudaError_t err = resident_blocks<Kernel>(&per_sm);
  if (err != cudaSuccess) return err;
  const int sms = sm_count();
  int64_t blocks = (threads + kThreads - 1) / kThreads;
  const int64_t wave = static_cast<int64_t>(sms) * per_sm;
  if (blocks > wave) blocks = wave;
  if (blocks < 1) blocks = 1;
  *grid = static_cast<unsigned>(blocks);
  record_launch(static_cast<int>(blocks), per_sm, sms);
  return cudaSuccess;
}

// The grid of an `elementwise<Unroll>` kernel over n elements of T: a thread per Unroll packs.
template <auto Kernel, class T, int Unroll = kUnroll>
cudaError_t elementwise_grid(int64_t n, unsigned* grid) {
  constexpr int V = 16 / sizeof(T);
  return grid_for<Kernel>((n / V + Unroll - 1) / Unroll, grid);
}

// Every pointer aligned to its element (as a tensor's data always is): the kernels rely on
// it to reach a 16-byte boundary by whole elements.
template <class T>
bool element_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(T) == 0;
}

}  // namespace
}  // namespace cuda
}  // namespace turbogelu

#undef TG_INDEX
