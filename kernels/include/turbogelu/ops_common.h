// The operator semantics every backend shares (CPU: kernels/cpu/ops.cpp; CUDA:
// kernels/cuda/ops.cpp): argument checks, the choice of programs, output layout, out= and
// in-place handling, for GELU (GeluOps) and the activation family's three kinds of op
// (FamilyOps; family.h). A backend supplies only its device check, a device guard and
// launchers over flat memory, which get tensors of one supported dtype sharing one dense
// layout; so the backends cannot drift apart in what they accept or return:
//   GELU     launch_forward(x, out, program), launch_backward(g, x, out, program)
//   family   launch_unary(op, tier, x, out, call)                Plain / Scaled forward
//            launch_binary(op, tier, a, b, out, call)            their backward (a = grad),
//                                                                Gated forward
//            launch_pair(op, tier, g, a, b, out_a, out_b, call)  Gated backward
//
// Host code only (light ATen headers: it is also compiled into the CUDA part); the
// device-side math is family_eval.h.
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <string>
#include <tuple>

#include "turbogelu/family.h"

namespace turbogelu {

// The polynomial scheme the kernels use now (a benchmark hook; defined in
// kernels/cpu/dispatch.cpp).
Scheme current_scheme();

// Whether bfloat16 on CUDA takes the opt-in packed path (TURBOGELU_CUDA_PACKED=1 or
// torch.ops.turbogelu._set_cuda_packed; defined in kernels/cpu/dispatch.cpp, ignored elsewhere).
bool cuda_packed();

namespace ops {

inline bool is_tanh(c10::string_view approximate) {
  TORCH_CHECK_VALUE(approximate == "none" || approximate == "tanh",
                    "turbogelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  return approximate == "tanh";
}

// The tier of a call of op (a row of the kernels' table), checked: the names the ops take
// and whether op has programs in it.
inline Tier family_tier(FamilyOp op, c10::string_view tier) {
  TORCH_CHECK_VALUE(tier == "accurate" || tier == "paper", "turbogelu.", family_op(op).name,
                    ": tier must be 'accurate' or 'paper', got '", tier, "'");
  const Tier t = tier == "accurate" ? kTier_accurate : kTier_paper;
  TORCH_CHECK_VALUE(family_op(op, t).shipped, "turbogelu.", family_op(op).name, ": there is no '",
                    tier, "' tier for ", family_op(op).name,
                    " (the source paper has no program for it); use tier='accurate'");
  return t;
}

// What one call of a GELU op runs: its row of the kernels' table (family.h's TG_GELU_OPS: the
// CPU and CUDA run it through the family's kernels) in its tier, with the derivative asked
// for, and the accurate tier's coefficient set (gelu_coeffs.h), which the benchmark's Estrin
// scheme and CUDA's packed path read (accurate tier only).
struct GeluProgram {
  const PolyCoeffs& k;
  FamilyOp row;
  Tier tier;
  bool direct;  // the derivative: a fit of GELU' (else the forward's own derivative)
};

inline GeluProgram forward_program(c10::string_view approximate, c10::string_view tier) {
  if (is_tanh(approximate))
    return {coeffs::gelu_tanh_forward, kFamily_gelu_tanh, family_tier(kFamily_gelu_tanh, tier),
            true};
  return {coeffs::gelu_none_forward, kFamily_gelu_none, family_tier(kFamily_gelu_none, tier), true};
}

inline GeluProgram backward_program(c10::string_view approximate, c10::string_view backward,
                                    c10::string_view tier) {
  TORCH_CHECK_VALUE(backward == "default" || backward == "direct" || backward == "matched",
                    "turbogelu: backward must be 'default', 'direct' or 'matched', got '", backward,
                    "'");
  const bool tanh = is_tanh(approximate);
  const FamilyOp row = tanh ? kFamily_gelu_tanh : kFamily_gelu_none;
  const Tier t = family_tier(row, tier);
  // The tier's own default (the accurate tier's is gelu_coeffs.h's, through family.h).
  const bool direct =
      backward == "default" ? family_op(row, t).default_direct : backward == "direct";
  if (tanh)
    return {direct ? coeffs::gelu_tanh_backward_direct : coeffs::gelu_tanh_backward_matched, row, t,
            direct};
  return {direct ? coeffs::gelu_none_backward_direct : coeffs::gelu_none_backward_matched, row, t,
          direct};
}

inline void check_dtype(const at::Tensor& t, const char* op) {
  const auto s = t.scalar_type();
  TORCH_CHECK_TYPE(s == at::kFloat || s == at::kHalf || s == at::kBFloat16 || s == at::kDouble,
                   "turbogelu.", op, ": unsupported dtype ", s,
                   "; supported dtypes are float32, float64, float16 and bfloat16");
}

// Elements laid out in one dense block, so a flat loop over memory visits each exactly once.
inline bool flat(const at::Tensor& t) { return t.is_non_overlapping_and_dense(); }

// The kernels run over flat memory: the input(s) and the output must share one dense layout.
// That layout is at::empty_like(x)'s (x's own strides when x is dense, e.g. channels_last or
// a transpose; otherwise contiguous in x's suggested memory format), which is also what the
// fake kernels in ops.py return, so eager and traced results agree on strides.
inline at::Tensor in_layout_of(const at::Tensor& src, const at::Tensor& like) {
  if (flat(src) && src.strides() == like.strides()) return src;
  return at::empty_like(like).copy_(src);
}

// out= must already have x's shape. ATen's out= ops resize an empty out, but a custom op
// that resizes a mutated argument cannot be functionalized (torch.compile), so here it is an
// error in eager and traced code alike.
inline void check_out_shape(const at::Tensor& out, const at::Tensor& x, const char* op) {
  TORCH_CHECK(out.sizes() == x.sizes(), "turbogelu.", op, ": out has shape ", out.sizes(),
              " but x has shape ", x.sizes(), " (out= tensors are not resized)");
}

// Where an out= result is computed: `out` itself when it is dense, else a temporary.
inline at::Tensor result_buffer(const at::Tensor& out, const at::Tensor& x) {
  return flat(out) ? out : at::empty_like(x);
}

// The five ops over a backend B with
//   static void check_device(const at::Tensor& t, const at::Tensor& x, const char* op,
//                            const char* what);   // t is where this kernel runs (x's device)
//   struct Guard { explicit Guard(const at::Tensor& x); };   // e.g. a CUDA device guard
//   static void launch_forward(const at::Tensor& x, const at::Tensor& out, const GeluProgram&);
//   static void launch_backward(const at::Tensor& g, const at::Tensor& x, const at::Tensor& out,
//                               const GeluProgram&);
// The launchers get tensors of one supported dtype sharing one dense layout.
template <class B>
struct GeluOps {
  static at::Tensor gelu(const at::Tensor& x, c10::string_view approximate,
                         c10::string_view backward, c10::string_view tier) {
    B::check_device(x, x, "gelu", "x");
    check_dtype(x, "gelu");
    const GeluProgram k = forward_program(approximate, tier);
    backward_program(approximate, backward, tier);  // validated here too, not only at backward
    typename B::Guard guard(x);
    at::Tensor out = at::empty_like(x);
    B::launch_forward(in_layout_of(x, out), out, k);
    return out;
  }

  static void gelu_out(const at::Tensor& x, c10::string_view approximate, c10::string_view tier,
                       const at::Tensor& out) {
    B::check_device(x, x, "gelu", "x");
    B::check_device(out, x, "gelu", "out");
    check_dtype(x, "gelu");
    TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), "turbogelu.gelu: out has dtype ",
                     out.scalar_type(), " but x has dtype ", x.scalar_type());
    const GeluProgram k = forward_program(approximate, tier);
    check_out_shape(out, x, "gelu");
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, x);
    typename B::Guard guard(x);
    // When out is x itself (gelu_), both are the same flat buffer and each element is read
    // before it is written.
    at::Tensor target = result_buffer(out, x);
    B::launch_forward(in_layout_of(x, target), target, k);
    if (!target.is_same(out)) out.copy_(target);
  }

