// GENERATED FILE - do not edit. Made by `python -m turbogelu codegen` from
// data/specs/<function>/<tier>.json, data/specs/exp2/<tier>.json,
// data/specs/gelu_exact.json, data/specs/gelu_tanh.json and
// data/specs/gelu_<mode>/paper.json (turbogelu/approx/codegen.py).
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
// forward, backward_direct, backward_matched:
//   0-2: sigmoid accurate
//   3-5: tanh accurate
//   6-8: silu accurate
//   9-11: softplus accurate
//   12-14: sigmoid paper
//   15-17: tanh paper
//   18-20: silu paper
//   21-23: softplus paper
//   24-26: exp2 accurate
//   27-29: exp2 paper
//   30-32: gelu_none accurate
//   33-35: gelu_tanh accurate
//   36-38: gelu_none paper
//   39-41: gelu_tanh paper
// Kernels: <op>_<tier>_forward_<type> and <op>_<tier>_backward_<type>, one generic kernel
// pair per kind of op instantiated for each op, tier and storage type.
// The default backward, per tier and function (turbogelu/mps.py reads it from the specs):
// default_backward (accurate): sigmoid=direct, tanh=direct, silu=direct, softplus=direct, exp2=direct
// default_backward (paper): sigmoid=direct, tanh=matched, silu=matched, softplus=direct, exp2=direct
// default_backward (GELU, accurate): gelu_none=direct, gelu_tanh=direct
// default_backward (GELU, paper): gelu_none=matched, gelu_tanh=matched
// float16 and bfloat16 are computed in float32 and rounded once to nearest even; there is no
// float64 on Apple GPUs.
#include <metal_stdlib>
using namespace metal;

// Fuse exactly where fma() is written, and keep IEEE semantics for NaN, inf and -0.0
// (the default fast math may assume there is no NaN).
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif

#define TG_FAMILY_N 14  // coefficients per row (the highest degree + 1)
#define TG_FAMILY_PROGRAMS 42

