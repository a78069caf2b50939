// The kernels' benchmark switches (kernels/cpu/hooks.h) as probes of the benchmark's namespace,
// torch.ops.turbogelu_bench (experiments/probes.py). Compiled only with the probes
// (TURBOGELU_BENCH_PROBES=1): the shipped extension has no turbogelu_bench ops.
#include <torch/library.h>

#include "hooks.h"

TORCH_LIBRARY_FRAGMENT(turbogelu_bench, m) {
  m.def("_set_parallel_grain(int grain) -> int", &turbogelu::hooks::set_parallel_grain);
  m.def("_set_poly_scheme(str scheme) -> str", &turbogelu::hooks::set_poly_scheme);
  m.def("_set_sized_cells(bool on) -> bool", &turbogelu::hooks::set_sized_cells);
}
