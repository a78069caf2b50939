// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/<function>/<tier>.json, data/specs/exp2/<tier>.json,
// data/specs/gelu_<mode>/paper.json, data/specs/cells/<function>.json and
// data/specs/cells16/<function>_<format>.json (python -m turbogelu fit --all).
//
// The activation family's programs in the shape of family_eval.h, each tier's (GELU's
// rows: their paper tier; their accurate programs are family.h's), and
// TG_FAMILY_SHAPES(X): X(function, tier, forward form, forward degree, forward in x^2,
// backward form, backward degree, backward in x^2), the shapes the kernels are
// compiled for.
#pragma once

#include "turbogelu/family_eval.h"

namespace turbogelu {
namespace coeffs {

// sigmoid, accurate tier: python -m turbogelu fit --all
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
inline constexpr bool sigmoid_accurate_shipped = true;

// sigmoid, paper tier: python -m turbogelu fit --all
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
inline constexpr bool sigmoid_paper_shipped = true;

// tanh, accurate tier: python -m turbogelu fit --all
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
inline constexpr bool tanh_accurate_shipped = true;

// tanh, paper tier: python -m turbogelu fit --all
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
inline constexpr bool tanh_paper_shipped = true;

// silu, accurate tier: python -m turbogelu fit --all
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
inline constexpr bool silu_accurate_shipped = true;

// silu, paper tier: python -m turbogelu fit --all
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
inline constexpr bool silu_paper_shipped = true;

// softplus, accurate tier: python -m turbogelu fit --all
// softplus (x/2 + even): r(u) ~ u^0 P(z), z = 2 u / 10.5 - 1, degree 10, fit on [0, 10.5], clamp 10.5, float32 coefficients, unknown method, program generic; float32 replay: max |err| 2.968e-05
inline constexpr FamilyProgram softplus_accurate_forward = {
    10, 0x1.5p+3f, 0x1.861862p-3f, 0.0f, 0.0f,
    {0x1.50aa98p+1f, 0x1.4c8152p+1f, 0x1.2bc886p-4f, -0x1.026702p-3f, 0x1.27363cp-3f, -0x1.27d012p-3f, 0x1.68ccp-3f, -0x1.0695aap-3f, -0x1.af610ep-6f, 0x1.460bb6p-4f, -0x1.a6a27p-6f}};
// softplus_grad (1/2 + odd): r(u) ~ u^0 P(z), z = 2 u / 10.5 - 1, degree 10, fit on [0, 10.5], clamp 10.5, float32 coefficients, unknown method, program generic; float32 replay: max |err| 1.062e-04
inline constexpr FamilyProgram softplus_accurate_backward_direct = {
    10, 0x1.5p+3f, 0x1.861862p-3f, 0.0f, 1.0f,
    {0x1.fabdacp-2f, 0x1.c9cf9p-6f, -0x1.36a6e2p-4f, 0x1.bcf5bcp-4f, -0x1.a61ad2p-4f, 0x1.a77206p-3f, -0x1.1f58f6p-2f, -0x1.8efc74p-5f, 0x1.1b6e86p-2f, -0x1.6e9a7p-5f, -0x1.fd3364p-5f}};
// softplus_grad (1/2 + odd): r(u) ~ u^0 P(z), z = 2 u / 10.5 - 1, degree 9, fit on [0, 10.5], clamp 10.5, float32 coefficients, derivative of forward, program generic (degree 9, padded to 10); float32 replay: max |err| 8.542e-04
inline constexpr FamilyProgram softplus_accurate_backward_matched = {
    10, 0x1.5p+3f, 0x1.861862p-3f, 0.0f, 1.0f,
    {0x1.faacaep-2f, 0x1.c8d00ap-6f, -0x1.275128p-4f, 0x1.c1d8bep-4f, -0x1.19b9fap-3f, 0x1.9c56dcp-3f, -0x1.5e1ce4p-3f, -0x1.48ab78p-5f, 0x1.1777cp-3f, -0x1.928252p-5f, 0x0p+0f}};
inline constexpr bool softplus_accurate_default_backward_is_direct = true;
inline constexpr bool softplus_accurate_shipped = true;

// softplus, paper tier: none shipped (the ops refuse it); the accurate tier's programs, so that every (op, tier) compiles alike
inline constexpr FamilyProgram softplus_paper_forward = softplus_accurate_forward;
inline constexpr FamilyProgram softplus_paper_backward_direct = softplus_accurate_backward_direct;
inline constexpr FamilyProgram softplus_paper_backward_matched = softplus_accurate_backward_matched;
inline constexpr bool softplus_paper_default_backward_is_direct = softplus_accurate_default_backward_is_direct;
inline constexpr bool softplus_paper_shipped = false;

// gelu_none, paper tier: python -m turbogelu fit --all
// gelu (x/2 + even): r(u) ~ u^0 P(z), z = 2 y / 3.6^2 - 1, degree 5, fit on [0, 3.6], clamp 3.34, bfloat16 coefficients, remez+search, program generic; float32 replay: max |err| 1.465e-03
inline constexpr FamilyProgram gelu_none_paper_forward = {
    5, 0x1.ab851ep+1f, 0x1.3cp-3f, -0.0f, 0.0f,
    {0x1.42p+0f, 0x1.5ep-1f, -0x1.a6p-3f, 0x1.02p-3f, -0x1.36p-3f, 0x1.6ep-4f}};
// gelu_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 y / 3.60028^2 - 1, degree 4, fit on [0, 3.60028], clamp 3.34, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 1.337e-02
inline constexpr FamilyProgram gelu_none_paper_backward_direct = {
    4, 0x1.ab851ep+1f, 0x1.3cp-3f, 0.0f, 1.0f,
    {0x1.b008p-3f, -0x1.0474p-3f, 0x1.ddb4p-4f, -0x1.7ea8p-3f, 0x1.1a5dp-3f}};
// gelu_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 y / 3.60028^2 - 1, degree 4, fit on [0, 3.60028], clamp 3.34, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 1.337e-02
inline constexpr FamilyProgram gelu_none_paper_backward_matched = {
    4, 0x1.ab851ep+1f, 0x1.3cp-3f, 0.0f, 1.0f,
    {0x1.b008p-3f, -0x1.0474p-3f, 0x1.ddb4p-4f, -0x1.7ea8p-3f, 0x1.1a5dp-3f}};
inline constexpr bool gelu_none_paper_default_backward_is_direct = false;
inline constexpr bool gelu_none_paper_shipped = true;

// gelu_tanh, paper tier: python -m turbogelu fit --all
// gelu_tanh (x/2 + even): r(u) ~ u^0 P(z), z = 2 y / 3.6^2 - 1, degree 5, fit on [0, 3.6], clamp 3.34, bfloat16 coefficients, remez+search, program generic; float32 replay: max |err| 1.752e-03
inline constexpr FamilyProgram gelu_tanh_paper_forward = {
    5, 0x1.ab851ep+1f, 0x1.3cp-3f, -0.0f, 0.0f,
    {0x1.42p+0f, 0x1.5ep-1f, -0x1.a2p-3f, 0x1.02p-3f, -0x1.3ap-3f, 0x1.6ep-4f}};
// gelu_tanh_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 y / 3.60028^2 - 1, degree 4, fit on [0, 3.60028], clamp 3.34, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 1.297e-02
inline constexpr FamilyProgram gelu_tanh_paper_backward_direct = {
    4, 0x1.ab851ep+1f, 0x1.3cp-3f, 0.0f, 1.0f,
    {0x1.b008p-3f, -0x1.01fcp-3f, 0x1.ddb4p-4f, -0x1.8398p-3f, 0x1.1a5dp-3f}};
// gelu_tanh_grad (1/2 + odd): r(u) ~ u^1 P(z), z = 2 y / 3.60028^2 - 1, degree 4, fit on [0, 3.60028], clamp 3.34, float32 coefficients, derivative of forward, program generic; float32 replay: max |err| 1.297e-02
inline constexpr FamilyProgram gelu_tanh_paper_backward_matched = {
    4, 0x1.ab851ep+1f, 0x1.3cp-3f, 0.0f, 1.0f,
    {0x1.b008p-3f, -0x1.01fcp-3f, 0x1.ddb4p-4f, -0x1.8398p-3f, 0x1.1a5dp-3f}};
inline constexpr bool gelu_tanh_paper_default_backward_is_direct = false;
inline constexpr bool gelu_tanh_paper_shipped = true;

// exp2, accurate tier: python -m turbogelu fit --all
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
inline constexpr bool exp2_accurate_shipped = true;

// exp2, paper tier: python -m turbogelu fit --all
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
inline constexpr bool exp2_paper_shipped = true;

// Cells: the CPU's table-driven programs for sigmoid and SiLU (family_eval.h's
// cells_eval), a cubic in each of 32 cells of |x|; float32 max |err| over [-24, 24].
// sigmoid: python -m turbogelu fit --all
// forward (HalfPlusOdd): max |err| 2.065e-06 (at x = 0.917793)
inline constexpr CellTable sigmoid_cells_forward = {
    3, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.e4d3e4p-14f, -0x1.b3f13p-9f, -0x1.0522dep-6f, -0x1.1cdb28p-5f, -0x1.6f61f6p-5f, -0x1.0ad9dcp-5f, 0x1.33edaap-8f, 0x1.eb4a8ap-5f, 0x1.fe6eaep-4f, 0x1.84b9dcp-3f, 0x1.005a66p-2f, 0x1.368b0ep-2f, 0x1.6403b4p-2f, 0x1.86db6cp-2f, 0x1.a63478p-2f, 0x1.bcf1e6p-2f, 0x1.ce7b16p-2f, 0x1.db9f2ap-2f, 0x1.e57f64p-2f, 0x1.ecdc44p-2f, 0x1.f22c18p-2f, 0x1.f62428p-2f, 0x1.f8fa8p-2f, 0x1.fb059ap-2f, 0x1.fc8fb6p-2f, 0x1.fd9518p-2f, 0x1.fe4e5ap-2f, 0x1.fec244p-2f, 0x1.ff22c2p-2f, 0x1.ff6a0ep-2f, 0x1p-1f},
     {0x1.000002p-2f, 0x1.0122fcp-2f, 0x1.0ed96ep-2f, 0x1.3090ecp-2f, 0x1.55147cp-2f, 0x1.64a56p-2f, 0x1.561558p-2f, 0x1.2fd9bp-2f, 0x1.fd08c4p-3f, 0x1.970dcp-3f, 0x1.3afe9ap-3f, 0x1.db422cp-4f, 0x1.5fc208p-4f, 0x1.006d86p-4f, 0x1.794b52p-5f, 0x1.07ba4ap-5f, 0x1.75c22p-6f, 0x1.067136p-6f, 0x1.6f97dp-7f, 0x1.ff8be4p-8f, 0x1.6168e6p-8f, 0x1.e9c1aap-9f, 0x1.4f1ccap-9f, 0x1.cb05acp-10f, 0x1.396526p-10f, 0x1.a0920ep-11f, 0x1.1ac8cp-11f, 0x1.7f1102p-12f, 0x1.10ca12p-12f, 0x1.6ff11ap-13f, 0x1.e286fap-14f, 0x0p+0f},
     {-0x1.1297a6p-15f, -0x1.d73cecp-9f, -0x1.709a34p-6f, -0x1.a480a4p-5f, -0x1.2eb6bp-4f, -0x1.4e0e94p-4f, -0x1.378b46p-4f, -0x1.046edap-4f, -0x1.961f4cp-5f, -0x1.2d535ap-5f, -0x1.b14d96p-6f, -0x1.3084a2p-6f, -0x1.a556dcp-7f, -0x1.2010f6p-7f, -0x1.904bd2p-8f, -0x1.07211p-8f, -0x1.611aa6p-9f, -0x1.d6a53ep-10f, -0x1.39bd6cp-10f, -0x1.a073bap-11f, -0x1.12ecc4p-11f, -0x1.6d0b84p-12f, -0x1.df0458p-13f, -0x1.3b3dfp-13f, -0x1.9e41p-14f, -0x1.08bc7cp-14f, -0x1.5adb0cp-15f, -0x1.c5fbc4p-16f, -0x1.3a18p-16f, -0x1.9a2ce8p-17f, -0x1.041e14p-17f, 0x0p+0f},
     {-0x1.51357cp-6f, -0x1.10f3ecp-6f, -0x1.f35736p-8f, 0x1.bd4d98p-11f, 0x1.70c792p-8f, 0x1.c4fd3p-8f, 0x1.968ee2p-8f, 0x1.3b5f58p-8f, 0x1.c4b3acp-9f, 0x1.35090ap-9f, 0x1.9a4be2p-10f, 0x1.0b534p-10f, 0x1.586b1ep-11f, 0x1.b859aep-12f, 0x1.204676p-12f, 0x1.639d98p-13f, 0x1.c31b3ep-14f, 0x1.1cedap-14f, 0x1.69255ap-15f, 0x1.c8c542p-16f, 0x1.1fe04ep-16f, 0x1.6df3fep-17f, 0x1.cc22fap-18f, 0x1.22cc36p-18f, 0x1.6f8b26p-19f, 0x1.c37c9ap-20f, 0x1.1d4c5cp-20f, 0x1.68a7acp-21f, 0x1.e4b2ecp-22f, 0x1.3250dep-22f, 0x1.779e42p-23f, 0x0p+0f}}};
