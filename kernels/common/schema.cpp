// The public operators' schemas, device-neutral: each backend registers its kernels for them
// (CPU: kernels/cpu/gelu_ops.cpp; CUDA: kernels/cuda/gelu_cuda.cpp; Apple GPUs:
// turbogelu/mps.py), turbogelu/ops.py their fake (meta) kernels and autograd. The
// semantics every backend shares are kernels/include/turbogelu/ops_common.h.
//
// The CPU back end adds its switches as a fragment of this library (_cpu_isa, _set_cpu_kernel,
// ...), the run-time-coefficient ops poly_gelu* another (kernels/cpu/poly_ops.cpp); the
// benchmark's probes live apart, in torch.ops.turbogelu_bench (kernels/cpu/stream_ops.cpp).
#include <torch/library.h>

TORCH_LIBRARY(turbogelu, m) {
  // `backward` picks the coefficients autograd uses for this call: "default" (the more
  // accurate, as measured by the fit), "direct" (a fit of GELU') or "matched" (the derivative
  // of the forward polynomial). The forward result does not depend on it.
  m.def("gelu(Tensor x, str approximate=\"none\", *, str backward=\"default\") -> Tensor");
  // The mutating forms return nothing: PyTorch functionalizes (torch.compile) custom ops only
  // when a mutated argument is not also returned. The Python wrappers return it.
  m.def("gelu.out(Tensor x, str approximate=\"none\", *, Tensor(a!) out) -> ()");
  m.def("gelu_(Tensor(a!) x, str approximate=\"none\") -> ()");
  m.def(
      "gelu_backward(Tensor grad, Tensor x, str approximate=\"none\", "
      "str backward=\"default\") -> Tensor");
  m.def(
      "gelu_backward.out(Tensor grad, Tensor x, str approximate=\"none\", "
      "str backward=\"default\", *, Tensor(a!) out) -> ()");
}
