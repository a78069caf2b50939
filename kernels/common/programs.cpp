// _program(op, tier, part): one polynomial program of the kernels' table as the kernels hold
// it (family.h's FamilyOpInfo and shapes::<function>_<tier>), read back by
// turbogelu/_programs.py, which evaluates the same program with PyTorch's operations (the
// second derivatives of the backward ops; the program written out for the compiler). The
// kernels' own constants, so nothing is parsed twice and nothing can drift from them.
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "turbogelu/family.h"

namespace {

using turbogelu::FamilyProgram;
// (form, number of coefficients, P's variable is x^2, window on x^2, clamp, scale, below,
// above, the coefficients c[0..n-1] (low order first))
using Described =
    std::tuple<int64_t, int64_t, bool, bool, double, double, double, double, std::vector<double>>;

Described describe(const FamilyProgram& p, turbogelu::Form form, int n, bool y, bool w) {
  std::vector<double> c(p.c, p.c + n);
  return {static_cast<int64_t>(form), n, y, w, p.clamp, p.scale, p.below, p.above, c};
}

template <class S>
Described of_shape(const turbogelu::FamilyOpInfo& info, const std::string& part) {
  if (part == "forward") return describe(*info.forward, S::ff, S::nf, S::yf, S::w);
  TORCH_CHECK_VALUE(part == "direct" || part == "matched" || part == "default",
                    "turbogelu._program: part must be 'forward', 'direct', 'matched' or ",
                    "'default' (the derivative the backward ops run by default), got '", part, "'");
  const bool direct = part == "default" ? info.default_direct : part == "direct";
  return describe(direct ? *info.direct : *info.matched, S::fd, S::nd, S::yd, S::w);
}

Described program(const std::string& op, const std::string& tier, const std::string& part) {
  TORCH_CHECK_VALUE(tier == "accurate" || tier == "paper",
                    "turbogelu._program: tier must be 'accurate' or 'paper', got '", tier, "'");
  const turbogelu::Tier t = tier == "accurate" ? turbogelu::kTier_accurate : turbogelu::kTier_paper;
#define TG_PROGRAM(o, fn, kind)                                                                    \
  if (op == #o) {                                                                                  \
    const turbogelu::FamilyOpInfo& info = turbogelu::family_op(turbogelu::kFamily_##o, t);         \
    return t == turbogelu::kTier_accurate ? of_shape<turbogelu::shapes::fn##_accurate>(info, part) \
                                          : of_shape<turbogelu::shapes::fn##_paper>(info, part);   \
  }
  TG_KERNEL_OPS(TG_PROGRAM)
#undef TG_PROGRAM
  TORCH_CHECK_VALUE(false, "turbogelu._program: no row '", op, "' in the kernels' table");
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(turbogelu, m) {
  m.def(
      "_program(str op, str tier, str part) -> (int, int, bool, bool, float, float, float, "
      "float, float[])",
      &program);
}
