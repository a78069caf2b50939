// The per-element math of every function (GELU; sigmoid, tanh, SiLU, softplus, exp2, and
// through them softcap and SwiGLU): one program shape for every function and direction, shared
// by the CPU instruction sets and CUDA, over poly_eval.h's building blocks.
//
//   u = |x|,  v = u (or fl(u*u): "in x^2"),  z = fma(v, scale, -1) in [-1, 1] on the window
//   |x| <= clamp,  p = P(z) (Horner), then the function's reconstruction (its symmetry
//   reduction, turbogelu/approx/targets.py):
//     HalfPlusOdd    fma(x, p, 1/2)          sigmoid = 1/2 + odd; SiLU' and GELU' likewise
//     Odd            x * p                   tanh
//     XHalfPlusEven  x * fma(x, p, 1/2)      SiLU = x/2 + x^2 p (x^2 = u^2: the residual is
//                                            even); GELU likewise, with p in x^2
//     XHalfPlus      fl(x * 1/2) + p         SiLU = x/2 + P(x^2) (the paper tier's form),
//                                            softplus = x/2 + P(u)
//     Even           p                       sigmoid', tanh'
//     XHalfPlusNonNeg  the same, floored at +0  softplus = x/2 + P(u), a positive function
//     HalfPlusSigned 1/2 + copysign(p, x),   softplus' (the derivative of P(u), odd in x),
//                    floored at +0
//   and beyond the clamp the asymptote: x > 0 ? above : below (the x/2 forms: x above;
//   below -0.0 for XHalfPlusEven and XHalfPlus, +0.0 (`below`) for XHalfPlusNonNeg). The
//   floors (r < 0 ? +0 : r, which keeps NaN) keep the sign of functions whose small values lie
//   under the error bound (turbogelu/approx/targets.py's Target.nonnegative).
//
// Why |x| and not x^2 as GELU's programs: these functions have poles at +-i pi or +-i pi/2 and
// must follow the function out to a clamp of 5.6-13; in x^2 the pole sits just left of the
// interval and the fit needs degrees 16-26, in |x| 11-13 do (turbogelu/approx/
// family_programs.py). The window is decided on u itself: NaN compares false and stays in the
// polynomial, so it stays NaN. x * fma(x, p, 1/2) rather than fma(u, u p, x/2) keeps
// silu(-0.0) = -0.0 (an FMA adding +0 to -0 gives +0). turbogelu/approx/replay.py's order
// "turbogelu" in variable "u" (and "generic" for the other forms) replays exactly this.
#pragma once

#include "turbogelu/poly_eval.h"

