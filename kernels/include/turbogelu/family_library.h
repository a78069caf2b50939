// The activation family's ops registered for one dispatch key: the schemas' signatures
// (kernels/common/schema.cpp) over ops_common.h's FamilyOps<B>, for every op of
// TG_FAMILY_OPS by its kind. A backend's file calls, for its key,
//
//   TORCH_LIBRARY_IMPL(turbogelu, CPU, m) { ops::impl_family_ops<CpuFamilyBackend>(m); }
//
// so the CPU and CUDA registrations are one list (and an op added to family.h is registered
// on every device).
#pragma once

#include <torch/library.h>

#include <string>
#include <tuple>

#include "turbogelu/ops_common.h"

namespace turbogelu {
namespace ops {

template <class B>
struct FamilySchemas {
  using Ops = FamilyOps<B>;
  using T = at::Tensor;
  using S = c10::string_view;

  // Plain: <op>(x, *, backward, tier), <op>.out(x, *, tier, out), <op>_(x, tier),
  // <op>_backward(grad, x, backward, tier), <op>_backward.out(grad, x, backward, tier, *, out).
  template <FamilyOp Op>
  static T plain(const T& x, S backward, S tier) {
    return Ops::forward(Op, x, 1.0, backward, tier);
  }
  template <FamilyOp Op>
  static void plain_out(const T& x, S tier, const T& out) {
    Ops::forward_out(Op, x, 1.0, tier, out);
  }
  template <FamilyOp Op>
  static void plain_inplace(const T& x, S tier) {
    Ops::forward_out(Op, x, 1.0, tier, x);
  }
  template <FamilyOp Op>
  static T plain_backward(const T& grad, const T& x, S backward, S tier) {
    return Ops::backward(Op, grad, x, 1.0, backward, tier);
  }
  template <FamilyOp Op>
  static void plain_backward_out(const T& grad, const T& x, S backward, S tier, const T& out) {
    Ops::backward_out(Op, grad, x, 1.0, backward, tier, out);
  }

  // Scaled: the same with `float cap` after x.
  template <FamilyOp Op>
  static T scaled(const T& x, double cap, S backward, S tier) {
    return Ops::forward(Op, x, cap, backward, tier);
  }
  template <FamilyOp Op>
  static void scaled_out(const T& x, double cap, S tier, const T& out) {
    Ops::forward_out(Op, x, cap, tier, out);
  }
  template <FamilyOp Op>
  static void scaled_inplace(const T& x, double cap, S tier) {
    Ops::forward_out(Op, x, cap, tier, x);
  }
  template <FamilyOp Op>
  static T scaled_backward(const T& grad, const T& x, double cap, S backward, S tier) {
    return Ops::backward(Op, grad, x, cap, backward, tier);
  }
  template <FamilyOp Op>
  static void scaled_backward_out(const T& grad, const T& x, double cap, S backward, S tier,
                                  const T& out) {
    Ops::backward_out(Op, grad, x, cap, backward, tier, out);
  }

  // Gated: <op>(a, b, *, backward, tier), <op>.out(a, b, *, tier, out), <op>_backward(grad,
  // a, b, backward, tier) -> (grad_a, grad_b), <op>_backward.out(..., *, grad_a, grad_b).
  template <FamilyOp Op>
  static T gated(const T& a, const T& b, S backward, S tier) {
    return Ops::gated(Op, a, b, backward, tier);
  }
  template <FamilyOp Op>
  static void gated_out(const T& a, const T& b, S tier, const T& out) {
    Ops::gated_out(Op, a, b, tier, out);
  }
  template <FamilyOp Op>
  static std::tuple<T, T> gated_backward(const T& grad, const T& a, const T& b, S backward,
                                         S tier) {
    return Ops::gated_backward(Op, grad, a, b, backward, tier);
  }
  template <FamilyOp Op>
  static void gated_backward_out(const T& grad, const T& a, const T& b, S backward, S tier,
                                 const T& grad_a, const T& grad_b) {
    Ops::gated_backward_out(Op, grad, a, b, backward, tier, grad_a, grad_b);
  }

  // Every schema of Op (named `name`, of kind K) into m.
  template <FamilyOp Op, Kind K>
  static void impl(torch::Library& m, const std::string& name) {
    const auto n = [&](const char* suffix) { return name + suffix; };
    if constexpr (K == Kind::Plain) {
      m.impl(n("").c_str(), &plain<Op>);
      m.impl(n(".out").c_str(), &plain_out<Op>);
      m.impl(n("_").c_str(), &plain_inplace<Op>);
      m.impl(n("_backward").c_str(), &plain_backward<Op>);
      m.impl(n("_backward.out").c_str(), &plain_backward_out<Op>);
    } else if constexpr (K == Kind::Scaled) {
      m.impl(n("").c_str(), &scaled<Op>);
      m.impl(n(".out").c_str(), &scaled_out<Op>);
      m.impl(n("_").c_str(), &scaled_inplace<Op>);
      m.impl(n("_backward").c_str(), &scaled_backward<Op>);
      m.impl(n("_backward.out").c_str(), &scaled_backward_out<Op>);
    } else {
      m.impl(n("").c_str(), &gated<Op>);
      m.impl(n(".out").c_str(), &gated_out<Op>);
      m.impl(n("_backward").c_str(), &gated_backward<Op>);
      m.impl(n("_backward.out").c_str(), &gated_backward_out<Op>);
    }
  }
};

// Every family op's schemas, implemented by backend B, into m (a TORCH_LIBRARY_IMPL block).
template <class B>
void impl_family_ops(torch::Library& m) {
#define TG_IMPL(op, fn, kind) FamilySchemas<B>::template impl<kFamily_##op, Kind::kind>(m, #op);
  TG_FAMILY_OPS(TG_IMPL)
#undef TG_IMPL
}

}  // namespace ops
}  // namespace turbogelu
