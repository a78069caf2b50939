// The kernels' process-wide switches that only the benchmark, the notebooks and the tests
// turn (defined in dispatch.cpp). They are ops only in builds with the benchmark's probes
// (TURBOGELU_BENCH_PROBES=1, as `make build` sets): kernels/bench/cpu_hooks.cpp registers them
// as torch.ops.turbogelu_bench._set_poly_scheme, _set_parallel_grain and _set_sized_cells.
#pragma once

#include <c10/util/string_view.h>

#include <cstdint>
#include <string>

namespace turbogelu {
namespace hooks {

// Evaluate P by "horner" (the default) or "estrin"; returns the previous scheme.
std::string set_poly_scheme(c10::string_view name);
// Elements per parallel chunk; returns the previous value.
int64_t set_parallel_grain(int64_t grain);
// Whether 16-bit cells calls take their format's own tables (true, the default) or the float32
// ones (to time the two programs side by side); returns the previous setting.
bool set_sized_cells(bool on);

}  // namespace hooks
}  // namespace turbogelu
