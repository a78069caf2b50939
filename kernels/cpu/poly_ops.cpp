// turbogelu::poly_gelu / poly_gelu_backward: the shipped kernels with coefficients passed at
// run time, so that any fitted spec of a compiled degree (TG_KERNEL_DEGREES, 2 to 12) runs
// through the same templated code as gelu / gelu_backward, without rebuilding. The
// benchmark times operation count against time with it; for the shipped coefficients it
// gives the shipped op's bits (tests/test_poly_ops.py).
//
//   forward   x * (1/2 + x P(z))  for fl(x*x) <= fl(clamp^2), z = fma(x*x, scale, -1)
//   backward  grad * (1/2 + x P(z)) inside; grad * (x > 0) outside
//
// turbogelu::poly_family: the same for every other form of the family's programs
// (family_eval.h's Form, in |x| or x^2; exp2's 2^n P(f) with P in f), the float32 forward
// only, so that the sweep can time a fitted candidate of any function (experiments/sweep.py).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu_kernels.h"
#include "dispatch.h"
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

// poly_family's forms: family_eval.h's Form values.
bool program_form(int64_t form) {
  return form >= 0 && form <= static_cast<int64_t>(Form::XHalfPlusNonNeg);
}

at::Tensor poly_family_cpu(const at::Tensor& x, const at::Tensor& coeffs, int64_t form, bool in_y,
                           double clamp, double scale, double below, double above) {
  cpu::check_on_cpu(x, "poly_family", "x");
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat,
                   "turbogelu.poly_family: x must be float32 (the float32 forward is what it "
                   "times), got ",
                   x.scalar_type());
  TORCH_CHECK_VALUE(program_form(form), "turbogelu.poly_family: form ", form,
                    " is not a program form (family_eval.h's Form: 0-8)");
  TORCH_CHECK_VALUE(!(in_y && form == static_cast<int64_t>(Form::XHalfPlusEven)),
                    "turbogelu.poly_family: x/2 + x^2 P in x^2 is GELU's form: poly_gelu runs it");
  const bool exp2 = form == static_cast<int64_t>(Form::Exp2Nearest) ||
                    form == static_cast<int64_t>(Form::Exp2Floor);
  TORCH_CHECK_VALUE(!(in_y && exp2), "turbogelu.poly_family: the exp2 forms take P in f itself");
  const PolyCoeffs k = make_coeffs(coeffs, clamp, scale, "poly_family");
  FamilyProgram p{k.degree, k.clamp, k.scale, static_cast<float>(below), static_cast<float>(above),
                  {}};
  for (int i = 0; i <= k.degree; ++i) p.c[i] = k.c[i];
  const at::Tensor xc = x.contiguous();
  at::Tensor out = at::empty_like(xc);
  const cpu::KernelTable& table = cpu::current_kernel_table();
  const auto fn = table.program_forward != nullptr ? table.program_forward
                                                   : cpu::scalar_table().program_forward;
  const auto f = static_cast<Form>(form);
  TORCH_CHECK(fn(nullptr, nullptr, 0, p, f, in_y), "turbogelu.poly_family: no kernel for form ",
              form, in_y ? " in x^2" : " in |x|", " at degree ", k.degree);
  const float* xp = xc.const_data_ptr<float>();
  float* op = out.data_ptr<float>();
  at::parallel_for(0, xc.numel(), cpu::parallel_grain(),
                   [&](int64_t b, int64_t e) { fn(xp + b, op + b, e - b, p, f, in_y); });
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(turbogelu, m) {
  // `clamp` and `scale` are rounded to float32, as the generated header's are.
  m.def("poly_gelu(Tensor x, Tensor coeffs, float clamp, float scale) -> Tensor");
  m.def(
      "poly_gelu_backward(Tensor grad, Tensor x, Tensor coeffs, float clamp, float scale) -> "
      "Tensor");
  m.def("_poly_degrees() -> int[]", &poly_degrees);
  // form: family_eval.h's Form; below / above: the results beyond -clamp / +clamp.
  m.def(
      "poly_family(Tensor x, Tensor coeffs, int form, bool in_y, float clamp, float scale, "
      "float below, float above) -> Tensor");
}

TORCH_LIBRARY_IMPL(turbogelu, CPU, m) {
  m.impl("poly_gelu", &poly_gelu_cpu);
  m.impl("poly_gelu_backward", &poly_gelu_backward_cpu);
  m.impl("poly_family", &poly_family_cpu);
}

}  // namespace turbogelu
