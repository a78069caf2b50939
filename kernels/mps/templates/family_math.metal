//! A part of kernels/mps/family_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines.

// family_eval.h's Form of a program.
enum tg_form {
  TG_HALF_PLUS_ODD = 0,
  TG_ODD = 1,
  TG_X_HALF_PLUS_EVEN = 2,
  TG_X_HALF_PLUS = 3,
  TG_EVEN = 4,
  TG_EXP2_NEAREST = 5,
  TG_EXP2_FLOOR = 6,
  TG_HALF_PLUS_SIGNED = 7,
  TG_X_HALF_PLUS_NON_NEG = 8
};

// A program's variable and window (family_eval.h's template flags Y and W): |x|, fl(x^2), both
// with the window |x| <= clamp; or fl(x^2) with the window fl(x^2) <= fl(clamp^2) (GELU's
// programs, whose specs state that window; for a clamp whose square is a normal float32 it
// decides as |x| <= clamp does, without the |x|).
enum tg_variable { TG_ABS = 0, TG_SQUARE = 1, TG_SQUARE_WINDOW = 2 };

// exp2 (family_eval.h's exp2_eval, float32): x clamped to [-151, 129] by compares (NaN
// passes), rint by the magic-number addition (Exp2Floor: of x - 1/2), f = x - n exactly,
// P(f) by Horner, and 2^n as two normal factors from k's bits, so that only the last multiply
// rounds (subnormal and infinite results included).
template <int F, int N>
inline float tg_exp2_eval(float x, int p) {
  float xc = x < -151.0f ? -151.0f : x;
  xc = xc > 129.0f ? 129.0f : xc;
  const float t = F == TG_EXP2_FLOOR ? xc - 0.5f : xc;
  const float k = t + 12582912.0f;  // 1.5 * 2^23
  const float n = k - 12582912.0f;
  const float f = fma(n, -1.0f, xc);
  float q = TG_FAMILY_COEFFS[p][N - 1];
  for (int j = N - 2; j >= 0; --j) q = fma(q, f, TG_FAMILY_COEFFS[p][j]);
  const uint i = as_type<uint>(k);
  const uint h = i >> 1;
  const float lo = as_type<float>((h << 23) + (127u << 23));
  const float hi = as_type<float>(((i - h) << 23) + (127u << 23));
  const float m = q * lo;  // exact
  return m * hi;
}

// f(x) by program p, of form F with N coefficients and variable V (family_eval.h's
// family_eval).
//
// XHalfPlus is the one place where a product feeds a sum outside fma(): fl(x * 1/2) + p, two
// rounded operations as on the CPU. Metal >= 3.2 does not fuse them (fp contract(off) above).
// Below 3.2 there is no pragma and the compile options decide, as for every kernel here
// (torch.mps.compile_shader: fast math off); were the two fused into fma(x, 1/2, p), the bits
// would not change: x * 1/2 is exact unless |x| < 2^-125, where z rounds to -1, so p = P(-1),
// and |x / 2| < 2^-126 is under half an ulp of P(-1) (tests/test_mps.py checks this of
// every such program, and runs these kernels compiled with contraction).
template <int F, int N, int V>
inline float tg_family_eval(float x, int p) {
  if (F == TG_EXP2_NEAREST || F == TG_EXP2_FLOOR) return tg_exp2_eval<F, N>(x, p);
  const float u = fabs(x);
  float v = u;
  if (V != TG_ABS) v = x * x;  // rounded to float before the fma
  const float z = fma(v, TG_FAMILY_SCALE[p], -1.0f);
  float q = TG_FAMILY_COEFFS[p][N - 1];
  for (int k = N - 2; k >= 0; --k) q = fma(q, z, TG_FAMILY_COEFFS[p][k]);
  float r;
  if (F == TG_HALF_PLUS_ODD) {
    r = fma(x, q, 0.5f);
  } else if (F == TG_ODD) {
    r = x * q;
  } else if (F == TG_X_HALF_PLUS_EVEN) {
    r = x * fma(x, q, 0.5f);
  } else if (F == TG_X_HALF_PLUS || F == TG_X_HALF_PLUS_NON_NEG) {
    const float h = x * 0.5f;
    r = h + q;
  } else if (F == TG_HALF_PLUS_SIGNED) {
    r = 0.5f + copysign(q, x);
  } else {
    r = q;
  }
  if (F == TG_X_HALF_PLUS_NON_NEG || F == TG_HALF_PLUS_SIGNED) {
    r = r < 0.0f ? 0.0f : r;  // floored at +0 (NaN stays)
  }
  const float c = TG_FAMILY_CLAMP[p];
  const bool outside = V == TG_SQUARE_WINDOW ? v > c * c : u > c;  // NaN: inside
  if (F == TG_X_HALF_PLUS_EVEN || F == TG_X_HALF_PLUS) {
    return outside ? (x > 0.0f ? x : -0.0f) : r;
  }
  if (F == TG_X_HALF_PLUS_NON_NEG) {  // +0.0 below
    return outside ? (x > 0.0f ? x : TG_FAMILY_BELOW[p]) : r;
  }
  return outside ? (x > 0.0f ? TG_FAMILY_ABOVE[p] : TG_FAMILY_BELOW[p]) : r;
}

// The element functions of the three kinds (family_eval.h's), over float: f is the forward
// program pf, of shape (FF, NF, VF), f' the derivative program d, of shape (FD, ND, VD).
// Always multiply by the gradient: a NaN gradient stays NaN where the derivative is 0.
template <int FF, int NF, int VF>
inline float tg_plain_forward(float x, int pf) {
  return tg_family_eval<FF, NF, VF>(x, pf);
}
template <int FD, int ND, int VD>
inline float tg_plain_backward(float g, float x, int d) {
  return g * tg_family_eval<FD, ND, VD>(x, d);
}
template <int FF, int NF, int VF>
inline float tg_scaled_forward(float x, int pf, float inv, float cap) {
  return cap * tg_family_eval<FF, NF, VF>(x * inv, pf);
}
template <int FD, int ND, int VD>
inline float tg_scaled_backward(float g, float x, int d, float inv) {
  return g * tg_family_eval<FD, ND, VD>(x * inv, d);
}
template <int FF, int NF, int VF>
inline float tg_gated_forward(float a, float b, int pf) {
  return tg_family_eval<FF, NF, VF>(a, pf) * b;
}
struct tg_pair {
  float first, second;
};
template <int FF, int NF, int VF, int FD, int ND, int VD>
inline tg_pair tg_gated_backward(float g, float a, float b, int pf, int d) {
  tg_pair r;
  r.first = (g * b) * tg_family_eval<FD, ND, VD>(a, d);
  r.second = g * tg_family_eval<FF, NF, VF>(a, pf);
  return r;
}
