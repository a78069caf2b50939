// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/gelu_exact.json and data/specs/gelu_tanh.json (turbogelu/approx/codegen.py).
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
// Coefficient sets (the kernels' argument s): 0 = none forward, 1 = none backward_direct, 2 = none backward_matched, 3 = tanh forward, 4 = tanh backward_direct, 5 = tanh backward_matched.
// The default backward (read by turbogelu/mps.py), per form:
// default_backward: none=direct, tanh=direct
// float16 and bfloat16 are computed in float32 and rounded to nearest even; there is no
// float64 on Apple GPUs.
#include <metal_stdlib>
using namespace metal;

// Fuse exactly where fma() is written, and keep IEEE semantics for NaN, inf and -0.0
// (the default fast math may assume there is no NaN).
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif

#define TG_N 9  // coefficients per set (the highest degree + 1)
#define TG_SETS 6

constant float TG_CLAMP[TG_SETS] = {
    4.38899993896484375f,  // 0: none forward: 0x1.18e56p+2
    4.38899993896484375f,  // 1: none backward_direct: 0x1.18e56p+2
    4.38899993896484375f,  // 2: none backward_matched: 0x1.18e56p+2
    4.25f,  // 3: tanh forward: 0x1.1p+2
    4.25f,  // 4: tanh backward_direct: 0x1.1p+2
    4.25f,  // 5: tanh backward_matched: 0x1.1p+2
};
constant float TG_SCALE[TG_SETS] = {
    0.10382425785064697265625f,  // 0: 0x1.a943ap-4
    0.10382425785064697265625f,  // 1: 0x1.a943ap-4
    0.10382425785064697265625f,  // 2: 0x1.a943ap-4
    0.110726647078990936279296875f,  // 3: 0x1.c5894ep-4
    0.110726647078990936279296875f,  // 4: 0x1.c5894ep-4
    0.110726647078990936279296875f,  // 5: 0x1.c5894ep-4
};
constant float TG_COEFFS[TG_SETS][TG_N] = {
    {  // 0: approximate='none', forward (degree 8)
        0.16079850494861602783203125f,  // c[0] = 0x1.4950bap-3
        -0.078771121799945831298828125f,  // c[1] = -0x1.42a582p-4
        0.05529296398162841796875f,  // c[2] = 0x1.c4f5cp-5
        -0.0400310419499874114990234375f,  // c[3] = -0x1.47ef2ep-5
        0.02670387364923954010009765625f,  // c[4] = 0x1.b5842ap-6
        -0.01588469557464122772216796875f,  // c[5] = -0x1.04413ep-6
        0.010854269377887248992919921875f,  // c[6] = 0x1.63ac36p-7
        -0.007735951803624629974365234375f,  // c[7] = -0x1.fafbbcp-8
        0.0026943427510559558868408203125f,  // c[8] = 0x1.612724p-9
    },
    {  // 1: approximate='none', backward_direct (degree 8)
        0.16401530802249908447265625f,  // c[0] = 0x1.4fe742p-3
        -0.093864500522613525390625f,  // c[1] = -0x1.80781p-4
        0.093173503875732421875f,  // c[2] = 0x1.7da38p-4
        -0.107058696448802947998046875f,  // c[3] = -0x1.b6832ep-4
        0.09844176471233367919921875f,  // c[4] = 0x1.9337acp-4
        -0.0593995116651058197021484375f,  // c[5] = -0x1.e699cep-5
        0.062102429568767547607421875f,  // c[6] = 0x1.fcbe3cp-5
        -0.081248700618743896484375f,  // c[7] = -0x1.4ccb7p-4
        0.0378224290907382965087890625f,  // c[8] = 0x1.35d762p-5
    },
    {  // 2: approximate='none', backward_matched (degree 8)
        0.16405476629734039306640625f,  // c[0] = 0x1.4ffbf2p-3
        -0.0939126312732696533203125f,  // c[1] = -0x1.80aa88p-4
        0.091571532189846038818359375f,  // c[2] = 0x1.7713b6p-4
        -0.10661734640598297119140625f,  // c[3] = -0x1.b4b464p-4
        0.108191780745983123779296875f,  // c[4] = 0x1.bb274ep-4
        -0.0603651143610477447509765625f,  // c[5] = -0x1.ee82d2p-5
        0.043656446039676666259765625f,  // c[6] = 0x1.65a234p-5
        -0.080665744841098785400390625f,  // c[7] = -0x1.4a682ap-4
        0.04849816858768463134765625f,  // c[8] = 0x1.8d4c08p-5
    },
    {  // 3: approximate='tanh', forward (degree 8)
        0.1659808456897735595703125f,  // c[0] = 0x1.53edc4p-3
        -0.080883003771305084228515625f,  // c[1] = -0x1.4b4bfap-4
        0.055771924555301666259765625f,  // c[2] = 0x1.c8e234p-5
        -0.038998015224933624267578125f,  // c[3] = -0x1.3f78c4p-5
        0.0248392187058925628662109375f,  // c[4] = 0x1.96f73cp-6
        -0.01400230638682842254638671875f,  // c[5] = -0x1.cad3dcp-7
        0.009250047616660594940185546875f,  // c[6] = 0x1.2f1b06p-7
        -0.00668399035930633544921875f,  // c[7] = -0x1.b60acp-8
        0.00237242528237402439117431640625f,  // c[8] = 0x1.36f562p-9
    },
    {  // 4: approximate='tanh', backward_direct (degree 8)
        0.17016284167766571044921875f,  // c[0] = 0x1.5c7e56p-3
        -0.10035024583339691162109375f,  // c[1] = -0x1.9b08dcp-4
        0.102021895349025726318359375f,  // c[2] = 0x1.a1e1b6p-4
        -0.114026486873626708984375f,  // c[3] = -0x1.d30d7p-4
        0.099849425256252288818359375f,  // c[4] = 0x1.98fbb6p-4
        -0.0554567389190196990966796875f,  // c[5] = -0x1.c64d36p-5
        0.0521953217685222625732421875f,  // c[6] = 0x1.ab9586p-5
        -0.069914944469928741455078125f,  // c[7] = -0x1.1e5f22p-4
        0.0332253873348236083984375f,  // c[8] = 0x1.102ebp-5
    },
    {  // 5: approximate='tanh', backward_matched (degree 8)
        0.17019568383693695068359375f,  // c[0] = 0x1.5c8f8ep-3
        -0.100444316864013671875f,  // c[1] = -0x1.9b6b8p-4
        0.100643455982208251953125f,  // c[2] = 0x1.9c3c5p-4
        -0.1132703721523284912109375f,  // c[3] = -0x1.cff498p-4
        0.10836912691593170166015625f,  // c[4] = 0x1.bbe144p-4
        -0.0570271052420139312744140625f,  // c[5] = -0x1.d32a82p-5
        0.035924799740314483642578125f,  // c[6] = 0x1.264bc4p-5
        -0.068985044956207275390625f,  // c[7] = -0x1.1a901p-4
        0.0427036546170711517333984375f,  // c[8] = 0x1.5dd40ep-5
    },
};

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

// One element per thread; the grid has n threads (or more: hence the guard).
#define TG_KERNELS(T, NAME)                                                            \
  kernel void gelu_forward_##NAME(device const T* x [[buffer(0)]],                     \
                                  device T* out [[buffer(1)]],                         \
                                  constant long& n [[buffer(2)]],                      \
                                  constant long& s [[buffer(3)]],                      \
                                  uint i [[thread_position_in_grid]]) {                \
    if (i < n) out[i] = tg_store(tg_forward(tg_load(x[i]), s), T());                   \
  }                                                                                    \
  kernel void gelu_backward_##NAME(device const T* g [[buffer(0)]],                    \
                                   device const T* x [[buffer(1)]],                    \
                                   device T* out [[buffer(2)]],                        \
                                   constant long& n [[buffer(3)]],                     \
                                   constant long& s [[buffer(4)]],                     \
                                   uint i [[thread_position_in_grid]]) {               \
    if (i < n) out[i] = tg_store(tg_backward(tg_load(g[i]), tg_load(x[i]), s), T());  \
  }

TG_KERNELS(float, float)
TG_KERNELS(half, half)
TG_KERNELS(tg_bf16, bfloat)
