// GELU's CPU operators and the autograd guards of their mutating forms (the schemas:
// kernels/common/schema.cpp; the functional ops get their autograd formula in
// turbogelu/ops.py), over the run-time choices every CPU operator shares (dispatch.h,
// dispatch.cpp).
//
//   gelu(x)  ~ x (1/2 + x P(z)),  gelu'(x) ~ 1/2 + x Q(z),  z = x^2 * 2/R^2 - 1, |x| <= R
//   (kernels/include/turbogelu/poly_eval.h; coefficients in gelu_coeffs.h, generated), or,
//   by default on AVX-512 CPUs (TURBOGELU_CPU_KERNEL=auto|poly|cells), a cubic in each of 32
//   cells of x (gelu_forward_cells, same header; tables from turbogelu/approx/cells.py).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <utility>

#include "cpu_kernels.h"
#include "dispatch.h"
#include "turbogelu/gelu_coeffs.h"
#include "turbogelu/ops_common.h"

namespace turbogelu {
namespace {

using cpu::KernelTable;

// The cells table fitted to the same target as a shipped coefficient set, or nullptr.
const CellTable* cells_for(const PolyCoeffs& k) {
  using namespace coeffs;
  static const std::pair<const PolyCoeffs*, const CellTable*> pairs[] = {
      {&gelu_none_forward, &gelu_none_forward_cells},
      {&gelu_none_backward_direct, &gelu_none_backward_direct_cells},
      {&gelu_none_backward_matched, &gelu_none_backward_matched_cells},
      {&gelu_tanh_forward, &gelu_tanh_forward_cells},
      {&gelu_tanh_backward_direct, &gelu_tanh_backward_direct_cells},
      {&gelu_tanh_backward_matched, &gelu_tanh_backward_matched_cells},
  };
  for (const auto& p : pairs)
    if (p.first == &k) return p.second;
  return nullptr;
}

void launch_forward_cpu(const at::Tensor& x, const at::Tensor& out, const PolyCoeffs& k) {
  const int d = cpu::dtype_index_of(x, "gelu");
  const KernelTable& table = cpu::current_kernel_table();
  const auto fn = table.forward[d] != nullptr ? table.forward[d] : cpu::scalar_table().forward[d];
  const int64_t n = x.numel();
  if (n == 0) return;
  const char* xp = static_cast<const char*>(x.const_data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t es = x.element_size();
  const int64_t grain = cpu::parallel_grain();
  const bool stream = cpu::stream_output(op, es, n, 2 * n * es, grain);
  const CellTable* cells = cpu::runs_cells() ? cells_for(k) : nullptr;
  if (cells != nullptr) {
    const auto cf = table.cells_forward[d] != nullptr ? table.cells_forward[d]
                                                      : cpu::scalar_table().cells_forward[d];
    at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
      cf(xp + b * es, op + b * es, e - b, *cells, stream);
    });
    return;
  }
  const Scheme s = current_scheme();
  TORCH_CHECK(fn(xp, op, 0, k, s, false), "turbogelu: no kernel compiled for degree ", k.degree);
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    fn(xp + b * es, op + b * es, e - b, k, s, stream);
  });
}

void launch_backward_cpu(const at::Tensor& g, const at::Tensor& x, const at::Tensor& out,
                         const PolyCoeffs& k) {
  const int d = cpu::dtype_index_of(x, "gelu_backward");
  const KernelTable& table = cpu::current_kernel_table();
  const auto fn =
      table.backward[d] != nullptr ? table.backward[d] : cpu::scalar_table().backward[d];
  const int64_t n = x.numel();
  if (n == 0) return;
  const char* gp = static_cast<const char*>(g.const_data_ptr());
  const char* xp = static_cast<const char*>(x.const_data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t es = x.element_size();
  const int64_t grain = cpu::parallel_grain();
  const bool stream = cpu::stream_output(op, es, n, 3 * n * es, grain);
  const CellTable* cells = cpu::runs_cells() ? cells_for(k) : nullptr;
  if (cells != nullptr) {
    const auto cb = table.cells_backward[d] != nullptr ? table.cells_backward[d]
                                                       : cpu::scalar_table().cells_backward[d];
    at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
      cb(gp + b * es, xp + b * es, op + b * es, e - b, *cells, stream);
    });
    return;
  }
  const Scheme s = current_scheme();
  TORCH_CHECK(fn(gp, xp, op, 0, k, s, false), "turbogelu: no kernel compiled for degree ",
              k.degree);
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    fn(gp + b * es, xp + b * es, op + b * es, e - b, k, s, stream);
  });
}

