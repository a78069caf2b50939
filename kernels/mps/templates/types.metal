//! A part of kernels/mps/family_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines.

// bfloat16: Metal's bfloat (MSL 3.1+), else its bits in a ushort, rounded to nearest even as
// kernels/cpu/convert.h does.
#if __METAL_VERSION__ >= 310
typedef bfloat tg_bf16;
inline float tg_load(tg_bf16 v) { return float(v); }
inline tg_bf16 tg_store(float v, tg_bf16) { return tg_bf16(v); }
#else
typedef ushort tg_bf16;
inline float tg_load(tg_bf16 v) { return as_type<float>(uint(v) << 16); }
inline tg_bf16 tg_store(float v, tg_bf16) {
  const uint u = as_type<uint>(v);
  return tg_bf16((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
#endif
inline float tg_load(float v) { return v; }
inline float tg_store(float v, float) { return v; }
inline float tg_load(half v) { return float(v); }
inline half tg_store(float v, half) { return half(v); }
