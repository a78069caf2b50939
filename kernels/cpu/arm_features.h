// ARM64's optional CPU features that the kernels use, as the operating system reports them:
// the BF16 extension (BFCVTN: kernels_neonbf16.cpp's store). Linux: getauxval's AT_HWCAP2
// bit HWCAP2_BF16; macOS: the sysctl hw.optional.arm.FEAT_BF16. No torch here: dispatch.cpp
// and tests/neon_harness (run under qemu-aarch64 with and without the feature) share it.
#pragma once

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>

#include <cstddef>
#endif

namespace turbogelu {
namespace cpu {

inline bool arm_has_bf16() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP2) & (1UL << 14)) != 0;  // HWCAP2_BF16 of Linux's asm/hwcap.h
#elif defined(__aarch64__) && defined(__APPLE__)
  int on = 0;
  size_t size = sizeof on;
  return sysctlbyname("hw.optional.arm.FEAT_BF16", &on, &size, nullptr, 0) == 0 && on != 0;
#else
  return false;
#endif
}

}  // namespace cpu
}  // namespace turbogelu
