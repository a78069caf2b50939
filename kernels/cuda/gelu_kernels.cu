// CUDA kernels of turbogelu: a grid-stride streaming loop around the shared per-element
// template (kernels/include/turbogelu/poly_eval.h), so the GPU runs the same sequence of
// roundings as the CPU kernels and the numpy replay:
//
//   forward   gelu(x)  ~ x * (1/2 + x P(z))   for |x| <= R;  x for x > R;  -0.0 for x < -R
//   backward  gelu'(x) ~ 1/2 + x Q(z)         for |x| <= R;  1 for x > R;  0 for x < -R
//
// float16 / bfloat16 are widened to float32 for the math and rounded back to nearest even;
// float64 evaluates the same polynomial in double. Built with --fmad=false (setup.py): the
// template fuses exactly where it calls tg_fma (__fmaf_rn), nowhere else, as on the CPU.
//
// Memory: the op is memory-bound, so each thread moves 16 bytes per load and store (float4,
// 8 halves) and keeps kUnroll of them in flight. Every tensor goes through these 16-byte
// kernels, whatever its address: the kernel first peels the elements before out's first
// 16-byte boundary (fewer than 16 / sizeof(T), one per thread, with the tail), then stores
// 16 bytes at a time; an input at the same offset in its 16-byte line as out is read 16 bytes
// at a time too, an input at another offset (x[1:] into a fresh out) element by element (a
// warp's V loads of its packs together read whole lines). The grid is one wave: the SMs times
// the blocks of this kernel that fit on one (cudaOccupancyMaxActiveBlocksPerMultiprocessor:
// its registers decide, 4 to 8 blocks of 256 threads on sm_90), striding over the rest.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "cuda_kernels.h"

namespace turbogelu {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 2;  // 16-byte accesses per thread per loop trip
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

// Runs Body::run<XVec, GVec>(args...) with XVec / GVec: x / g at out's 16-byte offset (then
// read 16 bytes at a time), so that each case is a loop of its own with only its own
// registers live (one loop with run-time branches took up to 68 registers, 64 at most this
// way). Forward: g is unused (passed as aligned).
template <class Body, bool Backward, class... Args>
__device__ __forceinline__ void with_phases(const void* g, const void* x, const void* out,
                                            const Args&... args) {
  const bool x_vec = same_phase(x, out);
  if constexpr (Backward) {
    const bool g_vec = same_phase(g, out);
    if (x_vec && g_vec)
      Body::template run<true, true>(args...);
    else if (g_vec)  // x elsewhere: the saved input of a view, with grad and out fresh
      Body::template run<false, true>(args...);
    else if (x_vec)
      Body::template run<true, false>(args...);
    else
      Body::template run<false, false>(args...);
  } else {
    if (x_vec)
      Body::template run<true, true>(args...);
    else
      Body::template run<false, true>(args...);
  }
}

// The elements outside the 16-byte body (the head before out's first boundary, the tail
// after the last full pack: fewer than 2 V, so block 0 covers them), one per thread: thread
// t < head takes element t, the next ones the tail.
__device__ __forceinline__ int64_t edge_element(int64_t tid, int64_t head, int64_t body) {
  return tid < head ? tid : tid + body;
}

// The 16-byte body of gelu_kernel: packs [0, packs) of op (16-byte aligned), of xb, and of gb
// when Backward; XVec / GVec: that input is 16-byte aligned too, else read element-wise.
template <class T, int N, Scheme S, bool Backward>
struct GeluBody {
  template <bool XVec, bool GVec>
  static __device__ __forceinline__ void run(const T* gb, const T* xb, Pack<T, 16 / sizeof(T)>* op,
                                             int64_t packs, int64_t tid, int64_t stride,
                                             const PolyCoeffs& k) {
    using E = Elem<T>;
    using A = typename E::Acc;
    constexpr int V = 16 / sizeof(T);
    using P = Pack<T, V>;
    for (int64_t base = tid; base < packs; base += stride * kUnroll) {
      P xv[kUnroll], gv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t i = base + u * stride;
        if (i < packs) {
          xv[u] = load_pack<XVec, T, V>(xb, i);
          if constexpr (Backward) gv[u] = load_pack<GVec, T, V>(gb, i);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t i = base + u * stride;
        if (i < packs) {
          P r;
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const A xa = E::load(xv[u].v[j]);
            if constexpr (Backward)
              r.v[j] = E::store(gelu_backward<N, S>(E::load(gv[u].v[j]), xa, k));
            else
              r.v[j] = E::store(gelu_forward<N, S>(xa, k));
          }
          op[i] = r;
        }
      }
    }
  }
};

