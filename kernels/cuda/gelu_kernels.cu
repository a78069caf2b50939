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
// 8 halves) when every pointer is 16-byte aligned, and keeps kUnroll of them in flight; the
// grid is sized to the device (a few resident blocks per SM) and strides over the rest. A
// pointer that is not aligned (a view at an odd offset) takes the same kernel with one
// element per access.
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
constexpr int kUnroll = 2;       // 16-byte accesses per thread per loop trip
constexpr int kBlocksPerSm = 8;  // 2048 resident threads per SM on sm_80 / sm_90
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

// Forward when Backward is false (g unused), else out = g * gelu'(x). Not __restrict__: out
// may be x (gelu_) or g; each element is read and written by one thread in one trip.
template <class T, int V, int N, Scheme S, bool Backward>
__global__ void __launch_bounds__(kThreads)
    gelu_kernel(const T* g, const T* x, T* out, int64_t n, const __grid_constant__ PolyCoeffs k) {
  using E = Elem<T>;
  using A = typename E::Acc;
  using P = Pack<T, V>;
  const int64_t packs = n / V;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const P* xp = reinterpret_cast<const P*>(x);
  const P* gp = reinterpret_cast<const P*>(g);
  P* op = reinterpret_cast<P*>(out);
  for (int64_t base = tid; base < packs; base += stride * kUnroll) {
    P xv[kUnroll], gv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride;
      if (i < packs) {
        xv[u] = xp[i];
        if constexpr (Backward) gv[u] = gp[i];
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
  // The tail (under one pack), one element per thread.
  const int64_t i = packs * V + tid;
  if (V > 1 && i < n) {
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

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <class T, int V, int N, Scheme S, bool Backward>
cudaError_t launch_packed(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                          cudaStream_t stream) {
  const int64_t work = (n / V + kUnroll - 1) / kUnroll;  // threads with a full trip of work
  int64_t blocks = (work + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(sm_count()) * kBlocksPerSm;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;  // the tail alone
  gelu_kernel<T, V, N, S, Backward><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const T*>(g), static_cast<const T*>(x), static_cast<T*>(out), n, k);
  return cudaGetLastError();
}

template <class T, int N, Scheme S, bool Backward>
cudaError_t launch_typed(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                         cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const bool vec = aligned16(x) && aligned16(out) && (!Backward || aligned16(g));
  return vec ? launch_packed<T, V, N, S, Backward>(g, x, out, n, k, stream)
             : launch_packed<T, 1, N, S, Backward>(g, x, out, n, k, stream);
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
// A lane's result does not depend on the other lane, so single elements (the tail, unaligned
// data) go through the same code duplicated into both lanes.

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

template <int V, int N, bool Backward>
__global__ void __launch_bounds__(kThreads)
    packed_bf16_kernel(const __nv_bfloat16* g, const __nv_bfloat16* x, __nv_bfloat16* out,
                       int64_t n, const __grid_constant__ PolyCoeffs k) {
  using P = Pack<__nv_bfloat16, V>;
  const int64_t packs = V > 1 ? n / V : 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (V > 1) {
    const P* xp = reinterpret_cast<const P*>(x);
    const P* gp = reinterpret_cast<const P*>(g);
    P* op = reinterpret_cast<P*>(out);
    for (int64_t i = tid; i < packs; i += stride) {
      const P xv = xp[i];
      P gv;
      if constexpr (Backward) gv = gp[i];
      P r;
#pragma unroll
      for (int j = 0; j < V; j += 2) {
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
  // The rest one element at a time (all of it when V = 1), duplicated into both lanes.
  for (int64_t i = packs * V + tid; i < n; i += stride) {
    const __nv_bfloat162 xx = __bfloat162bfloat162(x[i]);
    const __nv_bfloat162 gg = Backward ? __bfloat162bfloat162(g[i]) : xx;
    out[i] = __low2bfloat16(packed_eval<N, Backward>(gg, xx, k));
  }
}

template <int N, bool Backward>
cudaError_t launch_packed_bf16(const void* g, const void* x, void* out, int64_t n,
                               const PolyCoeffs& k, cudaStream_t stream) {
  const bool vec = aligned16(x) && aligned16(out) && (!Backward || aligned16(g));
  const int64_t work = vec ? n / 8 : n;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(sm_count()) * kBlocksPerSm;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  const auto* gp = static_cast<const __nv_bfloat16*>(g);
  const auto* xp = static_cast<const __nv_bfloat16*>(x);
  auto* op = static_cast<__nv_bfloat16*>(out);
  if (vec)
    packed_bf16_kernel<8, N, Backward>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gp, xp, op, n, k);
  else
    packed_bf16_kernel<1, N, Backward>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gp, xp, op, n, k);
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
