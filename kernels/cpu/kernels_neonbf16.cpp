// NEON kernels with the BF16 extension's conversion (ARMv8.6-A FEAT_BF16, optional from
// ARMv8.2-A): the "neonbf16" instruction set. Only the bfloat16 store differs from
// kernels_neon.cpp: BFCVTN / BFCVTN2 narrow eight float32 values in two instructions instead
// of the integer rounding's six. Unlike x86's vcvtne2ps2bf16, BFCVTN honours the FPCR like any
// single-precision instruction (round to nearest even, subnormals kept when FZ is clear, as
// Linux and macOS leave it), so it gives convert.h's bits for every value a kernel stores
// (tests/neon_harness checks every bfloat16 input under qemu's "max" CPU). Compiled for that
// extension by the pragma below, not by the build's flags; dispatch.cpp calls in here only
// when the CPU reports it (getauxval's HWCAP2_BF16, macOS's hw.optional.arm.FEAT_BF16).
// float32 and float16 reuse the neon table's kernels.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+bf16")
#endif

#define TG_ISA_NAMESPACE neonbf16
#include "cpu_kernels.h"
#include "family_loops.h"
#include "loops.h"
#include "neon_isa.h"

namespace turbogelu {
namespace cpu {
inline namespace neonbf16 {
namespace {

struct NeonBf16Isa : NeonIsa {
  using NeonIsa::load;
  using NeonIsa::store;
  static void store(bf16_t* p, const V (&v)[K]) {
    const bfloat16x8_t h = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(v[0].v), v[1].v);
    vst1q_u16(reinterpret_cast<uint16_t*>(p), vreinterpretq_u16_bf16(h));
  }
};

}  // namespace
}  // namespace neonbf16

const KernelTable* neonbf16_table() {
  static const KernelTable table = bf16_table_over<NeonBf16Isa>("neonbf16", neon_table());
  return &table;
}

}  // namespace cpu
}  // namespace turbogelu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else  // not ARM64: no NEON code in this build

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
const KernelTable* neonbf16_table() { return nullptr; }
}  // namespace cpu
}  // namespace turbogelu

#endif
