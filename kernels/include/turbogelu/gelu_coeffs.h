// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/gelu_exact.json and data/specs/gelu_tanh.json (and data/specs/packed/,
// data/specs/cells/).
//
// Polynomial GELU coefficients (poly_eval.h's PolyCoeffs, which family.h makes the
// kernels' programs and family_eval.h evaluates): for |x| <= clamp,
//   forward  gelu(x)  ~ x/2 + x^2 P(z),  backward gelu'(x) ~ 1/2 + x Q(z),
//   z = fma(x*x, scale, -1), P(z) = sum c[k] z^k.
// Errors against the exact function of each form, over the grid: uniform [-6.0, 6.0], 1000001 points,
// plus every float32 within 0.001 of +-clamp.
#pragma once

#include "turbogelu/poly_eval.h"

namespace turbogelu {
namespace coeffs {

// approximate="none": python -m turbogelu fit --all
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

// approximate="tanh": python -m turbogelu fit --all
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
// fits: python -m turbogelu fit --all -> data/specs/packed/*.json. Every value is a
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

// Cells: the CPU's table-driven program (family_eval.h's cells_eval), a cubic in
// each of 32 cells: python -m turbogelu.approx.cells -> data/specs/cells/*.json.
// Errors of the float32 program over the same grid plus every float32 within
// 0.001 of +-R and +-clamp.
// approximate="none" forward: max |err| 2.496e-06 (at x = 1.16251), mean |err| on the grid 5.307e-07
inline constexpr CellTable gelu_none_forward_cells = {
    0x1.733334p+1f, 0x1.4b08d4p+2f, 0x1.80002p+23f,
    {{0x0p+0f, 0x0p+0f, 0x1.9a936ap-10f, 0x1.88cab2p-8f, 0x1.291388p-6f, 0x1.7fccc2p-5f, 0x1.ac217p-4f, 0x1.99cdb6p-3f, 0x1.4f7becp-2f, 0x1.d560aap-2f, 0x1.1a16d2p-1f, 0x1.2910c2p-1f, 0x1.1dea06p-1f, 0x1.0c4234p-1f, 0x1.02508ap-1f, 0x1.0014ap-1f, 0x1p-1f, 0x1.ffd6cep-2f, 0x1.fb5ef2p-2f, 0x1.e77c8ap-2f, 0x1.c4252p-2f, 0x1.adcf06p-2f, 0x1.cbc53p-2f, 0x1.155084p-1f, 0x1.58532cp-1f, 0x1.998748p-1f, 0x1.ca7344p-1f, 0x1.e80334p-1f, 0x1.f6c516p-1f, 0x1.fcf64ep-1f, 0x1.ff32b6p-1f, 0x1p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.e40578p-11f, 0x1.f0c43cp-9f, 0x1.932414p-7f, 0x1.17fa1ep-5f, 0x1.50e478p-4f, 0x1.5c96fp-3f, 0x1.346874p-2f, 0x1.cfdcb8p-2f, 0x1.27146ap-1f, 0x1.3e181p-1f, 0x1.27ccbap-1f, 0x1.f741fp-2f, 0x1.b2e63ep-2f, 0x1.9a8472p-2f, 0x1.9882ap-2f, 0x1.9a83dep-2f, 0x1.b2e622p-2f, 0x1.f73f24p-2f, 0x1.27d45ap-1f, 0x1.3e25acp-1f, 0x1.271e4ap-1f, 0x1.cfdaeap-2f, 0x1.344334p-2f, 0x1.5cabc4p-3f, 0x1.51208ep-4f, 0x1.17fa22p-5f, 0x1.90a7c4p-7f, 0x1.eb8a7cp-9f, 0x1.e40542p-11f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.7cfe8ap-13f, 0x1.a3b96ap-11f, 0x1.6dd24ep-9f, 0x1.117c0ep-7f, 0x1.63a5f4p-6f, 0x1.8ef8e8p-5f, 0x1.7f3cdep-4f, 0x1.3806e6p-3f, 0x1.a84c74p-3f, 0x1.d77868p-3f, 0x1.9bfcdp-3f, 0x1.082edap-3f, 0x1.aa668cp-5f, 0x1.0b05ap-7f, -0x0p+0f, -0x1.0acb0ep-7f, -0x1.aa654p-5f, -0x1.08296ap-3f, -0x1.9c136ap-3f, -0x1.d7983ep-3f, -0x1.a8601ep-3f, -0x1.3805aap-3f, -0x1.7f06f2p-4f, -0x1.8f142ep-5f, -0x1.63ec38p-6f, -0x1.117c12p-7f, -0x1.6b6ab8p-9f, -0x1.9f1d14p-11f, -0x1.7cfe5cp-13f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.90709p-17f, 0x1.d9c136p-15f, 0x1.bbd61cp-13f, 0x1.6592bap-11f, 0x1.f76202p-10f, 0x1.32e988p-8f, 0x1.416314p-7f, 0x1.1d2152p-6f, 0x1.a2521cp-6f, 0x1.e2cdbap-6f, 0x1.78ea72p-6f, 0x1.7180cep-9f, -0x1.b921fap-6f, -0x1.bcff7cp-5f, -0x1.0e3c52p-4f, -0x1.bd0da4p-5f, -0x1.b92338p-6f, 0x1.7110f8p-9f, 0x1.7916dp-6f, 0x1.e2ff3ap-6f, 0x1.a26c2p-6f, 0x1.1d203cp-6f, 0x1.412f1ep-7f, 0x1.330152p-8f, 0x1.f7cf74p-10f, 0x1.6592c2p-11f, 0x1.b8bc8cp-13f, 0x1.d45582p-15f, 0x1.90705ep-17f, 0x0p+0f}}};
// approximate="none" backward_direct: max |err| 1.402e-05 (at x = 0.814476), mean |err| on the grid 2.039e-06
inline constexpr CellTable gelu_none_backward_direct_cells = {
    0x1.733334p+1f, 0x1.4b08d4p+2f, 0x1.80002p+23f,
    {{0x0p+0f, 0x0p+0f, -0x1.ede9f2p-6f, -0x1.5c3644p-4f, -0x1.a054f6p-3f, -0x1.9dcdf4p-2f, -0x1.4ec0d4p-1f, -0x1.a739f8p-1f, -0x1.81f26p-1f, -0x1.76dfaap-2f, 0x1.704674p-3f, 0x1.2ce73ap-1f, 0x1.641e2ep-1f, 0x1.37e35p-1f, 0x1.0c08dep-1f, 0x1.0069ecp-1f, 0x1p-1f, 0x1.ff2c26p-2f, 0x1.e7ee3ap-2f, 0x1.90392ap-2f, 0x1.37bb7ep-2f, 0x1.a6374cp-2f, 0x1.a3ffa2p-1f, 0x1.5db8d4p+0f, 0x1.c11d6p+0f, 0x1.d37e72p+0f, 0x1.a709c4p+0f, 0x1.67737cp+0f, 0x1.340348p+0f, 0x1.15bf86p+0f, 0x1.07b7a8p+0f, 0x1p+0f},
     {0x0p+0f, 0x0p+0f, -0x1.22de0cp-6f, -0x1.b4ec9ep-5f, -0x1.16ad34p-3f, -0x1.27819ep-2f, -0x1.fbb7aep-2f, -0x1.4e6504p-1f, -0x1.269304p-1f, -0x1.ee83fap-4f, 0x1.39dcbep-1f, 0x1.41613ep+0f, 0x1.74904cp+0f, 0x1.3b918cp+0f, 0x1.de4188p-1f, 0x1.9dcc16p-1f, 0x1.9881fep-1f, 0x1.9dcc1cp-1f, 0x1.de41bp-1f, 0x1.3b91a8p+0f, 0x1.7494dep+0f, 0x1.415e6ep+0f, 0x1.39c338p-1f, -0x1.ee9216p-4f, -0x1.26e19ep-1f, -0x1.4e2a62p-1f, -0x1.fa894ep-2f, -0x1.27819ap-2f, -0x1.168226p-3f, -0x1.b498dep-5f, -0x1.22de0cp-6f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, -0x1.c9a93cp-9f, -0x1.6e827p-7f, -0x1.f36b08p-6f, -0x1.1b082cp-4f, -0x1.02f832p-3f, -0x1.64c08cp-3f, -0x1.2c194ep-3f, 0x1.001146p-5f, 0x1.70f132p-2f, 0x1.65590cp-1f, 0x1.a49a24p-1f, 0x1.4277fcp-1f, 0x1.1f63e8p-2f, 0x1.6b7a7ep-5f, 0x1.02fc6ep-21f, -0x1.6b7af6p-5f, -0x1.1f648ap-2f, -0x1.427822p-1f, -0x1.a4a0eap-1f, -0x1.65557p-1f, -0x1.70d81p-2f, -0x1.0008f6p-5f, 0x1.2c8afap-3f, 0x1.647598p-3f, 0x1.02487cp-3f, 0x1.1b082ap-4f, 0x1.f316dap-6f, 0x1.6e36f2p-7f, 0x1.c9a93cp-9f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, -0x1.e0ec1cp-13f, -0x1.9af9b2p-11f, -0x1.2b6e0ap-9f, -0x1.6b64a8p-8f, -0x1.631c94p-7f, -0x1.00bbb6p-6f, -0x1.961a1ep-7f, 0x1.61d1bep-7f, 0x1.ebbc04p-5f, 0x1.e87c86p-4f, 0x1.2859e2p-3f, 0x1.6efd2cp-4f, -0x1.83d862p-5f, -0x1.94aap-3f, -0x1.0dfc7ep-2f, -0x1.94aa06p-3f, -0x1.83d558p-5f, 0x1.6efd58p-4f, 0x1.28608cp-3f, 0x1.e87668p-4f, 0x1.eb9b1cp-5f, 0x1.61cf04p-7f, -0x1.96f4fep-7f, -0x1.007be8p-6f, -0x1.620c8ap-7f, -0x1.6b64a4p-8f, -0x1.2b373ap-9f, -0x1.9a9f04p-11f, -0x1.e0ec1cp-13f, 0x0p+0f}}};
// approximate="none" backward_matched: max |err| 2.049e-04 (at x = 1.20689), mean |err| on the grid 1.639e-05
inline constexpr CellTable gelu_none_backward_matched_cells = {
    0x1.733334p+1f, 0x1.4b08d4p+2f, 0x1.80002p+23f,
    {{0x0p+0f, 0x0p+0f, 0x1.9a936ap-10f, 0x1.88cab2p-8f, 0x1.291388p-6f, 0x1.7fccc2p-5f, 0x1.ac217p-4f, 0x1.99cdb6p-3f, 0x1.4f7becp-2f, 0x1.d560aap-2f, 0x1.1a16d2p-1f, 0x1.2910c2p-1f, 0x1.1dea06p-1f, 0x1.0c4234p-1f, 0x1.02508ap-1f, 0x1.0014ap-1f, 0x1p-1f, 0x1.ffd6cep-2f, 0x1.fb5ef2p-2f, 0x1.e77c8ap-2f, 0x1.c4252p-2f, 0x1.adcf06p-2f, 0x1.cbc53p-2f, 0x1.155084p-1f, 0x1.58532cp-1f, 0x1.998748p-1f, 0x1.ca7344p-1f, 0x1.e80334p-1f, 0x1.f6c516p-1f, 0x1.fcf64ep-1f, 0x1.ff32b6p-1f, 0x1p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.e40578p-10f, 0x1.f0c43cp-8f, 0x1.932414p-6f, 0x1.17fa1ep-4f, 0x1.50e478p-3f, 0x1.5c96fp-2f, 0x1.346874p-1f, 0x1.cfdcb8p-1f, 0x1.27146ap+0f, 0x1.3e181p+0f, 0x1.27ccbap+0f, 0x1.f741fp-1f, 0x1.b2e63ep-1f, 0x1.9a8472p-1f, 0x1.9882ap-1f, 0x1.9a83dep-1f, 0x1.b2e622p-1f, 0x1.f73f24p-1f, 0x1.27d45ap+0f, 0x1.3e25acp+0f, 0x1.271e4ap+0f, 0x1.cfdaeap-1f, 0x1.344334p-1f, 0x1.5cabc4p-2f, 0x1.51208ep-3f, 0x1.17fa22p-4f, 0x1.90a7c4p-6f, 0x1.eb8a7cp-8f, 0x1.e40542p-10f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.1dbee8p-11f, 0x1.3acb1p-9f, 0x1.125dbap-7f, 0x1.9a3a14p-6f, 0x1.0abc78p-4f, 0x1.2b3aaep-3f, 0x1.1f6da6p-2f, 0x1.d40a58p-2f, 0x1.3e3958p-1f, 0x1.619a4ep-1f, 0x1.34fd9cp-1f, 0x1.8c4648p-2f, 0x1.3fcce8p-3f, 0x1.90887p-6f, -0x0p+0f, -0x1.903094p-6f, -0x1.3fcbfp-3f, -0x1.8c3e2p-2f, -0x1.350e9p-1f, -0x1.61b22ep-1f, -0x1.3e4816p-1f, -0x1.d4088p-2f, -0x1.1f4536p-2f, -0x1.2b4f22p-3f, -0x1.0af12ap-4f, -0x1.9a3a1cp-6f, -0x1.10900ap-7f, -0x1.3755dp-9f, -0x1.1dbec4p-11f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.90709p-15f, 0x1.d9c136p-13f, 0x1.bbd61cp-11f, 0x1.6592bap-9f, 0x1.f76202p-8f, 0x1.32e988p-6f, 0x1.416314p-5f, 0x1.1d2152p-4f, 0x1.a2521cp-4f, 0x1.e2cdbap-4f, 0x1.78ea72p-4f, 0x1.7180cep-7f, -0x1.b921fap-4f, -0x1.bcff7cp-3f, -0x1.0e3c52p-2f, -0x1.bd0da4p-3f, -0x1.b92338p-4f, 0x1.7110f8p-7f, 0x1.7916dp-4f, 0x1.e2ff3ap-4f, 0x1.a26c2p-4f, 0x1.1d203cp-4f, 0x1.412f1ep-5f, 0x1.330152p-6f, 0x1.f7cf74p-8f, 0x1.6592c2p-9f, 0x1.b8bc8cp-11f, 0x1.d45582p-13f, 0x1.90705ep-15f, 0x0p+0f}}};
inline constexpr bool gelu_none_cells_default_backward_is_direct = true;
// approximate="tanh" forward: max |err| 2.458e-06 (at x = 1.16158), mean |err| on the grid 4.866e-07
inline constexpr CellTable gelu_tanh_forward_cells = {
    0x1.733334p+1f, 0x1.4b08d4p+2f, 0x1.80002p+23f,
    {{0x0p+0f, 0x0p+0f, 0x1.6ffbecp-11f, 0x1.fc1a26p-9f, 0x1.e2e7bp-7f, 0x1.65bdacp-5f, 0x1.abb2d4p-4f, 0x1.a2c08ep-3f, 0x1.55a93ep-2f, 0x1.d8744ap-2f, 0x1.19890ep-1f, 0x1.27fd8ap-1f, 0x1.1d80acp-1f, 0x1.0c47e2p-1f, 0x1.0258d6p-1f, 0x1.00150cp-1f, 0x1p-1f, 0x1.ffd5f4p-2f, 0x1.fb4e58p-2f, 0x1.e77122p-2f, 0x1.c4f848p-2f, 0x1.aff166p-2f, 0x1.cce16cp-2f, 0x1.13c6a2p-1f, 0x1.553cbap-1f, 0x1.974a36p-1f, 0x1.ca80acp-1f, 0x1.e9a428p-1f, 0x1.f8812cp-1f, 0x1.fe0a5p-1f, 0x1.ffa402p-1f, 0x1p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.b666e2p-12f, 0x1.44accp-9f, 0x1.4affbcp-7f, 0x1.07600ap-5f, 0x1.531e28p-4f, 0x1.66194cp-3f, 0x1.3adc5ep-2f, 0x1.d2a98ep-2f, 0x1.25af88p-1f, 0x1.3bea56p-1f, 0x1.26eca2p-1f, 0x1.f79e3ep-2f, 0x1.b349a6p-2f, 0x1.9a8f12p-2f, 0x1.988296p-2f, 0x1.9a8e7cp-2f, 0x1.b3498cp-2f, 0x1.f79b96p-2f, 0x1.26f3c4p-1f, 0x1.3bfb86p-1f, 0x1.25b8ep-1f, 0x1.d2a7e8p-2f, 0x1.3ab69ep-2f, 0x1.662f7ap-3f, 0x1.535d38p-4f, 0x1.075fe8p-5f, 0x1.48ad4p-7f, 0x1.406d3ep-9f, 0x1.b66674p-12f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.5c7ceep-14f, 0x1.14f85ep-11f, 0x1.2f2184p-9f, 0x1.035e02p-7f, 0x1.685212p-6f, 0x1.9b91d8p-5f, 0x1.87cb4cp-4f, 0x1.396f6p-3f, 0x1.a4ba0cp-3f, 0x1.d25392p-3f, 0x1.9a4308p-3f, 0x1.09e44ep-3f, 0x1.b117a2p-5f, 0x1.109f32p-7f, -0x0p+0f, -0x1.106388p-7f, -0x1.b11668p-5f, -0x1.09df24p-3f, -0x1.9a5826p-3f, -0x1.d27bc6p-3f, -0x1.a4cca6p-3f, -0x1.396e4p-3f, -0x1.87949ep-4f, -0x1.9baedep-5f, -0x1.689bdp-6f, -0x1.035ddep-7f, -0x1.2ce25ep-9f, -0x1.1138b4p-11f, -0x1.5c7c94p-14f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.71a4d2p-18f, 0x1.3b6722p-15f, 0x1.72db5p-13f, 0x1.55916ap-11f, 0x1.00688ap-9f, 0x1.3da25ep-8f, 0x1.48bfap-7f, 0x1.1dcd7ep-6f, 0x1.9d1226p-6f, 0x1.db750ap-6f, 0x1.778e1p-6f, 0x1.a25f32p-9f, -0x1.b371a6p-6f, -0x1.bd91fp-5f, -0x1.0f892p-4f, -0x1.bda05ep-5f, -0x1.b372d4p-6f, 0x1.a1f4c6p-9f, 0x1.77b784p-6f, 0x1.dbb386p-6f, 0x1.9d2ac6p-6f, 0x1.1dcc84p-6f, 0x1.488ae4p-7f, 0x1.3dbba6p-8f, 0x1.00a1f8p-9f, 0x1.559138p-11f, 0x1.6ff5d8p-13f, 0x1.36feb4p-15f, 0x1.71a46ep-18f, 0x0p+0f}}};
// approximate="tanh" backward_direct: max |err| 1.410e-05 (at x = 0.814428), mean |err| on the grid 1.822e-06
inline constexpr CellTable gelu_tanh_backward_direct_cells = {
    0x1.733334p+1f, 0x1.4b08d4p+2f, 0x1.80002p+23f,
    {{0x0p+0f, 0x0p+0f, -0x1.2d72d6p-6f, -0x1.1a4108p-4f, -0x1.91f576p-3f, -0x1.b28dd4p-2f, -0x1.6506bp-1f, -0x1.b67314p-1f, -0x1.7b5f9ap-1f, -0x1.53d646p-2f, 0x1.914542p-3f, 0x1.2a2f2ap-1f, 0x1.60f20ap-1f, 0x1.37766ep-1f, 0x1.0c2968p-1f, 0x1.006c08p-1f, 0x1p-1f, 0x1.ff27fp-2f, 0x1.e7ad28p-2f, 0x1.9112f6p-2f, 0x1.3e1214p-2f, 0x1.aba79ep-2f, 0x1.9bbeap-1f, 0x1.54f668p+0f, 0x1.bdb0f2p+0f, 0x1.db1deap+0f, 0x1.b22d4ap+0f, 0x1.6ca374p+0f, 0x1.323692p+0f, 0x1.11a0cap+0f, 0x1.04b5ccp+0f, 0x1p+0f},
     {0x0p+0f, 0x0p+0f, -0x1.6756c6p-7f, -0x1.668014p-5f, -0x1.103536p-3f, -0x1.397f7ap-2f, -0x1.10a662p-1f, -0x1.5a8a6cp-1f, -0x1.1c554ep-1f, -0x1.38f1fap-4f, 0x1.43dfbep-1f, 0x1.3dc4e8p+0f, 0x1.70aaeep+0f, 0x1.3b1776p+0f, 0x1.df10ep-1f, 0x1.9de742p-1f, 0x1.9881fp-1f, 0x1.9de742p-1f, 0x1.df11p-1f, 0x1.3b1792p+0f, 0x1.70b06ep+0f, 0x1.3dc20ap+0f, 0x1.43c81ep-1f, -0x1.38fe64p-4f, -0x1.1c5766p-1f, -0x1.5a5588p-1f, -0x1.101042p-1f, -0x1.397f78p-2f, -0x1.1005aap-3f, -0x1.66391p-5f, -0x1.6756c6p-7f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, -0x1.1ddcdcp-9f, -0x1.301782p-7f, -0x1.ecf276p-6f, -0x1.2eec76p-4f, -0x1.17abaap-3f, -0x1.711acp-3f, -0x1.19c6f8p-3f, 0x1.94f6e8p-5f, 0x1.77fa34p-2f, 0x1.5fd458p-1f, 0x1.9ee9cep-1f, 0x1.42784ep-1f, 0x1.23231cp-2f, 0x1.72e452p-5f, 0x1.08d42ep-21f, -0x1.72e452p-5f, -0x1.2323a4p-2f, -0x1.42787p-1f, -0x1.9ef1f8p-1f, -0x1.5fd0bp-1f, -0x1.77e2eep-2f, -0x1.94f022p-5f, 0x1.19c96ap-3f, 0x1.70d754p-3f, 0x1.16fd38p-3f, 0x1.2eec74p-4f, 0x1.ec9598p-6f, 0x1.2fd772p-7f, 0x1.1ddcdcp-9f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, -0x1.2f82a6p-13f, -0x1.587b2ep-11f, -0x1.2a55b4p-9f, -0x1.87ea76p-8f, -0x1.811f7p-7f, -0x1.08bf92p-6f, -0x1.6e1106p-7f, 0x1.b01d1ep-7f, 0x1.f136ep-5f, 0x1.de93cep-4f, 0x1.236b7ep-3f, 0x1.71c9a2p-4f, -0x1.73ad38p-5f, -0x1.947146p-3f, -0x1.0f47dcp-2f, -0x1.947146p-3f, -0x1.73aaap-5f, 0x1.71c9cap-4f, 0x1.237384p-3f, 0x1.de8dacp-4f, 0x1.f1186p-5f, 0x1.b01b52p-7f, -0x1.6e149ap-7f, -0x1.088656p-6f, -0x1.80116ap-7f, -0x1.87ea72p-8f, -0x1.2a194ap-9f, -0x1.582e28p-11f, -0x1.2f82a6p-13f, 0x0p+0f}}};
// approximate="tanh" backward_matched: max |err| 2.026e-04 (at x = 1.20689), mean |err| on the grid 1.602e-05
inline constexpr CellTable gelu_tanh_backward_matched_cells = {
    0x1.733334p+1f, 0x1.4b08d4p+2f, 0x1.80002p+23f,
    {{0x0p+0f, 0x0p+0f, 0x1.6ffbecp-11f, 0x1.fc1a26p-9f, 0x1.e2e7bp-7f, 0x1.65bdacp-5f, 0x1.abb2d4p-4f, 0x1.a2c08ep-3f, 0x1.55a93ep-2f, 0x1.d8744ap-2f, 0x1.19890ep-1f, 0x1.27fd8ap-1f, 0x1.1d80acp-1f, 0x1.0c47e2p-1f, 0x1.0258d6p-1f, 0x1.00150cp-1f, 0x1p-1f, 0x1.ffd5f4p-2f, 0x1.fb4e58p-2f, 0x1.e77122p-2f, 0x1.c4f848p-2f, 0x1.aff166p-2f, 0x1.cce16cp-2f, 0x1.13c6a2p-1f, 0x1.553cbap-1f, 0x1.974a36p-1f, 0x1.ca80acp-1f, 0x1.e9a428p-1f, 0x1.f8812cp-1f, 0x1.fe0a5p-1f, 0x1.ffa402p-1f, 0x1p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.b666e2p-11f, 0x1.44accp-8f, 0x1.4affbcp-6f, 0x1.07600ap-4f, 0x1.531e28p-3f, 0x1.66194cp-2f, 0x1.3adc5ep-1f, 0x1.d2a98ep-1f, 0x1.25af88p+0f, 0x1.3bea56p+0f, 0x1.26eca2p+0f, 0x1.f79e3ep-1f, 0x1.b349a6p-1f, 0x1.9a8f12p-1f, 0x1.988296p-1f, 0x1.9a8e7cp-1f, 0x1.b3498cp-1f, 0x1.f79b96p-1f, 0x1.26f3c4p+0f, 0x1.3bfb86p+0f, 0x1.25b8ep+0f, 0x1.d2a7e8p-1f, 0x1.3ab69ep-1f, 0x1.662f7ap-2f, 0x1.535d38p-3f, 0x1.075fe8p-4f, 0x1.48ad4p-6f, 0x1.406d3ep-8f, 0x1.b66674p-11f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.055db2p-12f, 0x1.9f748cp-10f, 0x1.c6b246p-8f, 0x1.850d04p-6f, 0x1.0e3d8ep-4f, 0x1.34ad62p-3f, 0x1.25d878p-2f, 0x1.d6271p-2f, 0x1.3b8b88p-1f, 0x1.5dbeaep-1f, 0x1.33b246p-1f, 0x1.8ed674p-2f, 0x1.44d1bap-3f, 0x1.98eeccp-6f, -0x0p+0f, -0x1.98954cp-6f, -0x1.44d0cep-3f, -0x1.8eceb6p-2f, -0x1.33c21cp-1f, -0x1.5ddcd4p-1f, -0x1.3b997cp-1f, -0x1.d6256p-2f, -0x1.25af76p-2f, -0x1.34c326p-3f, -0x1.0e74dcp-4f, -0x1.850cccp-6f, -0x1.c3538cp-8f, -0x1.99d50ep-10f, -0x1.055d7p-12f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x1.71a4d2p-16f, 0x1.3b6722p-13f, 0x1.72db5p-11f, 0x1.55916ap-9f, 0x1.00688ap-7f, 0x1.3da25ep-6f, 0x1.48bfap-5f, 0x1.1dcd7ep-4f, 0x1.9d1226p-4f, 0x1.db750ap-4f, 0x1.778e1p-4f, 0x1.a25f32p-7f, -0x1.b371a6p-4f, -0x1.bd91fp-3f, -0x1.0f892p-2f, -0x1.bda05ep-3f, -0x1.b372d4p-4f, 0x1.a1f4c6p-7f, 0x1.77b784p-4f, 0x1.dbb386p-4f, 0x1.9d2ac6p-4f, 0x1.1dcc84p-4f, 0x1.488ae4p-5f, 0x1.3dbba6p-6f, 0x1.00a1f8p-7f, 0x1.559138p-9f, 0x1.6ff5d8p-11f, 0x1.36feb4p-13f, 0x1.71a46ep-16f, 0x0p+0f}}};
inline constexpr bool gelu_tanh_cells_default_backward_is_direct = true;

}  // namespace coeffs
}  // namespace turbogelu
