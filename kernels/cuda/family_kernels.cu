// CUDA kernels of every function's programs (GELU's two; sigmoid, tanh, SiLU, softcap, SwiGLU,
// exp2, softplus; turbogelu/family.h): the element functions of family_eval.h, the very code
// the CPU kernels run, in elementwise.cuh's loops (the head peeled to out's 16-byte boundary,
// 16-byte loads and stores, kUnroll packs in flight, a grid of one wave). With --fmad=false
// (setup.py) the GPU rounds exactly where the template does, so its bits are the CPU kernels' and
// the numpy replay's (turbogelu/approx/polyspec.py) for every input.
//
// Three kernels per (function, kind) and element type, each a body functor over the widened
// elements with the op's FamilyCall passed by value as a kernel argument (__grid_constant__:
// its programs are read from the parameter space, no copy):
//   unary   out = f(x)                       Plain and Scaled forward
//   binary  out = f(a, b)                    their backward (a = grad, b = x); Gated forward
//   pair    (oa, ob) = f(g, a, b)            Gated backward
// instantiated from TG_FAMILY_OPS and TG_GELU_OPS: an op is a line there, not a kernel here.
//
// The opt-in packed bfloat16 path (`packed`: bfloat16 data, switched on by
// turbogelu.ops.use_cuda_packed() / TURBOGELU_CUDA_PACKED=1, ops.cpp): the same
// bodies and element functions over bf16x2.cuh's Bf16x2, two elements per packed bfloat16
// instruction, in elementwise.cuh's elementwise_pairs (packed_family_kernel; one kernel per
// body of each op's packed programs: the family's paper tier, GELU's packed fits). Its bits
// are turbogelu/approx/packed_family.py's replay (GELU's: packed.py's).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "bf16x2.cuh"
#include "cuda_kernels.h"
#include "elementwise.cuh"