constant float TG_FAMILY_CLAMP[TG_FAMILY_PROGRAMS] = {
    10.44999980926513671875f,  // 0: sigmoid accurate forward: 0x1.4e6666p+3
    10.44999980926513671875f,  // 1: sigmoid accurate backward_direct: 0x1.4e6666p+3
    10.44999980926513671875f,  // 2: sigmoid accurate backward_matched: 0x1.4e6666p+3
    5.599999904632568359375f,  // 3: tanh accurate forward: 0x1.666666p+2
    5.599999904632568359375f,  // 4: tanh accurate backward_direct: 0x1.666666p+2
    5.599999904632568359375f,  // 5: tanh accurate backward_matched: 0x1.666666p+2
    13.0f,  // 6: silu accurate forward: 0x1.ap+3
    13.0f,  // 7: silu accurate backward_direct: 0x1.ap+3
    13.0f,  // 8: silu accurate backward_matched: 0x1.ap+3
    10.5f,  // 9: softplus accurate forward: 0x1.5p+3
    10.5f,  // 10: softplus accurate backward_direct: 0x1.5p+3
    10.5f,  // 11: softplus accurate backward_matched: 0x1.5p+3
    5.2600002288818359375f,  // 12: sigmoid paper forward: 0x1.50a3d8p+2
    5.599999904632568359375f,  // 13: sigmoid paper backward_direct: 0x1.666666p+2
    5.2600002288818359375f,  // 14: sigmoid paper backward_matched: 0x1.50a3d8p+2
    2.7799999713897705078125f,  // 15: tanh paper forward: 0x1.63d70ap+1
    2.7799999713897705078125f,  // 16: tanh paper backward_direct: 0x1.63d70ap+1
    2.7799999713897705078125f,  // 17: tanh paper backward_matched: 0x1.63d70ap+1
    5.30000019073486328125f,  // 18: silu paper forward: 0x1.533334p+2
    5.30000019073486328125f,  // 19: silu paper backward_direct: 0x1.533334p+2
    5.30000019073486328125f,  // 20: silu paper backward_matched: 0x1.533334p+2
    10.5f,  // 21: softplus paper forward: 0x1.5p+3
    10.5f,  // 22: softplus paper backward_direct: 0x1.5p+3
    10.5f,  // 23: softplus paper backward_matched: 0x1.5p+3
    0.0f,  // 24: exp2 accurate forward: 0x0p+0
    0.0f,  // 25: exp2 accurate backward_direct: 0x0p+0
    0.0f,  // 26: exp2 accurate backward_matched: 0x0p+0
    0.0f,  // 27: exp2 paper forward: 0x0p+0
    0.0f,  // 28: exp2 paper backward_direct: 0x0p+0
    0.0f,  // 29: exp2 paper backward_matched: 0x0p+0
    4.38899993896484375f,  // 30: gelu_none accurate forward: 0x1.18e56p+2
    4.38899993896484375f,  // 31: gelu_none accurate backward_direct: 0x1.18e56p+2
    4.38899993896484375f,  // 32: gelu_none accurate backward_matched: 0x1.18e56p+2
    4.25f,  // 33: gelu_tanh accurate forward: 0x1.1p+2
    4.25f,  // 34: gelu_tanh accurate backward_direct: 0x1.1p+2
    4.25f,  // 35: gelu_tanh accurate backward_matched: 0x1.1p+2
    3.3399999141693115234375f,  // 36: gelu_none paper forward: 0x1.ab851ep+1
    3.3399999141693115234375f,  // 37: gelu_none paper backward_direct: 0x1.ab851ep+1
    3.3399999141693115234375f,  // 38: gelu_none paper backward_matched: 0x1.ab851ep+1
    3.3399999141693115234375f,  // 39: gelu_tanh paper forward: 0x1.ab851ep+1
    3.3399999141693115234375f,  // 40: gelu_tanh paper backward_direct: 0x1.ab851ep+1
    3.3399999141693115234375f,  // 41: gelu_tanh paper backward_matched: 0x1.ab851ep+1
};
constant float TG_FAMILY_SCALE[TG_FAMILY_PROGRAMS] = {
    0.1913875639438629150390625f,  // 0: 0x1.87f634p-3
    0.1913875639438629150390625f,  // 1: 0x1.87f634p-3
    0.1913875639438629150390625f,  // 2: 0x1.87f634p-3
    0.357142865657806396484375f,  // 3: 0x1.6db6dcp-2
    0.357142865657806396484375f,  // 4: 0x1.6db6dcp-2
    0.357142865657806396484375f,  // 5: 0x1.6db6dcp-2
    0.15384615957736968994140625f,  // 6: 0x1.3b13b2p-3
    0.15384615957736968994140625f,  // 7: 0x1.3b13b2p-3
    0.15384615957736968994140625f,  // 8: 0x1.3b13b2p-3
    0.19047619402408599853515625f,  // 9: 0x1.861862p-3
    0.19047619402408599853515625f,  // 10: 0x1.861862p-3
    0.19047619402408599853515625f,  // 11: 0x1.861862p-3
    0.375f,  // 12: 0x1.8p-2
    0.357421875f,  // 13: 0x1.6ep-2
    0.375f,  // 14: 0x1.8p-2
    0.703125f,  // 15: 0x1.68p-1
    0.703125f,  // 16: 0x1.68p-1
    0.703125f,  // 17: 0x1.68p-1
    0.06982421875f,  // 18: 0x1.1ep-4
    0.06982421875f,  // 19: 0x1.1ep-4
    0.06982421875f,  // 20: 0x1.1ep-4
    0.19047619402408599853515625f,  // 21: 0x1.861862p-3
    0.19047619402408599853515625f,  // 22: 0x1.861862p-3
    0.19047619402408599853515625f,  // 23: 0x1.861862p-3
    0.0f,  // 24: 0x0p+0
    0.0f,  // 25: 0x0p+0
    0.0f,  // 26: 0x0p+0
    0.0f,  // 27: 0x0p+0
    0.0f,  // 28: 0x0p+0
    0.0f,  // 29: 0x0p+0
    0.10382425785064697265625f,  // 30: 0x1.a943ap-4
    0.10382425785064697265625f,  // 31: 0x1.a943ap-4
    0.10382425785064697265625f,  // 32: 0x1.a943ap-4
    0.110726647078990936279296875f,  // 33: 0x1.c5894ep-4
    0.110726647078990936279296875f,  // 34: 0x1.c5894ep-4
    0.110726647078990936279296875f,  // 35: 0x1.c5894ep-4
    0.154296875f,  // 36: 0x1.3cp-3
    0.154296875f,  // 37: 0x1.3cp-3
    0.154296875f,  // 38: 0x1.3cp-3
    0.154296875f,  // 39: 0x1.3cp-3
    0.154296875f,  // 40: 0x1.3cp-3
    0.154296875f,  // 41: 0x1.3cp-3
};
// The asymptotes: the result for x < -clamp and for x > clamp (the x/2 forms: x itself
// above; below -0.0 for XHalfPlusEven and XHalfPlus, this for XHalfPlusNonNeg).
constant float TG_FAMILY_BELOW[TG_FAMILY_PROGRAMS] = {
    0.0f,  // 0
    0.0f,  // 1
    0.0f,  // 2
    -1.0f,  // 3
    0.0f,  // 4
    0.0f,  // 5
    -0.0f,  // 6
    0.0f,  // 7
    0.0f,  // 8
    0.0f,  // 9
    0.0f,  // 10
    0.0f,  // 11
    0.0f,  // 12
    0.0f,  // 13
    0.0f,  // 14
    -1.0f,  // 15
    0.0f,  // 16
    0.0f,  // 17
    -0.0f,  // 18
    0.0f,  // 19
    0.0f,  // 20
    0.0f,  // 21
    0.0f,  // 22
    0.0f,  // 23
    0.0f,  // 24
    0.0f,  // 25
    0.0f,  // 26
    0.0f,  // 27
    0.0f,  // 28
    0.0f,  // 29
    -0.0f,  // 30
    0.0f,  // 31
    0.0f,  // 32
    -0.0f,  // 33
    0.0f,  // 34
    0.0f,  // 35
    -0.0f,  // 36
    0.0f,  // 37
    0.0f,  // 38
    -0.0f,  // 39
    0.0f,  // 40
    0.0f,  // 41
};
constant float TG_FAMILY_ABOVE[TG_FAMILY_PROGRAMS] = {
    1.0f,  // 0
    0.0f,  // 1
    0.0f,  // 2
    1.0f,  // 3
    0.0f,  // 4
    0.0f,  // 5
    0.0f,  // 6
    1.0f,  // 7
    1.0f,  // 8
    0.0f,  // 9
    1.0f,  // 10
    1.0f,  // 11
    1.0f,  // 12
    0.0f,  // 13
    0.0f,  // 14
    1.0f,  // 15
    0.0f,  // 16
    0.0f,  // 17
    0.0f,  // 18
    1.0f,  // 19
    1.0f,  // 20
    0.0f,  // 21
    1.0f,  // 22
    1.0f,  // 23
    0.0f,  // 24
    0.0f,  // 25
    0.0f,  // 26
    0.0f,  // 27
    0.0f,  // 28
    0.0f,  // 29
    0.0f,  // 30
    1.0f,  // 31
    1.0f,  // 32
    0.0f,  // 33
    1.0f,  // 34
    1.0f,  // 35
    0.0f,  // 36
    1.0f,  // 37
    1.0f,  // 38
    0.0f,  // 39
    1.0f,  // 40
    1.0f,  // 41
};
constant float TG_FAMILY_COEFFS[TG_FAMILY_PROGRAMS][TG_FAMILY_N] = {
    {  // 0: sigmoid accurate forward: HalfPlusOdd, degree 11
        0.0946691334247589111328125f,  // c[0] = 0x1.83c3c8p-4
        -0.08937503397464752197265625f,  // c[1] = -0x1.6e1484p-4
        0.075655989348888397216796875f,  // c[2] = 0x1.35e30ep-4
        -0.0513643510639667510986328125f,  // c[3] = -0x1.a4c6dap-5
        0.02145508863031864166259765625f,  // c[4] = 0x1.5f852ap-6
        -0.0006976322620175778865814208984375f,  // c[5] = -0x1.6dc29ep-11
        -0.0147968865931034088134765625f,  // c[6] = -0x1.e4dd48p-7
        0.0484355278313159942626953125f,  // c[7] = 0x1.8cc8aap-5
        -0.060571826994419097900390625f,  // c[8] = -0x1.f03454p-5
        0.008120047859847545623779296875f,  // c[9] = 0x1.0a13e6p-7
        0.032477103173732757568359375f,  // c[10] = 0x1.0a0d6cp-5
        -0.016164161264896392822265625f,  // c[11] = -0x1.08d568p-6
        0.0f,
        0.0f,
    },
    {  // 1: sigmoid accurate backward_direct: Even, degree 11
        0.005280491895973682403564453125f,  // c[0] = 0x1.5a0ff4p-8
        -0.02752165496349334716796875f,  // c[1] = -0x1.c2ea3p-6
        0.07374154031276702880859375f,  // c[2] = 0x1.2e0b9cp-4
        -0.117463432252407073974609375f,  // c[3] = -0x1.e12156p-4
        0.09534896910190582275390625f,  // c[4] = 0x1.868ca4p-4
        -0.10764501988887786865234375f,  // c[5] = -0x1.b8e9fcp-4
        0.2632298171520233154296875f,  // c[6] = 0x1.0d8c1ep-2
        -0.0580355934798717498779296875f,  // c[7] = -0x1.db6d76p-5
        -0.50843155384063720703125f,  // c[8] = -0x1.045124p-1
        0.3614778220653533935546875f,  // c[9] = 0x1.72273ep-2
        0.1958160102367401123046875f,  // c[10] = 0x1.9107fcp-3
        -0.175811290740966796875f,  // c[11] = -0x1.680fcp-3
        0.0f,
        0.0f,
    },
    {  // 2: sigmoid accurate backward_matched: Even, degree 11
        0.00529409945011138916015625f,  // c[0] = 0x1.5af44p-8
        -0.02743808925151824951171875f,  // c[1] = -0x1.c18bbp-6
        0.07287491858005523681640625f,  // c[2] = 0x1.2a7ee4p-4
        -0.119637049734592437744140625f,  // c[3] = -0x1.ea088ap-4
        0.103787280619144439697265625f,  // c[4] = 0x1.a91cdap-4
        -0.092967115342617034912109375f,  // c[5] = -0x1.7ccb16p-4
        0.23547048866748809814453125f,  // c[6] = 0x1.e23e5ap-3
        -0.0970903933048248291015625f,  // c[7] = -0x1.8daea8p-4
        -0.4720660150051116943359375f,  // c[8] = -0x1.e36546p-2
        0.4059714972972869873046875f,  // c[9] = 0x1.9fb6fep-2
        0.17944236099720001220703125f,  // c[10] = 0x1.6f7f7ap-3
        -0.1939699351787567138671875f,  // c[11] = -0x1.8d401cp-3
        0.0f,
        0.0f,
    },
    {  // 3: tanh accurate forward: Odd, degree 12
        0.3545068204402923583984375f,  // c[0] = 0x1.6b03d6p-2
        -0.3398859500885009765625f,  // c[1] = -0x1.5c0b1p-2
        0.299504458904266357421875f,  // c[2] = 0x1.32b14cp-2
        -0.22256042063236236572265625f,  // c[3] = -0x1.c7cdc2p-3
        0.1136438846588134765625f,  // c[4] = 0x1.d17c4p-4
        -0.02212627045810222625732421875f,  // c[5] = -0x1.6a844ep-6
        -0.02148705907166004180908203125f,  // c[6] = -0x1.600b42p-6
        0.12310074269771575927734375f,  // c[7] = 0x1.f8387cp-4
        -0.265028774738311767578125f,  // c[8] = -0x1.0f63b4p-2
        0.1776203215122222900390625f,  // c[9] = 0x1.6bc434p-3
        0.069222159683704376220703125f,  // c[10] = 0x1.1b88b2p-4
        -0.12694023549556732177734375f,  // c[11] = -0x1.03f93ep-3
        0.03899370133876800537109375f,  // c[12] = 0x1.3f6fb8p-5
        0.0f,
    },
    {  // 4: tanh accurate backward_direct: Even, degree 12
        0.014552216045558452606201171875f,  // c[0] = 0x1.dcd8d6p-7
        -0.080544210970401763916015625f,  // c[1] = -0x1.49e8bap-4
        0.2358348369598388671875f,  // c[2] = 0x1.e2fd6p-3
        -0.438930928707122802734375f,  // c[3] = -0x1.c1771cp-2
        0.399988591670989990234375f,  // c[4] = 0x1.99969cp-2
        -0.249939441680908203125f,  // c[5] = -0x1.ffe04p-3
        0.949301779270172119140625f,  // c[6] = 0x1.e60ae2p-1
        -1.1468737125396728515625f,  // c[7] = -0x1.259984p+0
        -1.224374294281005859375f,  // c[8] = -0x1.397098p+0
        2.4642322063446044921875f,  // c[9] = 0x1.3b6bf6p+1
        -0.2689568698406219482421875f,  // c[10] = -0x1.13696ep-2
        -1.0480730533599853515625f,  // c[11] = -0x1.0c4e84p+0
        0.3936810195446014404296875f,  // c[12] = 0x1.93211ep-2
        0.0f,
    },
    {  // 5: tanh accurate backward_matched: Even, degree 12
        0.0146208703517913818359375f,  // c[0] = 0x1.df18cp-7
        -0.08076298236846923828125f,  // c[1] = -0x1.4ace2p-4
        0.23083211481571197509765625f,  // c[2] = 0x1.d8be82p-3
        -0.435666143894195556640625f,  // c[3] = -0x1.be1f44p-2
        0.45758807659149169921875f,  // c[4] = 0x1.d491f8p-2
        -0.2616799771785736083984375f,  // c[5] = -0x1.0bf5d6p-2
        0.711295783519744873046875f,  // c[6] = 0x1.6c2ef6p-1
        -1.13542425632476806640625f,  // c[7] = -0x1.22ab2ap+0
        -0.78667604923248291015625f,  // c[8] = -0x1.92c734p-1
        2.46842479705810546875f,  // c[9] = 0x1.3bf558p+1
        -0.634898841381072998046875f,  // c[10] = -0x1.451176p-1
        -1.055358409881591796875f,  // c[11] = -0x1.0e2bf8p+0
        0.506918132305145263671875f,  // c[12] = 0x1.038ac6p-1
        0.0f,
    },
    {  // 6: silu accurate forward: XHalfPlusEven, degree 13
        0.07669173181056976318359375f,  // c[0] = 0x1.3a211cp-4
        -0.075188033282756805419921875f,  // c[1] = -0x1.33f85ep-4
        0.07037736475467681884765625f,  // c[2] = 0x1.204404p-4
        -0.0601532422006130218505859375f,  // c[3] = -0x1.ecc67ep-5
        0.0425390899181365966796875f,  // c[4] = 0x1.5c7afp-5
        -0.017975948750972747802734375f,  // c[5] = -0x1.268498p-6
        0.0009698324720375239849090576171875f,  // c[6] = 0x1.fc78b6p-11
        -0.00185695872642099857330322265625f,  // c[7] = -0x1.e6ca64p-10
        -0.02067408896982669830322265625f,  // c[8] = -0x1.52b96ap-6
        0.079216532409191131591796875f,  // c[9] = 0x1.44788ep-4
        -0.07389529049396514892578125f,  // c[10] = -0x1.2eacd4p-4
        -0.01129881851375102996826171875f,  // c[11] = -0x1.723d5cp-7
        0.047996409237384796142578125f,  // c[12] = 0x1.892fc4p-5
        -0.0182873308658599853515625f,  // c[13] = -0x1.2b9eap-6
    },
    {  // 7: silu accurate backward_direct: HalfPlusOdd, degree 13
        0.078195936977863311767578125f,  // c[0] = 0x1.404a62p-4
        -0.084753550589084625244140625f,  // c[1] = -0x1.5b268ap-4
        0.1009901463985443115234375f,  // c[2] = 0x1.9da7d8p-4
        -0.1323539316654205322265625f,  // c[3] = -0x1.0f0f94p-3
        0.16641406714916229248046875f,  // c[4] = 0x1.54d0e6p-3
        -0.10485921800136566162109375f,  // c[5] = -0x1.ad80dcp-4
        -0.011754988692700862884521484375f,  // c[6] = -0x1.812ffep-7
        -0.23718984425067901611328125f,  // c[7] = -0x1.e5c3cap-3
        0.523463547229766845703125f,  // c[8] = 0x1.0c036ap-1
        0.22770397365093231201171875f,  // c[9] = 0x1.d25676p-3
        -1.0312225818634033203125f,  // c[10] = -0x1.07fe34p+0
        0.3514553010463714599609375f,  // c[11] = 0x1.67e3e6p-2
        0.4427489340305328369140625f,  // c[12] = 0x1.c55ffap-2
        -0.250379979610443115234375f,  // c[13] = -0x1.00639cp-2
    },
    {  // 8: silu accurate backward_matched: HalfPlusOdd, degree 13
        0.078195430338382720947265625f,  // c[0] = 0x1.4049dap-4
        -0.084809370338916778564453125f,  // c[1] = -0x1.5b6112p-4
        0.10104973614215850830078125f,  // c[2] = 0x1.9de654p-4
        -0.13060985505580902099609375f,  // c[3] = -0x1.0b7d2ep-3
        0.165354788303375244140625f,  // c[4] = 0x1.52a588p-3
        -0.120012648403644561767578125f,  // c[5] = -0x1.eb9262p-4
        -0.00524005107581615447998046875f,  // c[6] = -0x1.576978p-8
        -0.18210534751415252685546875f,  // c[7] = -0x1.74f3a6p-3
        0.506207883358001708984375f,  // c[8] = 0x1.032daep-1
        0.132428944110870361328125f,  // c[9] = 0x1.0f36e8p-3
        -1.0110304355621337890625f,  // c[10] = -0x1.02d2e4p+0
        0.42907226085662841796875f,  // c[11] = 0x1.b75eb8p-2
        0.434214413166046142578125f,  // c[12] = 0x1.bca2b4p-2
        -0.2743099629878997802734375f,  // c[13] = -0x1.18e4b6p-2
    },
    {  // 9: softplus accurate forward: XHalfPlusNonNeg, degree 10
        2.63020610809326171875f,  // c[0] = 0x1.50aa98p+1
        2.5976965427398681640625f,  // c[1] = 0x1.4c8152p+1
        0.073189280927181243896484375f,  // c[2] = 0x1.2bc886p-4
        -0.12617303431034088134765625f,  // c[3] = -0x1.026702p-3
        0.1441464126110076904296875f,  // c[4] = 0x1.27363cp-3
        -0.14443983137607574462890625f,  // c[5] = -0x1.27d012p-3
        0.17617034912109375f,  // c[6] = 0x1.68ccp-3
        -0.12821514904499053955078125f,  // c[7] = -0x1.0695aap-3
        -0.02632929198443889617919921875f,  // c[8] = -0x1.af610ep-6
        0.079601012170314788818359375f,  // c[9] = 0x1.460bb6p-4
        -0.02579556405544281005859375f,  // c[10] = -0x1.a6a27p-6
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 10: softplus accurate backward_direct: HalfPlusSigned, degree 10
        0.494864165782928466796875f,  // c[0] = 0x1.fabdacp-2
        0.02794255316257476806640625f,  // c[1] = 0x1.c9cf9p-6
        -0.075842745602130889892578125f,  // c[2] = -0x1.36a6e2p-4
        0.10863278806209564208984375f,  // c[3] = 0x1.bcf5bcp-4
        -0.103052921593189239501953125f,  // c[4] = -0x1.a61ad2p-4
        0.20676045119762420654296875f,  // c[5] = 0x1.a77206p-3
        -0.2806127965450286865234375f,  // c[6] = -0x1.1f58f6p-2
        -0.048704363405704498291015625f,  // c[7] = -0x1.8efc74p-5
        0.2767888009548187255859375f,  // c[8] = 0x1.1b6e86p-2
        -0.0447513759136199951171875f,  // c[9] = -0x1.6e9a7p-5
        -0.062158294022083282470703125f,  // c[10] = -0x1.fd3364p-5
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 11: softplus accurate backward_matched: HalfPlusSigned, degree 9
        0.4947993457317352294921875f,  // c[0] = 0x1.faacaep-2
        0.02788163162767887115478515625f,  // c[1] = 0x1.c8d00ap-6
        -0.0720988810062408447265625f,  // c[2] = -0x1.275128p-4
        0.109825842082500457763671875f,  // c[3] = 0x1.c1d8bep-4
        -0.13756175339221954345703125f,  // c[4] = -0x1.19b9fap-3
        0.2013375461101531982421875f,  // c[5] = 0x1.9c56dcp-3
        -0.1709535419940948486328125f,  // c[6] = -0x1.5e1ce4p-3
        -0.04012082517147064208984375f,  // c[7] = -0x1.48ab78p-5
        0.136458873748779296875f,  // c[8] = 0x1.1777cp-3
        -0.0491344071924686431884765625f,  // c[9] = -0x1.928252p-5
        0.0f,  // c[10]: leading zero (the pair's degree 10)
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 12: sigmoid paper forward: HalfPlusOdd, degree 2
        0.1630859375f,  // c[0] = 0x1.4ep-3
        -0.09423828125f,  // c[1] = -0x1.82p-4
        0.02294921875f,  // c[2] = 0x1.78p-6
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 13: sigmoid paper backward_direct: Even, degree 4
        0.053466796875f,  // c[0] = 0x1.b6p-5
        -0.1533203125f,  // c[1] = -0x1.3ap-3
        0.1533203125f,  // c[2] = 0x1.3ap-3
        0.02685546875f,  // c[3] = 0x1.b8p-6
        -0.07958984375f,  // c[4] = -0x1.46p-4
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 14: sigmoid paper backward_matched: Even, degree 2
        0.06884765625f,  // c[0] = 0x1.1ap-4
        -0.142578125f,  // c[1] = -0x1.24p-3
        0.06884765625f,  // c[2] = 0x1.1ap-4
        0.0f,  // c[3]: leading zero (the pair's degree 4)
        0.0f,  // c[4]: leading zero (the pair's degree 4)
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 15: tanh paper forward: Odd, degree 3
        0.62890625f,  // c[0] = 0x1.42p-1
        -0.40234375f,  // c[1] = -0x1.9cp-2
        0.0947265625f,  // c[2] = 0x1.84p-4
        0.031005859375f,  // c[3] = 0x1.fcp-6
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 16: tanh paper backward_direct: Even, degree 3
        0.2265625f,  // c[0] = 0x1.dp-3
        -0.615234375f,  // c[1] = -0x1.3bp-1
        0.377197265625f,  // c[2] = 0x1.824p-2
        0.1240234375f,  // c[3] = 0x1.fcp-4
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 17: tanh paper backward_matched: Even, degree 3
        0.2265625f,  // c[0] = 0x1.dp-3
        -0.615234375f,  // c[1] = -0x1.3bp-1
        0.377197265625f,  // c[2] = 0x1.824p-2
        0.1240234375f,  // c[3] = 0x1.fcp-4
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 18: silu paper forward: XHalfPlus, in x^2, degree 3
        1.828125f,  // c[0] = 0x1.d4p+0
        1.0f,  // c[1] = 0x1p+0
        -0.470703125f,  // c[2] = -0x1.e2p-2
        0.33203125f,  // c[3] = 0x1.54p-2
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 19: silu paper backward_direct: HalfPlusOdd, in x^2, degree 2
        0.1396484375f,  // c[0] = 0x1.1ep-3
        -0.131465911865234375f,  // c[1] = -0x1.0d3ep-3
        0.139102935791015625f,  // c[2] = 0x1.1ce2p-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 20: silu paper backward_matched: HalfPlusOdd, in x^2, degree 2
        0.1396484375f,  // c[0] = 0x1.1ep-3
        -0.131465911865234375f,  // c[1] = -0x1.0d3ep-3
        0.139102935791015625f,  // c[2] = 0x1.1ce2p-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 21: softplus paper forward: XHalfPlusNonNeg, degree 10
        2.63020610809326171875f,  // c[0] = 0x1.50aa98p+1
        2.5976965427398681640625f,  // c[1] = 0x1.4c8152p+1
        0.073189280927181243896484375f,  // c[2] = 0x1.2bc886p-4
        -0.12617303431034088134765625f,  // c[3] = -0x1.026702p-3
        0.1441464126110076904296875f,  // c[4] = 0x1.27363cp-3
        -0.14443983137607574462890625f,  // c[5] = -0x1.27d012p-3
        0.17617034912109375f,  // c[6] = 0x1.68ccp-3
        -0.12821514904499053955078125f,  // c[7] = -0x1.0695aap-3
        -0.02632929198443889617919921875f,  // c[8] = -0x1.af610ep-6
        0.079601012170314788818359375f,  // c[9] = 0x1.460bb6p-4
        -0.02579556405544281005859375f,  // c[10] = -0x1.a6a27p-6
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 22: softplus paper backward_direct: HalfPlusSigned, degree 10
        0.494864165782928466796875f,  // c[0] = 0x1.fabdacp-2
        0.02794255316257476806640625f,  // c[1] = 0x1.c9cf9p-6
        -0.075842745602130889892578125f,  // c[2] = -0x1.36a6e2p-4
        0.10863278806209564208984375f,  // c[3] = 0x1.bcf5bcp-4
        -0.103052921593189239501953125f,  // c[4] = -0x1.a61ad2p-4
        0.20676045119762420654296875f,  // c[5] = 0x1.a77206p-3
        -0.2806127965450286865234375f,  // c[6] = -0x1.1f58f6p-2
        -0.048704363405704498291015625f,  // c[7] = -0x1.8efc74p-5
        0.2767888009548187255859375f,  // c[8] = 0x1.1b6e86p-2
        -0.0447513759136199951171875f,  // c[9] = -0x1.6e9a7p-5
        -0.062158294022083282470703125f,  // c[10] = -0x1.fd3364p-5
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 23: softplus paper backward_matched: HalfPlusSigned, degree 9
        0.4947993457317352294921875f,  // c[0] = 0x1.faacaep-2
        0.02788163162767887115478515625f,  // c[1] = 0x1.c8d00ap-6
        -0.0720988810062408447265625f,  // c[2] = -0x1.275128p-4
        0.109825842082500457763671875f,  // c[3] = 0x1.c1d8bep-4
        -0.13756175339221954345703125f,  // c[4] = -0x1.19b9fap-3
        0.2013375461101531982421875f,  // c[5] = 0x1.9c56dcp-3
        -0.1709535419940948486328125f,  // c[6] = -0x1.5e1ce4p-3
        -0.04012082517147064208984375f,  // c[7] = -0x1.48ab78p-5
        0.136458873748779296875f,  // c[8] = 0x1.1777cp-3
        -0.0491344071924686431884765625f,  // c[9] = -0x1.928252p-5
        0.0f,  // c[10]: leading zero (the pair's degree 10)
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 24: exp2 accurate forward: Exp2Nearest, degree 5
        1.0f,  // c[0] = 0x1p+0
        0.69314706325531005859375f,  // c[1] = 0x1.62e42cp-1
        0.24022231996059417724609375f,  // c[2] = 0x1.ebf9aep-3
        0.055506668984889984130859375f,  // c[3] = 0x1.c6b5ecp-5
        0.009672117419540882110595703125f,  // c[4] = 0x1.3cef9ap-7
        0.001327729201875627040863037109375f,  // c[5] = 0x1.5c0e66p-10
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 25: exp2 accurate backward_direct: Exp2Nearest, degree 5
        0.693147182464599609375f,  // c[0] = 0x1.62e43p-1
        0.4804529249668121337890625f,  // c[1] = 0x1.ebfbdap-2
        0.1665094196796417236328125f,  // c[2] = 0x1.5502e4p-3
        0.0384742915630340576171875f,  // c[3] = 0x1.3b2e7p-5
        0.006704200990498065948486328125f,  // c[4] = 0x1.b75dd4p-8
        0.00092031178064644336700439453125f,  // c[5] = 0x1.e28228p-11
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 26: exp2 accurate backward_matched: Exp2Nearest, degree 4
        0.69314706325531005859375f,  // c[0] = 0x1.62e42cp-1
        0.4804446399211883544921875f,  // c[1] = 0x1.ebf9aep-2
        0.16651999950408935546875f,  // c[2] = 0x1.55087p-3
        0.0386884696781635284423828125f,  // c[3] = 0x1.3cef9ap-5
        0.00663864612579345703125f,  // c[4] = 0x1.b312p-8
        0.0f,  // c[5]: leading zero (the pair's degree 5)
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 27: exp2 paper forward: Exp2Floor, degree 2
        1.0f,  // c[0] = 0x1p+0
        0.660233974456787109375f,  // c[1] = 0x1.520a3p-1
        0.339766025543212890625f,  // c[2] = 0x1.5bebap-2
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 28: exp2 paper backward_direct: Exp2Floor, degree 2
        0.693147182464599609375f,  // c[0] = 0x1.62e43p-1
        0.4576393067836761474609375f,  // c[1] = 0x1.d49f66p-2
        0.23550786077976226806640625f,  // c[2] = 0x1.e251f2p-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 29: exp2 paper backward_matched: Exp2Floor, degree 1
        0.660233974456787109375f,  // c[0] = 0x1.520a3p-1
        0.67953205108642578125f,  // c[1] = 0x1.5bebap-1
        0.0f,  // c[2]: leading zero (the pair's degree 2)
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 30: gelu_none accurate forward: XHalfPlusEven, in x^2 (window on x^2), degree 8
        0.16079850494861602783203125f,  // c[0] = 0x1.4950bap-3
        -0.078771121799945831298828125f,  // c[1] = -0x1.42a582p-4
        0.05529296398162841796875f,  // c[2] = 0x1.c4f5cp-5
        -0.0400310419499874114990234375f,  // c[3] = -0x1.47ef2ep-5
        0.02670387364923954010009765625f,  // c[4] = 0x1.b5842ap-6
        -0.01588469557464122772216796875f,  // c[5] = -0x1.04413ep-6
        0.010854269377887248992919921875f,  // c[6] = 0x1.63ac36p-7
        -0.007735951803624629974365234375f,  // c[7] = -0x1.fafbbcp-8
        0.0026943427510559558868408203125f,  // c[8] = 0x1.612724p-9
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 31: gelu_none accurate backward_direct: HalfPlusOdd, in x^2 (window on x^2), degree 8
        0.16401530802249908447265625f,  // c[0] = 0x1.4fe742p-3
        -0.093864500522613525390625f,  // c[1] = -0x1.80781p-4
        0.093173503875732421875f,  // c[2] = 0x1.7da38p-4
        -0.107058696448802947998046875f,  // c[3] = -0x1.b6832ep-4
        0.09844176471233367919921875f,  // c[4] = 0x1.9337acp-4
        -0.0593995116651058197021484375f,  // c[5] = -0x1.e699cep-5
        0.062102429568767547607421875f,  // c[6] = 0x1.fcbe3cp-5
        -0.081248700618743896484375f,  // c[7] = -0x1.4ccb7p-4
        0.0378224290907382965087890625f,  // c[8] = 0x1.35d762p-5
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 32: gelu_none accurate backward_matched: HalfPlusOdd, in x^2 (window on x^2), degree 8
        0.16405476629734039306640625f,  // c[0] = 0x1.4ffbf2p-3
        -0.0939126312732696533203125f,  // c[1] = -0x1.80aa88p-4
        0.091571532189846038818359375f,  // c[2] = 0x1.7713b6p-4
        -0.10661734640598297119140625f,  // c[3] = -0x1.b4b464p-4
        0.108191780745983123779296875f,  // c[4] = 0x1.bb274ep-4
        -0.0603651143610477447509765625f,  // c[5] = -0x1.ee82d2p-5
        0.043656446039676666259765625f,  // c[6] = 0x1.65a234p-5
        -0.080665744841098785400390625f,  // c[7] = -0x1.4a682ap-4
        0.04849816858768463134765625f,  // c[8] = 0x1.8d4c08p-5
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 33: gelu_tanh accurate forward: XHalfPlusEven, in x^2 (window on x^2), degree 8
        0.1659808456897735595703125f,  // c[0] = 0x1.53edc4p-3
        -0.080883003771305084228515625f,  // c[1] = -0x1.4b4bfap-4
        0.055771924555301666259765625f,  // c[2] = 0x1.c8e234p-5
        -0.038998015224933624267578125f,  // c[3] = -0x1.3f78c4p-5
        0.0248392187058925628662109375f,  // c[4] = 0x1.96f73cp-6
        -0.01400230638682842254638671875f,  // c[5] = -0x1.cad3dcp-7
        0.009250047616660594940185546875f,  // c[6] = 0x1.2f1b06p-7
        -0.00668399035930633544921875f,  // c[7] = -0x1.b60acp-8
        0.00237242528237402439117431640625f,  // c[8] = 0x1.36f562p-9
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 34: gelu_tanh accurate backward_direct: HalfPlusOdd, in x^2 (window on x^2), degree 8
        0.17016284167766571044921875f,  // c[0] = 0x1.5c7e56p-3
        -0.10035024583339691162109375f,  // c[1] = -0x1.9b08dcp-4
        0.102021895349025726318359375f,  // c[2] = 0x1.a1e1b6p-4
        -0.114026486873626708984375f,  // c[3] = -0x1.d30d7p-4
        0.099849425256252288818359375f,  // c[4] = 0x1.98fbb6p-4
        -0.0554567389190196990966796875f,  // c[5] = -0x1.c64d36p-5
        0.0521953217685222625732421875f,  // c[6] = 0x1.ab9586p-5
        -0.069914944469928741455078125f,  // c[7] = -0x1.1e5f22p-4
        0.0332253873348236083984375f,  // c[8] = 0x1.102ebp-5
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 35: gelu_tanh accurate backward_matched: HalfPlusOdd, in x^2 (window on x^2), degree 8
        0.17019568383693695068359375f,  // c[0] = 0x1.5c8f8ep-3
        -0.100444316864013671875f,  // c[1] = -0x1.9b6b8p-4
        0.100643455982208251953125f,  // c[2] = 0x1.9c3c5p-4
        -0.1132703721523284912109375f,  // c[3] = -0x1.cff498p-4
        0.10836912691593170166015625f,  // c[4] = 0x1.bbe144p-4
        -0.0570271052420139312744140625f,  // c[5] = -0x1.d32a82p-5
        0.035924799740314483642578125f,  // c[6] = 0x1.264bc4p-5
        -0.068985044956207275390625f,  // c[7] = -0x1.1a901p-4
        0.0427036546170711517333984375f,  // c[8] = 0x1.5dd40ep-5
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 36: gelu_none paper forward: XHalfPlus, in x^2, degree 5
        1.2578125f,  // c[0] = 0x1.42p+0
        0.68359375f,  // c[1] = 0x1.5ep-1
        -0.2060546875f,  // c[2] = -0x1.a6p-3
        0.1259765625f,  // c[3] = 0x1.02p-3
        -0.1513671875f,  // c[4] = -0x1.36p-3
        0.08935546875f,  // c[5] = 0x1.6ep-4
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 37: gelu_none paper backward_direct: HalfPlusOdd, in x^2, degree 4
        0.2109527587890625f,  // c[0] = 0x1.b008p-3
        -0.12717437744140625f,  // c[1] = -0x1.0474p-3
        0.116626739501953125f,  // c[2] = 0x1.ddb4p-4
        -0.1868438720703125f,  // c[3] = -0x1.7ea8p-3
        0.1378726959228515625f,  // c[4] = 0x1.1a5dp-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 38: gelu_none paper backward_matched: HalfPlusOdd, in x^2, degree 4
        0.2109527587890625f,  // c[0] = 0x1.b008p-3
        -0.12717437744140625f,  // c[1] = -0x1.0474p-3
        0.116626739501953125f,  // c[2] = 0x1.ddb4p-4
        -0.1868438720703125f,  // c[3] = -0x1.7ea8p-3
        0.1378726959228515625f,  // c[4] = 0x1.1a5dp-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 39: gelu_tanh paper forward: XHalfPlus, in x^2, degree 5
        1.2578125f,  // c[0] = 0x1.42p+0
        0.68359375f,  // c[1] = 0x1.5ep-1
        -0.2041015625f,  // c[2] = -0x1.a2p-3
        0.1259765625f,  // c[3] = 0x1.02p-3
        -0.1533203125f,  // c[4] = -0x1.3ap-3
        0.08935546875f,  // c[5] = 0x1.6ep-4
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 40: gelu_tanh paper backward_direct: HalfPlusOdd, in x^2, degree 4
        0.2109527587890625f,  // c[0] = 0x1.b008p-3
        -0.12596893310546875f,  // c[1] = -0x1.01fcp-3
        0.116626739501953125f,  // c[2] = 0x1.ddb4p-4
        -0.1892547607421875f,  // c[3] = -0x1.8398p-3
        0.1378726959228515625f,  // c[4] = 0x1.1a5dp-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
    {  // 41: gelu_tanh paper backward_matched: HalfPlusOdd, in x^2, degree 4
        0.2109527587890625f,  // c[0] = 0x1.b008p-3
        -0.12596893310546875f,  // c[1] = -0x1.01fcp-3
        0.116626739501953125f,  // c[2] = 0x1.ddb4p-4
        -0.1892547607421875f,  // c[3] = -0x1.8398p-3
        0.1378726959228515625f,  // c[4] = 0x1.1a5dp-3
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
        0.0f,
    },
};

// The ops (family.h's TG_FAMILY_OPS) in each tier: X(op, tier, kind, forward program,
// forward form, forward coefficients, forward variable, derivative form, derivative
// coefficients, derivative variable), the shapes of family_coeffs.h's TG_FAMILY_SHAPES.
#define TG_FAMILY_OPS(X) \
  X(sigmoid, accurate, PLAIN, 0, TG_HALF_PLUS_ODD, 12, TG_ABS, TG_EVEN, 12, TG_ABS) \
  X(sigmoid, paper, PLAIN, 12, TG_HALF_PLUS_ODD, 3, TG_ABS, TG_EVEN, 5, TG_ABS) \
  X(tanh, accurate, PLAIN, 3, TG_ODD, 13, TG_ABS, TG_EVEN, 13, TG_ABS) \
  X(tanh, paper, PLAIN, 15, TG_ODD, 4, TG_ABS, TG_EVEN, 4, TG_ABS) \
  X(silu, accurate, PLAIN, 6, TG_X_HALF_PLUS_EVEN, 14, TG_ABS, TG_HALF_PLUS_ODD, 14, TG_ABS) \
  X(silu, paper, PLAIN, 18, TG_X_HALF_PLUS, 4, TG_SQUARE, TG_HALF_PLUS_ODD, 3, TG_SQUARE) \
  X(softcap, accurate, SCALED, 3, TG_ODD, 13, TG_ABS, TG_EVEN, 13, TG_ABS) \
  X(softcap, paper, SCALED, 15, TG_ODD, 4, TG_ABS, TG_EVEN, 4, TG_ABS) \
  X(swiglu, accurate, GATED, 6, TG_X_HALF_PLUS_EVEN, 14, TG_ABS, TG_HALF_PLUS_ODD, 14, TG_ABS) \
  X(swiglu, paper, GATED, 18, TG_X_HALF_PLUS, 4, TG_SQUARE, TG_HALF_PLUS_ODD, 3, TG_SQUARE) \
  X(exp2, accurate, PLAIN, 24, TG_EXP2_NEAREST, 6, TG_ABS, TG_EXP2_NEAREST, 6, TG_ABS) \
  X(exp2, paper, PLAIN, 27, TG_EXP2_FLOOR, 3, TG_ABS, TG_EXP2_FLOOR, 3, TG_ABS) \
  X(softplus, accurate, PLAIN, 9, TG_X_HALF_PLUS_NON_NEG, 11, TG_ABS, TG_HALF_PLUS_SIGNED, 11, TG_ABS) \
  X(softplus, paper, PLAIN, 21, TG_X_HALF_PLUS_NON_NEG, 11, TG_ABS, TG_HALF_PLUS_SIGNED, 11, TG_ABS)
// GELU's rows (family.h's TG_GELU_OPS), approximate='none' and 'tanh' of the op gelu,
// in each tier they have.
#define TG_GELU_OPS(X) \
  X(gelu_none, accurate, PLAIN, 30, TG_X_HALF_PLUS_EVEN, 9, TG_SQUARE_WINDOW, TG_HALF_PLUS_ODD, 9, TG_SQUARE_WINDOW) \
  X(gelu_none, paper, PLAIN, 36, TG_X_HALF_PLUS, 6, TG_SQUARE, TG_HALF_PLUS_ODD, 5, TG_SQUARE) \
  X(gelu_tanh, accurate, PLAIN, 33, TG_X_HALF_PLUS_EVEN, 9, TG_SQUARE_WINDOW, TG_HALF_PLUS_ODD, 9, TG_SQUARE_WINDOW) \
  X(gelu_tanh, paper, PLAIN, 39, TG_X_HALF_PLUS, 6, TG_SQUARE, TG_HALF_PLUS_ODD, 5, TG_SQUARE)
// Every row of the kernels' table.
#define TG_KERNEL_OPS(X) TG_FAMILY_OPS(X) TG_GELU_OPS(X)

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

// One kernel pair per op kind, instantiated per op, tier and storage type: OP##_##TIER names
// the pair, PF is its forward program, (FF, NF, VF) and (FD, ND, VD) the shapes. One element
// per thread, the grid has n threads (or more: hence the guard). Storage is widened to float
// and rounded once.
#define TG_PLAIN_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, T, NAME)                   \
  kernel void OP##_##TIER##_forward_##NAME(device const T* x [[buffer(0)]],              \
                                           device T* out [[buffer(1)]],                  \
                                           constant long& n [[buffer(2)]],               \
                                           uint i [[thread_position_in_grid]]) {         \
    if (i < n) out[i] = tg_store(tg_plain_forward<FF, NF, VF>(tg_load(x[i]), PF), T());  \
  }                                                                                      \
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \
                                            device const T* x [[buffer(1)]],             \
                                            device T* out [[buffer(2)]],                 \
                                            constant long& n [[buffer(3)]],              \
                                            constant long& d [[buffer(4)]],              \
                                            uint i [[thread_position_in_grid]]) {        \
    if (i < n)                                                                           \
      out[i] = tg_store(                                                                 \
          tg_plain_backward<FD, ND, VD>(tg_load(g[i]), tg_load(x[i]), int(d)), T());     \
  }

