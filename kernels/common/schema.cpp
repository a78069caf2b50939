// The public operators' schemas, device-neutral: each backend registers its kernels for them
// (CPU: kernels/cpu/ops.cpp; CUDA: kernels/cuda/ops.cpp; Apple GPUs: turbogelu/mps.py),
// turbogelu/ops.py their fake (meta) kernels and autograd. The semantics every backend shares
// are kernels/include/turbogelu/ops_common.h.
//
// The CPU back end adds its switches as a fragment of this library (_cpu_isa, _set_cpu_kernel,
// ...), the run-time-coefficient ops poly_gelu* another (kernels/cpu/poly_ops.cpp); the
// benchmark's probes live apart, in torch.ops.turbogelu_bench (kernels/bench/, compiled only
// with TURBOGELU_BENCH_PROBES=1).
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <vector>

#include "turbogelu/family.h"

namespace {

// The family's ops of one kind, and those of them with a from-output backward, in the order of
// the table of functions (turbogelu/_table.py, written into family_coeffs.h by codegen): a
// new Plain function gets its schemas here without a line of its own.
std::vector<std::string> ops_of_kind(turbogelu::Kind kind) {
  std::vector<std::string> names;
#define TG_OF_KIND(op, fn, k) \
  if (turbogelu::Kind::k == kind) names.emplace_back(#op);
  TG_FAMILY_OPS(TG_OF_KIND)
#undef TG_OF_KIND
  return names;
}

std::vector<std::string> from_output_ops(turbogelu::Kind kind) {
  const std::vector<std::string> of_kind = ops_of_kind(kind);
  std::vector<std::string> names;
#define TG_FROM_OUTPUT(op) \
  if (std::find(of_kind.begin(), of_kind.end(), #op) != of_kind.end()) names.emplace_back(#op);
  TG_FROM_OUTPUT_OPS(TG_FROM_OUTPUT)
#undef TG_FROM_OUTPUT
  return names;
}

}  // namespace

TORCH_LIBRARY(turbogelu, m) {
  // `backward` picks the coefficients autograd uses for this call: "default" (the more
  // accurate, as measured by the fit), "direct" (a fit of GELU') or "matched" (the derivative
  // of the forward polynomial). The forward result does not depend on it.
  // `tier`: "accurate" (the default) or "paper" (the source paper's D5 GELU program), as the
  // family's below.
  m.def(
      "gelu(Tensor x, str approximate=\"none\", *, str backward=\"default\", "
      "str tier=\"accurate\") -> Tensor");
  // The mutating forms return nothing: PyTorch functionalizes (torch.compile) custom ops only
  // when a mutated argument is not also returned. The Python wrappers return it.
  m.def(
      "gelu.out(Tensor x, str approximate=\"none\", *, str tier=\"accurate\", Tensor(a!) out) "
      "-> ()");
  m.def("gelu_(Tensor(a!) x, str approximate=\"none\", str tier=\"accurate\") -> ()");
  m.def(
      "gelu_backward(Tensor grad, Tensor x, str approximate=\"none\", "
      "str backward=\"default\", str tier=\"accurate\") -> Tensor");
  m.def(
      "gelu_backward.out(Tensor grad, Tensor x, str approximate=\"none\", "
      "str backward=\"default\", str tier=\"accurate\", *, Tensor(a!) out) -> ()");

  // The activation family (turbogelu/family.h): the same forms as gelu's. `backward` picks
  // the derivative autograd uses: "default" (the more accurate, per the spec), "direct" (a
  // fit of f') or "matched" (the derivative of the forward program); `tier` the programs:
  // "accurate" (the default) or "paper" (the source paper's Table 2 programs). Backward ops
  // take x (not the forward's result) and recompute the derivative from it.
  for (const std::string& n : ops_of_kind(turbogelu::Kind::Plain)) {
    m.def((n + "(Tensor x, *, str backward=\"default\", str tier=\"accurate\") -> Tensor").c_str());
    m.def((n + ".out(Tensor x, *, str tier=\"accurate\", Tensor(a!) out) -> ()").c_str());
    m.def((n + "_(Tensor(a!) x, str tier=\"accurate\") -> ()").c_str());
    m.def((n + "_backward(Tensor grad, Tensor x, str backward=\"default\", str tier=\"accurate\") "
               "-> Tensor")
              .c_str());
    m.def((n + "_backward.out(Tensor grad, Tensor x, str backward=\"default\", "
               "str tier=\"accurate\", *, Tensor(a!) out) -> ()")
              .c_str());
  }
  // Autograd's default backward of sigmoid, tanh, exp2 and softcap, from the saved result y
  // rather than x (PyTorch's formula and order; CPU kernels, PyTorch's ops elsewhere).
  for (const std::string& op : from_output_ops(turbogelu::Kind::Plain)) {
    const std::string n = op + "_backward_from_output";
    m.def((n + "(Tensor grad, Tensor y) -> Tensor").c_str());
    m.def((n + ".out(Tensor grad, Tensor y, *, Tensor(a!) out) -> ()").c_str());
  }
  m.def("softcap_backward_from_output(Tensor grad, Tensor y, float cap) -> Tensor");
  m.def(
      "softcap_backward_from_output.out(Tensor grad, Tensor y, float cap, *, Tensor(a!) out) -> "
      "()");
  // softcap(x, cap) = cap * tanh(x / cap), cap a positive finite float.
  m.def(
      "softcap(Tensor x, float cap, *, str backward=\"default\", str tier=\"accurate\") -> Tensor");
  m.def("softcap.out(Tensor x, float cap, *, str tier=\"accurate\", Tensor(a!) out) -> ()");
  m.def("softcap_(Tensor(a!) x, float cap, str tier=\"accurate\") -> ()");
  m.def(
      "softcap_backward(Tensor grad, Tensor x, float cap, str backward=\"default\", "
      "str tier=\"accurate\") -> Tensor");
  m.def(
      "softcap_backward.out(Tensor grad, Tensor x, float cap, str backward=\"default\", "
      "str tier=\"accurate\", *, Tensor(a!) out) -> ()");
  // swiglu(a, b) = silu(a) * b (same shapes, no broadcasting); its backward returns
  // (grad_a, grad_b) from one pass.
  m.def("swiglu(Tensor a, Tensor b, *, str backward=\"default\", str tier=\"accurate\") -> Tensor");
  m.def("swiglu.out(Tensor a, Tensor b, *, str tier=\"accurate\", Tensor(a!) out) -> ()");
  m.def(
      "swiglu_backward(Tensor grad, Tensor a, Tensor b, str backward=\"default\", "
      "str tier=\"accurate\") -> (Tensor, Tensor)");
  m.def(
      "swiglu_backward.out(Tensor grad, Tensor a, Tensor b, str backward=\"default\", "
      "str tier=\"accurate\", *, Tensor(a!) grad_a, Tensor(b!) grad_b) -> ()");
  // softmax along dim by exp2 (CPU only; kernels/cpu/ops.cpp): float32, float16,
  // bfloat16, computed in float32.
  m.def("softmax(Tensor x, int dim=-1, *, str tier=\"accurate\") -> Tensor");
}
