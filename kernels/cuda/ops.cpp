// The CUDA operators of every function (schemas in kernels/common/schema.cpp): GELU's over
// ops_common.h's shared semantics, launching its rows of family_kernels.cu (their packed
// programs for bfloat16 with the opt-in switch; gelu_kernels.cu for the benchmark's Estrin
// scheme), and the activation family's over the same header's, launching family_kernels.cu,
// registered by family_library.h as on the CPU; both with cuda_backend.h's device check and
// guard, on the current stream. The Autograd guards of the
// mutating forms are kernels/cpu/ops.cpp's, for every device. Only c10/cuda headers:
// ATen/cuda/CUDAContext.h would pull in cuBLAS headers, which a CUDA toolkit need not have.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>
#include <vector>

#include "cuda_backend.h"
#include "cuda_kernels.h"
#include "turbogelu/family_library.h"
#include "turbogelu/ops_common.h"

namespace turbogelu {
namespace {

// ---------------------------------------------------------------- GELU

// Whether this call takes the packed path (bfloat16, switched on): in the accurate tier its
// row's packed programs (family.h's <fn>_packed_forward / _backward; both derivatives, direct
// and matched, are the packed backward fit, a fit of GELU'); in the paper tier the paper's
// programs in packed arithmetic, as the family's paper tier (family_kernels.cu).
bool gelu_packed(const at::Tensor& x) { return x.scalar_type() == at::kBFloat16 && cuda_packed(); }

FamilyCall gelu_packed_call(FamilyOp row) {
#define TG_PACKED_CALL(op, fn, kind) \
  if (row == kFamily_##op)           \
    return {                         \
        coeffs::fn##_packed_forward, coeffs::fn##_packed_backward, 1.0f, 1.0f, nullptr, nullptr};
  TG_GELU_OPS(TG_PACKED_CALL)
#undef TG_PACKED_CALL
  TORCH_CHECK(false, "turbogelu: no packed GELU program for this row");
  return {};
}

// Device check and guard: cuda_backend.h's. The shipped (Horner) programs run as rows of
// family_kernels.cu's table, as every function's, and so do the packed ones; the benchmark's
// Estrin scheme runs gelu_kernels.cu's run-time-coefficient kernels.
struct CudaBackend : cuda::DeviceBackend {
  static void check_degree(const PolyCoeffs& k) {
    TORCH_CHECK(cuda::has_degree(k.degree), "turbogelu: no CUDA kernel compiled for degree ",
                k.degree);
  }
  static void launch_forward(const at::Tensor& x, const at::Tensor& out,
                             const ops::GeluProgram& program) {
    const PolyCoeffs& k = program.k;
    if (program.tier == kTier_paper) {  // the family's paper-tier kernels (no Estrin scheme)
      C10_CUDA_CHECK(cuda::family_unary(program.row, kTier_paper, gelu_packed(x), cuda::dtype_of(x),
                                        x.const_data_ptr(), out.data_ptr(), x.numel(),
                                        ops::gelu_call(program), cuda::current_stream()));
      return;
    }
    if (gelu_packed(x)) {
      C10_CUDA_CHECK(cuda::family_unary(program.row, kTier_accurate, true, cuda::dtype_of(x),
                                        x.const_data_ptr(), out.data_ptr(), x.numel(),
                                        gelu_packed_call(program.row), cuda::current_stream()));
      return;
    }
    if (current_scheme() == Scheme::Estrin) {
      check_degree(k);
      C10_CUDA_CHECK(cuda::forward(cuda::dtype_of(x), x.const_data_ptr(), out.data_ptr(), x.numel(),
                                   k, Scheme::Estrin, cuda::current_stream()));
      return;
    }
    C10_CUDA_CHECK(cuda::family_unary(program.row, kTier_accurate, false, cuda::dtype_of(x),
                                      x.const_data_ptr(), out.data_ptr(), x.numel(),
                                      ops::gelu_call(program), cuda::current_stream()));
  }
  static void launch_backward(const at::Tensor& g, const at::Tensor& x, const at::Tensor& out,
                              const ops::GeluProgram& program) {
    const PolyCoeffs& k = program.k;
    if (program.tier == kTier_paper) {
      C10_CUDA_CHECK(cuda::family_binary(program.row, kTier_paper, gelu_packed(x),
                                         cuda::dtype_of(x), g.const_data_ptr(), x.const_data_ptr(),
                                         out.data_ptr(), x.numel(), ops::gelu_call(program),
                                         cuda::current_stream()));
      return;
    }
    if (gelu_packed(x)) {
      C10_CUDA_CHECK(cuda::family_binary(program.row, kTier_accurate, true, cuda::dtype_of(x),
                                         g.const_data_ptr(), x.const_data_ptr(), out.data_ptr(),
                                         x.numel(), gelu_packed_call(program.row),
                                         cuda::current_stream()));
      return;
    }
    if (current_scheme() == Scheme::Estrin) {
      check_degree(k);
      C10_CUDA_CHECK(cuda::backward(cuda::dtype_of(x), g.const_data_ptr(), x.const_data_ptr(),
                                    out.data_ptr(), x.numel(), k, Scheme::Estrin,
                                    cuda::current_stream()));
      return;
    }
    C10_CUDA_CHECK(cuda::family_binary(program.row, kTier_accurate, false, cuda::dtype_of(x),
                                       g.const_data_ptr(), x.const_data_ptr(), out.data_ptr(),
                                       x.numel(), ops::gelu_call(program), cuda::current_stream()));
  }
};
using CudaOps = ops::GeluOps<CudaBackend>;

// ---------------------------------------------------------------- the family

// The opt-in packed bfloat16 path (family_kernels.cu): the paper tier on bfloat16 data while
// GELU's switch is on (turbogelu.ops.use_cuda_packed(), TURBOGELU_CUDA_PACKED=1: one knob for
// every op). The accurate tier and the other dtypes never take it.
bool packed(Tier tier, const at::Tensor& x) {
  return tier == kTier_paper && x.scalar_type() == at::kBFloat16 && cuda_packed();
}

struct CudaFamilyBackend : cuda::DeviceBackend {
  static void launch_unary(FamilyOp op, Tier tier, const at::Tensor& x, const at::Tensor& out,
                           const FamilyCall& c) {
    C10_CUDA_CHECK(cuda::family_unary(op, tier, packed(tier, x), cuda::dtype_of(x),
                                      x.const_data_ptr(), out.data_ptr(), x.numel(), c,
                                      cuda::current_stream()));
  }
  static void launch_binary(FamilyOp op, Tier tier, const at::Tensor& a, const at::Tensor& b,
                            const at::Tensor& out, const FamilyCall& c) {
    C10_CUDA_CHECK(cuda::family_binary(op, tier, packed(tier, a), cuda::dtype_of(a),
                                       a.const_data_ptr(), b.const_data_ptr(), out.data_ptr(),
                                       a.numel(), c, cuda::current_stream()));
  }
  static void launch_pair(FamilyOp op, Tier tier, const at::Tensor& g, const at::Tensor& a,
                          const at::Tensor& b, const at::Tensor& out_a, const at::Tensor& out_b,
                          const FamilyCall& c) {
    C10_CUDA_CHECK(cuda::family_pair(op, tier, packed(tier, a), cuda::dtype_of(a),
                                     g.const_data_ptr(), a.const_data_ptr(), b.const_data_ptr(),
                                     out_a.data_ptr(), out_b.data_ptr(), a.numel(), c,
                                     cuda::current_stream()));
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(turbogelu, CUDA, m) {
  m.impl("gelu", &CudaOps::gelu);
  m.impl("gelu.out", &CudaOps::gelu_out);
  m.impl("gelu_", &CudaOps::gelu_inplace);
  m.impl("gelu_backward", &CudaOps::gelu_backward);
  m.impl("gelu_backward.out", &CudaOps::gelu_backward_out);
  ops::impl_family_ops<CudaFamilyBackend>(m);
}

}  // namespace turbogelu