namespace turbogelu {
namespace cuda {
namespace {

// S: the function's program shapes in one tier (family.h's shapes::<function>_<tier>), K:
// the op's kind.
// Each body: its element function over the widened operands, and the 16-byte packs of each
// input a thread keeps in flight for the storage type T (`unroll<T>`).
template <class S, Kind K>
struct UnaryFn {
  template <class T>
  static constexpr int unroll = kUnroll;
  const FamilyCall& c;
  template <class A>
  __device__ __forceinline__ Vals<A, 1> operator()(const Vals<A, 1>& in) const {
    if constexpr (K == Kind::Scaled)
      return {scaled_forward<S>(in.v[0], c)};
    else
      return {family_forward<S>(in.v[0], c)};
  }
};

template <class S, Kind K>
struct BinaryFn {
  template <class T>
  static constexpr int unroll = kUnroll;
  const FamilyCall& c;
  template <class A>
  __device__ __forceinline__ Vals<A, 1> operator()(const Vals<A, 2>& in) const {
    if constexpr (K == Kind::Gated)
      return {gated_forward<S>(in.v[0], in.v[1], c)};
    else if constexpr (K == Kind::Scaled)
      return {scaled_backward<S>(in.v[0], in.v[1], c)};
    else
      return {family_backward<S>(in.v[0], in.v[1], c)};
  }
};

// 16-bit types: one pack in flight. Three inputs and two outputs of 8 elements with two
// programs each took 80 (float16) and 96 (bfloat16) registers at two packs, and spilled
// when held to 64; at one, 46 and 47. (float64 goes the other way: 46 registers at two
// packs, 100 at one, where the compiler keeps both programs' coefficients as doubles.)
template <class S>
struct PairFn {
  template <class T>
  static constexpr int unroll = sizeof(T) == 2 ? 1 : kUnroll;
  const FamilyCall& c;
  template <class A>
  __device__ __forceinline__ Vals<A, 2> operator()(const Vals<A, 3>& in) const {
    const Pair<A> r = gated_backward<S>(in.v[0], in.v[1], in.v[2], c);
    return {{r.first, r.second}};
  }
};

// One kernel for every body: Fn<...> over NIn inputs and NOut outputs of T. Not __restrict__:
// an output may be an input (in place).
template <class T, class Fn, int NIn, int NOut>
__global__ void __launch_bounds__(kThreads)
    family_kernel(const Operands<T, NIn, NOut> p, int64_t n, const __grid_constant__ FamilyCall c) {
  elementwise<Fn::template unroll<T>>(p, n, Fn{c});
}

// The packed path's kernel: the same body over pairs of bfloat16 elements (Bf16x2).
template <class Fn, int NIn, int NOut>
__global__ void __launch_bounds__(kThreads)
    packed_family_kernel(const Operands<__nv_bfloat16, NIn, NOut> p, int64_t n,
                         const __grid_constant__ FamilyCall c) {
  elementwise_pairs<Bf16Pairs, Fn::template unroll<__nv_bfloat16>>(p, n, Fn{c});
}

template <auto Kernel, class T, int Unroll, int NIn, int NOut>
cudaError_t launch_kernel(const Operands<T, NIn, NOut>& p, int64_t n, const FamilyCall& c,
                          cudaStream_t stream) {
  unsigned grid = 0;
  const cudaError_t err = elementwise_grid<Kernel, T, Unroll>(n, &grid);
  if (err != cudaSuccess) return err;
  Kernel<<<grid, kThreads, 0, stream>>>(p, n, c);
  return cudaGetLastError();
}

template <class T, class Fn, int NIn, int NOut, bool Packed>
cudaError_t launch_typed(const Operands<T, NIn, NOut>& p, int64_t n, const FamilyCall& c,
                         cudaStream_t stream) {
  for (const T* q : p.in)
    if (!element_aligned<T>(q)) return cudaErrorMisalignedAddress;
  for (const T* q : p.out)
    if (!element_aligned<T>(q)) return cudaErrorMisalignedAddress;
  constexpr int unroll = Fn::template unroll<T>;
  if constexpr (Packed)
    return launch_kernel<packed_family_kernel<Fn, NIn, NOut>, T, unroll>(p, n, c, stream);
  else
    return launch_kernel<family_kernel<T, Fn, NIn, NOut>, T, unroll>(p, n, c, stream);
}

// Fn<...> on the element type of d, for void pointers; the packed path on bfloat16 only.
template <class Fn, int NIn, int NOut, bool Packed>
cudaError_t launch_dtype(DType d, const void* const (&in)[NIn], void* const (&out)[NOut], int64_t n,
                         const FamilyCall& c, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const auto run = [&](auto zero) {
    using T = decltype(zero);
    Operands<T, NIn, NOut> p;
    for (int k = 0; k < NIn; ++k) p.in[k] = static_cast<const T*>(in[k]);
    for (int q = 0; q < NOut; ++q) p.out[q] = static_cast<T*>(out[q]);
    return launch_typed<T, Fn, NIn, NOut, Packed>(p, n, c, stream);
  };
  if constexpr (Packed) {
    return d == kBF16 ? run(__nv_bfloat16{}) : cudaErrorInvalidValue;
  } else {
    switch (d) {
      case kF32:
        return run(float{});
      case kF16:
        return run(__half{});
      case kBF16:
        return run(__nv_bfloat16{});
      case kF64:
        return run(double{});
    }
    return cudaErrorInvalidValue;
  }
}

// Whether function S has packed kernels: the packed path runs the family's polynomial forms;
// exp2's range reduction needs integer bit operations that Bf16x2 does not have, so its paper
// tier runs the float32-arithmetic kernels whatever the switch says.
template <class S>
constexpr bool kPackable = S::ff != Form::Exp2Nearest && S::ff != Form::Exp2Floor;

// The launchers of one op (function S, kind K; Packed: the packed path where S has one); an
// arity the kind does not have is refused.
template <class S, Kind K, bool PackedAsked>
struct OpLaunch {
  static constexpr bool Packed = PackedAsked && kPackable<S>;
  static cudaError_t unary(DType d, const void* x, void* out, int64_t n, const FamilyCall& c,
                           cudaStream_t stream) {
    if constexpr (K == Kind::Gated) {
      return cudaErrorInvalidValue;
    } else {
      return launch_dtype<UnaryFn<S, K>, 1, 1, Packed>(d, {x}, {out}, n, c, stream);
    }
  }
  static cudaError_t binary(DType d, const void* a, const void* b, void* out, int64_t n,
                            const FamilyCall& c, cudaStream_t stream) {
    return launch_dtype<BinaryFn<S, K>, 2, 1, Packed>(d, {a, b}, {out}, n, c, stream);
  }
  static cudaError_t pair(DType d, const void* g, const void* a, const void* b, void* out_a,
                          void* out_b, int64_t n, const FamilyCall& c, cudaStream_t stream) {
    if constexpr (K != Kind::Gated) {
      return cudaErrorInvalidValue;
    } else {
      return launch_dtype<PairFn<S>, 3, 2, Packed>(d, {g, a, b}, {out_a, out_b}, n, c, stream);
    }
  }
};

}  // namespace

// The accurate tier has no packed kernels: packed is refused there (cudaErrorInvalidValue).
#define TG_TIER_CASES(op_, fn, kind, launcher, ...)                                            \
  case family_index(kFamily_##op_, kTier_accurate):                                            \
    return packed ? cudaErrorInvalidValue                                                      \
                  : OpLaunch<shapes::fn##_accurate, Kind::kind, false>::launcher(__VA_ARGS__); \
  case family_index(kFamily_##op_, kTier_paper):                                               \
    return packed ? OpLaunch<shapes::fn##_paper, Kind::kind, true>::launcher(__VA_ARGS__)      \
                  : OpLaunch<shapes::fn##_paper, Kind::kind, false>::launcher(__VA_ARGS__);

// GELU's rows (family.h's TG_GELU_OPS): the accurate tier, packed: its packed programs
// (shapes::<fn>_packed, the call's programs: ops.cpp); the paper tier as the family's.
#define TG_GELU_CASES(op_, fn, kind, launcher, ...)                                            \
  case family_index(kFamily_##op_, kTier_accurate):                                            \
    return packed ? OpLaunch<shapes::fn##_packed, Kind::kind, true>::launcher(__VA_ARGS__)     \
                  : OpLaunch<shapes::fn##_accurate, Kind::kind, false>::launcher(__VA_ARGS__); \
  case family_index(kFamily_##op_, kTier_paper):                                               \
    return packed ? OpLaunch<shapes::fn##_paper, Kind::kind, true>::launcher(__VA_ARGS__)      \
                  : OpLaunch<shapes::fn##_paper, Kind::kind, false>::launcher(__VA_ARGS__);

cudaError_t family_unary(FamilyOp op, Tier tier, bool packed, DType d, const void* x, void* out,
                         int64_t n, const FamilyCall& c, cudaStream_t stream) {
  switch (family_index(op, tier)) {
#define TG_CASE(op_, fn, kind) TG_TIER_CASES(op_, fn, kind, unary, d, x, out, n, c, stream)
    TG_FAMILY_OPS(TG_CASE)
#undef TG_CASE
#define TG_CASE(op_, fn, kind) TG_GELU_CASES(op_, fn, kind, unary, d, x, out, n, c, stream)
    TG_GELU_OPS(TG_CASE)
#undef TG_CASE
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t family_binary(FamilyOp op, Tier tier, bool packed, DType d, const void* a,
                          const void* b, void* out, int64_t n, const FamilyCall& c,
                          cudaStream_t stream) {
  switch (family_index(op, tier)) {
#define TG_CASE(op_, fn, kind) TG_TIER_CASES(op_, fn, kind, binary, d, a, b, out, n, c, stream)
    TG_FAMILY_OPS(TG_CASE)
#undef TG_CASE
#define TG_CASE(op_, fn, kind) TG_GELU_CASES(op_, fn, kind, binary, d, a, b, out, n, c, stream)
    TG_GELU_OPS(TG_CASE)
#undef TG_CASE
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t family_pair(FamilyOp op, Tier tier, bool packed, DType d, const void* g, const void* a,
                        const void* b, void* out_a, void* out_b, int64_t n, const FamilyCall& c,
                        cudaStream_t stream) {
  switch (family_index(op, tier)) {
#define TG_CASE(op_, fn, kind) \
  TG_TIER_CASES(op_, fn, kind, pair, d, g, a, b, out_a, out_b, n, c, stream)
    TG_FAMILY_OPS(TG_CASE)
#undef TG_CASE
    default:
      return cudaErrorInvalidValue;
  }
}

#undef TG_TIER_CASES
#undef TG_GELU_CASES

}  // namespace cuda
}  // namespace turbogelu
