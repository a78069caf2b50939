// turbogelu::poly_gelu / poly_gelu_backward: the shipped kernels with coefficients passed at
// run time, so that any fitted spec of a compiled degree (TG_KERNEL_DEGREES, 2 to 12) runs
// through the same templated code as gelu / gelu_backward, without rebuilding. The
// benchmark times operation count against time with it; for the shipped coefficients it
// gives the shipped op's bits (tests/test_poly_ops.py).
//
//   forward   x * (1/2 + x P(z))  for fl(x*x) <= fl(clamp^2), z = fma(x*x, scale, -1)
//   backward  grad * (1/2 + x P(z)) inside; grad * (x > 0) outside
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu_kernels.h"
#include "launch.h"

namespace turbogelu {
namespace {

std::vector<int64_t> poly_degrees() {
  std::vector<int64_t> out;
#define TG_PUSH(D) out.push_back(D);
  TG_KERNEL_DEGREES(TG_PUSH)
#undef TG_PUSH
  return out;
}

PolyCoeffs make_coeffs(const at::Tensor& coeffs, double clamp, double scale, const char* op) {
  TORCH_CHECK_TYPE(coeffs.scalar_type() == at::kFloat, "turbogelu.", op,
                   ": coeffs must be float32 (c_0 .. c_degree), got ", coeffs.scalar_type());
  TORCH_CHECK(coeffs.dim() == 1, "turbogelu.", op, ": coeffs must be 1-D, got shape ",
              coeffs.sizes());
  TORCH_CHECK(coeffs.device().is_cpu(), "turbogelu.", op, ": coeffs must be on the CPU");
  const int64_t degree = coeffs.numel() - 1;
  bool compiled = false;
  for (int64_t d : poly_degrees()) compiled = compiled || d == degree;
  TORCH_CHECK_VALUE(compiled, "turbogelu.", op, ": no kernel compiled for degree ", degree,
                    " (coeffs has ", coeffs.numel(),
                    " values; compiled degrees: ", c10::Join(", ", poly_degrees()), ")");
  TORCH_CHECK_VALUE(std::isfinite(clamp) && clamp > 0, "turbogelu.", op,
                    ": clamp must be positive and finite, got ", clamp);
  TORCH_CHECK_VALUE(std::isfinite(scale), "turbogelu.", op, ": scale must be finite, got ", scale);
  PolyCoeffs k{};
  k.degree = static_cast<int>(degree);
  k.clamp = static_cast<float>(clamp);
  k.scale = static_cast<float>(scale);
  const at::Tensor c = coeffs.contiguous();
  const float* p = c.const_data_ptr<float>();
  for (int64_t i = 0; i <= degree; ++i) k.c[i] = p[i];
  return k;
}

at::Tensor poly_gelu_cpu(const at::Tensor& x, const at::Tensor& coeffs, double clamp,
                         double scale) {
  return cpu::forward_with(x, make_coeffs(coeffs, clamp, scale, "poly_gelu"));
}

at::Tensor poly_gelu_backward_cpu(const at::Tensor& grad, const at::Tensor& x,
                                  const at::Tensor& coeffs, double clamp, double scale) {
  return cpu::backward_with(grad, x, make_coeffs(coeffs, clamp, scale, "poly_gelu_backward"));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(turbogelu, m) {
  // `clamp` and `scale` are rounded to float32, as the generated header's are.
  m.def("poly_gelu(Tensor x, Tensor coeffs, float clamp, float scale) -> Tensor");
  m.def(
      "poly_gelu_backward(Tensor grad, Tensor x, Tensor coeffs, float clamp, float scale) -> "
      "Tensor");
  m.def("_poly_degrees() -> int[]", &poly_degrees);
}

TORCH_LIBRARY_IMPL(turbogelu, CPU, m) {
  m.impl("poly_gelu", &poly_gelu_cpu);
  m.impl("poly_gelu_backward", &poly_gelu_backward_cpu);
}

}  // namespace turbogelu