// backward_direct (Even): max |err| 2.415e-06 (at x = -0.621025)
inline constexpr CellTable sigmoid_cells_backward_direct = {
    3, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x1.ffffdep-3f, 0x1.ff803p-3f, 0x1.fdadeap-3f, 0x1.0963a6p-2f, 0x1.2e6fdp-2f, 0x1.640a22p-2f, 0x1.8e30fap-2f, 0x1.9afceap-2f, 0x1.87c06p-2f, 0x1.5eb9fp-2f, 0x1.2ac63ap-2f, 0x1.eaf246p-3f, 0x1.88124ap-3f, 0x1.330da4p-3f, 0x1.df7f1ap-4f, 0x1.64d36ap-4f, 0x1.0b1784p-4f, 0x1.8b16c6p-5f, 0x1.22867ep-5f, 0x1.a79276p-6f, 0x1.3204fp-6f, 0x1.ba4a76p-7f, 0x1.3b6448p-7f, 0x1.c14b9ep-8f, 0x1.3e8ff6p-8f, 0x1.b81b8ep-9f, 0x1.357114p-9f, 0x1.b1a35cp-10f, 0x1.3dba3cp-10f, 0x1.ba6f7ep-11f, 0x1.2be1ep-11f, 0x0p+0f},
     {0x1.19185ap-15f, 0x1.502922p-9f, 0x1.db23bcp-8f, -0x1.2f71d4p-6f, -0x1.5f9d5cp-4f, -0x1.4c9b4ap-3f, -0x1.b22766p-3f, -0x1.ccca1cp-3f, -0x1.aba77ep-3f, -0x1.6cad2ap-3f, -0x1.252c8cp-3f, -0x1.c58526p-4f, -0x1.54fd46p-4f, -0x1.f7d9f8p-5f, -0x1.74ee24p-5f, -0x1.05d598p-5f, -0x1.740c1ap-6f, -0x1.05ade6p-6f, -0x1.6ee978p-7f, -0x1.fef1a4p-8f, -0x1.61256cp-8f, -0x1.e9860ep-9f, -0x1.4f031cp-9f, -0x1.caef8ap-10f, -0x1.395b3ap-10f, -0x1.a088eap-11f, -0x1.1ac5fep-11f, -0x1.7f0e7ap-12f, -0x1.10c836p-12f, -0x1.6fe758p-13f, -0x1.e2865ep-14f, 0x0p+0f},
     {-0x1.02e2b2p-4f, -0x1.27f44ep-4f, -0x1.495132p-4f, -0x1.e1f168p-5f, -0x1.159588p-6f, 0x1.4f2a32p-6f, 0x1.4addaep-5f, 0x1.6fd3e2p-5f, 0x1.49c184p-5f, 0x1.094502p-5f, 0x1.8f4472p-6f, 0x1.20e41p-6f, 0x1.96f796p-7f, 0x1.1a88d2p-7f, 0x1.8b439ap-8f, 0x1.0516c8p-8f, 0x1.5f5df8p-9f, 0x1.d52e86p-10f, 0x1.391ed8p-10f, 0x1.9fee5ep-11f, 0x1.12b532p-11f, 0x1.6cdc9cp-12f, 0x1.deddb2p-13f, 0x1.3b2dfap-13f, 0x1.9e333ep-14f, 0x1.08b66p-14f, 0x1.5ad78ep-15f, 0x1.c5f8a8p-16f, 0x1.3a15bep-16f, 0x1.9a213cp-17f, 0x1.041dbcp-17f, 0x0p+0f},
     {0x1.3b94aep-8f, 0x1.09b514p-6f, 0x1.5657bcp-6f, 0x1.e6af6p-7f, 0x1.923a04p-8f, 0x1.307d6ap-15f, -0x1.59b5c4p-9f, -0x1.9e1946p-9f, -0x1.63bd9cp-9f, -0x1.0ba6d4p-9f, -0x1.769042p-10f, -0x1.f873eep-11f, -0x1.4b8b4ep-11f, -0x1.af3c32p-12f, -0x1.1c632cp-12f, -0x1.60abfp-13f, -0x1.c0bfp-14f, -0x1.1bfd28p-14f, -0x1.686472p-15f, -0x1.c82b18p-16f, -0x1.1fa322p-16f, -0x1.6dc2acp-17f, -0x1.cbfc1ep-18f, -0x1.22bcd6p-18f, -0x1.6f7e66p-19f, -0x1.c371acp-20f, -0x1.1d4968p-20f, -0x1.68a52p-21f, -0x1.e4af48p-22f, -0x1.32479p-22f, -0x1.779dbep-23f, 0x0p+0f}}};
