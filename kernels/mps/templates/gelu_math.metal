//! A part of kernels/mps/gelu_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines.

// 1/2 + x P(z), and y = x*x (family_eval.h's XHalfPlusEven and HalfPlusOdd forms in x^2).
inline float tg_inner(float x, long s, thread float& y) {
  y = x * x;
  const float z = fma(y, TG_SCALE[s], -1.0f);
  float p = TG_COEFFS[s][TG_N - 1];
  for (int k = TG_N - 2; k >= 0; --k) p = fma(p, z, TG_COEFFS[s][k]);
  return fma(x, p, 0.5f);
}

inline float tg_forward(float x, long s) {
  float y;
  const float inner = tg_inner(x, s, y);
  const float r = TG_CLAMP[s];
  return y > r * r ? (x > 0.0f ? x : -0.0f) : x * inner;
}

inline float tg_backward(float g, float x, long s) {
  float y;
  const float inner = tg_inner(x, s, y);
  const float r = TG_CLAMP[s];
  const float step = x > 0.0f ? 1.0f : 0.0f;
  // Always multiply: a NaN gradient stays NaN in the clamped tails.
  return g * (y > r * r ? step : inner);
}
