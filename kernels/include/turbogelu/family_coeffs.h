// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/<function>/<tier>.json (python -m turbogelu.approx.family_programs) and
// data/specs/exp2/<tier>.json (python -m turbogelu.approx.exp2_programs).
//
// The activation family's programs in the shape of family_eval.h, each tier's, and
// TG_FAMILY_SHAPES(X): X(function, tier, forward form, forward degree, forward in x^2,
// backward form, backward degree, backward in x^2), the shapes the kernels are
// compiled for.
#pragma once

#include "turbogelu/family_eval.h"

namespace turbogelu {
namespace coeffs {

// sigmoid, accurate tier: python -m turbogelu.approx.family_programs sigmoid
// sigmoid (1/2 + odd): r(u) ~ u^1 P(z), z = 2 u / 10.45 - 1, degree 11, fit on [0, 10.45], clamp 10.45, float32 coefficients, unknown method, program generic; float32 replay: max |err| 2.895e-05
inline constexpr FamilyProgram sigmoid_accurate_forward = {
    11, 0x1.4e6666p+3f, 0x1.87f634p-3f, 0.0f, 1.0f,
    {0x1.83c3c8p-4f, -0x1.6e1484p-4f, 0x1.35e30ep-4f, -0x1.a4c6dap-5f, 0x1.5f852ap-6f, -0x1.6dc29ep-11f, -0x1.e4dd48p-7f, 0x1.8cc8aap-5f, -0x1.f03454p-5f, 0x1.0a13e6p-7f, 0x1.0a0d6cp-5f, -0x1.08d568p-6f}};
// sigmoid_grad (even): r(u) ~ u^0 P(z), z = 2 u / 10.45 - 1, degree 11, fit on [0, 10.45], clamp 10.45, float32 coefficients, unknown method, program generic; float32 replay: max |err| 4.285e-05
inline constexpr FamilyProgram sigmoid_accurate_backward_direct = {
    11, 0x1.4e6666p+3f, 0x1.87f634p-3f, 0.0f, 0.0f,
    {0x1.5a0ff4p-8f, -0x1.c2ea3p-6f, 0x1.2e0b9cp-4f, -0x1.e12156p-4f, 0x1.868ca4p-4f, -0x1.b8e9fcp-4f, 0x1.0d8c1ep-2f, -0x1.db6d76p-5f, -0x1.045124p-1f, 0x1.72273ep-2f, 0x1.9107fcp-3f, -0x1.680fcp-3f}};
// sigmoid_grad (even): r(u) ~ u^0 P(z), z = 2 u / 10.45 - 1, degree 11, fit on [0, 10.45], clamp 10.45, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 3.569e-04
inline constexpr FamilyProgram sigmoid_accurate_backward_matched = {
    11, 0x1.4e6666p+3f, 0x1.87f634p-3f, 0.0f, 0.0f,
    {0x1.5af44p-8f, -0x1.c18bbp-6f, 0x1.2a7ee4p-4f, -0x1.ea088ap-4f, 0x1.a91cdap-4f, -0x1.7ccb16p-4f, 0x1.e23e5ap-3f, -0x1.8daea8p-4f, -0x1.e36546p-2f, 0x1.9fb6fep-2f, 0x1.6f7f7ap-3f, -0x1.8d401cp-3f}};
inline constexpr bool sigmoid_accurate_default_backward_is_direct = true;

// sigmoid, paper tier: python -m turbogelu.approx.family_programs --tier paper sigmoid
// sigmoid (1/2 + odd): r(u) ~ u^1 P(z), z = 2 u / 5.32 - 1, degree 2, fit on [0, 5.32], clamp 5.26, bfloat16 coefficients, remez+search, program generic; float32 replay: max |err| 5.222e-03
inline constexpr FamilyProgram sigmoid_paper_forward = {
    2, 0x1.50a3d8p+2f, 0x1.8p-2f, 0.0f, 1.0f,
    {0x1.4ep-3f, -0x1.82p-4f, 0x1.78p-6f}};
// sigmoid_grad (even): r(u) ~ u^0 P(z), z = 2 u / 5.6 - 1, degree 4, fit on [0, 5.6], clamp 5.6, bfloat16 coefficients, remez+search, program generic; float32 replay: max |err| 3.709e-03
inline constexpr FamilyProgram sigmoid_paper_backward_direct = {
    4, 0x1.666666p+2f, 0x1.6ep-2f, 0.0f, 0.0f,
    {0x1.b6p-5f, -0x1.3ap-3f, 0x1.3ap-3f, 0x1.b8p-6f, -0x1.46p-4f}};
// sigmoid_grad (even): r(u) ~ u^0 P(z), z = 2 u / 5.33333 - 1, degree 2, fit on [0, 5.33333], clamp 5.26, float32 coefficients, derivative of forward, program generic (degree 2, padded to 4); float32 replay: max |err| 3.027e-02
inline constexpr FamilyProgram sigmoid_paper_backward_matched = {
    4, 0x1.50a3d8p+2f, 0x1.8p-2f, 0.0f, 0.0f,
    {0x1.1ap-4f, -0x1.24p-3f, 0x1.1ap-4f, 0x0p+0f, 0x0p+0f}};
inline constexpr bool sigmoid_paper_default_backward_is_direct = true;

// tanh, accurate tier: python -m turbogelu.approx.family_programs tanh
// tanh (odd): r(u) ~ u^1 P(z), z = 2 u / 5.6 - 1, degree 12, fit on [0, 5.6], clamp 5.6, float32 coefficients, unknown method, program generic; float32 replay: max |err| 2.735e-05
inline constexpr FamilyProgram tanh_accurate_forward = {
    12, 0x1.666666p+2f, 0x1.6db6dcp-2f, -1.0f, 1.0f,
    {0x1.6b03d6p-2f, -0x1.5c0b1p-2f, 0x1.32b14cp-2f, -0x1.c7cdc2p-3f, 0x1.d17c4p-4f, -0x1.6a844ep-6f, -0x1.600b42p-6f, 0x1.f8387cp-4f, -0x1.0f63b4p-2f, 0x1.6bc434p-3f, 0x1.1b88b2p-4f, -0x1.03f93ep-3f, 0x1.3f6fb8p-5f}};
// tanh_grad (even): r(u) ~ u^0 P(z), z = 2 u / 5.6 - 1, degree 12, fit on [0, 5.6], clamp 5.6, float32 coefficients, unknown method, program generic; float32 replay: max |err| 1.579e-04
inline constexpr FamilyProgram tanh_accurate_backward_direct = {
    12, 0x1.666666p+2f, 0x1.6db6dcp-2f, 0.0f, 0.0f,
    {0x1.dcd8d6p-7f, -0x1.49e8bap-4f, 0x1.e2fd6p-3f, -0x1.c1771cp-2f, 0x1.99969cp-2f, -0x1.ffe04p-3f, 0x1.e60ae2p-1f, -0x1.259984p+0f, -0x1.397098p+0f, 0x1.3b6bf6p+1f, -0x1.13696ep-2f, -0x1.0c4e84p+0f, 0x1.93211ep-2f}};
// tanh_grad (even): r(u) ~ u^0 P(z), z = 2 u / 5.6 - 1, degree 12, fit on [0, 5.6], clamp 5.6, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 8.416e-04
inline constexpr FamilyProgram tanh_accurate_backward_matched = {
    12, 0x1.666666p+2f, 0x1.6db6dcp-2f, 0.0f, 0.0f,
    {0x1.df18cp-7f, -0x1.4ace2p-4f, 0x1.d8be82p-3f, -0x1.be1f44p-2f, 0x1.d491f8p-2f, -0x1.0bf5d6p-2f, 0x1.6c2ef6p-1f, -0x1.22ab2ap+0f, -0x1.92c734p-1f, 0x1.3bf558p+1f, -0x1.451176p-1f, -0x1.0e2bf8p+0f, 0x1.038ac6p-1f}};
inline constexpr bool tanh_accurate_default_backward_is_direct = true;

// tanh, paper tier: python -m turbogelu.approx.family_programs --tier paper tanh
// tanh (odd): r(u) ~ u^1 P(z), z = 2 u / 2.84 - 1, degree 3, fit on [0, 2.84], clamp 2.78, bfloat16 coefficients, remez+search, program generic; float32 replay: max |err| 7.673e-03
inline constexpr FamilyProgram tanh_paper_forward = {
    3, 0x1.63d70ap+1f, 0x1.68p-1f, -1.0f, 1.0f,
    {0x1.42p-1f, -0x1.9cp-2f, 0x1.84p-4f, 0x1.fcp-6f}};
// tanh_grad (even): r(u) ~ u^0 P(z), z = 2 u / 2.84444 - 1, degree 3, fit on [0, 2.84444], clamp 2.78, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 9.497e-02
inline constexpr FamilyProgram tanh_paper_backward_direct = {
    3, 0x1.63d70ap+1f, 0x1.68p-1f, 0.0f, 0.0f,
    {0x1.dp-3f, -0x1.3bp-1f, 0x1.824p-2f, 0x1.fcp-4f}};
// tanh_grad (even): r(u) ~ u^0 P(z), z = 2 u / 2.84444 - 1, degree 3, fit on [0, 2.84444], clamp 2.78, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 9.497e-02
inline constexpr FamilyProgram tanh_paper_backward_matched = {
    3, 0x1.63d70ap+1f, 0x1.68p-1f, 0.0f, 0.0f,
    {0x1.dp-3f, -0x1.3bp-1f, 0x1.824p-2f, 0x1.fcp-4f}};
inline constexpr bool tanh_paper_default_backward_is_direct = false;

// silu, accurate tier: python -m turbogelu.approx.family_programs silu
// silu (x/2 + even): r(u) ~ u^2 P(z), z = 2 u / 13 - 1, degree 13, fit on [0, 13], clamp 13, float32 coefficients, unknown method, program turbogelu; float32 replay: max |err| 2.938e-05
inline constexpr FamilyProgram silu_accurate_forward = {
    13, 0x1.ap+3f, 0x1.3b13b2p-3f, -0.0f, 0.0f,
    {0x1.3a211cp-4f, -0x1.33f85ep-4f, 0x1.204404p-4f, -0x1.ecc67ep-5f, 0x1.5c7afp-5f, -0x1.268498p-6f, 0x1.fc78b6p-11f, -0x1.e6ca64p-10f, -0x1.52b96ap-6f, 0x1.44788ep-4f, -0x1.2eacd4p-4f, -0x1.723d5cp-7f, 0x1.892fc4p-5f, -0x1.2b9eap-6f}};
// silu_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 u / 13 - 1, degree 13, fit on [0, 13], clamp 13, float32 coefficients, unknown method, program generic; float32 replay: max |err| 7.634e-05
inline constexpr FamilyProgram silu_accurate_backward_direct = {
    13, 0x1.ap+3f, 0x1.3b13b2p-3f, 0.0f, 1.0f,
    {0x1.404a62p-4f, -0x1.5b268ap-4f, 0x1.9da7d8p-4f, -0x1.0f0f94p-3f, 0x1.54d0e6p-3f, -0x1.ad80dcp-4f, -0x1.812ffep-7f, -0x1.e5c3cap-3f, 0x1.0c036ap-1f, 0x1.d25676p-3f, -0x1.07fe34p+0f, 0x1.67e3e6p-2f, 0x1.c55ffap-2f, -0x1.00639cp-2f}};
// silu_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 u / 13 - 1, degree 13, fit on [0, 13], clamp 13, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 7.523e-04
inline constexpr FamilyProgram silu_accurate_backward_matched = {
    13, 0x1.ap+3f, 0x1.3b13b2p-3f, 0.0f, 1.0f,
    {0x1.4049dap-4f, -0x1.5b6112p-4f, 0x1.9de654p-4f, -0x1.0b7d2ep-3f, 0x1.52a588p-3f, -0x1.eb9262p-4f, -0x1.576978p-8f, -0x1.74f3a6p-3f, 0x1.032daep-1f, 0x1.0f36e8p-3f, -0x1.02d2e4p+0f, 0x1.b75eb8p-2f, 0x1.bca2b4p-2f, -0x1.18e4b6p-2f}};
inline constexpr bool silu_accurate_default_backward_is_direct = true;

// silu, paper tier: python -m turbogelu.approx.family_programs --tier paper silu
// silu (x/2 + even): r(u) ~ u^0 P(z), z = 2 y / 5.35^2 - 1, degree 3, fit on [0, 5.35], clamp 5.3, bfloat16 coefficients, remez+search, program generic; float32 replay: max |err| 2.632e-02
inline constexpr FamilyProgram silu_paper_forward = {
    3, 0x1.533334p+2f, 0x1.1ep-4f, -0.0f, 0.0f,
    {0x1.d4p+0f, 0x1p+0f, -0x1.e2p-2f, 0x1.54p-2f}};
// silu_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 y / 5.35195^2 - 1, degree 2, fit on [0, 5.35195], clamp 5.3, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 2.304e-01
inline constexpr FamilyProgram silu_paper_backward_direct = {
    2, 0x1.533334p+2f, 0x1.1ep-4f, 0.0f, 1.0f,
    {0x1.1ep-3f, -0x1.0d3ep-3f, 0x1.1ce2p-3f}};
// silu_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 y / 5.35195^2 - 1, degree 2, fit on [0, 5.35195], clamp 5.3, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 2.304e-01
inline constexpr FamilyProgram silu_paper_backward_matched = {
    2, 0x1.533334p+2f, 0x1.1ep-4f, 0.0f, 1.0f,
    {0x1.1ep-3f, -0x1.0d3ep-3f, 0x1.1ce2p-3f}};
inline constexpr bool silu_paper_default_backward_is_direct = false;

// exp2, accurate tier: python -m turbogelu.approx.exp2_programs
// relative minimax of 2^f on [-1/2, 1/2] with p(0) = 1 (family_tails.exp2_coefficients(5)), float32 coefficients; float32 replay: max 2 ulp
inline constexpr FamilyProgram exp2_accurate_forward = {
    5, 0.0f, 0.0f, 0.0f, 0.0f,
    {0x1p+0f, 0x1.62e42cp-1f, 0x1.ebf9aep-3f, 0x1.c6b5ecp-5f, 0x1.3cef9ap-7f, 0x1.5c0e66p-10f}};
// ln 2 times the forward's coefficients, float32; float32 replay: max 2 ulp
inline constexpr FamilyProgram exp2_accurate_backward_direct = {
    5, 0.0f, 0.0f, 0.0f, 0.0f,
    {0x1.62e43p-1f, 0x1.ebfbdap-2f, 0x1.5502e4p-3f, 0x1.3b2e7p-5f, 0x1.b75dd4p-8f, 0x1.e28228p-11f}};
// the forward program's derivative P'(f) 2^n; float32 replay: max 152 ulp
inline constexpr FamilyProgram exp2_accurate_backward_matched = {
    5, 0.0f, 0.0f, 0.0f, 0.0f,
    {0x1.62e42cp-1f, 0x1.ebf9aep-2f, 0x1.55087p-3f, 0x1.3cef9ap-5f, 0x1.b312p-8f, 0x0p+0f}};
inline constexpr bool exp2_accurate_default_backward_is_direct = true;

// exp2, paper tier: python -m turbogelu.approx.exp2_programs --tier paper
// the paper's D2 (Table 8, sampled minimax of the relative error): 1 + f + a f (f - 1) on [0, 1], a on the 2^-24 grid, both endpoints exact in float32; float32 replay: max 38297 ulp
inline constexpr FamilyProgram exp2_paper_forward = {
    2, 0.0f, 0.0f, 0.0f, 0.0f,
    {0x1p+0f, 0x1.520a3p-1f, 0x1.5bebap-2f}};
// ln 2 times the forward's coefficients, float32; float32 replay: max 35597 ulp
inline constexpr FamilyProgram exp2_paper_backward_direct = {
    2, 0.0f, 0.0f, 0.0f, 0.0f,
    {0x1.62e43p-1f, 0x1.d49f66p-2f, 0x1.e251f2p-3f}};
// the forward program's derivative P'(f) 2^n; float32 replay: max 552192 ulp
inline constexpr FamilyProgram exp2_paper_backward_matched = {
    2, 0.0f, 0.0f, 0.0f, 0.0f,
    {0x1.520a3p-1f, 0x1.5bebap-1f, 0x0p+0f}};
inline constexpr bool exp2_paper_default_backward_is_direct = true;

}  // namespace coeffs
}  // namespace turbogelu

#define TG_FAMILY_SHAPES(X) \
  X(sigmoid, accurate, HalfPlusOdd, 11, false, Even, 11, false) \
  X(sigmoid, paper, HalfPlusOdd, 2, false, Even, 4, false) \
  X(tanh, accurate, Odd, 12, false, Even, 12, false) \
  X(tanh, paper, Odd, 3, false, Even, 3, false) \
  X(silu, accurate, XHalfPlusEven, 13, false, HalfPlusOdd, 13, false) \
  X(silu, paper, XHalfPlus, 3, true, HalfPlusOdd, 2, true) \
  X(exp2, accurate, Exp2Nearest, 5, false, Exp2Nearest, 5, false) \
  X(exp2, paper, Exp2Floor, 2, false, Exp2Floor, 2, false)