namespace turbogelu {

enum class Form : int {
  HalfPlusOdd = 0,
  Odd = 1,
  XHalfPlusEven = 2,
  XHalfPlus = 3,
  Even = 4,
  Exp2Nearest = 5,  // 2^x, n = rint(x), f in [-1/2, 1/2] (exp2_eval below)
  Exp2Floor = 6,    // 2^x, n = rint(x - 1/2), f in [0, 1]
  HalfPlusSigned = 7,
  XHalfPlusNonNeg = 8
};

// One fitted program of the family; the generated family_coeffs.h holds the shipped ones (and
// family.h GELU's, from gelu_coeffs.h). The Exp2 forms use degree and c only (their window is
// the format's: Exp2Limits).
struct FamilyProgram {
  int degree;   // P has degree + 1 coefficients (a shorter program padded with leading zeros)
  float clamp;  // the polynomial is used on |x| <= clamp
  float scale;  // 2 / clamp, rounded to float32
  float below;  // the result for x < -clamp (XHalfPlusEven: unused, -0.0)
  float above;  // the result for x > clamp (XHalfPlusEven: unused, x itself)
  float c[kMaxCoeffs];
};

// The CPU's table-driven programs of a function ("cells", turbogelu/approx/family_cells.py):
// a cubic in each of 32 cells of u = |x|, then the function's form (cells_eval below). Null
// where the function has none (the generated family_coeffs.h holds them).
enum class CellForm : int {
  HalfPlusOdd = 0,   // 1/2 + copysign(p, x)             sigmoid, SiLU'
  XHalfPlusOdd = 1,  // max(x, -clamp) (1/2 + copysign(p, x))   SiLU
  Even = 2,          // p                                 sigmoid', tanh'
  Odd = 3,           // copysign(p, x)                    tanh (and softcap through it)
  // GELU's cells are over x itself, not |x| (turbogelu/approx/cells.py): xc = max(x, -clamp),
  // xi = min(xc, clamp), p the cubic of xi's cell;
  XTimes = 4,  // xc p                                    GELU (p ~ gelu(x) / x)
  Signed = 5   // p                                       GELU' (p ~ gelu'(x))
};
// A 16-bit format's own cells program of a function (turbogelu/approx/cells16.py: a lower
// degree that keeps the format's rule on every input), its forward and the forward's own
// derivative; null where the format runs the float32 tables.
struct SizedCells {
  const CellTable* forward;
  const CellTable* matched;
};
struct FamilyCells {
  const CellTable* forward;
  const CellTable* direct;
  const CellTable* matched;
  SizedCells float16, bfloat16;
};

// What one call of a family op evaluates: the function's program `f`, the derivative's `d`
// (direct or matched, chosen by the caller), and softcap's scales (x * inv, then cap * t);
// `fcells` and `dcells` the same choice among the cells programs (null where there are none:
// the CPU runs them when asked to, kernels/cpu/ops.cpp).
struct FamilyCall {
  FamilyProgram f;
  FamilyProgram d;
  float inv;  // 1/cap rounded to float32 (softcap only)
  float cap;  // cap rounded to float32 (softcap only)
  const CellTable* fcells;
  const CellTable* dcells;
};
// The call as a cells kernel's loop holds it: the two tables copied beside it, so that they
// stay in registers (the loops copy the call to a local for the same reason).
struct FamilyCellsCall : FamilyCall {
  CellTable ft, dt;
};

// A GELU coefficient set (poly_eval.h's PolyCoeffs) as a program with the given tails
// (gelu_forward below; family.h's GELU rows).
TG_HD constexpr FamilyProgram gelu_as_program(const PolyCoeffs& k, float below, float above) {
  FamilyProgram p{k.degree, k.clamp, k.scale, below, above, {}};
  for (int i = 0; i < kMaxCoeffs; ++i) p.c[i] = k.c[i];
  return p;
}

inline namespace TG_ISA_NAMESPACE {

TG_HD TG_INLINE float tg_abs(float x) {
#if defined(__CUDA_ARCH__)
  return fabsf(x);
#else
  return std::fabs(x);
#endif
}
TG_HD TG_INLINE double tg_abs(double x) {
#if defined(__CUDA_ARCH__)
  return fabs(x);
#else
  return std::fabs(x);
#endif
}

TG_HD TG_INLINE float tg_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TG_HD TG_INLINE double tg_add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// |p| with x's sign (the cells programs, and the HalfPlusSigned form).
TG_HD TG_INLINE float tg_copysign(float p, float x) {
#if defined(__CUDA_ARCH__)
  return copysignf(p, x);
#else
  return std::copysign(p, x);
#endif
}
TG_HD TG_INLINE double tg_copysign(double p, double x) {
#if defined(__CUDA_ARCH__)
  return copysign(p, x);
#else
  return std::copysign(p, x);
#endif
}

// exp2 (turbogelu/approx/exp2_programs.py replays it): xc = x clamped to the window (NaN
// passes), k = fl(xc [- 1/2] + magic) holds rint in its last bits, n = k - magic and
// f = xc - n exactly, p = P(f), and 2^n as two normal factors from k's bits (tg_pow2_split:
// 2^floor(n/2), 2^ceil(n/2)) so that fl(p 2^floor(n/2)) is exact and the last multiply
// rounds once, subnormal and infinite results included. The window makes +-inf finite and
// keeps n small: beyond it every result is 0 or inf.
struct Exp2Limits {
  float magic, lo, hi;
};
template <class V>
TG_HD TG_INLINE Exp2Limits tg_exp2_limits(V) {  // float32 lanes
  return {0x1.8p23f, -151.0f, 129.0f};
}
TG_HD TG_INLINE Exp2Limits tg_exp2_limits(double) { return {0x1.8p52f, -1076.0f, 1025.0f}; }

template <class V>
struct Pow2 {
  V lo, hi;  // 2^floor(n/2), 2^ceil(n/2) for k = n + magic
};
template <class U, class F, int Mant, int Bias>
TG_HD TG_INLINE Pow2<F> pow2_split_bits(F k) {
  U i, a, b;
  memcpy(&i, &k, sizeof i);
  const U h = i >> 1;  // i = bits(magic) + n > 0, bits(magic) even: h = bits(magic)/2 + floor(n/2)
  a = (h << Mant) + (U(Bias) << Mant);  // the high bits of bits(magic)/2 shift out
  b = ((i - h) << Mant) + (U(Bias) << Mant);
  Pow2<F> r;
  memcpy(&r.lo, &a, sizeof a);
  memcpy(&r.hi, &b, sizeof b);
  return r;
}
TG_HD TG_INLINE Pow2<float> tg_pow2_split(float k) {
  return pow2_split_bits<uint32_t, float, 23, 127>(k);
}
TG_HD TG_INLINE Pow2<double> tg_pow2_split(double k) {
  return pow2_split_bits<uint64_t, double, 52, 1023>(k);
}

template <Form F, int N, class V>
TG_HD TG_INLINE V exp2_eval(V x, const FamilyProgram& k) {
  const Exp2Limits L = tg_exp2_limits(V{});
  const V xc = tg_clamp_above(tg_clamp_below(x, tg_splat(V{}, L.lo)), tg_splat(V{}, L.hi));
  const V t = F == Form::Exp2Floor ? tg_add(xc, tg_splat(V{}, -0.5f)) : xc;
  const V kk = tg_add(t, tg_splat(V{}, L.magic));
  const V n = tg_add(kk, tg_splat(V{}, -L.magic));
  const V f = tg_fma(n, tg_splat(V{}, -1.0f), xc);
  const V p = eval_poly<N, Scheme::Horner>(f, k.c);
  const Pow2<V> s = tg_pow2_split(kk);
  return tg_mul(tg_mul(p, s.lo), s.hi);
}

// f(x) by the program k of shape (F, N = degree + 1, Y: P's variable made from x^2), P by
// scheme S (Horner in every shipped kernel; Estrin is the benchmark's, through GELU's
// run-time-coefficient kernels). W: the window is decided on v = fl(x^2) <= fl(clamp^2)
// rather than on |x| <= clamp (GELU's programs, whose variable is x^2 and whose specs state
// that window). Where clamp^2 is a normal float32 the two decide alike (one ulp more of |x|
// moves x^2 by more than an ulp of clamp^2, and rounding is monotonic;
// tests/test_mps.py::test_the_windows_decide_alike checks GELU's clamps), so W only saves
// the |x|.
template <Form F, int N, bool Y, bool W = false, Scheme S = Scheme::Horner, class V>
TG_HD TG_INLINE V family_eval(V x, const FamilyProgram& k) {
  static_assert(Y || !W, "the window on x^2 needs P's variable in x^2");
  if constexpr (F == Form::Exp2Nearest || F == Form::Exp2Floor) return exp2_eval<F, N>(x, k);
  // v = |x|, or fl(x*x) (= fl(|x| |x|): one operation fewer than through |x|)
  V v;
  if constexpr (Y) {
    v = tg_mul(x, x);
  } else {
    v = tg_abs(x);
  }
  const V z = tg_fma(v, tg_splat(V{}, k.scale), tg_splat(V{}, -1.0f));
  const V p = eval_poly<N, S>(z, k.c);
  V r;
  if constexpr (F == Form::HalfPlusOdd) {
    r = tg_fma(x, p, tg_splat(V{}, 0.5f));
  } else if constexpr (F == Form::Odd) {
    r = tg_mul(x, p);
  } else if constexpr (F == Form::XHalfPlusEven) {
    r = tg_mul(x, tg_fma(x, p, tg_splat(V{}, 0.5f)));
  } else if constexpr (F == Form::XHalfPlus || F == Form::XHalfPlusNonNeg) {
    r = tg_add(tg_mul(x, tg_splat(V{}, 0.5f)), p);
  } else if constexpr (F == Form::HalfPlusSigned) {
    r = tg_add(tg_splat(V{}, 0.5f), tg_copysign(p, x));
  } else {
    r = p;
  }
  if constexpr (F == Form::XHalfPlusNonNeg || F == Form::HalfPlusSigned) {
    const V zero = tg_splat(V{}, 0.0f);
    r = tg_select(tg_lt(r, zero), zero, r);
  }
  const V clamp = tg_splat(V{}, k.clamp);
  const auto outside = W ? tg_gt(v, tg_mul(clamp, clamp)) : tg_gt(Y ? tg_abs(x) : v, clamp);
  if constexpr (F == Form::XHalfPlusEven || F == Form::XHalfPlus) {
    return tg_tail_select(outside, x, r);  // max(x, -0.0): x beyond +clamp, -0.0 below -clamp
  } else if constexpr (F == Form::XHalfPlusNonNeg) {
    // x beyond +clamp, +0.0 (`below`) beyond -clamp, where max(x, -0.0) would be -0.0.
    const V tail = tg_select(tg_gt(x, tg_splat(V{}, 0.0f)), x, tg_splat(V{}, k.below));
    return tg_select(outside, tail, r);
  } else {
    const V tail =
        tg_select(tg_gt(x, tg_splat(V{}, 0.0f)), tg_splat(V{}, k.above), tg_splat(V{}, k.below));
    return tg_select(outside, tail, r);
  }
}

// GELU's programs for a coefficient set given as PolyCoeffs (the run-time-coefficient kernels:
// kernels/cpu/loops.h, CUDA's gelu_kernels.cu), P by scheme S:
//   forward   x (1/2 + x P(z)) on fl(x^2) <= fl(R^2); x above, -0.0 below   (XHalfPlusEven)
//   backward  grad (1/2 + x Q(z)) there; grad * 1 above, grad * 0 below     (HalfPlusOdd)
// with z = fma(x^2, scale, -1) (gelu_as_program: the set with those tails). x * fma(x, P, 1/2)
// rather than fma(x*x, P, x/2) keeps gelu(-0.0) = -0.0 and full relative accuracy for tiny |x|; the
// gradient is always multiplied (never a selected zero), so a NaN gradient stays NaN in the clamped
// tail.
template <int N, Scheme S, class V>
TG_HD TG_INLINE V gelu_forward(V x, const FamilyProgram& f) {
  return family_eval<Form::XHalfPlusEven, N, true, true, S>(x, f);
}
template <int N, Scheme S, class V>
TG_HD TG_INLINE V gelu_backward(V grad, V x, const FamilyProgram& d) {
  return tg_mul(grad, family_eval<Form::HalfPlusOdd, N, true, true, S>(x, d));
}

// The cells programs (CPU only): u = min(|x|, clamp) (NaN stays), p = the cubic of u's cell,
// then the form. 1/2 + copysign(p, x) is exactly 1 or 0 in the constant cell (p = 1/2), and
// 1/2 at x = +-0 (cell 0 has no constant term); SiLU's max(x, -clamp) * 0 is -0.0 below;
// tanh's copysign(p, x) is +-1 there and keeps -0.0 and the subnormals (p = c1 u near 0).
template <CellForm F, int D = kCellCoeffs - 1, class V>
TG_INLINE V cells_eval(V x, const CellTable& t) {
  if constexpr (F == CellForm::XTimes || F == CellForm::Signed) {
    // GELU's: cell 0 and 1 are zero (x <= -clamp: forward -0.0, derivative 0), cell 31 the
    // constant 1 (x >= clamp: forward x, +inf included; derivative 1).
    const V xc = tg_clamp_below(x, tg_splat(V{}, -t.clamp));
    const V p = cells_poly<D>(tg_clamp_above(xc, tg_splat(V{}, t.clamp)), t);
    if constexpr (F == CellForm::XTimes) return tg_mul(xc, p);
    return p;
  }
  const V u = tg_clamp_above(tg_abs(x), tg_splat(V{}, t.clamp));
  const V p = cells_poly<D>(u, t);
  if constexpr (F == CellForm::Even) {
    return p;
  } else if constexpr (F == CellForm::Odd) {
    return tg_copysign(p, x);
  } else {
    const V h = tg_add(tg_splat(V{}, 0.5f), tg_copysign(p, x));
    if constexpr (F == CellForm::HalfPlusOdd) return h;
    return tg_mul(tg_clamp_below(x, tg_splat(V{}, -t.clamp)), h);
  }
}

// The element functions of the three kinds of family op, each over float lanes (16-bit data is
// widened before and rounded once after). Always multiply by the gradient (never select a
// zero): a NaN gradient stays NaN where the derivative is 0.
//
// Plain (sigmoid, tanh, silu): f(x); backward grad * f'(x).
// S: the function's shapes (family.h's shapes::<function>_<tier>: ff, nf, yf for the
// forward, fd, nd, yd for the derivative; a cells shape's ff, df and fd, dd: forms and the
// tables' degrees).
// C: FamilyCall, or FamilyCellsCall for the cells shapes (S::cells).
template <class S, class V, class C>
TG_HD TG_INLINE V forward_of(V x, const C& c) {
  if constexpr (S::cells) {
    return cells_eval<S::ff, S::df>(x, c.ft);
  } else {
    return family_eval<S::ff, S::nf, S::yf, S::w>(x, c.f);
  }
}
template <class S, class V, class C>
TG_HD TG_INLINE V derivative_of(V x, const C& c) {
  if constexpr (S::cells) {
    return cells_eval<S::fd, S::dd>(x, c.dt);
  } else {
    return family_eval<S::fd, S::nd, S::yd, S::w>(x, c.d);
  }
}
template <class S, class V, class C>
TG_HD TG_INLINE V family_forward(V x, const C& c) {
  return forward_of<S>(x, c);
}
template <class S, class V, class C>
TG_HD TG_INLINE V family_backward(V grad, V x, const C& c) {
  return tg_mul(grad, derivative_of<S>(x, c));
}
// Scaled (softcap = cap f(x / cap)): q = x * fl(1/cap); cap f(q); backward grad * f'(q).
template <class S, class V, class C>
TG_HD TG_INLINE V scaled_forward(V x, const C& c) {
  const V q = tg_mul(x, tg_splat(V{}, c.inv));
  return tg_mul(tg_splat(V{}, c.cap), forward_of<S>(q, c));
}
template <class S, class V, class C>
TG_HD TG_INLINE V scaled_backward(V grad, V x, const C& c) {
  return tg_mul(grad, derivative_of<S>(tg_mul(x, tg_splat(V{}, c.inv)), c));
}
// Gated (swiglu(a, b) = f(a) b): forward f(a) * b; backward (grad b) f'(a) and grad f(a).
template <class S, class V, class C>
TG_HD TG_INLINE V gated_forward(V a, V b, const C& c) {
  return tg_mul(forward_of<S>(a, c), b);
}
template <class V>
struct Pair {
  V first, second;
};
template <class S, class V, class C>
TG_HD TG_INLINE Pair<V> gated_backward(V grad, V a, V b, const C& c) {
  return {tg_mul(tg_mul(grad, b), derivative_of<S>(a, c)), tg_mul(grad, forward_of<S>(a, c))};
}

}  // namespace TG_ISA_NAMESPACE
}  // namespace turbogelu