#define TG_SCALED_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, T, NAME)                  \
  kernel void OP##_##TIER##_forward_##NAME(device const T* x [[buffer(0)]],              \
                                           device T* out [[buffer(1)]],                  \
                                           constant long& n [[buffer(2)]],               \
                                           constant float& inv [[buffer(3)]],            \
                                           constant float& cap [[buffer(4)]],            \
                                           uint i [[thread_position_in_grid]]) {         \
    if (i < n)                                                                           \
      out[i] =                                                                           \
          tg_store(tg_scaled_forward<FF, NF, VF>(tg_load(x[i]), PF, inv, cap), T());     \
  }                                                                                      \
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \
                                            device const T* x [[buffer(1)]],             \
                                            device T* out [[buffer(2)]],                 \
                                            constant long& n [[buffer(3)]],              \
                                            constant long& d [[buffer(4)]],              \
                                            constant float& inv [[buffer(5)]],           \
                                            uint i [[thread_position_in_grid]]) {        \
    if (i < n)                                                                           \
      out[i] = tg_store(                                                                 \
          tg_scaled_backward<FD, ND, VD>(tg_load(g[i]), tg_load(x[i]), int(d), inv),     \
          T());                                                                          \
  }

#define TG_GATED_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, T, NAME)                   \
  kernel void OP##_##TIER##_forward_##NAME(device const T* a [[buffer(0)]],              \
                                           device const T* b [[buffer(1)]],              \
                                           device T* out [[buffer(2)]],                  \
                                           constant long& n [[buffer(3)]],               \
                                           uint i [[thread_position_in_grid]]) {         \
    if (i < n)                                                                           \
      out[i] =                                                                           \
          tg_store(tg_gated_forward<FF, NF, VF>(tg_load(a[i]), tg_load(b[i]), PF), T()); \
  }                                                                                      \
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \
                                            device const T* a [[buffer(1)]],             \
                                            device const T* b [[buffer(2)]],             \
                                            device T* out_a [[buffer(3)]],               \
                                            device T* out_b [[buffer(4)]],               \
                                            constant long& n [[buffer(5)]],              \
                                            constant long& d [[buffer(6)]],              \
                                            uint i [[thread_position_in_grid]]) {        \
    if (i < n) {                                                                         \
      /* every input is read before either output is written: out_a or out_b may be */   \
      /* one of the inputs */                                                            \
      const tg_pair r = tg_gated_backward<FF, NF, VF, FD, ND, VD>(                       \
          tg_load(g[i]), tg_load(a[i]), tg_load(b[i]), PF, int(d));                      \
      out_a[i] = tg_store(r.first, T());                                                 \
      out_b[i] = tg_store(r.second, T());                                                \
    }                                                                                    \
  }

// Every op in every tier for every storage type: <op>_<tier>_forward_<type>,
// <op>_<tier>_backward_<type>.
#define TG_FAMILY_KERNELS(OP, TIER, KIND, PF, FF, NF, VF, FD, ND, VD)     \
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, float, float) \
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, half, half)   \
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, tg_bf16, bfloat)

TG_KERNEL_OPS(TG_FAMILY_KERNELS)