// Forward when Backward is false (g unused), else out = g * gelu'(x). Not __restrict__: out
// may be x (gelu_) or g; each element is read and written by one thread in one trip.
template <class T, int N, Scheme S, bool Backward>
__global__ void __launch_bounds__(kThreads)
    gelu_kernel(const T* g, const T* x, T* out, int64_t n, const __grid_constant__ PolyCoeffs k) {
  using E = Elem<T>;
  using A = typename E::Acc;
  constexpr int V = 16 / sizeof(T);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t head = min(n, to_boundary(out));
  const int64_t packs = (n - head) / V;
  with_phases<GeluBody<T, N, S, Backward>, Backward>(g, x, out, g + head, x + head,
                                                     reinterpret_cast<Pack<T, V>*>(out + head),
                                                     packs, tid, stride, k);
  if (tid < n - packs * V) {
    const int64_t i = edge_element(tid, head, packs * V);
    const A xa = E::load(x[i]);
    if constexpr (Backward)
      out[i] = E::store(gelu_backward<N, S>(E::load(g[i]), xa, k));
    else
      out[i] = E::store(gelu_forward<N, S>(xa, k));
  }
}

int sm_count() {
  static std::atomic<int> cache[kMaxDevices];  // 0: not asked yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 1;
  if (dev < 0 || dev >= kMaxDevices) dev = 0;
  int sms = cache[dev].load(std::memory_order_relaxed);
  if (sms == 0) {
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
      sms = 1;
    cache[dev].store(sms, std::memory_order_relaxed);
  }
  return sms;
}

// What the last launch chose (any thread; read by the probe _cuda_last_launch).
std::atomic<int> last_blocks{0}, last_per_sm{0}, last_sms{0};

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
// (the head and tail alone).
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
  last_blocks.store(static_cast<int>(blocks), std::memory_order_relaxed);
  last_per_sm.store(per_sm, std::memory_order_relaxed);
  last_sms.store(sms, std::memory_order_relaxed);
  return cudaSuccess;
}

// Every pointer aligned to its element (as a tensor's data always is): the kernels rely on
// it to reach a 16-byte boundary by whole elements.
template <class T>
bool element_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(T) == 0;
}

template <class T, int N, Scheme S, bool Backward>
cudaError_t launch_typed(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                         cudaStream_t stream) {
  if (!element_aligned<T>(x) || !element_aligned<T>(out) || !element_aligned<T>(g))
    return cudaErrorMisalignedAddress;
  constexpr int V = 16 / sizeof(T);
  constexpr auto kernel = gelu_kernel<T, N, S, Backward>;
  unsigned grid = 0;
  const cudaError_t err = grid_for<kernel>((n / V + kUnroll - 1) / kUnroll, &grid);
  if (err != cudaSuccess) return err;
  kernel<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(g), static_cast<const T*>(x),
                                        static_cast<T*>(out), n, k);
  return cudaGetLastError();
}

template <int N, Scheme S, bool Backward>
cudaError_t launch_scheme(DType d, const void* g, const void* x, void* out, int64_t n,
                          const PolyCoeffs& k, cudaStream_t stream) {
  switch (d) {
    case kF32:
      return launch_typed<float, N, S, Backward>(g, x, out, n, k, stream);
    case kF16:
      return launch_typed<__half, N, S, Backward>(g, x, out, n, k, stream);
    case kBF16:
      return launch_typed<__nv_bfloat16, N, S, Backward>(g, x, out, n, k, stream);
    case kF64:
      return launch_typed<double, N, S, Backward>(g, x, out, n, k, stream);
  }
  return cudaErrorInvalidValue;
}