// ---------------------------------------------------------------- the ops

// The CPU backend of ops::GeluOps (kernels/include/turbogelu/ops_common.h), which holds the
// semantics every device shares.
struct CpuBackend {
  static void check_device(const at::Tensor& t, const at::Tensor&, const char* op,
                           const char* what) {
    cpu::check_on_cpu(t, op, what);
  }
  struct Guard {
    explicit Guard(const at::Tensor&) {}
  };
  static void launch_forward(const at::Tensor& x, const at::Tensor& out, const PolyCoeffs& k) {
    launch_forward_cpu(x, out, k);
  }
  static void launch_backward(const at::Tensor& g, const at::Tensor& x, const at::Tensor& out,
                              const PolyCoeffs& k) {
    launch_backward_cpu(g, x, out, k);
  }
};
using CpuOps = ops::GeluOps<CpuBackend>;

// ---------------------------------------------------------------- autograd guards
// The mutating forms have no derivative formula. Rather than let autograd silently skip
// them, refuse when a gradient would be needed, and bump the version counter of what they
// write so that a tensor saved for another op's backward is caught if it is overwritten.

void refuse_grad(const char* op, std::initializer_list<const at::Tensor*> ts) {
  if (!at::GradMode::is_enabled()) return;
  for (const at::Tensor* t : ts)
    TORCH_CHECK(!t->requires_grad(), "turbogelu.", op,
                ": the in-place / out= form does not support autograd (an input requires "
                "grad); use turbogelu.gelu, or run under torch.no_grad()");
}

void gelu_inplace_autograd(const at::Tensor& x, c10::string_view approximate) {
  refuse_grad("gelu_", {&x});
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("turbogelu::gelu_", "")
                         .typed<void(const at::Tensor&, c10::string_view)>();
    op.call(x, approximate);
  }
  torch::autograd::impl::bump_version(x);
}

void gelu_out_autograd(const at::Tensor& x, c10::string_view approximate, const at::Tensor& out) {
  refuse_grad("gelu(out=)", {&x, &out});
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("turbogelu::gelu", "out")
                         .typed<void(const at::Tensor&, c10::string_view, const at::Tensor&)>();
    op.call(x, approximate, out);
  }
  torch::autograd::impl::bump_version(out);
}

void gelu_backward_out_autograd(const at::Tensor& grad, const at::Tensor& x,
                                c10::string_view approximate, c10::string_view backward,
                                const at::Tensor& out) {
  refuse_grad("gelu_backward(out=)", {&grad, &x, &out});
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("turbogelu::gelu_backward", "out")
                         .typed<void(const at::Tensor&, const at::Tensor&, c10::string_view,
                                     c10::string_view, const at::Tensor&)>();
    op.call(grad, x, approximate, backward, out);
  }
  torch::autograd::impl::bump_version(out);
}

}  // namespace

// Entry points for the other operator files (poly_ops.cpp: coefficients given at run time).
// The same path as gelu / gelu_backward: current instruction set, scheme and grain.
namespace cpu {

at::Tensor forward_with(const at::Tensor& x, const PolyCoeffs& k) {
  cpu::check_on_cpu(x, "poly_gelu", "x");
  at::Tensor out = at::empty_like(x);
  launch_forward_cpu(ops::in_layout_of(x, out), out, k);
  return out;
}

at::Tensor backward_with(const at::Tensor& grad, const at::Tensor& x, const PolyCoeffs& k) {
  CpuOps::check_backward_args(grad, x);
  at::Tensor out = at::empty_like(x);
  launch_backward_cpu(ops::in_layout_of(grad, out), ops::in_layout_of(x, out), out, k);
  return out;
}

}  // namespace cpu

TORCH_LIBRARY_IMPL(turbogelu, CPU, m) {
  m.impl("gelu", &CpuOps::gelu);
  m.impl("gelu.out", &CpuOps::gelu_out);
  m.impl("gelu_", &CpuOps::gelu_inplace);
  m.impl("gelu_backward", &CpuOps::gelu_backward);
  m.impl("gelu_backward.out", &CpuOps::gelu_backward_out);
}

TORCH_LIBRARY_IMPL(turbogelu, Autograd, m) {
  m.impl("gelu_", &gelu_inplace_autograd);
  m.impl("gelu.out", &gelu_out_autograd);
  m.impl("gelu_backward.out", &gelu_backward_out_autograd);
}

}  // namespace turbogelu
