// GELU's operator semantics, which every backend shares (CPU in kernels/cpu/ops.cpp, CUDA in
// kernels/cuda/gelu_cuda.cpp): argument checks, coefficient choice, output layout, out= and
// in-place handling. A backend supplies only its device check, a device guard and two
// launchers over flat memory; so CPU and CUDA cannot drift apart in what they accept or return.
//
// Host code only (light ATen headers: it is also compiled into the CUDA part); the
// device-side math is poly_eval.h.
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

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

// What one call of a GELU op runs: its coefficient set (gelu_coeffs.h: the polynomial every
// backend has; CUDA's packed path is chosen from it) and the same program as a row of the
// kernels' table (family.h's TG_GELU_OPS: the CPU runs it through the family's kernels).
struct GeluProgram {
  const PolyCoeffs& k;
  FamilyOp row;
  bool direct;  // the derivative: a fit of GELU' (else the forward's own derivative)
};

inline GeluProgram forward_program(c10::string_view approximate) {
  if (is_tanh(approximate)) return {coeffs::gelu_tanh_forward, kFamily_gelu_tanh, true};
  return {coeffs::gelu_none_forward, kFamily_gelu_none, true};
}

inline GeluProgram backward_program(c10::string_view approximate, c10::string_view backward) {
  TORCH_CHECK_VALUE(backward == "default" || backward == "direct" || backward == "matched",
                    "turbogelu: backward must be 'default', 'direct' or 'matched', got '", backward,
                    "'");
  const bool tanh = is_tanh(approximate);
  bool direct = backward == "direct";
  if (backward == "default")
    direct = tanh ? coeffs::gelu_tanh_default_backward_is_direct
                  : coeffs::gelu_none_default_backward_is_direct;
  const FamilyOp row = tanh ? kFamily_gelu_tanh : kFamily_gelu_none;
  if (tanh)
    return {direct ? coeffs::gelu_tanh_backward_direct : coeffs::gelu_tanh_backward_matched, row,
            direct};
  return {direct ? coeffs::gelu_none_backward_direct : coeffs::gelu_none_backward_matched, row,
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
                         c10::string_view backward) {
    B::check_device(x, x, "gelu", "x");
    check_dtype(x, "gelu");
    const GeluProgram k = forward_program(approximate);
    backward_program(approximate, backward);  // validate it here too, not only at backward time
    typename B::Guard guard(x);
    at::Tensor out = at::empty_like(x);
    B::launch_forward(in_layout_of(x, out), out, k);
    return out;
  }

  static void gelu_out(const at::Tensor& x, c10::string_view approximate, const at::Tensor& out) {
    B::check_device(x, x, "gelu", "x");
    B::check_device(out, x, "gelu", "out");
    check_dtype(x, "gelu");
    TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), "turbogelu.gelu: out has dtype ",
                     out.scalar_type(), " but x has dtype ", x.scalar_type());
    const GeluProgram k = forward_program(approximate);
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

  static void gelu_inplace(const at::Tensor& x, c10::string_view approximate) {
    gelu_out(x, approximate, x);
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
                                  c10::string_view approximate, c10::string_view backward) {
    check_backward_args(grad, x);
    const GeluProgram k = backward_program(approximate, backward);
    typename B::Guard guard(x);
    at::Tensor out = at::empty_like(x);
    B::launch_backward(in_layout_of(grad, out), in_layout_of(x, out), out, k);
    return out;
  }

  static void gelu_backward_out(const at::Tensor& grad, const at::Tensor& x,
                                c10::string_view approximate, c10::string_view backward,
                                const at::Tensor& out) {
    check_backward_args(grad, x);
    B::check_device(out, x, "gelu_backward", "out");
    TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(),
                     "turbogelu.gelu_backward: out has dtype ", out.scalar_type(),
                     " but x has dtype ", x.scalar_type());
    const GeluProgram k = backward_program(approximate, backward);
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

}  // namespace ops
}  // namespace turbogelu
