//! A part of kernels/mps/gelu_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines, its @NAME@ fields filled.
//
// turbogelu's GELU for Apple GPUs: the evaluation of family_eval.h's GELU forms (Horner) with the
// coefficients of gelu_coeffs.h, compiled at first use by torch.mps.compile_shader
// (turbogelu/mps.py). Each coefficient is the exact decimal expansion of its float32 value
// (hex beside it), so every compiler reads the same bits.
//
//   forward   gelu(x)  ~ x * (1/2 + x P(z))  for |x| <= R;  x for x > R;  -0.0 for x < -R
//   backward  gelu'(x) ~ 1/2 + x Q(z)        for |x| <= R;  1 for x > R;  0 for x < -R
//   y = x*x, z = fma(y, scale, -1); |x| <= R decided as y <= R*R (NaN stays in P: NaN).
//
// Coefficient sets (the kernels' argument s): @SETS@.
// The default backward (read by turbogelu/mps.py), per form:
// default_backward: @DEFAULTS@
// float16 and bfloat16 are computed in float32 and rounded to nearest even; there is no
// float64 on Apple GPUs.
