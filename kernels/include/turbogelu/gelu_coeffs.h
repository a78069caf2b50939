// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/gelu_exact.json and data/specs/gelu_tanh.json.
//
// Polynomial GELU coefficients in the form of poly_eval.h: for |x| <= clamp,
//   forward  gelu(x)  ~ x/2 + x^2 P(z),  backward gelu'(x) ~ 1/2 + x Q(z),
//   z = fma(x*x, scale, -1), P(z) = sum c[k] z^k.
// Errors against the exact function of each form, over the grid: uniform [-6.0, 6.0], 1000001 points,
// plus every float32 within 0.001 of +-clamp.
#pragma once

#include "turbogelu/poly_eval.h"

namespace turbogelu {
namespace coeffs {

// approximate="none": python -m turbogelu fit --range 4.389 --iters 35 --points 20000 --degree 8 --gelu-mode exact
// forward: irls, degree 8; float32 replay: max |err| 2.499e-05 (at x = -4.389), mean |err| on the grid 1.183e-05; float64 evaluation: max |err| 2.499e-05
inline constexpr PolyCoeffs gelu_none_forward = {
    8, 0x1.18e56p+2f, 0x1.a943ap-4f,
    {0x1.4950bap-3f, -0x1.42a582p-4f, 0x1.c4f5cp-5f, -0x1.47ef2ep-5f, 0x1.b5842ap-6f, -0x1.04413ep-6f, 0x1.63ac36p-7f, -0x1.fafbbcp-8f, 0x1.612724p-9f}};
// backward_direct: irls, degree 8; float32 replay: max |err| 1.667e-04 (at x = -4.389), mean |err| on the grid 8.104e-05; float64 evaluation: max |err| 1.667e-04
inline constexpr PolyCoeffs gelu_none_backward_direct = {
    8, 0x1.18e56p+2f, 0x1.a943ap-4f,
    {0x1.4fe742p-3f, -0x1.80781p-4f, 0x1.7da38p-4f, -0x1.b6832ep-4f, 0x1.9337acp-4f, -0x1.e699cep-5f, 0x1.fcbe3cp-5f, -0x1.4ccb7p-4f, 0x1.35d762p-5f}};
// backward_matched: derivative of forward, degree 8; float32 replay: max |err| 2.044e-03 (at x = -4.389), mean |err| on the grid 8.068e-05; float64 evaluation: max |err| 2.044e-03
inline constexpr PolyCoeffs gelu_none_backward_matched = {
    8, 0x1.18e56p+2f, 0x1.a943ap-4f,
    {0x1.4ffbf2p-3f, -0x1.80aa88p-4f, 0x1.7713b6p-4f, -0x1.b4b464p-4f, 0x1.bb274ep-4f, -0x1.ee82d2p-5f, 0x1.65a234p-5f, -0x1.4a682ap-4f, 0x1.8d4c08p-5f}};
// The default backward: the more accurate of the two, as measured by the fit.
inline constexpr bool gelu_none_default_backward_is_direct = true;

// approximate="tanh": python -m turbogelu fit --range 4.25 --iters 35 --points 20000 --degree 8 --gelu-mode tanh
// forward: irls, degree 8; float32 replay: max |err| 2.194e-05 (at x = 4.02288), mean |err| on the grid 9.608e-06; float64 evaluation: max |err| 2.169e-05
inline constexpr PolyCoeffs gelu_tanh_forward = {
    8, 0x1.1p+2f, 0x1.c5894ep-4f,
    {0x1.53edc4p-3f, -0x1.4b4bfap-4f, 0x1.c8e234p-5f, -0x1.3f78c4p-5f, 0x1.96f73cp-6f, -0x1.cad3dcp-7f, 0x1.2f1b06p-7f, -0x1.b60acp-8f, 0x1.36f562p-9f}};
// backward_direct: irls, degree 8; float32 replay: max |err| 1.472e-04 (at x = 4.25), mean |err| on the grid 6.907e-05; float64 evaluation: max |err| 1.471e-04
inline constexpr PolyCoeffs gelu_tanh_backward_direct = {
    8, 0x1.1p+2f, 0x1.c5894ep-4f,
    {0x1.5c7e56p-3f, -0x1.9b08dcp-4f, 0x1.a1e1b6p-4f, -0x1.d30d7p-4f, 0x1.98fbb6p-4f, -0x1.c64d36p-5f, 0x1.ab9586p-5f, -0x1.1e5f22p-4f, 0x1.102ebp-5f}};
// backward_matched: derivative of forward, degree 8; float32 replay: max |err| 1.862e-03 (at x = -4.25), mean |err| on the grid 6.830e-05; float64 evaluation: max |err| 1.862e-03
inline constexpr PolyCoeffs gelu_tanh_backward_matched = {
    8, 0x1.1p+2f, 0x1.c5894ep-4f,
    {0x1.5c8f8ep-3f, -0x1.9b6b8p-4f, 0x1.9c3c5p-4f, -0x1.cff498p-4f, 0x1.bbe144p-4f, -0x1.d32a82p-5f, 0x1.264bc4p-5f, -0x1.1a901p-4f, 0x1.5dd40ep-5f}};
// The default backward: the more accurate of the two, as measured by the fit.
inline constexpr bool gelu_tanh_default_backward_is_direct = true;

// Packed bfloat16: the opt-in CUDA path that evaluates the same program two lanes at a
// time in __nv_bfloat162 arithmetic (every operation rounded to bfloat16), with its own
// fits: python -m turbogelu.approx.packed -> data/specs/packed/*.json. Every value is a
// bfloat16. Bound: max |err| over every finite bfloat16 <= 2x PyTorch's own (tests).
// approximate="none" forward: gelu_none_forward_bf16.json, remez+search, degree 4, R 3; exhaustive bfloat16 replay: max |err| 1.098e-02
inline constexpr PolyCoeffs gelu_none_forward_packed_bf16 = {
    4, 0x1.8p+1f, 0x1.c8p-3f,
    {0x1.d4p-3f, -0x1.7ep-4f, 0x1.7ep-5f, -0x1.72p-6f, 0x1.bcp-8f}};
// approximate="none" backward: gelu_none_backward_bf16.json, remez+search, degree 6, R 3.5; exhaustive bfloat16 replay: max |err| 7.473e-03
inline constexpr PolyCoeffs gelu_none_backward_packed_bf16 = {
    6, 0x1.cp+1f, 0x1.4ep-3f,
    {0x1.bep-3f, -0x1.3p-3f, 0x1.1ep-3f, -0x1.cp-4f, 0x1.5ep-4f, -0x1.1ap-4f, 0x1.c4p-6f}};
// approximate="tanh" forward: gelu_tanh_forward_bf16.json, remez+search, degree 3, R 3; exhaustive bfloat16 replay: max |err| 1.025e-02
inline constexpr PolyCoeffs gelu_tanh_forward_packed_bf16 = {
    3, 0x1.8p+1f, 0x1.c8p-3f,
    {0x1.d2p-3f, -0x1.82p-4f, 0x1.9ap-5f, -0x1.18p-6f}};
// approximate="tanh" backward: gelu_tanh_backward_bf16.json, remez+search, degree 6, R 3.5; exhaustive bfloat16 replay: max |err| 6.906e-03
inline constexpr PolyCoeffs gelu_tanh_backward_packed_bf16 = {
    6, 0x1.cp+1f, 0x1.4ep-3f,
    {0x1.bep-3f, -0x1.32p-3f, 0x1.2p-3f, -0x1.b2p-4f, 0x1.52p-4f, -0x1.26p-4f, 0x1.eap-6f}};

}  // namespace coeffs
}  // namespace turbogelu
