//! A part of kernels/mps/family_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines.
#include <metal_stdlib>
using namespace metal;

// Fuse exactly where fma() is written, and keep IEEE semantics for NaN, inf and -0.0
// (the default fast math may assume there is no NaN).
#if __METAL_VERSION__ >= 320
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
#endif

