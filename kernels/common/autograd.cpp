// The functional ops' Autograd kernel for CPU and CUDA tensors, in C++: a call that nothing
// differentiates goes straight below autograd; a differentiated one goes to the op's Python
// autograd.Function (turbogelu/_autograd.py), registered for the Autograd alias.
//
// Why: the Python kernel alone cost every call about 5 us, and at 1M 16-bit elements about
// 0.1x a copy's time more (python -m experiments.bench_accounting: "op" against "allocating,
// below autograd"), even where nothing is differentiated, which is every inference call.
//
// How the differentiated call reaches Python: a kernel registered for AutogradCPU / AutogradCUDA
// takes those keys' entries from the alias kernel, so the Python kernel is reached through the
// one autograd key that no CPU or CUDA tensor dispatches to and that the alias still fills:
// AutogradOther. Its test is the same as the Python kernel's (turbogelu/_autograd.py,
// _differentiated); the Python kernel then handles torch.func transforms as before.
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "turbogelu/family.h"

namespace {

// Whether an input requires grad (with grad mode on) or carries a forward-mode tangent (level
// 0: PyTorch has no nested forward levels).
bool differentiated(const torch::jit::Stack& stack, size_t arguments) {
  const bool grad_mode = c10::GradMode::is_enabled();
  for (size_t i = stack.size() - arguments; i < stack.size(); ++i) {
    if (!stack[i].isTensor()) continue;
    const at::Tensor& t = stack[i].toTensor();
    if (!t.defined()) continue;
    if ((grad_mode && t.requires_grad()) || t._fw_grad(/*level=*/0).defined()) return true;
  }
  return false;
}

void autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                     torch::jit::Stack* stack) {
  const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
  if (differentiated(*stack, op.schema().arguments().size())) {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::AutogradOther) | below, stack);
    return;
  }
  at::AutoDispatchBelowAutograd guard;
  op.redispatchBoxed(below, stack);
}

// The functional ops, each with a Python Function: gelu, softmax and every op of the family
// table with its backward, and the from-output backwards.
std::vector<std::string> functional_ops() {
  std::vector<std::string> names = {"gelu", "gelu_backward", "softmax"};
#define TG_OP(op, fn, kind) \
  names.emplace_back(#op);  \
  names.emplace_back(#op "_backward");
  TG_FAMILY_OPS(TG_OP)
#undef TG_OP
#define TG_FROM_OUTPUT(op) names.emplace_back(#op "_backward_from_output");
  TG_FROM_OUTPUT_OPS(TG_FROM_OUTPUT)
#undef TG_FROM_OUTPUT
  return names;
}

void register_for(torch::Library& m) {
  for (const std::string& name : functional_ops())
    m.impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&autograd_kernel>());
}

}  // namespace

TORCH_LIBRARY_IMPL(turbogelu, AutogradCPU, m) { register_for(m); }
TORCH_LIBRARY_IMPL(turbogelu, AutogradCUDA, m) { register_for(m); }
