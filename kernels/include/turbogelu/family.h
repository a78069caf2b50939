// The activation family's ops and the programs each runs: the one list that the CPU and CUDA
// kernels, the operator semantics (family_common.h) and the schemas follow. Adding a function
// is a spec (data/specs/<function>/, regenerated into family_coeffs.h) and a line here, plus
// its schemas and Python wrappers.
#pragma once

#include "turbogelu/family_coeffs.h"

// X(op, function whose programs it runs, kind):
//   Plain   f(x);               backward grad * f'(x)
//   Scaled  cap * f(x / cap);   backward grad * f'(x / cap)
//   Gated   f(a) * b;           backward (grad * b * f'(a), grad * f(a)) in one pass
#define TG_FAMILY_OPS(X)     \
  X(sigmoid, sigmoid, Plain) \
  X(tanh, tanh, Plain)       \
  X(silu, silu, Plain)       \
  X(softcap, tanh, Scaled)   \
  X(swiglu, silu, Gated)

namespace turbogelu {

enum class Kind : int { Plain, Scaled, Gated };

enum FamilyOp : int {
#define TG_ENUM(op, fn, kind) kFamily_##op,
  TG_FAMILY_OPS(TG_ENUM)
#undef TG_ENUM
      kNumFamilyOps
};

// Each function's program shapes as types (template arguments of the kernels):
// shapes::<function>::{ff, nf} (forward form, coefficients) and {fd, nd} (derivative).
namespace shapes {
#define TG_SHAPE(fn, Ff, Df, Fd, Dd)     \
  struct fn {                            \
    static constexpr Form ff = Form::Ff; \
    static constexpr int nf = Df + 1;    \
    static constexpr Form fd = Form::Fd; \
    static constexpr int nd = Dd + 1;    \
  };
TG_FAMILY_SHAPES(TG_SHAPE)
#undef TG_SHAPE
}  // namespace shapes

// One op's name, kind and programs (the host code's view of TG_FAMILY_OPS).
struct FamilyOpInfo {
  const char* name;
  Kind kind;
  const FamilyProgram* forward;
  const FamilyProgram* direct;
  const FamilyProgram* matched;
  bool default_direct;
};

inline const FamilyOpInfo& family_op(FamilyOp op) {
  static const FamilyOpInfo table[kNumFamilyOps] = {
#define TG_INFO(op, fn, kind)      \
  {#op,                            \
   Kind::kind,                     \
   &coeffs::fn##_forward,          \
   &coeffs::fn##_backward_direct,  \
   &coeffs::fn##_backward_matched, \
   coeffs::fn##_default_backward_is_direct},
      TG_FAMILY_OPS(TG_INFO)
#undef TG_INFO
  };
  return table[op];
}

}  // namespace turbogelu