  static void gelu_inplace(const at::Tensor& x, c10::string_view approximate,
                           c10::string_view tier) {
    gelu_out(x, approximate, tier, x);
  }

  static void check_backward_args(const at::Tensor& grad, const at::Tensor& x) {
    B::check_device(x, x, "gelu_backward", "x");
    B::check_device(grad, x, "gelu_backward", "grad");
    check_dtype(x, "gelu_backward");
    TORCH_CHECK_TYPE(grad.scalar_type() == x.scalar_type(),
                     "turbogelu.gelu_backward: grad has dtype ", grad.scalar_type(),
                     " but x has dtype ", x.scalar_type());
    TORCH_CHECK(grad.sizes() == x.sizes(), "turbogelu.gelu_backward: grad has shape ", grad.sizes(),
                " but x has shape ", x.sizes());
  }

  static at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& x,
                                  c10::string_view approximate, c10::string_view backward,
                                  c10::string_view tier) {
    check_backward_args(grad, x);
    const GeluProgram k = backward_program(approximate, backward, tier);
    typename B::Guard guard(x);
    at::Tensor out = at::empty_like(x);
    B::launch_backward(in_layout_of(grad, out), in_layout_of(x, out), out, k);
    return out;
  }

  static void gelu_backward_out(const at::Tensor& grad, const at::Tensor& x,
                                c10::string_view approximate, c10::string_view backward,
                                c10::string_view tier, const at::Tensor& out) {
    check_backward_args(grad, x);
    B::check_device(out, x, "gelu_backward", "out");
    TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(),
                     "turbogelu.gelu_backward: out has dtype ", out.scalar_type(),
                     " but x has dtype ", x.scalar_type());
    const GeluProgram k = backward_program(approximate, backward, tier);
    check_out_shape(out, x, "gelu_backward");
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, x);
    at::assert_no_partial_overlap(out, grad);
    typename B::Guard guard(x);
    at::Tensor target = result_buffer(out, x);
    B::launch_backward(in_layout_of(grad, target), in_layout_of(x, target), target, k);
    if (!target.is_same(out)) out.copy_(target);
  }
};

