// What every CUDA op shares (ops.cpp): the device check, the device
// guard, the element type and the current stream. Host code against c10/cuda only.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include "cuda_kernels.h"

namespace turbogelu {
namespace cuda {

inline DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return kF32;
    case at::kHalf:
      return kF16;
    case at::kBFloat16:
      return kBF16;
    default:
      return kF64;  // ops::check_dtype has refused everything else
  }
}

inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

// The device check and guard of ops_common.h's backends: every tensor on
// x's CUDA device (the dispatcher picks the CUDA kernel when any is on CUDA), and that device
// current while the op runs.
struct DeviceBackend {
  static void check_device(const at::Tensor& t, const at::Tensor& x, const char* op,
                           const char* what) {
    TORCH_CHECK(t.is_cuda() && t.device() == x.device(), "turbogelu.", op, ": expected ", what,
                " on ", x.is_cuda() ? x.device() : c10::Device(c10::kCUDA),
                " (this is the CUDA kernel and x is on ", x.device(), "), got a tensor on ",
                t.device());
  }
  struct Guard {
    explicit Guard(const at::Tensor& x) : guard(x.device()) {}
    c10::cuda::CUDAGuard guard;
  };
};

}  // namespace cuda
}  // namespace turbogelu
