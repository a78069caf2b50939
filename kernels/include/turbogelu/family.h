// The activation family's ops and the programs each runs, as the CPU and CUDA kernels, the
// operator semantics (ops_common.h) and the schemas (kernels/common/schema.cpp) see them.
// The ops are declared once, in the table of turbogelu/_table.py, which `python -m turbogelu
// codegen` writes into family_coeffs.h as
//   TG_FAMILY_OPS(X): X(op, function whose programs it runs, kind), where the kinds are
//     Plain   f(x);               backward grad * f'(x)   (exp2: 2^x, family_eval.h's exp2_eval)
//     Scaled  cap * f(x / cap);   backward grad * f'(x / cap)
//     Gated   f(a) * b;           backward (grad * b * f'(a), grad * f(a)) in one pass
//   TG_FROM_OUTPUT_OPS(X): X(op) for the ops whose autograd default differentiates from the
//     saved result y rather than from x (from_output below: two to four multiplies an
//     element, PyTorch's formulas); the CPU has kernels for them (<op>_backward_from_output).
//   TG_GELU_OPS(X): GELU's two programs (approximate='none' and 'tanh'), rows of the same
//     kernel table after the ops above; the one op gelu picks its row (its schema and
//     semantics: ops_common.h). Their programs come from gelu_coeffs.h, below.
// Adding a function is a row of that table and its spec (data/specs/<function>/).
#pragma once

#include <type_traits>

#include "turbogelu/family_coeffs.h"
#include "turbogelu/gelu_coeffs.h"

// Every row of the kernels' table: the family's ops, then GELU's programs.
#define TG_KERNEL_OPS(X) TG_FAMILY_OPS(X) TG_GELU_OPS(X)

