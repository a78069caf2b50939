// GELU's CPU forward / backward with a coefficient set chosen by the caller (poly_gelu; defined
// in ops.cpp, over the instruction-set, scheme and grain choices of dispatch.cpp).
#pragma once

#include <ATen/ATen.h>

#include "turbogelu/poly_eval.h"

namespace turbogelu {
namespace cpu {

// gelu(x) with the coefficient set k: a new tensor in empty_like(x)'s layout.
at::Tensor forward_with(const at::Tensor& x, const PolyCoeffs& k);
// grad * gelu'(x) with the coefficient set k.
at::Tensor backward_with(const at::Tensor& grad, const at::Tensor& x, const PolyCoeffs& k);

}  // namespace cpu
}  // namespace turbogelu
