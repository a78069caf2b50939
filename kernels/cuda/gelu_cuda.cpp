// The CUDA implementation of the turbogelu ops (schemas in kernels/common/schema.cpp). The
// semantics (checks, coefficient choice, output layout, out= and in place) are the shared
// ops::GeluOps; this file adds the device checks, the device guard and the launch on the
// current stream. Only c10/cuda headers: ATen/cuda/CUDAContext.h would pull in cuBLAS headers,
// which a CUDA toolkit need not have.
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
#include "turbogelu/ops_common.h"

namespace turbogelu {
namespace {

// The packed bfloat16 set standing for a float32 coefficient set, or nullptr. Identified by
// address: ops::forward_program / backward_program hold the generated objects themselves.
// Both backward sets (direct, matched) map to the packed backward fit (a fit of GELU').
const PolyCoeffs* packed_for(const PolyCoeffs& k) {
  namespace c = coeffs;
  if (&k == &c::gelu_none_forward) return &c::gelu_none_forward_packed_bf16;
  if (&k == &c::gelu_tanh_forward) return &c::gelu_tanh_forward_packed_bf16;
  if (&k == &c::gelu_none_backward_direct || &k == &c::gelu_none_backward_matched)
    return &c::gelu_none_backward_packed_bf16;
  if (&k == &c::gelu_tanh_backward_direct || &k == &c::gelu_tanh_backward_matched)
    return &c::gelu_tanh_backward_packed_bf16;
  return nullptr;
}

// The packed coefficients when this call takes the packed path (bfloat16, switched on).
const PolyCoeffs* packed_path(const at::Tensor& x, const PolyCoeffs& k) {
  if (x.scalar_type() != at::kBFloat16 || !cuda_packed()) return nullptr;
  const PolyCoeffs* p = packed_for(k);
  TORCH_CHECK(p == nullptr || cuda::has_packed_degree(p->degree),
              "turbogelu: no packed CUDA kernel compiled for degree ", p->degree);
  return p;
}

// Device check and guard: cuda_backend.h's.
struct CudaBackend : cuda::DeviceBackend {
  static void check_degree(const PolyCoeffs& k) {
    TORCH_CHECK(cuda::has_degree(k.degree), "turbogelu: no CUDA kernel compiled for degree ",
                k.degree);
  }
  static void launch_forward(const at::Tensor& x, const at::Tensor& out,
                             const ops::GeluProgram& program) {
    const PolyCoeffs& k = program.k;
    if (const PolyCoeffs* p = packed_path(x, k)) {
      C10_CUDA_CHECK(cuda::forward_packed_bf16(x.const_data_ptr(), out.data_ptr(), x.numel(), *p,
                                               cuda::current_stream()));
      return;
    }
    check_degree(k);
    C10_CUDA_CHECK(cuda::forward(cuda::dtype_of(x), x.const_data_ptr(), out.data_ptr(), x.numel(),
                                 k, current_scheme(), cuda::current_stream()));
  }
  static void launch_backward(const at::Tensor& g, const at::Tensor& x, const at::Tensor& out,
                              const ops::GeluProgram& program) {
    const PolyCoeffs& k = program.k;
    if (const PolyCoeffs* p = packed_path(x, k)) {
      C10_CUDA_CHECK(cuda::backward_packed_bf16(g.const_data_ptr(), x.const_data_ptr(),
                                                out.data_ptr(), x.numel(), *p,
                                                cuda::current_stream()));
      return;
    }
    check_degree(k);
    C10_CUDA_CHECK(cuda::backward(cuda::dtype_of(x), g.const_data_ptr(), x.const_data_ptr(),
                                  out.data_ptr(), x.numel(), k, current_scheme(),
                                  cuda::current_stream()));
  }
};
using CudaOps = ops::GeluOps<CudaBackend>;

}  // namespace

TORCH_LIBRARY_IMPL(turbogelu, CUDA, m) {
  m.impl("gelu", &CudaOps::gelu);
  m.impl("gelu.out", &CudaOps::gelu_out);
  m.impl("gelu_", &CudaOps::gelu_inplace);
  m.impl("gelu_backward", &CudaOps::gelu_backward);
  m.impl("gelu_backward.out", &CudaOps::gelu_backward_out);
}

}  // namespace turbogelu