template <bool Backward>
cudaError_t launch(DType d, const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                   Scheme s, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (k.degree) {
#define TG_CASE(D)                                                                          \
  case D:                                                                                   \
    return s == Scheme::Horner                                                              \
               ? launch_scheme<D + 1, Scheme::Horner, Backward>(d, g, x, out, n, k, stream) \
               : launch_scheme<D + 1, Scheme::Estrin, Backward>(d, g, x, out, n, k, stream);
    TG_CUDA_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return cudaErrorInvalidValue;
  }
}

// ---------------------------------------------------------------- packed bfloat16 (opt-in)
// The program of poly_eval.h with every operation in __nv_bfloat162 arithmetic (fma.rn /
// mul.rn .bf16x2: one rounding to bfloat16 each), two lanes per instruction:
//   y = x*x, z = fma(y, scale, -1), h = fma(x, P(z), 1/2);  forward x*h, backward grad*h;
//   the window y <= fl(R*R), outside it x or -0.0 (forward), 1 or 0 (backward).
// A lane's result does not depend on the other lane, so single elements (the head and the
// tail) go through the same code duplicated into both lanes.

__device__ __forceinline__ unsigned as_u32(__nv_bfloat162 v) {
  unsigned u;
  memcpy(&u, &v, sizeof u);
  return u;
}
__device__ __forceinline__ __nv_bfloat162 as_b162(unsigned u) {
  __nv_bfloat162 v;
  memcpy(&v, &u, sizeof v);
  return v;
}

template <int N, bool Backward>
__device__ __forceinline__ __nv_bfloat162 packed_eval(__nv_bfloat162 g, __nv_bfloat162 x,
                                                      const PolyCoeffs& k) {
  const __nv_bfloat162 y = __hmul2(x, x);
  const __nv_bfloat162 z = __hfma2(y, __float2bfloat162_rn(k.scale), __float2bfloat162_rn(-1.0f));
  __nv_bfloat162 p = __float2bfloat162_rn(k.c[N - 1]);
#pragma unroll
  for (int i = N - 2; i >= 0; --i) p = __hfma2(p, z, __float2bfloat162_rn(k.c[i]));
  const __nv_bfloat162 h = __hfma2(x, p, __float2bfloat162_rn(0.5f));
  const __nv_bfloat162 r = __float2bfloat162_rn(k.clamp);
  const unsigned tail = __hgt2_mask(y, __hmul2(r, r));  // 0xFFFF per lane outside; NaN: 0
  const unsigned pos = __hgt2_mask(x, __float2bfloat162_rn(0.0f));
  if constexpr (Backward) {
    const unsigned step = 0x3F803F80u & pos;  // 1.0 or 0.0
    return __hmul2(g, as_b162((step & tail) | (as_u32(h) & ~tail)));
  } else {
    const unsigned outside = (as_u32(x) & pos) | (0x80008000u & ~pos);  // x or -0.0
    return as_b162((outside & tail) | (as_u32(__hmul2(x, h)) & ~tail));
  }
}

// The body of packed_bf16_kernel: 8 elements (4 pairs) per access, as gelu_body.
template <int N, bool Backward>
struct PackedBody {
  template <bool XVec, bool GVec>
  static __device__ __forceinline__ void run(const __nv_bfloat16* gb, const __nv_bfloat16* xb,
                                             Pack<__nv_bfloat16, 8>* op, int64_t packs, int64_t tid,
                                             int64_t stride, const PolyCoeffs& k) {
    using P = Pack<__nv_bfloat16, 8>;
    for (int64_t i = tid; i < packs; i += stride) {
      const P xv = load_pack<XVec, __nv_bfloat16, 8>(xb, i);
      P gv;
      if constexpr (Backward) gv = load_pack<GVec, __nv_bfloat16, 8>(gb, i);
      P r;
#pragma unroll
      for (int j = 0; j < 8; j += 2) {
        const __nv_bfloat162 xx = __halves2bfloat162(xv.v[j], xv.v[j + 1]);
        const __nv_bfloat162 gg =
            Backward ? __halves2bfloat162(gv.v[j], gv.v[j + 1]) : xx;  // (unused forward)
        const __nv_bfloat162 rr = packed_eval<N, Backward>(gg, xx, k);
        r.v[j] = __low2bfloat16(rr);
        r.v[j + 1] = __high2bfloat16(rr);
      }
      op[i] = r;
    }
  }
};

