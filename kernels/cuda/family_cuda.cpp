// The activation family's CUDA operators (sigmoid, tanh, silu, softcap, swiglu; turbogelu/
// family.h): family_common.h's semantics (the CPU's: checks, programs, layout, out= and in
// place) with cuda_backend.h's device check and guard, launching family_kernels.cu on the
// current stream; registered by family_library.h, like the CPU's. The Autograd guards of the
// mutating forms are kernels/cpu/ops.cpp's, for every device.
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <torch/library.h>

#include "cuda_backend.h"
#include "cuda_kernels.h"
#include "turbogelu/family_library.h"

namespace turbogelu {
namespace {

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

TORCH_LIBRARY_IMPL(turbogelu, CUDA, m) { ops::impl_family_ops<CudaFamilyBackend>(m); }

}  // namespace turbogelu
