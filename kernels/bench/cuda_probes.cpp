// A probe of the benchmark's namespace in CUDA builds with the probes (TURBOGELU_BENCH_PROBES=1):
// how the kernels sized their last grid, [blocks, blocks per SM, SMs] (cuda::last_launch;
// tests/test_cuda.py checks it against the registers that cuobjdump reports).
#include <torch/library.h>

#include <cstdint>
#include <vector>

#include "../cuda/cuda_kernels.h"

namespace {

std::vector<int64_t> cuda_last_launch() {
  const turbogelu::cuda::LaunchRecord r = turbogelu::cuda::last_launch();
  return {r.blocks, r.blocks_per_sm, r.sms};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(turbogelu_bench, m) {
  m.def("_cuda_last_launch() -> int[]", &cuda_last_launch);
}