// The layout of gelu_kernel: a head peeled to out's first 16-byte boundary, the 16-byte body,
// the tail; the head and the tail one element at a time, duplicated into both lanes.
template <int N, bool Backward>
__global__ void __launch_bounds__(kThreads)
    packed_bf16_kernel(const __nv_bfloat16* g, const __nv_bfloat16* x, __nv_bfloat16* out,
                       int64_t n, const __grid_constant__ PolyCoeffs k) {
  constexpr int V = 8;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t head = min(n, to_boundary(out));
  const int64_t packs = (n - head) / V;
  with_phases<PackedBody<N, Backward>, Backward>(
      g, x, out, g + head, x + head, reinterpret_cast<Pack<__nv_bfloat16, V>*>(out + head), packs,
      tid, stride, k);
  if (tid < n - packs * V) {
    const int64_t i = edge_element(tid, head, packs * V);
    const __nv_bfloat162 xx = __bfloat162bfloat162(x[i]);
    const __nv_bfloat162 gg = Backward ? __bfloat162bfloat162(g[i]) : xx;
    out[i] = __low2bfloat16(packed_eval<N, Backward>(gg, xx, k));
  }
}

template <int N, bool Backward>
cudaError_t launch_packed_bf16(const void* g, const void* x, void* out, int64_t n,
                               const PolyCoeffs& k, cudaStream_t stream) {
  using T = __nv_bfloat16;
  if (!element_aligned<T>(x) || !element_aligned<T>(out) || !element_aligned<T>(g))
    return cudaErrorMisalignedAddress;
  constexpr auto kernel = packed_bf16_kernel<N, Backward>;
  unsigned grid = 0;
  const cudaError_t err = grid_for<kernel>(n / 8, &grid);
  if (err != cudaSuccess) return err;
  kernel<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(g), static_cast<const T*>(x),
                                        static_cast<T*>(out), n, k);
  return cudaGetLastError();
}

template <bool Backward>
cudaError_t launch_packed(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                          cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (k.degree) {
#define TG_CASE(D) \
  case D:          \
    return launch_packed_bf16<D + 1, Backward>(g, x, out, n, k, stream);
    TG_CUDA_PACKED_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

LaunchRecord last_launch() {
  return {last_blocks.load(std::memory_order_relaxed), last_per_sm.load(std::memory_order_relaxed),
          last_sms.load(std::memory_order_relaxed)};
}

bool has_packed_degree(int degree) {
  switch (degree) {
#define TG_CASE(D) \
  case D:          \
    return true;
    TG_CUDA_PACKED_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

cudaError_t forward_packed_bf16(const void* x, void* out, int64_t n, const PolyCoeffs& k,
                                cudaStream_t stream) {
  return launch_packed<false>(x, x, out, n, k, stream);
}

cudaError_t backward_packed_bf16(const void* grad, const void* x, void* out, int64_t n,
                                 const PolyCoeffs& k, cudaStream_t stream) {
  return launch_packed<true>(grad, x, out, n, k, stream);
}

bool has_degree(int degree) {
  switch (degree) {
#define TG_CASE(D) \
  case D:          \
    return true;
    TG_CUDA_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return false;
  }
}

cudaError_t forward(DType dtype, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                    Scheme scheme, cudaStream_t stream) {
  return launch<false>(dtype, x, x, out, n, k, scheme, stream);
}

cudaError_t backward(DType dtype, const void* grad, const void* x, void* out, int64_t n,
                     const PolyCoeffs& k, Scheme scheme, cudaStream_t stream) {
  return launch<true>(dtype, grad, x, out, n, k, scheme, stream);
}

}  // namespace cuda
}  // namespace turbogelu