// ---------------------------------------------------------------- the family

// The call of op in `tier` with `backward`'s derivative; softcap's cap is checked and rounded
// here (it must stay positive and finite in float32, and so must 1/cap).
inline FamilyCall family_call(FamilyOp op, c10::string_view tier_name, c10::string_view backward,
                              double cap, Tier* tier_out) {
  const Tier tier = family_tier(op, tier_name);
  const FamilyOpInfo& info = family_op(op, tier);
  TORCH_CHECK_VALUE(backward == "default" || backward == "direct" || backward == "matched",
                    "turbogelu.", info.name,
                    ": backward must be 'default', 'direct' or 'matched', got '", backward, "'");
  const bool direct = backward == "default" ? info.default_direct : backward == "direct";
  FamilyCall c{};
  c.f = *info.forward;
  c.d = direct ? *info.direct : *info.matched;
  c.fcells = info.cells.forward;
  c.dcells = direct ? info.cells.direct : info.cells.matched;
  c.cap = 1.0f;
  c.inv = 1.0f;
  if (info.kind == Kind::Scaled) {
    const float cap32 = static_cast<float>(cap);
    const float inv32 = 1.0f / cap32;
    TORCH_CHECK_VALUE(
        std::isfinite(cap) && cap > 0 && std::isfinite(cap32) && cap32 > 0 && std::isfinite(inv32),
        "turbogelu.", info.name,
        ": cap must be positive and finite (and so in float32, with its "
        "reciprocal), got ",
        cap);
    c.cap = cap32;
    c.inv = inv32;
  }
  *tier_out = tier;
  return c;
}

// The family's call of a GELU program: its row in its tier, with the derivative asked for
// (the backends that run GELU through the family's kernels).
inline FamilyCall gelu_call(const GeluProgram& p) {
  Tier tier;
  return family_call(p.row, p.tier == kTier_paper ? "paper" : "accurate",
                     p.direct ? "direct" : "matched", 1.0, &tier);
}