namespace turbogelu {

enum class Kind : int { Plain, Scaled, Gated };

enum FamilyOp : int {
#define TG_ENUM(op, fn, kind) kFamily_##op,
  TG_KERNEL_OPS(TG_ENUM)
#undef TG_ENUM
      kNumFamilyOps
};

// Each op's kind, at compile time (registrations that differ by kind: kernels/cpu/ops.cpp).
constexpr Kind kind_of(FamilyOp op) {
#define TG_KIND_OF(o, fn, k) \
  if (op == kFamily_##o) return Kind::k;
  TG_KERNEL_OPS(TG_KIND_OF)
#undef TG_KIND_OF
  return Kind::Plain;
}

// GELU's programs as the family's (gelu_coeffs.h's sets, whose form is family_eval.h's with
// P's variable in x^2 and the window on fl(x^2) <= fl(clamp^2)): the forward x/2 + x^2 P
// (XHalfPlusEven: x above, -0.0 below), the derivative 1/2 + x Q (HalfPlusOdd: 1 above,
// 0 below). Their paper tier (the source paper's D5 form x/2 + P(x^2), fitted to each form)
// is a family program of family_coeffs.h (<fn>_paper_*, shapes::<fn>_paper from
// TG_FAMILY_SHAPES), whose window is on |x| as the family's. Its packed programs (CUDA's opt-in
// bfloat16 path: gelu_coeffs.h's *_packed_bf16 sets, a fit of their own of each direction) are
// <fn>_packed_forward and <fn>_packed_backward, of shape shapes::<fn>_packed.
namespace coeffs {
#define TG_GELU_PROGRAMS(op, fn, kind)                                                \
  inline constexpr FamilyProgram fn##_accurate_forward =                              \
      gelu_as_program(fn##_forward, -0.0f, 0.0f);                                     \
  inline constexpr FamilyProgram fn##_accurate_backward_direct =                      \
      gelu_as_program(fn##_backward_direct, 0.0f, 1.0f);                              \
  inline constexpr FamilyProgram fn##_accurate_backward_matched =                     \
      gelu_as_program(fn##_backward_matched, 0.0f, 1.0f);                             \
  inline constexpr bool fn##_accurate_default_backward_is_direct =                    \
      fn##_default_backward_is_direct;                                                \
  inline constexpr bool fn##_accurate_shipped = true;                                 \
  inline constexpr FamilyCells fn##_family_cells = {                                  \
      &fn##_forward_cells, &fn##_backward_direct_cells, &fn##_backward_matched_cells, \
      fn##_cells_float16, fn##_cells_bfloat16};                                       \
  inline constexpr FamilyProgram fn##_packed_forward =                                \
      gelu_as_program(fn##_forward_packed_bf16, -0.0f, 0.0f);                         \
  inline constexpr FamilyProgram fn##_packed_backward =                               \
      gelu_as_program(fn##_backward_packed_bf16, 0.0f, 1.0f);
TG_GELU_OPS(TG_GELU_PROGRAMS)
#undef TG_GELU_PROGRAMS
}  // namespace coeffs

// The tiers (data/specs/<function>/<tier>.json): "accurate", the default, and "paper", the
// source paper's Table 2 programs.
enum Tier : int { kTier_accurate = 0, kTier_paper = 1, kNumTiers = 2 };

// Each function's program shapes in each tier as types (the kernels' template arguments):
// shapes::<function>_<tier>::{ff, nf, yf} (forward form, coefficients, variable from x^2)
// and {fd, nd, yd} (the derivative's).
namespace shapes {
// w: the window decided on fl(x^2) (GELU's programs) rather than on |x|.
#define TG_SHAPE(fn, tier, Ff, Df, Yf, Fd, Dd, Yd) \
  struct fn##_##tier {                             \
    static constexpr bool cells = false;           \
    static constexpr Form ff = Form::Ff;           \
    static constexpr int nf = Df + 1;              \
    static constexpr bool yf = Yf;                 \
    static constexpr Form fd = Form::Fd;           \
    static constexpr int nd = Dd + 1;              \
    static constexpr bool yd = Yd;                 \
    static constexpr bool w = false;               \
  };
TG_FAMILY_SHAPES(TG_SHAPE)
#undef TG_SHAPE
#define TG_GELU_SHAPE(op, fn, kind)                                                            \
  struct fn##_accurate {                                                                       \
    static constexpr bool cells = false;                                                       \
    static constexpr Form ff = Form::XHalfPlusEven;                                            \
    static constexpr int nf = coeffs::fn##_forward.degree + 1;                                 \
    static constexpr bool yf = true;                                                           \
    static constexpr Form fd = Form::HalfPlusOdd;                                              \
    static constexpr int nd = coeffs::fn##_backward_direct.degree + 1;                         \
    static constexpr bool yd = true;                                                           \
    static constexpr bool w = true;                                                            \
    static_assert(coeffs::fn##_backward_direct.degree == coeffs::fn##_backward_matched.degree, \
                  "the kernels evaluate both derivatives at one degree");                      \
  };                                                                                           \
  struct fn##_packed {                                                                         \
    static constexpr bool cells = false;                                                       \
    static constexpr Form ff = Form::XHalfPlusEven;                                            \
    static constexpr int nf = coeffs::fn##_forward_packed_bf16.degree + 1;                     \
    static constexpr bool yf = true;                                                           \
    static constexpr Form fd = Form::HalfPlusOdd;                                              \
    static constexpr int nd = coeffs::fn##_backward_packed_bf16.degree + 1;                    \
    static constexpr bool yd = true;                                                           \
    static constexpr bool w = true;                                                            \
  };                                                                                           \
  struct fn##_cells {                                                                          \
    static constexpr bool cells = true;                                                        \
    static constexpr CellForm ff = CellForm::XTimes;                                           \
    static constexpr CellForm fd = CellForm::Signed;                                           \
    static constexpr int df = 3, dd = 3;                                                       \
  };
TG_GELU_OPS(TG_GELU_SHAPE)
#undef TG_GELU_SHAPE
// The cells programs' shapes (CPU only): shapes::<function>_cells, forms of family_eval.h's
// CellForm; declared for every function, defined for those with cells programs.
#define TG_CELLS_DECLARE(fn, ...) struct fn##_cells;
TG_FAMILY_SHAPES(TG_CELLS_DECLARE)
#undef TG_CELLS_DECLARE
#define TG_CELLS_SHAPE(fn, Ff, Fd)               \
  struct fn##_cells {                            \
    static constexpr bool cells = true;          \
    static constexpr CellForm ff = CellForm::Ff; \
    static constexpr CellForm fd = CellForm::Fd; \
    static constexpr int df = 3, dd = 3;         \
  };
TG_FAMILY_CELLS(TG_CELLS_SHAPE)
#undef TG_CELLS_SHAPE
// A cells shape with the degrees of a 16-bit format's own tables (SizedCells): the loops
// switch to it once per call when the call's tables are of lower degree (family_loops.h).
template <class S, int DF, int DD>
struct sized : S {
  static constexpr int df = DF, dd = DD;
};
}  // namespace shapes

// One op's name, kind and programs in one tier (the host code's view of TG_FAMILY_OPS).
struct FamilyOpInfo {
  const char* name;
  Kind kind;
  const FamilyProgram* forward;
  const FamilyProgram* direct;
  const FamilyProgram* matched;
  bool default_direct;
  FamilyCells cells;  // the accurate tier's cells programs, if the function has them
  bool shipped;       // whether the function has programs in this tier (else the ops refuse it)
};

// Kernel tables hold kNumFamilyOps x kNumTiers entries, in this order, then the CPU's
// cells kernels of each op (empty where its function has none).
// (As ints: arithmetic between the two enumerations is deprecated in C++20.)
constexpr int family_index(FamilyOp op, Tier tier) { return int{op} * int{kNumTiers} + int{tier}; }
constexpr int family_cells_index(FamilyOp op) {
  return int{kNumFamilyOps} * int{kNumTiers} + int{op};
}
constexpr int kFamilyTableSize = int{kNumFamilyOps} * (int{kNumTiers} + 1);

inline const FamilyOpInfo& family_op(FamilyOp op, Tier tier = kTier_accurate) {
  static const FamilyOpInfo table[int{kNumFamilyOps} * int{kNumTiers}] = {
#define TG_INFO_TIER(name, fn, kind, tier, cells_of) \
  {name,                                             \
   Kind::kind,                                       \
   &coeffs::fn##_##tier##_forward,                   \
   &coeffs::fn##_##tier##_backward_direct,           \
   &coeffs::fn##_##tier##_backward_matched,          \
   coeffs::fn##_##tier##_default_backward_is_direct, \
   cells_of,                                         \
   coeffs::fn##_##tier##_shipped},
#define TG_INFO(op, fn, kind)                                      \
  TG_INFO_TIER(#op, fn, kind, accurate, coeffs::fn##_family_cells) \
  TG_INFO_TIER(#op, fn, kind, paper, FamilyCells{})
      TG_FAMILY_OPS(TG_INFO)
  // GELU's rows: the op's name is gelu whichever program runs (its errors name it).
#define TG_GELU_INFO(op, fn, kind)                                    \
  TG_INFO_TIER("gelu", fn, kind, accurate, coeffs::fn##_family_cells) \
  TG_INFO_TIER("gelu", fn, kind, paper, FamilyCells{})
          TG_GELU_OPS(TG_GELU_INFO)
#undef TG_GELU_INFO
#undef TG_INFO
#undef TG_INFO_TIER
  };
  return table[family_index(op, tier)];
}

// A cells call of a plain op as a 16-bit format runs it (the CPU's ops.cpp, and the NEON
// harness): the format's own tables where it has them (FamilyCells::float16 / bfloat16,
// turbogelu/approx/cells16.py), the sized forward and, for the matched derivative, the sized
// forward's own derivative; the direct derivative keeps the float32 table. softcap and SwiGLU
// keep the float32 tables: the inputs or outputs of their programs are not the format's values
// that the sized programs were proven on.
inline FamilyCall sized_cells_call(const FamilyOpInfo& info, const FamilyCall& c, bool float16) {
  if (info.kind != Kind::Plain || c.fcells == nullptr || c.fcells != info.cells.forward) return c;
  const SizedCells& sized = float16 ? info.cells.float16 : info.cells.bfloat16;
  FamilyCall out = c;
  if (sized.forward != nullptr) out.fcells = sized.forward;
  if (sized.matched != nullptr && c.dcells == info.cells.matched) out.dcells = sized.matched;
  return out;
}

inline namespace TG_ISA_NAMESPACE {

// The derivative from the saved result y = f(x), PyTorch's formulas, each step rounded:
//   sigmoid  fl(fl(grad fl(1 - y)) y)        exp2  fl(fl(grad y) ln 2)
//   tanh     fl(grad max(fma(-y, y, 1), +0))
//   softcap  q = fl(y inv), fl(grad max(fma(-q, q, 1), +0))  (y = cap tanh(x/cap), inv = fl(1/cap))
// (1 - y as fma(y, -1, 1), one rounding as a subtraction's; 1 - y^2 in one rounding, which
// keeps its accuracy as |y| nears 1; exp2's ln 2 rounded to the lanes' type).
// tests/test_from_output.py replays it.
template <FamilyOp Op, class V>
TG_HD TG_INLINE V from_output(V grad, V y, const FamilyCall& c) {
  const V one = tg_splat(V{}, 1.0f), minus_one = tg_splat(V{}, -1.0f);
  if constexpr (Op == kFamily_sigmoid) {
    return tg_mul(tg_mul(grad, tg_fma(y, minus_one, one)), y);
  } else if constexpr (Op == kFamily_tanh || Op == kFamily_softcap) {
    // 1 - q^2 floored at +0 (NaN passes): q leaves [-1, 1] where y rounds above the cap
    // (bfloat16's softcap(1e4, 32.375)) or y * fl(1/cap) rounds above 1, and the derivative
    // of a rising function must not turn negative there (tanh's y: only if given |y| > 1).
    const V q = Op == kFamily_tanh ? y : tg_mul(y, tg_splat(V{}, c.inv));
    const V d = tg_fma(tg_mul(q, minus_one), q, one), zero = tg_splat(V{}, 0.0f);
    return tg_mul(grad, tg_select(tg_lt(d, zero), zero, d));
  } else {
    static_assert(Op == kFamily_exp2, "from_output: sigmoid, tanh, exp2 or softcap");
    if constexpr (std::is_same_v<V, double>) {
      return tg_mul(tg_mul(grad, y), 0.6931471805599453);  // ln 2 to double
    } else {
      return tg_mul(tg_mul(grad, y), tg_splat(V{}, 0x1.62e430p-1f));  // ln 2 to float32
    }
  }
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace turbogelu