// backward_matched (Even): max |err| 1.208e-04 (at x = 0.688545)
inline constexpr CellTable sigmoid_cells_backward_matched = {
    3, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x1.000002p-2f, 0x1.0122fcp-2f, 0x1.0ed96ep-2f, 0x1.3090ecp-2f, 0x1.55147cp-2f, 0x1.64a56p-2f, 0x1.561558p-2f, 0x1.2fd9bp-2f, 0x1.fd08c4p-3f, 0x1.970dcp-3f, 0x1.3afe9ap-3f, 0x1.db422cp-4f, 0x1.5fc208p-4f, 0x1.006d86p-4f, 0x1.794b52p-5f, 0x1.07ba4ap-5f, 0x1.75c22p-6f, 0x1.067136p-6f, 0x1.6f97dp-7f, 0x1.ff8be4p-8f, 0x1.6168e6p-8f, 0x1.e9c1aap-9f, 0x1.4f1ccap-9f, 0x1.cb05acp-10f, 0x1.396526p-10f, 0x1.a0920ep-11f, 0x1.1ac8cp-11f, 0x1.7f1102p-12f, 0x1.10ca12p-12f, 0x1.6ff11ap-13f, 0x1.e286fap-14f, 0x0p+0f},
     {-0x1.1297a6p-14f, -0x1.d73cecp-8f, -0x1.709a34p-5f, -0x1.a480a4p-4f, -0x1.2eb6bp-3f, -0x1.4e0e94p-3f, -0x1.378b46p-3f, -0x1.046edap-3f, -0x1.961f4cp-4f, -0x1.2d535ap-4f, -0x1.b14d96p-5f, -0x1.3084a2p-5f, -0x1.a556dcp-6f, -0x1.2010f6p-6f, -0x1.904bd2p-7f, -0x1.07211p-7f, -0x1.611aa6p-8f, -0x1.d6a53ep-9f, -0x1.39bd6cp-9f, -0x1.a073bap-10f, -0x1.12ecc4p-10f, -0x1.6d0b84p-11f, -0x1.df0458p-12f, -0x1.3b3dfp-12f, -0x1.9e41p-13f, -0x1.08bc7cp-13f, -0x1.5adb0cp-14f, -0x1.c5fbc4p-15f, -0x1.3a18p-15f, -0x1.9a2ce8p-16f, -0x1.041e14p-16f, 0x0p+0f},
     {-0x1.f9d03ap-5f, -0x1.996de2p-5f, -0x1.768168p-6f, 0x1.4dfa32p-9f, 0x1.1495aep-6f, 0x1.53bde4p-6f, 0x1.30eb2ap-6f, 0x1.d90f04p-7f, 0x1.5386cp-7f, 0x1.cf8d9p-8f, 0x1.33b8eap-8f, 0x1.90fcep-9f, 0x1.025056p-9f, 0x1.4a4342p-10f, 0x1.b069bp-11f, 0x1.0ab632p-11f, 0x1.52546ep-12f, 0x1.ab647p-13f, 0x1.0edc04p-13f, 0x1.5693f2p-14f, 0x1.afd074p-15f, 0x1.1276fep-15f, 0x1.591a3cp-16f, 0x1.b4325p-17f, 0x1.13a85cp-17f, 0x1.529d74p-18f, 0x1.abf28ap-19f, 0x1.0e7dcp-19f, 0x1.6b863p-20f, 0x1.cb794cp-21f, 0x1.19b6b2p-21f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
// sigmoid, float16: degree 2, within 1 ulp of the correctly rounded value for x >= -3.0, below |error| <= 3e-05 beyond half an ulp of the result (python -m turbogelu fit --all, data/specs/cells16/sigmoid_float16.json)
inline constexpr CellTable sigmoid_forward_cells_float16 = {
    2, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.7d1b3ap-10f, -0x1.26d3cep-7f, -0x1.bf317ep-7f, 0x1.406a74p-13f, 0x1.3f3b44p-5f, 0x1.8f2f88p-4f, 0x1.4e1e6p-3f, 0x1.d7c23ep-3f, 0x1.294bdep-2f, 0x1.5cf568p-2f, 0x1.867842p-2f, 0x1.a6be64p-2f, 0x1.bf3af6p-2f, 0x1.d176fcp-2f, 0x1.ded868p-2f, 0x1.e88c54p-2f, 0x1.ef83e8p-2f, 0x1.f47a02p-2f, 0x1.f7fc06p-2f, 0x1.fa7302p-2f, 0x1.fc2beep-2f, 0x1.fd5e84p-2f, 0x1.fe32cp-2f, 0x1.fec516p-2f, 0x1.ff299ep-2f, 0x1.ff6e7p-2f, 0x1.ff9d6ap-2f, 0x1.ffbd62p-2f, 0x1.ffd316p-2f, 0x1.ffe1c6p-2f, 0x1p-1f},
     {0x1.0082bap-2f, 0x1.0b6dd8p-2f, 0x1.2266f6p-2f, 0x1.2b79aep-2f, 0x1.1a7582p-2f, 0x1.e88eaep-3f, 0x1.89e2c2p-3f, 0x1.2f8e94p-3f, 0x1.bea1acp-4f, 0x1.404ac8p-4f, 0x1.c26d0cp-5f, 0x1.383452p-5f, 0x1.ac343p-6f, 0x1.234614p-6f, 0x1.89bfcap-7f, 0x1.08c83p-7f, 0x1.629dacp-8f, 0x1.d93ec2p-9f, 0x1.3ad138p-9f, 0x1.a1bc72p-10f, 0x1.147eeep-10f, 0x1.6d3ed2p-11f, 0x1.e18ee4p-12f, 0x1.3ce6d8p-12f, 0x1.a06c86p-13f, 0x1.113292p-13f, 0x1.65fa46p-14f, 0x1.d47954p-15f, 0x1.322d6cp-15f, 0x1.8fc5c4p-16f, 0x1.04b872p-16f, 0x0p+0f},
     {-0x1.be0d8cp-8f, -0x1.b66cd6p-6f, -0x1.64d7f4p-5f, -0x1.87401ap-5f, -0x1.5e3fd2p-5f, -0x1.14d626p-5f, -0x1.93efbap-6f, -0x1.1a970cp-6f, -0x1.7a0136p-7f, -0x1.f00e5p-8f, -0x1.4109cap-8f, -0x1.9beb1ap-9f, -0x1.06cc74p-9f, -0x1.4e256cp-10f, -0x1.a7eb1ep-11f, -0x1.0c869ap-11f, -0x1.53e2b2p-12f, -0x1.adf76ep-13f, -0x1.0fdd38p-13f, -0x1.57b7a6p-14f, -0x1.b27fdep-15f, -0x1.129adp-15f, -0x1.5b14fcp-16f, -0x1.b6ac32p-17f, -0x1.1535cep-17f, -0x1.5e597cp-18f, -0x1.bac836p-19f, -0x1.17cc86p-19f, -0x1.619d64p-20f, -0x1.bee752p-21f, -0x1.1a66bap-21f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr CellTable sigmoid_backward_matched_cells_float16 = {
    2, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x1.0082bap-2f, 0x1.0b6dd8p-2f, 0x1.2266f6p-2f, 0x1.2b79aep-2f, 0x1.1a7582p-2f, 0x1.e88eaep-3f, 0x1.89e2c2p-3f, 0x1.2f8e94p-3f, 0x1.bea1acp-4f, 0x1.404ac8p-4f, 0x1.c26d0cp-5f, 0x1.383452p-5f, 0x1.ac343p-6f, 0x1.234614p-6f, 0x1.89bfcap-7f, 0x1.08c83p-7f, 0x1.629dacp-8f, 0x1.d93ec2p-9f, 0x1.3ad138p-9f, 0x1.a1bc72p-10f, 0x1.147eeep-10f, 0x1.6d3ed2p-11f, 0x1.e18ee4p-12f, 0x1.3ce6d8p-12f, 0x1.a06c86p-13f, 0x1.113292p-13f, 0x1.65fa46p-14f, 0x1.d47954p-15f, 0x1.322d6cp-15f, 0x1.8fc5c4p-16f, 0x1.04b872p-16f, 0x0p+0f},
     {-0x1.be0d8cp-7f, -0x1.b66cd6p-5f, -0x1.64d7f4p-4f, -0x1.87401ap-4f, -0x1.5e3fd2p-4f, -0x1.14d626p-4f, -0x1.93efbap-5f, -0x1.1a970cp-5f, -0x1.7a0136p-6f, -0x1.f00e5p-7f, -0x1.4109cap-7f, -0x1.9beb1ap-8f, -0x1.06cc74p-8f, -0x1.4e256cp-9f, -0x1.a7eb1ep-10f, -0x1.0c869ap-10f, -0x1.53e2b2p-11f, -0x1.adf76ep-12f, -0x1.0fdd38p-12f, -0x1.57b7a6p-13f, -0x1.b27fdep-14f, -0x1.129adp-14f, -0x1.5b14fcp-15f, -0x1.b6ac32p-16f, -0x1.1535cep-16f, -0x1.5e597cp-17f, -0x1.bac836p-18f, -0x1.17cc86p-18f, -0x1.619d64p-19f, -0x1.bee752p-20f, -0x1.1a66bap-20f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr SizedCells sigmoid_cells_float16 = {&sigmoid_forward_cells_float16, &sigmoid_backward_matched_cells_float16};
// sigmoid, bfloat16: degree 2, within 1 ulp of the correctly rounded value for x >= -3.0, below |error| <= 3e-05 beyond half an ulp of the result (python -m turbogelu fit --all, data/specs/cells16/sigmoid_bfloat16.json)
inline constexpr CellTable sigmoid_forward_cells_bfloat16 = {
    2, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.7d1b3ap-10f, -0x1.26d3cep-7f, -0x1.bf317ep-7f, 0x1.406a74p-13f, 0x1.3f3b44p-5f, 0x1.8f2f88p-4f, 0x1.529c3ap-3f, 0x1.d7c23ep-3f, 0x1.294bdep-2f, 0x1.5cf568p-2f, 0x1.867842p-2f, 0x1.a6be64p-2f, 0x1.bf3af6p-2f, 0x1.d176fcp-2f, 0x1.ded868p-2f, 0x1.e88c54p-2f, 0x1.ef83e8p-2f, 0x1.f47a02p-2f, 0x1.f7fc06p-2f, 0x1.fa7302p-2f, 0x1.fc2beep-2f, 0x1.fd5e84p-2f, 0x1.fe32cp-2f, 0x1.fec516p-2f, 0x1.ff299ep-2f, 0x1.ff6e7p-2f, 0x1.ff9d6ap-2f, 0x1.ffbd62p-2f, 0x1.ffd316p-2f, 0x1.ffe1c6p-2f, 0x1p-1f},
     {0x1.0082bap-2f, 0x1.0b6dd8p-2f, 0x1.2266f6p-2f, 0x1.2b79aep-2f, 0x1.1a7582p-2f, 0x1.e88eaep-3f, 0x1.89e2c2p-3f, 0x1.2ccefcp-3f, 0x1.bea1acp-4f, 0x1.404ac8p-4f, 0x1.c26d0cp-5f, 0x1.383452p-5f, 0x1.ac343p-6f, 0x1.234614p-6f, 0x1.89bfcap-7f, 0x1.08c83p-7f, 0x1.629dacp-8f, 0x1.d93ec2p-9f, 0x1.3ad138p-9f, 0x1.a1bc72p-10f, 0x1.147eeep-10f, 0x1.6d3ed2p-11f, 0x1.e18ee4p-12f, 0x1.3ce6d8p-12f, 0x1.a06c86p-13f, 0x1.113292p-13f, 0x1.65fa46p-14f, 0x1.d47954p-15f, 0x1.322d6cp-15f, 0x1.8fc5c4p-16f, 0x1.04b872p-16f, 0x0p+0f},
     {-0x1.be0d8cp-8f, -0x1.b66cd6p-6f, -0x1.64d7f4p-5f, -0x1.87401ap-5f, -0x1.5e3fd2p-5f, -0x1.14d626p-5f, -0x1.93efbap-6f, -0x1.173b5ap-6f, -0x1.7a0136p-7f, -0x1.f00e5p-8f, -0x1.4109cap-8f, -0x1.9beb1ap-9f, -0x1.06cc74p-9f, -0x1.4e256cp-10f, -0x1.a7eb1ep-11f, -0x1.0c869ap-11f, -0x1.53e2b2p-12f, -0x1.adf76ep-13f, -0x1.0fdd38p-13f, -0x1.57b7a6p-14f, -0x1.b27fdep-15f, -0x1.129adp-15f, -0x1.5b14fcp-16f, -0x1.b6ac32p-17f, -0x1.1535cep-17f, -0x1.5e597cp-18f, -0x1.bac836p-19f, -0x1.17cc86p-19f, -0x1.619d64p-20f, -0x1.bee752p-21f, -0x1.1a66bap-21f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr CellTable sigmoid_backward_matched_cells_bfloat16 = {
    2, 0x1.16db6ep+1f, 0x1.c75822p+3f, 0x1.8p+23f,
    {{0x1.0082bap-2f, 0x1.0b6dd8p-2f, 0x1.2266f6p-2f, 0x1.2b79aep-2f, 0x1.1a7582p-2f, 0x1.e88eaep-3f, 0x1.89e2c2p-3f, 0x1.2ccefcp-3f, 0x1.bea1acp-4f, 0x1.404ac8p-4f, 0x1.c26d0cp-5f, 0x1.383452p-5f, 0x1.ac343p-6f, 0x1.234614p-6f, 0x1.89bfcap-7f, 0x1.08c83p-7f, 0x1.629dacp-8f, 0x1.d93ec2p-9f, 0x1.3ad138p-9f, 0x1.a1bc72p-10f, 0x1.147eeep-10f, 0x1.6d3ed2p-11f, 0x1.e18ee4p-12f, 0x1.3ce6d8p-12f, 0x1.a06c86p-13f, 0x1.113292p-13f, 0x1.65fa46p-14f, 0x1.d47954p-15f, 0x1.322d6cp-15f, 0x1.8fc5c4p-16f, 0x1.04b872p-16f, 0x0p+0f},
     {-0x1.be0d8cp-7f, -0x1.b66cd6p-5f, -0x1.64d7f4p-4f, -0x1.87401ap-4f, -0x1.5e3fd2p-4f, -0x1.14d626p-4f, -0x1.93efbap-5f, -0x1.173b5ap-5f, -0x1.7a0136p-6f, -0x1.f00e5p-7f, -0x1.4109cap-7f, -0x1.9beb1ap-8f, -0x1.06cc74p-8f, -0x1.4e256cp-9f, -0x1.a7eb1ep-10f, -0x1.0c869ap-10f, -0x1.53e2b2p-11f, -0x1.adf76ep-12f, -0x1.0fdd38p-12f, -0x1.57b7a6p-13f, -0x1.b27fdep-14f, -0x1.129adp-14f, -0x1.5b14fcp-15f, -0x1.b6ac32p-16f, -0x1.1535cep-16f, -0x1.5e597cp-17f, -0x1.bac836p-18f, -0x1.17cc86p-18f, -0x1.619d64p-19f, -0x1.bee752p-20f, -0x1.1a66bap-20f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr SizedCells sigmoid_cells_bfloat16 = {&sigmoid_forward_cells_bfloat16, &sigmoid_backward_matched_cells_bfloat16};
// tanh: python -m turbogelu fit --all
// forward (Odd): max |err| 4.634e-06 (at x = -0.538994)
inline constexpr CellTable tanh_cells_forward = {
    3, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.97bceep-13f, -0x1.a70bf6p-8f, -0x1.02ebf4p-5f, -0x1.1c4a8cp-4f, -0x1.6f28d2p-4f, -0x1.0a4d48p-4f, 0x1.30221cp-7f, 0x1.eae43ep-4f, 0x1.fe4e6p-3f, 0x1.84b04cp-2f, 0x1.0057bp-1f, 0x1.3689a2p-1f, 0x1.6402bcp-1f, 0x1.88ff4ap-1f, 0x1.a63478p-1f, 0x1.bcf1e6p-1f, 0x1.ce7b16p-1f, 0x1.db9f28p-1f, 0x1.e57f64p-1f, 0x1.ecdc44p-1f, 0x1.f22c16p-1f, 0x1.f62426p-1f, 0x1.f8fa7ep-1f, 0x1.fb059cp-1f, 0x1.fc8fb8p-1f, 0x1.fd9516p-1f, 0x1.fe4e58p-1f, 0x1.fec246p-1f, 0x1.ff22c6p-1f, 0x1.ff6a08p-1f, 0x1p+0f},
     {0x1.00001ap+0f, 0x1.00fe2p+0f, 0x1.0e81c8p+0f, 0x1.3041fcp+0f, 0x1.54f6b2p+0f, 0x1.649c28p+0f, 0x1.5601a6p+0f, 0x1.2fe7f4p+0f, 0x1.fd1dbp-1f, 0x1.97198p-1f, 0x1.3b04dcp-1f, 0x1.db48ap-2f, 0x1.5fc522p-2f, 0x1.006f78p-2f, 0x1.714e52p-3f, 0x1.07ba4ap-3f, 0x1.75c222p-4f, 0x1.067136p-4f, 0x1.6f97d6p-5f, 0x1.ff8be8p-6f, 0x1.6168f8p-6f, 0x1.e9c1cap-7f, 0x1.4f1ce8p-7f, 0x1.cb0608p-8f, 0x1.3964c4p-8f, 0x1.a0914p-9f, 0x1.1ac96ep-9f, 0x1.7f12e4p-10f, 0x1.10c80cp-10f, 0x1.6fec9cp-11f, 0x1.e29c84p-12f, 0x0p+0f},
     {-0x1.987866p-13f, -0x1.abf91ep-6f, -0x1.6a803p-3f, -0x1.a2af2p-2f, -0x1.2e7588p-1f, -0x1.4dfec6p-1f, -0x1.376dfp-1f, -0x1.0480b6p-1f, -0x1.96361cp-2f, -0x1.2d5ebep-2f, -0x1.b15882p-3f, -0x1.3089bep-3f, -0x1.a55b5cp-4f, -0x1.201392p-4f, -0x1.865c8p-5f, -0x1.072112p-5f, -0x1.611aa8p-6f, -0x1.d6a53ep-7f, -0x1.39bd72p-7f, -0x1.a073bep-8f, -0x1.12ecd4p-8f, -0x1.6d0b9ep-9f, -0x1.df0488p-10f, -0x1.3b3e36p-10f, -0x1.9e4072p-11f, -0x1.08bbeep-11f, -0x1.5adbf6p-12f, -0x1.c5fe3p-13f, -0x1.3a157ap-13f, -0x1.9a2782p-14f, -0x1.042a9ep-14f, 0x0p+0f},
     {-0x1.5204eep-2f, -0x1.14e88ep-2f, -0x1.fc4102p-4f, 0x1.a0ea1ep-7f, 0x1.700a3ep-4f, 0x1.c4d932p-4f, 0x1.9654d2p-4f, 0x1.3b7d16p-4f, 0x1.c4d4c8p-5f, 0x1.3517cp-5f, 0x1.9a5892p-6f, 0x1.0b58a8p-6f, 0x1.586f7cp-7f, 0x1.b85e56p-8f, 0x1.180aacp-8f, 0x1.639d98p-9f, 0x1.c31b4p-10f, 0x1.1cedap-10f, 0x1.692562p-11f, 0x1.c8c546p-12f, 0x1.1fe06p-12f, 0x1.6df41cp-13f, 0x1.cc232ap-14f, 0x1.22cc7cp-14f, 0x1.6f8a9ep-15f, 0x1.c37b9p-16f, 0x1.1d4d2cp-16f, 0x1.68a9c4p-17f, 0x1.e4aebcp-18f, 0x1.324c8cp-18f, 0x1.77b1cp-19f, 0x0p+0f}}};
// backward_direct (Even): max |err| 9.477e-06 (at x = -0.22657)
inline constexpr CellTable tanh_cells_backward_direct = {
    3, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x1.ffffep-1f, 0x1.ff7ffp-1f, 0x1.fdae2p-1f, 0x1.096232p+0f, 0x1.2e81eep+0f, 0x1.63ee8p+0f, 0x1.8e2d7ap+0f, 0x1.9aa348p+0f, 0x1.87c06p+0f, 0x1.5eb9fp+0f, 0x1.2b5164p+0f, 0x1.ebfa1ap-1f, 0x1.88124ap-1f, 0x1.330da4p-1f, 0x1.d758acp-2f, 0x1.648fb6p-2f, 0x1.0ae716p-2f, 0x1.8b16c6p-3f, 0x1.22867ep-3f, 0x1.a79276p-4f, 0x1.3204fp-4f, 0x1.ba4a76p-5f, 0x1.3b6448p-5f, 0x1.c14b9ep-6f, 0x1.3e8ff6p-6f, 0x1.b81b8ep-7f, 0x1.357114p-7f, 0x1.b1a35cp-8f, 0x1.3dba3cp-8f, 0x1.ba6f7ep-9f, 0x1.2be1ep-9f, 0x0p+0f},
     {0x1.0c9284p-12f, 0x1.50a52cp-6f, 0x1.db0db8p-5f, -0x1.2f3e3ap-3f, -0x1.6011cep-1f, -0x1.4c5296p+0f, -0x1.b21fc6p+0f, -0x1.cc229cp+0f, -0x1.aba77ep+0f, -0x1.6cad2ap+0f, -0x1.25e28ap+0f, -0x1.c6bec2p-1f, -0x1.54fd46p-1f, -0x1.f7d9f8p-2f, -0x1.6d53cep-2f, -0x1.05a62ap-2f, -0x1.73cccap-3f, -0x1.05ade6p-3f, -0x1.6ee978p-4f, -0x1.fef1a4p-5f, -0x1.61256cp-5f, -0x1.e9860ep-6f, -0x1.4f031cp-6f, -0x1.caef8ap-7f, -0x1.395b3ap-7f, -0x1.a088eap-8f, -0x1.1ac5fep-8f, -0x1.7f0e7ap-9f, -0x1.10c836p-9f, -0x1.6fe758p-10f, -0x1.e2865ep-11f, 0x0p+0f},
     {-0x1.02d21cp+0f, -0x1.27fdap+0f, -0x1.494fbap+0f, -0x1.e20456p-1f, -0x1.149d96p-2f, 0x1.4e2c12p-2f, 0x1.4ad2ap-1f, 0x1.6f039p-1f, 0x1.49c184p-1f, 0x1.094502p-1f, 0x1.90817ep-2f, 0x1.21dc64p-2f, 0x1.96f796p-3f, 0x1.1a88d2p-3f, 0x1.81cfcep-4f, 0x1.04ed28p-4f, 0x1.5f2a48p-5f, 0x1.d52e86p-6f, 0x1.391ed8p-6f, 0x1.9fee5ep-7f, 0x1.12b532p-7f, 0x1.6cdc9cp-8f, 0x1.deddb2p-9f, 0x1.3b2dfap-9f, 0x1.9e333ep-10f, 0x1.08b66p-10f, 0x1.5ad78ep-11f, 0x1.c5f8a8p-12f, 0x1.3a15bep-12f, 0x1.9a213ap-13f, 0x1.041dbap-13f, 0x0p+0f},
     {0x1.38c5f8p-3f, 0x1.09d056p-1f, 0x1.5655b4p-1f, 0x1.e6c1b8p-2f, 0x1.918b14p-3f, 0x1.7a4048p-10f, -0x1.59a074p-4f, -0x1.9cc06ep-4f, -0x1.63bd9cp-4f, -0x1.0ba6d4p-4f, -0x1.780024p-5f, -0x1.fa7ff2p-6f, -0x1.4b8b4ep-6f, -0x1.af3c32p-7f, -0x1.148e6ep-7f, -0x1.60805cp-8f, -0x1.c08d08p-9f, -0x1.1bfd28p-9f, -0x1.686472p-10f, -0x1.c82b18p-11f, -0x1.1fa322p-11f, -0x1.6dc2acp-12f, -0x1.cbfc1ep-13f, -0x1.22bcd6p-13f, -0x1.6f7e68p-14f, -0x1.c371acp-15f, -0x1.1d4968p-15f, -0x1.68a52p-16f, -0x1.e4af46p-17f, -0x1.32478ep-17f, -0x1.779dbcp-18f, 0x0p+0f}}};
// backward_matched (Even): max |err| 5.494e-04 (at x = -0.573761)
inline constexpr CellTable tanh_cells_backward_matched = {
    3, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x1.00001ap+0f, 0x1.00fe2p+0f, 0x1.0e81c8p+0f, 0x1.3041fcp+0f, 0x1.54f6b2p+0f, 0x1.649c28p+0f, 0x1.5601a6p+0f, 0x1.2fe7f4p+0f, 0x1.fd1dbp-1f, 0x1.97198p-1f, 0x1.3b04dcp-1f, 0x1.db48ap-2f, 0x1.5fc522p-2f, 0x1.006f78p-2f, 0x1.714e52p-3f, 0x1.07ba4ap-3f, 0x1.75c222p-4f, 0x1.067136p-4f, 0x1.6f97d6p-5f, 0x1.ff8be8p-6f, 0x1.6168f8p-6f, 0x1.e9c1cap-7f, 0x1.4f1ce8p-7f, 0x1.cb0608p-8f, 0x1.3964c4p-8f, 0x1.a0914p-9f, 0x1.1ac96ep-9f, 0x1.7f12e4p-10f, 0x1.10c80cp-10f, 0x1.6fec9cp-11f, 0x1.e29c84p-12f, 0x0p+0f},
     {-0x1.987866p-12f, -0x1.abf91ep-5f, -0x1.6a803p-2f, -0x1.a2af2p-1f, -0x1.2e7588p+0f, -0x1.4dfec6p+0f, -0x1.376dfp+0f, -0x1.0480b6p+0f, -0x1.96361cp-1f, -0x1.2d5ebep-1f, -0x1.b15882p-2f, -0x1.3089bep-2f, -0x1.a55b5cp-3f, -0x1.201392p-3f, -0x1.865c8p-4f, -0x1.072112p-4f, -0x1.611aa8p-5f, -0x1.d6a53ep-6f, -0x1.39bd72p-6f, -0x1.a073bep-7f, -0x1.12ecd4p-7f, -0x1.6d0b9ep-8f, -0x1.df0488p-9f, -0x1.3b3e36p-9f, -0x1.9e4072p-10f, -0x1.08bbeep-10f, -0x1.5adbf6p-11f, -0x1.c5fe3p-12f, -0x1.3a157ap-12f, -0x1.9a2782p-13f, -0x1.042a9ep-13f, 0x0p+0f},
     {-0x1.fb0764p-1f, -0x1.9f5cd4p-1f, -0x1.7d30c2p-2f, 0x1.38af96p-5f, 0x1.1407aep-2f, 0x1.53a2e6p-2f, 0x1.30bf9ep-2f, 0x1.d93bap-3f, 0x1.539f96p-3f, 0x1.cfa3ap-4f, 0x1.33c26ep-4f, 0x1.9104fcp-5f, 0x1.02539cp-5f, 0x1.4a46cp-6f, 0x1.a41002p-7f, 0x1.0ab632p-7f, 0x1.52547p-8f, 0x1.ab647p-9f, 0x1.0edc0ap-9f, 0x1.5693f4p-10f, 0x1.afd09p-11f, 0x1.127714p-11f, 0x1.591a6p-12f, 0x1.b432bap-13f, 0x1.13a7f6p-13f, 0x1.529cacp-14f, 0x1.abf3c2p-15f, 0x1.0e7f54p-15f, 0x1.6b830cp-16f, 0x1.cb72d2p-17f, 0x1.19c55p-17f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
// tanh, float16: degree 2, within 1 ulp of the correctly rounded value for x >= -inf, below |error| <= 3e-05 beyond half an ulp of the result (python -m turbogelu fit --all, data/specs/cells16/tanh_float16.json)
inline constexpr CellTable tanh_forward_cells_float16 = {
    2, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.3f841p-9f, -0x1.1d7a04p-6f, -0x1.c15dacp-6f, -0x1.e9e6dp-11f, 0x1.3625f2p-4f, 0x1.898d0ap-3f, 0x1.4ecfc6p-2f, 0x1.d79ffep-2f, 0x1.294282p-1f, 0x1.5cf08ep-1f, 0x1.8675d8p-1f, 0x1.a6bd38p-1f, 0x1.bf3a68p-1f, 0x1.d176bap-1f, 0x1.ded84ap-1f, 0x1.e88c46p-1f, 0x1.ef83e2p-1f, 0x1.f47ap-1f, 0x1.f7fc06p-1f, 0x1.fa7302p-1f, 0x1.fc2beep-1f, 0x1.fd5e84p-1f, 0x1.fe32c2p-1f, 0x1.fec516p-1f, 0x1.ff299ep-1f, 0x1.ff6e7p-1f, 0x1.ff9d6ap-1f, 0x1.ffbd6p-1f, 0x1.ffd314p-1f, 0x1.ffe1c6p-1f, 0x1p+0f},
     {0x1.002c5ep+0f, 0x1.0a3372p+0f, 0x1.21bdbap+0f, 0x1.2b92c2p+0f, 0x1.1b276p+0f, 0x1.ea8abcp-1f, 0x1.8bef7p-1f, 0x1.2f2284p-1f, 0x1.bec708p-2f, 0x1.405ceep-2f, 0x1.c27df4p-3f, 0x1.383bfap-3f, 0x1.ac3afcp-4f, 0x1.23490ep-4f, 0x1.89c25ep-5f, 0x1.08c94cp-5f, 0x1.629e9ep-6f, 0x1.d93f9p-7f, 0x1.3ad18ep-7f, 0x1.a1bcbcp-8f, 0x1.147f0cp-8f, 0x1.6d3eap-9f, 0x1.e18e94p-10f, 0x1.3ce69ep-10f, 0x1.a06c8ep-11f, 0x1.11325cp-11f, 0x1.65f9fep-12f, 0x1.d478f4p-13f, 0x1.323948p-13f, 0x1.8fd042p-14f, 0x1.04bf4ep-14f, 0x0p+0f},
     {-0x1.3f5518p-5f, -0x1.a0b57p-3f, -0x1.61f33ep-2f, -0x1.878796p-2f, -0x1.5fc206p-2f, -0x1.168fep-2f, -0x1.96e85ep-3f, -0x1.1a139ap-3f, -0x1.7a29e4p-4f, -0x1.f03172p-5f, -0x1.411884p-5f, -0x1.9bf73ap-6f, -0x1.06d164p-6f, -0x1.4e296ap-7f, -0x1.a7ee54p-8f, -0x1.0c87e4p-8f, -0x1.53e3bap-9f, -0x1.adf84p-10f, -0x1.0fdd8ep-10f, -0x1.57b7eap-11f, -0x1.b28014p-12f, -0x1.129aa6p-12f, -0x1.5b14bep-13f, -0x1.b6abdap-14f, -0x1.1535d4p-14f, -0x1.5e593p-15f, -0x1.bac7d4p-16f, -0x1.17cc46p-16f, -0x1.61ac14p-17f, -0x1.bef3ep-18f, -0x1.1a6ea8p-18f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr CellTable tanh_backward_matched_cells_float16 = {
    2, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x1.002c5ep+0f, 0x1.0a3372p+0f, 0x1.21bdbap+0f, 0x1.2b92c2p+0f, 0x1.1b276p+0f, 0x1.ea8abcp-1f, 0x1.8bef7p-1f, 0x1.2f2284p-1f, 0x1.bec708p-2f, 0x1.405ceep-2f, 0x1.c27df4p-3f, 0x1.383bfap-3f, 0x1.ac3afcp-4f, 0x1.23490ep-4f, 0x1.89c25ep-5f, 0x1.08c94cp-5f, 0x1.629e9ep-6f, 0x1.d93f9p-7f, 0x1.3ad18ep-7f, 0x1.a1bcbcp-8f, 0x1.147f0cp-8f, 0x1.6d3eap-9f, 0x1.e18e94p-10f, 0x1.3ce69ep-10f, 0x1.a06c8ep-11f, 0x1.11325cp-11f, 0x1.65f9fep-12f, 0x1.d478f4p-13f, 0x1.323948p-13f, 0x1.8fd042p-14f, 0x1.04bf4ep-14f, 0x0p+0f},
     {-0x1.3f5518p-4f, -0x1.a0b57p-2f, -0x1.61f33ep-1f, -0x1.878796p-1f, -0x1.5fc206p-1f, -0x1.168fep-1f, -0x1.96e85ep-2f, -0x1.1a139ap-2f, -0x1.7a29e4p-3f, -0x1.f03172p-4f, -0x1.411884p-4f, -0x1.9bf73ap-5f, -0x1.06d164p-5f, -0x1.4e296ap-6f, -0x1.a7ee54p-7f, -0x1.0c87e4p-7f, -0x1.53e3bap-8f, -0x1.adf84p-9f, -0x1.0fdd8ep-9f, -0x1.57b7eap-10f, -0x1.b28014p-11f, -0x1.129aa6p-11f, -0x1.5b14bep-12f, -0x1.b6abdap-13f, -0x1.1535d4p-13f, -0x1.5e593p-14f, -0x1.bac7d4p-15f, -0x1.17cc46p-15f, -0x1.61ac14p-16f, -0x1.bef3ep-17f, -0x1.1a6ea8p-17f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr SizedCells tanh_cells_float16 = {&tanh_forward_cells_float16, &tanh_backward_matched_cells_float16};
// tanh, bfloat16: degree 2, within 1 ulp of the correctly rounded value for x >= -inf, below |error| <= 3e-05 beyond half an ulp of the result (python -m turbogelu fit --all, data/specs/cells16/tanh_bfloat16.json)
inline constexpr CellTable tanh_forward_cells_bfloat16 = {
    2, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.3f841p-9f, -0x1.1d7a04p-6f, -0x1.c15dacp-6f, -0x1.e9e6dp-11f, 0x1.3625f2p-4f, 0x1.898d0ap-3f, 0x1.4ecfc6p-2f, 0x1.d79ffep-2f, 0x1.294282p-1f, 0x1.5cf08ep-1f, 0x1.8675d8p-1f, 0x1.a6bd38p-1f, 0x1.bf3a68p-1f, 0x1.d176bap-1f, 0x1.ded84ap-1f, 0x1.e88c4ap-1f, 0x1.ef83e4p-1f, 0x1.f47ap-1f, 0x1.f7fc08p-1f, 0x1.fa72f4p-1f, 0x1.fc2be4p-1f, 0x1.fd5e74p-1f, 0x1.fe32bcp-1f, 0x1.fec514p-1f, 0x1.ff2998p-1f, 0x1.ff6e7p-1f, 0x1.ff9d6ap-1f, 0x1.ffbd6p-1f, 0x1.ffd322p-1f, 0x1.ffe1c6p-1f, 0x1p+0f},
     {0x1.0025fep+0f, 0x1.0a3372p+0f, 0x1.21bdbap+0f, 0x1.2b92c2p+0f, 0x1.1b276p+0f, 0x1.ea8abcp-1f, 0x1.8bef7p-1f, 0x1.2f2284p-1f, 0x1.bec708p-2f, 0x1.405ceep-2f, 0x1.c27df4p-3f, 0x1.383bfap-3f, 0x1.ac3afcp-4f, 0x1.23490ep-4f, 0x1.89c25ep-5f, 0x1.08c94cp-5f, 0x1.629e58p-6f, 0x1.d93f32p-7f, 0x1.3ad18ep-7f, 0x1.a1bc66p-8f, 0x1.1481dep-8f, 0x1.6d42aap-9f, 0x1.e19b5ap-10f, 0x1.3cea26p-10f, 0x1.a070dep-11f, 0x1.1139aep-11f, 0x1.65fe04p-12f, 0x1.d47b9cp-13f, 0x1.323572p-13f, 0x1.8f5446p-14f, 0x1.04bcaap-14f, 0x0p+0f},
     {-0x1.3f4d26p-5f, -0x1.a0b57p-3f, -0x1.61f33ep-2f, -0x1.878796p-2f, -0x1.5fc206p-2f, -0x1.168fep-2f, -0x1.96e85ep-3f, -0x1.1a139ap-3f, -0x1.7a29e4p-4f, -0x1.f03172p-5f, -0x1.411884p-5f, -0x1.9bf73ap-6f, -0x1.06d164p-6f, -0x1.4e296ap-7f, -0x1.a7ee54p-8f, -0x1.0c87e4p-8f, -0x1.53e36cp-9f, -0x1.adf7dep-10f, -0x1.0fdd8ep-10f, -0x1.57b79ap-11f, -0x1.b284f6p-12f, -0x1.129dfap-12f, -0x1.5b1ecep-13f, -0x1.b6b12ep-14f, -0x1.1538f2p-14f, -0x1.5e6358p-15f, -0x1.bacd34p-16f, -0x1.17cdfcp-16f, -0x1.61a754p-17f, -0x1.be5e36p-18f, -0x1.1a6b9cp-18f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr CellTable tanh_backward_matched_cells_bfloat16 = {
    2, 0x1.16db6ep+2f, 0x1.c75822p+2f, 0x1.8p+23f,
    {{0x1.0025fep+0f, 0x1.0a3372p+0f, 0x1.21bdbap+0f, 0x1.2b92c2p+0f, 0x1.1b276p+0f, 0x1.ea8abcp-1f, 0x1.8bef7p-1f, 0x1.2f2284p-1f, 0x1.bec708p-2f, 0x1.405ceep-2f, 0x1.c27df4p-3f, 0x1.383bfap-3f, 0x1.ac3afcp-4f, 0x1.23490ep-4f, 0x1.89c25ep-5f, 0x1.08c94cp-5f, 0x1.629e58p-6f, 0x1.d93f32p-7f, 0x1.3ad18ep-7f, 0x1.a1bc66p-8f, 0x1.1481dep-8f, 0x1.6d42aap-9f, 0x1.e19b5ap-10f, 0x1.3cea26p-10f, 0x1.a070dep-11f, 0x1.1139aep-11f, 0x1.65fe04p-12f, 0x1.d47b9cp-13f, 0x1.323572p-13f, 0x1.8f5446p-14f, 0x1.04bcaap-14f, 0x0p+0f},
     {-0x1.3f4d26p-4f, -0x1.a0b57p-2f, -0x1.61f33ep-1f, -0x1.878796p-1f, -0x1.5fc206p-1f, -0x1.168fep-1f, -0x1.96e85ep-2f, -0x1.1a139ap-2f, -0x1.7a29e4p-3f, -0x1.f03172p-4f, -0x1.411884p-4f, -0x1.9bf73ap-5f, -0x1.06d164p-5f, -0x1.4e296ap-6f, -0x1.a7ee54p-7f, -0x1.0c87e4p-7f, -0x1.53e36cp-8f, -0x1.adf7dep-9f, -0x1.0fdd8ep-9f, -0x1.57b79ap-10f, -0x1.b284f6p-11f, -0x1.129dfap-11f, -0x1.5b1ecep-12f, -0x1.b6b12ep-13f, -0x1.1538f2p-13f, -0x1.5e6358p-14f, -0x1.bacd34p-15f, -0x1.17cdfcp-15f, -0x1.61a754p-16f, -0x1.be5e36p-17f, -0x1.1a6b9cp-17f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr SizedCells tanh_cells_bfloat16 = {&tanh_forward_cells_bfloat16, &tanh_backward_matched_cells_bfloat16};
// silu: python -m turbogelu fit --all
// forward (XHalfPlusOdd): max |err| 4.589e-06 (at x = -15)
inline constexpr CellTable silu_cells_forward = {
    3, 0x1.044444p+1f, 0x1.e7de6ep+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.93397ap-13f, -0x1.2bcfa2p-8f, -0x1.47901cp-6f, -0x1.420354p-5f, -0x1.61ccacp-5f, -0x1.3b2a62p-6f, 0x1.f7b8b4p-6f, 0x1.8b6f0cp-4f, 0x1.567994p-3f, 0x1.deeef6p-3f, 0x1.2bb208p-2f, 0x1.5e0f24p-2f, 0x1.869c32p-2f, 0x1.a64396p-2f, 0x1.be5486p-2f, 0x1.d0a632p-2f, 0x1.ddf93ap-2f, 0x1.e7e1ap-2f, 0x1.eee77ap-2f, 0x1.f40c3cp-2f, 0x1.f7ab16p-2f, 0x1.fa360ap-2f, 0x1.fc1cbcp-2f, 0x1.fd442cp-2f, 0x1.fe2166p-2f, 0x1.feb908p-2f, 0x1.ff2222p-2f, 0x1.ff663p-2f, 0x1.ff9aeep-2f, 0x1.ffbc16p-2f, 0x1p-1f},
     {0x1p-2f, 0x1.01b268p-2f, 0x1.12ff24p-2f, 0x1.396784p-2f, 0x1.5c77c4p-2f, 0x1.628302p-2f, 0x1.47b10ap-2f, 0x1.17c47ep-2f, 0x1.c1d662p-3f, 0x1.59c4a4p-3f, 0x1.01f42ep-3f, 0x1.7796dcp-4f, 0x1.0c749ap-4f, 0x1.7a3846p-5f, 0x1.078bf8p-5f, 0x1.6cc234p-6f, 0x1.f25d2p-7f, 0x1.5474f6p-7f, 0x1.cb708ep-8f, 0x1.37035p-8f, 0x1.9fbfp-9f, 0x1.15acp-9f, 0x1.72667ap-10f, 0x1.dcecb4p-11f, 0x1.439aap-11f, 0x1.aaaa3p-12f, 0x1.1967dcp-12f, 0x1.710932p-13f, 0x1.f00b58p-14f, 0x1.3af196p-14f, 0x1.9a4c0ep-15f, 0x0p+0f},
     {0x0p+0f, -0x1.3b9ebp-8f, -0x1.b782c4p-6f, -0x1.d671dp-5f, -0x1.3e5858p-4f, -0x1.4a7c44p-4f, -0x1.23575ap-4f, -0x1.cee818p-5f, -0x1.57c0f8p-5f, -0x1.e7e25cp-6f, -0x1.511fc6p-6f, -0x1.c83b5cp-7f, -0x1.30419cp-7f, -0x1.91743ap-8f, -0x1.06f2bp-8f, -0x1.575c8cp-9f, -0x1.bb9ec4p-10f, -0x1.1fa6ecp-10f, -0x1.70fffap-11f, -0x1.dc917p-12f, -0x1.30353ap-12f, -0x1.84ffcep-13f, -0x1.f1bf2cp-14f, -0x1.32f986p-14f, -0x1.91c29cp-15f, -0x1.fe5bb4p-16f, -0x1.44d0dap-16f, -0x1.9b70a4p-17f, -0x1.0bfb4ap-17f, -0x1.48b05ep-18f, -0x1.9ef28ap-19f, 0x0p+0f},
     {-0x1.533da2p-6f, -0x1.02d7c6p-6f, -0x1.8f6ff6p-8f, 0x1.2a9b5p-9f, 0x1.9cc67ap-8f, 0x1.bd083ap-8f, 0x1.70c68p-8f, 0x1.0ce61ep-8f, 0x1.6d1cf4p-9f, 0x1.dacf7ap-10f, 0x1.2e2f9p-10f, 0x1.7a7776p-11f, 0x1.d5664ap-12f, 0x1.213ep-12f, 0x1.63614ep-13f, 0x1.b50c0ep-14f, 0x1.0a926ep-14f, 0x1.47b6p-15f, 0x1.8f295ap-16f, 0x1.eb51cap-17f, 0x1.2b483p-17f, 0x1.6e18d4p-18f, 0x1.c10fe8p-19f, 0x1.092788p-19f, 0x1.4e86e8p-20f, 0x1.993f6cp-21f, 0x1.f67ceap-22f, 0x1.3349f8p-22f, 0x1.83d15p-23f, 0x1.cb5034p-24f, 0x1.18e0aap-24f, 0x0p+0f}}};
// backward_direct (HalfPlusOdd): max |err| 1.196e-05 (at x = 0.496628)
inline constexpr CellTable silu_cells_backward_direct = {
    3, 0x1.044444p+1f, 0x1.e7de6ep+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.e30614p-11f, -0x1.6d810ep-6f, -0x1.430634p-4f, -0x1.903c5ap-4f, 0x1.4dd426p-9f, 0x1.acd0ccp-3f, 0x1.cb0c6ep-2f, 0x1.4e18acp-1f, 0x1.95a6e4p-1f, 0x1.bb3f78p-1f, 0x1.c5f124p-1f, 0x1.be3126p-1f, 0x1.abbc98p-1f, 0x1.945538p-1f, 0x1.7c0c9cp-1f, 0x1.64d93ap-1f, 0x1.50653ep-1f, 0x1.3ee49p-1f, 0x1.305ba4p-1f, 0x1.24c204p-1f, 0x1.1b9c0cp-1f, 0x1.1485a6p-1f, 0x1.0f1c84p-1f, 0x1.0ad0ecp-1f, 0x1.07d53ap-1f, 0x1.05e3e6p-1f, 0x1.043652p-1f, 0x1.02ed88p-1f, 0x1.0211f2p-1f, 0x1.017496p-1f, 0x1p-1f},
     {0x1.0002a2p-1f, 0x1.043e1ap-1f, 0x1.2f627cp-1f, 0x1.775362p-1f, 0x1.8a4efp-1f, 0x1.45d342p-1f, 0x1.a0b60cp-2f, 0x1.744a82p-3f, 0x1.e08fbep-7f, -0x1.61ac8ap-4f, -0x1.12440cp-3f, -0x1.2b8f82p-3f, -0x1.1b4ddcp-3f, -0x1.eeabfep-4f, -0x1.9a10c4p-4f, -0x1.483c04p-4f, -0x1.fe3f2cp-5f, -0x1.852282p-5f, -0x1.236788p-5f, -0x1.ad4bfcp-6f, -0x1.39133ep-6f, -0x1.c3c67ep-7f, -0x1.42f73cp-7f, -0x1.ca014p-8f, -0x1.3b5988p-8f, -0x1.b8de68p-9f, -0x1.41cff6p-9f, -0x1.bd25a6p-10f, -0x1.2ae8dcp-10f, -0x1.99a102p-11f, -0x1.175728p-11f, 0x0p+0f},
     {-0x1.b7c222p-12f, -0x1.9ca1f4p-6f, -0x1.19d6a8p-3f, -0x1.04cf1p-2f, -0x1.1d7a7ep-2f, -0x1.c0f3dp-3f, -0x1.12fd5p-3f, -0x1.03f99ap-4f, -0x1.249a9ep-6f, 0x1.a94d4cp-8f, 0x1.12b68cp-6f, 0x1.3a9ab8p-6f, 0x1.23de38p-6f, 0x1.ea3f2ap-7f, 0x1.84459cp-7f, 0x1.2856f4p-7f, 0x1.b711b6p-8f, 0x1.3f882ap-8f, 0x1.c92622p-9f, 0x1.4206e4p-9f, 0x1.c1f812p-10f, 0x1.3778a8p-10f, 0x1.abd8e2p-11f, 0x1.23db8p-11f, 0x1.824a34p-12f, 0x1.047458p-12f, 0x1.70e5cap-13f, 0x1.ed3e62p-14f, 0x1.3fca1cp-14f, 0x1.a887aep-15f, 0x1.18b17p-15f, 0x0p+0f},
     {-0x1.4cade6p-4f, -0x1.c9329ep-5f, -0x1.455034p-8f, 0x1.c68b12p-6f, 0x1.0db42cp-5f, 0x1.8a4592p-6f, 0x1.bc99c2p-7f, 0x1.92664ap-8f, 0x1.048a34p-9f, 0x1.fd3acep-16f, -0x1.7444dap-11f, -0x1.c8289ap-11f, -0x1.9dc104p-11f, -0x1.4cbbe6p-11f, -0x1.f58dcap-12f, -0x1.6bd362p-12f, -0x1.003bb8p-12f, -0x1.63244p-13f, -0x1.e485a2p-14f, -0x1.45ee1p-14f, -0x1.b3c51ap-15f, -0x1.21175ep-15f, -0x1.7d2d38p-16f, -0x1.f3ec14p-17f, -0x1.3dc2f2p-17f, -0x1.9d12c6p-18f, -0x1.1bad82p-18f, -0x1.6e774ap-19f, -0x1.ca9a72p-20f, -0x1.26c572p-20f, -0x1.79cfbp-21f, 0x0p+0f}}};
// backward_matched (HalfPlusOdd): max |err| 1.547e-04 (at x = 1.22951)
inline constexpr CellTable silu_cells_backward_matched = {
    3, 0x1.044444p+1f, 0x1.e7de6ep+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.93397ap-13f, -0x1.2bcfa2p-8f, -0x1.47901cp-6f, -0x1.420354p-5f, -0x1.61ccacp-5f, -0x1.3b2a62p-6f, 0x1.f7b8b4p-6f, 0x1.8b6f0cp-4f, 0x1.567994p-3f, 0x1.deeef6p-3f, 0x1.2bb208p-2f, 0x1.5e0f24p-2f, 0x1.869c32p-2f, 0x1.a64396p-2f, 0x1.be5486p-2f, 0x1.d0a632p-2f, 0x1.ddf93ap-2f, 0x1.e7e1ap-2f, 0x1.eee77ap-2f, 0x1.f40c3cp-2f, 0x1.f7ab16p-2f, 0x1.fa360ap-2f, 0x1.fc1cbcp-2f, 0x1.fd442cp-2f, 0x1.fe2166p-2f, 0x1.feb908p-2f, 0x1.ff2222p-2f, 0x1.ff663p-2f, 0x1.ff9aeep-2f, 0x1.ffbc16p-2f, 0x1p-1f},
     {0x1p-1f, 0x1.01b268p-1f, 0x1.12ff24p-1f, 0x1.396784p-1f, 0x1.5c77c4p-1f, 0x1.628302p-1f, 0x1.47b10ap-1f, 0x1.17c47ep-1f, 0x1.c1d662p-2f, 0x1.59c4a4p-2f, 0x1.01f42ep-2f, 0x1.7796dcp-3f, 0x1.0c749ap-3f, 0x1.7a3846p-4f, 0x1.078bf8p-4f, 0x1.6cc234p-5f, 0x1.f25d2p-6f, 0x1.5474f6p-6f, 0x1.cb708ep-7f, 0x1.37035p-7f, 0x1.9fbfp-8f, 0x1.15acp-8f, 0x1.72667ap-9f, 0x1.dcecb4p-10f, 0x1.439aap-10f, 0x1.aaaa3p-11f, 0x1.1967dcp-11f, 0x1.710932p-12f, 0x1.f00b58p-13f, 0x1.3af196p-13f, 0x1.9a4c0ep-14f, 0x0p+0f},
     {0x0p+0f, -0x1.d96e08p-7f, -0x1.49a214p-4f, -0x1.60d55cp-3f, -0x1.dd8484p-3f, -0x1.efba66p-3f, -0x1.b50308p-3f, -0x1.5b2e12p-3f, -0x1.01d0bap-3f, -0x1.6de9c4p-4f, -0x1.f9afa8p-5f, -0x1.562c84p-5f, -0x1.c8626ap-6f, -0x1.2d172cp-6f, -0x1.8a6c08p-7f, -0x1.018568p-7f, -0x1.4cb714p-8f, -0x1.af7a62p-9f, -0x1.14bffcp-9f, -0x1.656d14p-10f, -0x1.c84fd8p-11f, -0x1.23bfdap-11f, -0x1.754f6p-12f, -0x1.cc7648p-13f, -0x1.2d51f4p-13f, -0x1.7ec4c8p-14f, -0x1.e73948p-15f, -0x1.34947cp-15f, -0x1.91f8fp-16f, -0x1.ed088cp-17f, -0x1.3735e8p-17f, 0x0p+0f},
     {-0x1.533da2p-4f, -0x1.02d7c6p-4f, -0x1.8f6ff6p-6f, 0x1.2a9b5p-7f, 0x1.9cc67ap-6f, 0x1.bd083ap-6f, 0x1.70c68p-6f, 0x1.0ce61ep-6f, 0x1.6d1cf4p-7f, 0x1.dacf7ap-8f, 0x1.2e2f9p-8f, 0x1.7a7776p-9f, 0x1.d5664ap-10f, 0x1.213ep-10f, 0x1.63614ep-11f, 0x1.b50c0ep-12f, 0x1.0a926ep-12f, 0x1.47b6p-13f, 0x1.8f295ap-14f, 0x1.eb51cap-15f, 0x1.2b483p-15f, 0x1.6e18d4p-16f, 0x1.c10fe8p-17f, 0x1.092788p-17f, 0x1.4e86e8p-18f, 0x1.993f6cp-19f, 0x1.f67ceap-20f, 0x1.3349f8p-20f, 0x1.83d15p-21f, 0x1.cb5034p-22f, 0x1.18e0aap-22f, 0x0p+0f}}};
inline constexpr SizedCells silu_cells_float16 = {nullptr, nullptr};
// silu, bfloat16: degree 2, within 1 ulp of the correctly rounded value for x >= -3.0, below |error| <= 3e-05 beyond half an ulp of the result (python -m turbogelu fit --all, data/specs/cells16/silu_bfloat16.json)
inline constexpr CellTable silu_forward_cells_bfloat16 = {
    2, 0x1.044444p+1f, 0x1.e7de6ep+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.cbe3cp-10f, -0x1.4c77d8p-7f, -0x1.9cd6f8p-7f, 0x1.200732p-7f, 0x1.dc63dp-5f, 0x1.1861dcp-3f, 0x1.8ee36ap-3f, 0x1.104404p-2f, 0x1.4bd0dcp-2f, 0x1.7bafcp-2f, 0x1.a095bep-2f, 0x1.bc2dd8p-2f, 0x1.d05b0cp-2f, 0x1.dedae2p-2f, 0x1.e921dp-2f, 0x1.f055c4p-2f, 0x1.f5560ep-2f, 0x1.f8c7e4p-2f, 0x1.fb2314p-2f, 0x1.fcbd24p-2f, 0x1.fdd268p-2f, 0x1.fe8cfap-2f, 0x1.ff09f6p-2f, 0x1.ff5d5ap-2f, 0x1.ff94cap-2f, 0x1.ffb986p-2f, 0x1.ffd1cap-2f, 0x1.ffe1c6p-2f, 0x1.ffec44p-2f, 0x1.fff326p-2f, 0x1p-1f},
     {0x1.00961ap-2f, 0x1.0ce85cp-2f, 0x1.24eee2p-2f, 0x1.29f38ep-2f, 0x1.11209cp-2f, 0x1.c776c2p-3f, 0x1.523524p-3f, 0x1.087a24p-3f, 0x1.71ebc4p-4f, 0x1.ff3734p-5f, 0x1.5ac832p-5f, 0x1.d03e8cp-6f, 0x1.33af6cp-6f, 0x1.94c5p-7f, 0x1.08a87ep-7f, 0x1.586b42p-8f, 0x1.be6906p-9f, 0x1.204eb8p-9f, 0x1.73496ep-10f, 0x1.dce41ap-11f, 0x1.318c14p-11f, 0x1.86b454p-12f, 0x1.f2a2f8p-13f, 0x1.3da27cp-13f, 0x1.9404eep-14f, 0x1.009128p-14f, 0x1.456938p-15f, 0x1.9c336p-16f, 0x1.04c21ap-16f, 0x1.498b8cp-17f, 0x1.a00b64p-18f, 0x0p+0f},
     {-0x1.ddc0bp-8f, -0x1.d09e2p-6f, -0x1.6f8f5cp-5f, -0x1.82f516p-5f, -0x1.4aa1dp-5f, -0x1.f20c64p-6f, -0x1.473dc2p-6f, -0x1.d6eeb4p-7f, -0x1.293186p-7f, -0x1.76e592p-8f, -0x1.d353d6p-9f, -0x1.212646p-9f, -0x1.64348p-10f, -0x1.b599dp-11f, -0x1.0c57b4p-11f, -0x1.48c27cp-12f, -0x1.928592p-13f, -0x1.eca39p-14f, -0x1.2d6472p-14f, -0x1.70b91p-15f, -0x1.c30d74p-16f, -0x1.13ddbep-16f, -0x1.516e0cp-17f, -0x1.9cb8f4p-18f, -0x1.f8cebap-19f, -0x1.34b742p-19f, -0x1.7996acp-20f, -0x1.cdd2fp-21f, -0x1.1a6cap-21f, -0x1.596d6cp-22f, -0x1.a67bf8p-23f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr CellTable silu_backward_matched_cells_bfloat16 = {
    2, 0x1.044444p+1f, 0x1.e7de6ep+3f, 0x1.8p+23f,
    {{0x0p+0f, -0x1.cbe3cp-10f, -0x1.4c77d8p-7f, -0x1.9cd6f8p-7f, 0x1.200732p-7f, 0x1.dc63dp-5f, 0x1.1861dcp-3f, 0x1.8ee36ap-3f, 0x1.104404p-2f, 0x1.4bd0dcp-2f, 0x1.7bafcp-2f, 0x1.a095bep-2f, 0x1.bc2dd8p-2f, 0x1.d05b0cp-2f, 0x1.dedae2p-2f, 0x1.e921dp-2f, 0x1.f055c4p-2f, 0x1.f5560ep-2f, 0x1.f8c7e4p-2f, 0x1.fb2314p-2f, 0x1.fcbd24p-2f, 0x1.fdd268p-2f, 0x1.fe8cfap-2f, 0x1.ff09f6p-2f, 0x1.ff5d5ap-2f, 0x1.ff94cap-2f, 0x1.ffb986p-2f, 0x1.ffd1cap-2f, 0x1.ffe1c6p-2f, 0x1.ffec44p-2f, 0x1.fff326p-2f, 0x1p-1f},
     {0x1.00961ap-1f, 0x1.0ce85cp-1f, 0x1.24eee2p-1f, 0x1.29f38ep-1f, 0x1.11209cp-1f, 0x1.c776c2p-2f, 0x1.523524p-2f, 0x1.087a24p-2f, 0x1.71ebc4p-3f, 0x1.ff3734p-4f, 0x1.5ac832p-4f, 0x1.d03e8cp-5f, 0x1.33af6cp-5f, 0x1.94c5p-6f, 0x1.08a87ep-6f, 0x1.586b42p-7f, 0x1.be6906p-8f, 0x1.204eb8p-8f, 0x1.73496ep-9f, 0x1.dce41ap-10f, 0x1.318c14p-10f, 0x1.86b454p-11f, 0x1.f2a2f8p-12f, 0x1.3da27cp-12f, 0x1.9404eep-13f, 0x1.009128p-13f, 0x1.456938p-14f, 0x1.9c336p-15f, 0x1.04c21ap-15f, 0x1.498b8cp-16f, 0x1.a00b64p-17f, 0x0p+0f},
     {-0x1.665084p-6f, -0x1.5c7698p-4f, -0x1.13ab84p-3f, -0x1.2237dp-3f, -0x1.eff2b8p-4f, -0x1.75894cp-4f, -0x1.eadca4p-5f, -0x1.613308p-5f, -0x1.bdca48p-6f, -0x1.192c2ep-6f, -0x1.5e7eep-7f, -0x1.b1b968p-8f, -0x1.0b276p-8f, -0x1.48335cp-9f, -0x1.92838ep-10f, -0x1.ed23bap-11f, -0x1.2de42ep-11f, -0x1.717aacp-12f, -0x1.c416acp-13f, -0x1.148accp-13f, -0x1.524a18p-14f, -0x1.9dcc9cp-15f, -0x1.fa2512p-16f, -0x1.358ab8p-16f, -0x1.7a9b0cp-17f, -0x1.cf12e4p-18f, -0x1.1b31p-18f, -0x1.5a5e34p-19f, -0x1.a7a2fp-20f, -0x1.03121p-20f, -0x1.3cdcfap-21f, 0x0p+0f},
     {0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f, 0x0p+0f}}};
inline constexpr SizedCells silu_cells_bfloat16 = {&silu_forward_cells_bfloat16, &silu_backward_matched_cells_bfloat16};
inline constexpr FamilyCells sigmoid_family_cells = {&sigmoid_cells_forward, &sigmoid_cells_backward_direct, &sigmoid_cells_backward_matched, sigmoid_cells_float16, sigmoid_cells_bfloat16};
inline constexpr FamilyCells tanh_family_cells = {&tanh_cells_forward, &tanh_cells_backward_direct, &tanh_cells_backward_matched, tanh_cells_float16, tanh_cells_bfloat16};
inline constexpr FamilyCells silu_family_cells = {&silu_cells_forward, &silu_cells_backward_direct, &silu_cells_backward_matched, silu_cells_float16, silu_cells_bfloat16};
inline constexpr FamilyCells softplus_family_cells = {nullptr, nullptr, nullptr, {}, {}};
inline constexpr FamilyCells exp2_family_cells = {nullptr, nullptr, nullptr, {}, {}};

}  // namespace coeffs
}  // namespace turbogelu

#define TG_FAMILY_SHAPES(X) \
  X(sigmoid, accurate, HalfPlusOdd, 11, false, Even, 11, false) \
  X(sigmoid, paper, HalfPlusOdd, 2, false, Even, 4, false) \
  X(tanh, accurate, Odd, 12, false, Even, 12, false) \
  X(tanh, paper, Odd, 3, false, Even, 3, false) \
  X(silu, accurate, XHalfPlusEven, 13, false, HalfPlusOdd, 13, false) \
  X(silu, paper, XHalfPlus, 3, true, HalfPlusOdd, 2, true) \
  X(softplus, accurate, XHalfPlusNonNeg, 10, false, HalfPlusSigned, 10, false) \
  X(softplus, paper, XHalfPlusNonNeg, 10, false, HalfPlusSigned, 10, false) \
  X(gelu_none, paper, XHalfPlus, 5, true, HalfPlusOdd, 4, true) \
  X(gelu_tanh, paper, XHalfPlus, 5, true, HalfPlusOdd, 4, true) \
  X(exp2, accurate, Exp2Nearest, 5, false, Exp2Nearest, 5, false) \
  X(exp2, paper, Exp2Floor, 2, false, Exp2Floor, 2, false)

// The functions with cells programs: X(function, forward form, derivative form).
#define TG_FAMILY_CELLS(X) X(sigmoid, HalfPlusOdd, Even) X(tanh, Odd, Even) X(silu, XHalfPlusOdd, HalfPlusOdd)

// The ops (turbogelu/_table.py), X(op, function whose programs it runs, kind), and
// those whose autograd default differentiates from the saved result (family.h).
#define TG_FAMILY_OPS(X) \
  X(sigmoid, sigmoid, Plain) \
  X(tanh, tanh, Plain) \
  X(silu, silu, Plain) \
  X(softcap, tanh, Scaled) \
  X(swiglu, silu, Gated) \
  X(exp2, exp2, Plain) \
  X(softplus, softplus, Plain)
#define TG_FROM_OUTPUT_OPS(X) X(sigmoid) X(tanh) X(softcap) X(exp2)
// GELU's programs, rows of the kernels' table after the ops above (family.h):
// approximate='none' and 'tanh' of the one op gelu, whose schema is its own.
#define TG_GELU_OPS(X) X(gelu_none, gelu_none, Plain) X(gelu_tanh, gelu_tanh, Plain)
