// ARM64 AdvSIMD (NEON) kernels: 4 float32 lanes, two vectors per block (neon_isa.h), through
// the same loops as the x86 instruction sets (loops.h, family_loops.h). AdvSIMD is part of
// every ARMv8-A core, so this table is always available on ARM64 (dispatch.cpp); elsewhere
// the file compiles to a stub. Plain stores only (neon_isa.h says why).
#if defined(__aarch64__)

#include <cmath>
#include <cstdint>
#include <cstring>

#define TG_ISA_NAMESPACE neon
#include "cpu_kernels.h"
#include "family_loops.h"
#include "loops.h"
#include "neon_isa.h"

namespace turbogelu {
namespace cpu {

const KernelTable* neon_table() {
  static const KernelTable table = {
      "neon",
      {forward_any<NeonIsa, float>, forward_any<NeonIsa, f16_t>, forward_any<NeonIsa, bf16_t>,
       nullptr},
      {backward_any<NeonIsa, float>, backward_any<NeonIsa, f16_t>, backward_any<NeonIsa, bf16_t>,
       nullptr},
      family_kernels<NeonIsa>(),
      program_forward<NeonIsa>,
  };
  return &table;
}

}  // namespace cpu
}  // namespace turbogelu

#else  // not ARM64: no NEON code in this build

#include "cpu_kernels.h"

namespace turbogelu {
namespace cpu {
const KernelTable* neon_table() { return nullptr; }
}  // namespace cpu
}  // namespace turbogelu

#endif
