//! A part of kernels/mps/family_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines, its @NAME@ fields filled.
//
// turbogelu's kernels for Apple GPUs, every row of the kernels' table: GELU (both forms), and
// the activation family (sigmoid, tanh, silu, softcap, swiglu, softplus, exp2) in both tiers
// (accurate, paper): the evaluation of family_eval.h with the programs of family_coeffs.h
// and gelu_coeffs.h, compiled at first use by torch.mps.compile_shader (turbogelu/mps.py). Each
// coefficient, clamp and scale is the exact decimal expansion of its float32 value (hex beside
// it), so every compiler reads the same bits.
//
//   u = |x|, v = u (or fl(x * x): a program in x^2), z = fma(v, scale, -1), p = P(z) by
//   Horner with fma, then the program's form:
//     HalfPlusOdd fma(x, p, 1/2), Odd x * p, XHalfPlusEven x * fma(x, p, 1/2),
//     XHalfPlus fl(x * 1/2) + p (two roundings), Even p;
//   for u > clamp (GELU's programs: fl(x * x) > fl(clamp * clamp)) the asymptote,
//   x > 0 ? above : below (the x/2 forms: x, or -0.0 below); NaN compares false and stays in
//   the polynomial. The three kinds of op:
//     Plain   f(x);                   backward grad * f'(x)
//     Scaled  cap * f(x * inv);       backward grad * f'(x * inv)    (inv = 1/cap in float32)
//     Gated   f(a) * b;               backward ((grad * b) * f'(a), grad * f(a))
//
// Programs (the tables' index; the backward kernels' argument d), per function and tier its
// @PARTS@:
@PROGRAMS@
// Kernels: <op>_<tier>_forward_<type> and <op>_<tier>_backward_<type>, one generic kernel
// pair per kind of op instantiated for each op, tier and storage type.
// The default backward, per tier and function (turbogelu/mps.py reads it from the specs):
@DEFAULTS@
// float16 and bfloat16 are computed in float32 and rounded once to nearest even; there is no
// float64 on Apple GPUs.