inline void check_like(const at::Tensor& t, const at::Tensor& x, const char* op, const char* what,
                       const char* xname) {
  TORCH_CHECK_TYPE(t.scalar_type() == x.scalar_type(), "turbogelu.", op, ": ", what, " has dtype ",
                   t.scalar_type(), " but ", xname, " has dtype ", x.scalar_type());
  TORCH_CHECK(t.sizes() == x.sizes(), "turbogelu.", op, ": ", what, " has shape ", t.sizes(),
              " but ", xname, " has shape ", x.sizes(), " (no broadcasting)");
}

// `tier` and `backward` are the schemas' strings; `cap` is softcap's (1 elsewhere).
template <class B>
struct FamilyOps {
  // ------------------------------------------------ Plain and Scaled: f(x), grad f'(x)

  static void check_x(FamilyOp op, const at::Tensor& x) {
    const char* name = family_op(op).name;
    B::check_device(x, x, name, "x");
    check_dtype(x, name);
  }

  static at::Tensor forward(FamilyOp op, const at::Tensor& x, double cap, c10::string_view backward,
                            c10::string_view tier) {
    check_x(op, x);
    Tier t;
    const FamilyCall c = family_call(op, tier, backward, cap, &t);
    typename B::Guard guard(x);
    at::Tensor out = at::empty_like(x);
    B::launch_unary(op, t, in_layout_of(x, out), out, c);
    return out;
  }

