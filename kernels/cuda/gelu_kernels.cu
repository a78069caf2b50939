// GELU's own CUDA kernels, beside its rows of family_kernels.cu (which run the shipped
// programs): the run-time-coefficient kernels of the benchmark's Estrin scheme
// (torch.ops.turbogelu_bench._set_poly_scheme), a grid-stride streaming loop around
// family_eval.h's gelu_forward / gelu_backward. (GELU's packed bfloat16 path runs its rows'
// packed programs in family_kernels.cu.)
//
//   forward   gelu(x)  ~ x * (1/2 + x P(z))   for |x| <= R;  x for x > R;  -0.0 for x < -R
//   backward  gelu'(x) ~ 1/2 + x Q(z)         for |x| <= R;  1 for x > R;  0 for x < -R
//
// float16 / bfloat16 are widened to float32 for the math and rounded back to nearest even;
// float64 evaluates the same polynomial in double. Built with --fmad=false (setup.py): the
// template fuses exactly where it calls tg_fma (__fmaf_rn), nowhere else, as on the CPU.
//
// Memory and grid: elementwise.cuh, shared with family_kernels.cu: 16-byte loads and stores
// after a head peeled to out's 16-byte boundary, an input at another offset in its line read
// element by element, kUnroll packs in flight per thread, and a grid of one wave of what fits
// on an SM (4 to 8 blocks of 256 threads on sm_90 here, as the kernels' registers allow).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "cuda_kernels.h"
#include "elementwise.cuh"

namespace turbogelu {
namespace cuda {

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

namespace {

// What the last launch chose (any thread, any kernel file; read by the probe _cuda_last_launch).
std::atomic<int> last_blocks{0}, last_per_sm{0}, last_sms{0};

// GELU's element function: forward gelu(x) from in = {x}; backward g * gelu'(x) from
// in = {x, g} (x first: the order GELU's loop has always loaded and widened them in).
// The coefficient set as family_eval.h's program (gelu_as_program: the tails of each
// direction), built once per thread from the kernel's parameter.
template <int N, Scheme S, bool Backward>
struct GeluFn {
  FamilyProgram p;
  template <class A>
  __device__ __forceinline__ Vals<A, 1> operator()(const Vals<A, Backward ? 2 : 1>& in) const {
    if constexpr (Backward)
      return {gelu_backward<N, S>(in.v[1], in.v[0], p)};
    else
      return {gelu_forward<N, S>(in.v[0], p)};
  }
};

// Forward when Backward is false (g unused), else out = g * gelu'(x). Not __restrict__: out
// may be x (gelu_) or g; each element is read and written by one thread in one trip.
template <class T, int N, Scheme S, bool Backward>
__global__ void __launch_bounds__(kThreads)
    gelu_kernel(const T* g, const T* x, T* out, int64_t n, const __grid_constant__ PolyCoeffs k) {
  if constexpr (Backward)
    elementwise(Operands<T, 2, 1>{{x, g}, {out}}, n,
                GeluFn<N, S, true>{gelu_as_program(k, 0.0f, 1.0f)});
  else
    elementwise(Operands<T, 1, 1>{{x}, {out}}, n,
                GeluFn<N, S, false>{gelu_as_program(k, -0.0f, 0.0f)});
}

template <class T, int N, Scheme S, bool Backward>
cudaError_t launch_typed(const void* g, const void* x, void* out, int64_t n, const PolyCoeffs& k,
                         cudaStream_t stream) {
  if (!element_aligned<T>(x) || !element_aligned<T>(out) || !element_aligned<T>(g))
    return cudaErrorMisalignedAddress;
  constexpr auto kernel = gelu_kernel<T, N, S, Backward>;
  unsigned grid = 0;
  const cudaError_t err = elementwise_grid<kernel, T>(n, &grid);
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
  if (s != Scheme::Estrin) return cudaErrorInvalidValue;  // Horner: family_kernels.cu's rows
  if (n <= 0) return cudaSuccess;
  switch (k.degree) {
#define TG_CASE(D) \
  case D:          \
    return launch_scheme<D + 1, Scheme::Estrin, Backward>(d, g, x, out, n, k, stream);
    TG_CUDA_KERNEL_DEGREES(TG_CASE)
#undef TG_CASE
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

void record_launch(int blocks, int blocks_per_sm, int sms) {
  last_blocks.store(blocks, std::memory_order_relaxed);
  last_per_sm.store(blocks_per_sm, std::memory_order_relaxed);
  last_sms.store(sms, std::memory_order_relaxed);
}

LaunchRecord last_launch() {
  return {last_blocks.load(std::memory_order_relaxed), last_per_sm.load(std::memory_order_relaxed),
          last_sms.load(std::memory_order_relaxed)};
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