  static void forward_out(FamilyOp op, const at::Tensor& x, double cap, c10::string_view tier,
                          const at::Tensor& out) {
    const char* name = family_op(op).name;
    check_x(op, x);
    B::check_device(out, x, name, "out");
    TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), "turbogelu.", name, ": out has dtype ",
                     out.scalar_type(), " but x has dtype ", x.scalar_type());
    Tier t;
    const FamilyCall c = family_call(op, tier, "default", cap, &t);
    check_out_shape(out, x, name);
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, x);
    typename B::Guard guard(x);
    // out may be x itself (the in-place form): each element is read before it is written.
    at::Tensor target = result_buffer(out, x);
    B::launch_unary(op, t, in_layout_of(x, target), target, c);
    if (!target.is_same(out)) out.copy_(target);
  }

  // The name of op's backward op, which its tensors' errors name (the op that was called).
  static std::string backward_name(FamilyOp op) {
    return std::string(family_op(op).name) + "_backward";
  }

  static void check_backward_args(FamilyOp op, const at::Tensor& grad, const at::Tensor& x) {
    const std::string bname = backward_name(op);
    const char* name = bname.c_str();
    B::check_device(x, x, name, "x");
    B::check_device(grad, x, name, "grad");
    check_dtype(x, name);
    check_like(grad, x, name, "grad", "x");
  }

  static at::Tensor backward(FamilyOp op, const at::Tensor& grad, const at::Tensor& x, double cap,
                             c10::string_view backward, c10::string_view tier) {
    check_backward_args(op, grad, x);
    Tier t;
    const FamilyCall c = family_call(op, tier, backward, cap, &t);
    typename B::Guard guard(x);
    at::Tensor out = at::empty_like(x);
    B::launch_binary(op, t, in_layout_of(grad, out), in_layout_of(x, out), out, c);
    return out;
  }

  static void backward_out(FamilyOp op, const at::Tensor& grad, const at::Tensor& x, double cap,
                           c10::string_view backward, c10::string_view tier,
                           const at::Tensor& out) {
    const std::string bname = backward_name(op);
    const char* name = bname.c_str();
    check_backward_args(op, grad, x);
    B::check_device(out, x, name, "out");
    check_like(out, x, name, "out", "x");
    Tier t;
    const FamilyCall c = family_call(op, tier, backward, cap, &t);
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, x);
    at::assert_no_partial_overlap(out, grad);
    typename B::Guard guard(x);
    at::Tensor target = result_buffer(out, x);
    B::launch_binary(op, t, in_layout_of(grad, target), in_layout_of(x, target), target, c);
    if (!target.is_same(out)) out.copy_(target);
  }

  // ------------------------------------------------ Gated: f(a) b and its backward

  static void check_gated(FamilyOp op, const at::Tensor& a, const at::Tensor& b,
                          const char* name = nullptr) {
    if (name == nullptr) name = family_op(op).name;
    B::check_device(a, a, name, "a");
    B::check_device(b, a, name, "b");
    check_dtype(a, name);
    check_like(b, a, name, "b", "a");
  }

  static at::Tensor gated(FamilyOp op, const at::Tensor& a, const at::Tensor& b,
                          c10::string_view backward, c10::string_view tier) {
    check_gated(op, a, b);
    Tier t;
    const FamilyCall c = family_call(op, tier, backward, 1.0, &t);
    typename B::Guard guard(a);
    at::Tensor out = at::empty_like(a);
    B::launch_binary(op, t, in_layout_of(a, out), in_layout_of(b, out), out, c);
    return out;
  }

  static void gated_out(FamilyOp op, const at::Tensor& a, const at::Tensor& b,
                        c10::string_view tier, const at::Tensor& out) {
    const char* name = family_op(op).name;
    check_gated(op, a, b);
    B::check_device(out, a, name, "out");
    check_like(out, a, name, "out", "a");
    Tier t;
    const FamilyCall c = family_call(op, tier, "default", 1.0, &t);
    at::assert_no_internal_overlap(out);
    at::assert_no_partial_overlap(out, a);
    at::assert_no_partial_overlap(out, b);
    typename B::Guard guard(a);
    at::Tensor target = result_buffer(out, a);
    B::launch_binary(op, t, in_layout_of(a, target), in_layout_of(b, target), target, c);
    if (!target.is_same(out)) out.copy_(target);
  }

  static void check_gated_backward(FamilyOp op, const at::Tensor& grad, const at::Tensor& a,
                                   const at::Tensor& b) {
    const std::string bname = backward_name(op);
    const char* name = bname.c_str();
    check_gated(op, a, b, name);
    B::check_device(grad, a, name, "grad");
    check_like(grad, a, name, "grad", "a");
  }

  static std::tuple<at::Tensor, at::Tensor> gated_backward(FamilyOp op, const at::Tensor& grad,
                                                           const at::Tensor& a, const at::Tensor& b,
                                                           c10::string_view backward,
                                                           c10::string_view tier) {
    check_gated_backward(op, grad, a, b);
    Tier t;
    const FamilyCall c = family_call(op, tier, backward, 1.0, &t);
    typename B::Guard guard(a);
    at::Tensor ga = at::empty_like(a), gb = at::empty_like(a);
    B::launch_pair(op, t, in_layout_of(grad, ga), in_layout_of(a, ga), in_layout_of(b, ga), ga, gb,
                   c);
    return {ga, gb};
  }

  static void gated_backward_out(FamilyOp op, const at::Tensor& grad, const at::Tensor& a,
                                 const at::Tensor& b, c10::string_view backward,
                                 c10::string_view tier, const at::Tensor& grad_a,
                                 const at::Tensor& grad_b) {
    const std::string bname = backward_name(op);
    const char* name = bname.c_str();
    check_gated_backward(op, grad, a, b);
    for (const at::Tensor* o : {&grad_a, &grad_b}) {
      B::check_device(*o, a, name, "out");
      check_like(*o, a, name, "out", "a");
      at::assert_no_internal_overlap(*o);
      for (const at::Tensor* in : {&grad, &a, &b}) at::assert_no_partial_overlap(*o, *in);
    }
    at::assert_no_overlap(grad_a, grad_b);
    Tier t;
    const FamilyCall c = family_call(op, tier, backward, 1.0, &t);
    typename B::Guard guard(a);
    // An output may be one of the inputs (full overlap): each block is read before either
    // output of it is written. Both outputs must share one layout with the inputs.
    at::Tensor ta = result_buffer(grad_a, a), tb = result_buffer(grad_b, a);
    if (!tb.is_same(grad_b) || !ta.is_same(grad_a) || ta.strides() != tb.strides()) {
      ta = at::empty_like(a);
      tb = at::empty_like(a);
    }
    B::launch_pair(op, t, in_layout_of(grad, ta), in_layout_of(a, ta), in_layout_of(b, ta), ta, tb,
                   c);
    if (!ta.is_same(grad_a)) grad_a.copy_(ta);
    if (!tb.is_same(grad_b)) grad_b.copy_(tb);
  }
};

}  // namespace ops
}  // namespace turbogelu
