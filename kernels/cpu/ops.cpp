// The CPU operators of every function: GELU (ops_common.h's semantics; approximate= picks
// one of its two rows of the kernels' table) and the activation family (sigmoid, tanh, silu,
// softcap, swiglu, exp2, softplus; ops_common.h's semantics, registered by
// family_library.h), all over the family's kernels (family_loops.h, family_eval.h) of the
// instruction set the calling thread runs, split over threads and stored alike (dispatch.h);
// softmax by exp2; the from-output backwards; and the Autograd guards of the mutating forms,
// for every device. GELU's run-time-coefficient kernels (loops.h; poly_ops.cpp's poly_gelu,
// and the benchmark's Estrin scheme) are launched from here too.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch.h"
#include "launch.h"
#include "turbogelu/family_library.h"
#include "turbogelu/ops_common.h"

namespace turbogelu {
namespace {

// Whether a call of a program runs its cells kernel: where the call has cells tables (the
// accurate tier of GELU, sigmoid, tanh and SiLU, and softcap and SwiGLU through them) and the
// CPU program is "cells" (by default on AVX-512: dispatch.cpp).
bool runs_cells_of(const FamilyCall* call, Tier tier) {
  return call != nullptr && call->fcells != nullptr && call->dcells != nullptr &&
         tier == kTier_accurate && cpu::runs_cells();
}

// The call as dtype index d runs it: a 16-bit format's own cells tables where the call runs
// cells and the format has them (family.h's sized_cells_call).
FamilyCall for_dtype(FamilyOp op, Tier tier, int d, const FamilyCall& c) {
  if ((d != cpu::kF16 && d != cpu::kBF16) || !runs_cells_of(&c, tier) || !cpu::sized_cells())
    return c;
  return sized_cells_call(family_op(op, tier), c, d == cpu::kF16);
}

// The kernel of (op, tier) for dtype index d: this instruction set's, else the scalar table's.
// With the call of a program (not the from-output backward): its cells kernel instead where it
// runs one (runs_cells_of).
template <class Pick>
auto pick(FamilyOp op, Tier tier, int d, Pick p, const FamilyCall* call = nullptr) {
  const int i = runs_cells_of(call, tier) ? family_cells_index(op) : family_index(op, tier);
  const auto f = p(cpu::current_kernel_table().family[i])[d];
  return f != nullptr ? f : p(cpu::scalar_table().family[i])[d];
}

struct CpuFamilyBackend {
  static void check_device(const at::Tensor& t, const at::Tensor&, const char* op,
                           const char* what) {
    cpu::check_on_cpu(t, op, what);
  }
  struct Guard {
    explicit Guard(const at::Tensor&) {}
  };

  static void launch_unary(FamilyOp op, Tier tier, const at::Tensor& x, const at::Tensor& out,
                           const FamilyCall& call) {
    const int64_t n = x.numel();
    if (n == 0) return;
    const int d = cpu::dtype_index_of(x, family_op(op).name);
    const FamilyCall c = for_dtype(op, tier, d, call);
    const auto fn = pick(op, tier, d, [](const cpu::FamilyKernels& k) { return k.unary; }, &c);
    const char* xp = static_cast<const char*>(x.const_data_ptr());
    char* op_ = static_cast<char*>(out.data_ptr());
    const int64_t es = x.element_size(), grain = cpu::parallel_grain();
    const bool stream = cpu::stream_output(op_, es, n, 2 * n * es, grain);
    at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
      fn(xp + b * es, op_ + b * es, e - b, c, stream);
    });
  }

  static void launch_binary(FamilyOp op, Tier tier, const at::Tensor& a, const at::Tensor& b,
                            const at::Tensor& out, const FamilyCall& c) {
    launch_two(op, tier, a, b, out, c, [](const cpu::FamilyKernels& k) { return k.binary; }, true);
  }

  // grad f'(x) from the saved y = f(x) (family.h's TG_FROM_OUTPUT_OPS): no program; the
  // call holds softcap's 1/cap.
  static void launch_from_output(FamilyOp op, const at::Tensor& grad, const at::Tensor& y,
                                 const at::Tensor& out, const FamilyCall& c) {
    launch_two(
        op, kTier_accurate, grad, y, out, c,
        [](const cpu::FamilyKernels& k) { return k.from_output; }, false);
  }

  // Two inputs, one output, by the kernel `member` picks from a table entry (`program`: the
  // call's programs run, so its cells kernel may be taken).
  template <class Member>
  static void launch_two(FamilyOp op, Tier tier, const at::Tensor& a, const at::Tensor& b,
                         const at::Tensor& out, const FamilyCall& call, Member member,
                         bool program) {
    const int64_t n = a.numel();
    if (n == 0) return;
    const int d = cpu::dtype_index_of(a, family_op(op).name);
    const FamilyCall c = program ? for_dtype(op, tier, d, call) : call;
    const auto fn = pick(op, tier, d, member, program ? &c : nullptr);
    const char* ap = static_cast<const char*>(a.const_data_ptr());
    const char* bp = static_cast<const char*>(b.const_data_ptr());
    char* op_ = static_cast<char*>(out.data_ptr());
    const int64_t es = a.element_size(), grain = cpu::parallel_grain();
    const bool stream = cpu::stream_output(op_, es, n, 3 * n * es, grain);
    at::parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
      fn(ap + lo * es, bp + lo * es, op_ + lo * es, hi - lo, c, stream);
    });
  }

  static void launch_pair(FamilyOp op, Tier tier, const at::Tensor& g, const at::Tensor& a,
                          const at::Tensor& b, const at::Tensor& out_a, const at::Tensor& out_b,
                          const FamilyCall& c) {
    const int64_t n = a.numel();
    if (n == 0) return;
    const int d = cpu::dtype_index_of(a, family_op(op).name);
    const auto fn = pick(op, tier, d, [](const cpu::FamilyKernels& k) { return k.pair; }, &c);
    const char* gp = static_cast<const char*>(g.const_data_ptr());
    const char* ap = static_cast<const char*>(a.const_data_ptr());
    const char* bp = static_cast<const char*>(b.const_data_ptr());
    char* oa = static_cast<char*>(out_a.data_ptr());
    char* ob = static_cast<char*>(out_b.data_ptr());
    const int64_t es = a.element_size(), grain = cpu::parallel_grain();
    // Streaming stores when the call's bytes ask for them and one head aligns both outputs
    // (two tensors from the allocator do: each starts on a 64-byte boundary).
    const bool same_line_offset =
        ((reinterpret_cast<uintptr_t>(oa) ^ reinterpret_cast<uintptr_t>(ob)) & 63) == 0;
    const bool stream = same_line_offset && cpu::stream_output(oa, es, n, 5 * n * es, grain) &&
                        cpu::stream_output(ob, es, n, 5 * n * es, grain);
    at::parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
      fn(gp + lo * es, ap + lo * es, bp + lo * es, oa + lo * es, ob + lo * es, hi - lo, c, stream);
    });
  }
};
using T = at::Tensor;
using S = c10::string_view;

// ---------------------------------------------------------------- GELU
// gelu(x) ~ x (1/2 + x P(z)), gelu'(x) ~ 1/2 + x Q(z), z = fma(x^2, 2/R^2, -1), |x| <= R
// (gelu_coeffs.h, generated), or by default on AVX-512 CPUs (TURBOGELU_CPU_KERNEL=auto|poly|
// cells) a cubic in each of 32 cells of x (turbogelu/approx/cells.py): its rows of the
// kernels' table, run as every family op's. With the benchmark's Estrin scheme
// (turbogelu_bench._set_poly_scheme) the run-time-coefficient kernels evaluate the same
// coefficients instead (the shipped ops stay Horner's otherwise).

// The run-time-coefficient kernels (loops.h's forward_any / backward_any): any compiled
// degree, Horner or Estrin; never the cells.
void launch_poly_forward(const T& x, const T& out, const PolyCoeffs& k) {
  const int d = cpu::dtype_index_of(x, "gelu");
  const cpu::KernelTable& table = cpu::current_kernel_table();
  const auto fn = table.forward[d] != nullptr ? table.forward[d] : cpu::scalar_table().forward[d];
  const int64_t n = x.numel();
  if (n == 0) return;
  const char* xp = static_cast<const char*>(x.const_data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t es = x.element_size(), grain = cpu::parallel_grain();
  const bool stream = cpu::stream_output(op, es, n, 2 * n * es, grain);
  const Scheme s = current_scheme();
  TORCH_CHECK(fn(xp, op, 0, k, s, false), "turbogelu: no kernel compiled for degree ", k.degree);
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    fn(xp + b * es, op + b * es, e - b, k, s, stream);
  });
}

void launch_poly_backward(const T& g, const T& x, const T& out, const PolyCoeffs& k) {
  const int d = cpu::dtype_index_of(x, "gelu_backward");
  const cpu::KernelTable& table = cpu::current_kernel_table();
  const auto fn =
      table.backward[d] != nullptr ? table.backward[d] : cpu::scalar_table().backward[d];
  const int64_t n = x.numel();
  if (n == 0) return;
  const char* gp = static_cast<const char*>(g.const_data_ptr());
  const char* xp = static_cast<const char*>(x.const_data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t es = x.element_size(), grain = cpu::parallel_grain();
  const bool stream = cpu::stream_output(op, es, n, 3 * n * es, grain);
  const Scheme s = current_scheme();
  TORCH_CHECK(fn(gp, xp, op, 0, k, s, false), "turbogelu: no kernel compiled for degree ",
              k.degree);
  at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    fn(gp + b * es, xp + b * es, op + b * es, e - b, k, s, stream);
  });
}

// ops::GeluOps' backend on the CPU.
struct CpuGeluBackend {
  static void check_device(const T& t, const T&, const char* op, const char* what) {
    cpu::check_on_cpu(t, op, what);
  }
  struct Guard {
    explicit Guard(const T&) {}
  };
  // The Estrin scheme evaluates the accurate tier's coefficients: the paper tier ignores it.
  static void launch_forward(const T& x, const T& out, const ops::GeluProgram& p) {
    if (current_scheme() == Scheme::Estrin && p.tier == kTier_accurate)
      return launch_poly_forward(x, out, p.k);
    CpuFamilyBackend::launch_unary(p.row, p.tier, x, out, ops::gelu_call(p));
  }
  static void launch_backward(const T& g, const T& x, const T& out, const ops::GeluProgram& p) {
    if (current_scheme() == Scheme::Estrin && p.tier == kTier_accurate)
      return launch_poly_backward(g, x, out, p.k);
    CpuFamilyBackend::launch_binary(p.row, p.tier, g, x, out, ops::gelu_call(p));
  }
};
using CpuGeluOps = ops::GeluOps<CpuGeluBackend>;

// ---------------------------------------------------------------- softmax by exp2
// In float32, per vector along dim: m = its max, e = exp2(fl(fl(x - m) log2(e))) by the exp2
// op's element function in the tier asked for, s = the sum of e in an order fixed for every
// instruction set, y = e * fl(1/s) rounded once to x's dtype (family_loops.h). A NaN makes
// the whole vector NaN, as torch.softmax's. Two kernels give the same bits: rows of at least
// kSoftmaxRowMin along the last dim go row by row; shorter rows and vectors along any other
// dim go up to 32 side by side in SIMD lanes, read in place (no transposing copy). float64 is
// refused: the program is float32's.
constexpr int64_t kSoftmaxRowMin = 128;

// A thread's float32 scratch of n values on a 64-byte boundary: the kernels' full-vector
// loads and stores to it would otherwise straddle two cache lines each.
struct SoftmaxScratch {
  explicit SoftmaxScratch(int64_t n) : buf(static_cast<size_t>(n) + 16) {}
  float* data() {
    const auto p = reinterpret_cast<uintptr_t>(buf.data());
    return reinterpret_cast<float*>((p + 63) & ~static_cast<uintptr_t>(63));
  }
  std::vector<float> buf;
};

at::Tensor softmax_cpu(const T& x, int64_t dim, S tier_name) {
  cpu::check_on_cpu(x, "softmax", "x");
  ops::check_dtype(x, "softmax");
  TORCH_CHECK_TYPE(x.scalar_type() != at::kDouble,
                   "turbogelu.softmax: float64 is not supported (the exp2 program is float32's; "
                   "use torch.softmax)");
  TORCH_CHECK_VALUE(tier_name == "accurate" || tier_name == "paper",
                    "turbogelu.softmax: tier must be 'accurate' or 'paper', got '", tier_name, "'");
  TORCH_CHECK(x.dim() > 0, "turbogelu.softmax: x must have at least one dimension");
  Tier tier;
  const FamilyCall c = ops::family_call(kFamily_exp2, tier_name, "default", 1.0, &tier);
  const int64_t d = at::maybe_wrap_dim(dim, x.dim());
  const T xc = x.contiguous();
  T y = at::empty(xc.sizes(), xc.options());
  const int64_t cols = xc.size(d), lanes = cols == 0 ? 0 : xc.numel() / cols;
  if (lanes == 0) return y;
  const int64_t inner = xc.stride(d);  // contiguous: the product of the sizes after d
  const int di = cpu::dtype_index_of(xc, "softmax");
  const char* xp = static_cast<const char*>(xc.const_data_ptr());
  char* yp = static_cast<char*>(y.data_ptr());
  const int64_t grain = std::max<int64_t>(1, cpu::parallel_grain() / cols);
  if (inner == 1 && cols >= kSoftmaxRowMin) {
    const auto fn =
        pick(kFamily_exp2, tier, di, [](const cpu::FamilyKernels& k) { return k.softmax; });
    const int64_t row_bytes = cols * xc.element_size();
    at::parallel_for(0, lanes, grain, [&](int64_t lo, int64_t hi) {
      SoftmaxScratch scratch(cols);
      fn(xp + lo * row_bytes, yp + lo * row_bytes, hi - lo, cols, c, scratch.data());
    });
  } else {
    const auto fn =
        pick(kFamily_exp2, tier, di, [](const cpu::FamilyKernels& k) { return k.softmax_lanes; });
    at::parallel_for(0, lanes, grain, [&](int64_t lo, int64_t hi) {
      SoftmaxScratch scratch((inner == 1 ? 2 : 1) * cols * cpu::kSoftmaxLaneBlock);
      fn(xp, yp, lo, hi, cols, inner, c, scratch.data());
    });
  }
  return y;
}

// ---------------------------------------------------------------- backward from the result
// <op>_backward_from_output(grad, y[, cap]): autograd's default backward of sigmoid, tanh,
// exp2 and softcap (turbogelu/ops.py's FROM_OUTPUT), from the saved result y = f(x) by
// PyTorch's formulas (family.h's from_output), through the family's loops, stores and thread
// split. Other devices run PyTorch's ops (turbogelu/ops.py).

std::string from_output_name(FamilyOp op) {
  return std::string(family_op(op).name) + "_backward_from_output";
}

// The checks, and the call (softcap: its cap checked and 1/cap rounded as the forward's).
FamilyCall check_from_output(FamilyOp op, const T& grad, const T& y, double cap) {
  const std::string name = from_output_name(op);
  cpu::check_on_cpu(y, name.c_str(), "y");
  cpu::check_on_cpu(grad, name.c_str(), "grad");
  ops::check_dtype(y, name.c_str());
  ops::check_like(grad, y, name.c_str(), "grad", "y");
  Tier tier;
  return ops::family_call(op, "accurate", "default", cap, &tier);
}

T from_output_cpu(FamilyOp op, const T& grad, const T& y, double cap) {
  const FamilyCall c = check_from_output(op, grad, y, cap);
  T out = at::empty_like(y);
  CpuFamilyBackend::launch_from_output(op, ops::in_layout_of(grad, out), ops::in_layout_of(y, out),
                                       out, c);
  return out;
}

void from_output_out_cpu(FamilyOp op, const T& grad, const T& y, double cap, const T& out) {
  const FamilyCall c = check_from_output(op, grad, y, cap);
  const std::string name = from_output_name(op);
  cpu::check_on_cpu(out, name.c_str(), "out");
  ops::check_like(out, y, name.c_str(), "out", "y");
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, y);
  at::assert_no_partial_overlap(out, grad);
  // out may be grad or y itself: each element is read before it is written.
  const T target = ops::result_buffer(out, y);
  CpuFamilyBackend::launch_from_output(op, ops::in_layout_of(grad, target),
                                       ops::in_layout_of(y, target), target, c);
  if (!target.is_same(out)) out.copy_(target);
}

// The schemas' forms: (grad, y) for the Plain ops, (grad, y, cap) for softcap.
template <FamilyOp Op>
T from_output_plain(const T& grad, const T& y) {
  return from_output_cpu(Op, grad, y, 1.0);
}
template <FamilyOp Op>
void from_output_plain_out(const T& grad, const T& y, const T& out) {
  from_output_out_cpu(Op, grad, y, 1.0, out);
}
T softcap_from_output(const T& grad, const T& y, double cap) {
  return from_output_cpu(kFamily_softcap, grad, y, cap);
}
void softcap_from_output_out(const T& grad, const T& y, double cap, const T& out) {
  from_output_out_cpu(kFamily_softcap, grad, y, cap, out);
}

// ---------------------------------------------------------------- autograd guards
// The mutating forms have no derivative formula. Rather than let autograd silently skip
// them, refuse when a gradient would be needed, run them below autograd, and bump the version
// counter of what they write, so that a tensor saved for another op's backward is caught if
// it is overwritten.

void refuse_grad(const std::string& what, std::initializer_list<const at::Tensor*> ts) {
  if (!at::GradMode::is_enabled()) return;
  for (const at::Tensor* t : ts)
    TORCH_CHECK(!t->requires_grad(), "turbogelu.", what,
                ": the in-place / out= form does not support autograd (an input requires "
                "grad); use the functional form, or run under torch.no_grad()");
}

template <class Sig>
c10::TypedOperatorHandle<Sig> find_op(const std::string& name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload).typed<Sig>();
}

// Call op below autograd with args after the guard, and bump the versions of what it wrote.
template <class Sig, class... Args>
void below_autograd(const c10::TypedOperatorHandle<Sig>& op, const std::string& what,
                    std::initializer_list<const at::Tensor*> inputs,
                    std::initializer_list<const at::Tensor*> written, Args&&... args) {
  refuse_grad(what, inputs);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    op.call(std::forward<Args>(args)...);
  }
  for (const at::Tensor* t : written) torch::autograd::impl::bump_version(*t);
}

std::string qualified(FamilyOp op, const char* suffix) {
  return std::string("turbogelu::") + family_op(op).name + suffix;
}

template <FamilyOp Op>
void unary_out_ag(const T& x, S tier, const T& out) {
  using Sig = void(const T&, S, const T&);
  static const auto op = find_op<Sig>(qualified(Op, ""), "out");
  below_autograd(op, std::string(family_op(Op).name) + "(out=)", {&x, &out}, {&out}, x, tier, out);
}
template <FamilyOp Op>
void unary_inplace_ag(const T& x, S tier) {
  static const auto op = find_op<void(const T&, S)>(qualified(Op, "_"), "");
  below_autograd(op, std::string(family_op(Op).name) + "_", {&x}, {&x}, x, tier);
}
template <FamilyOp Op>
void unary_backward_out_ag(const T& g, const T& x, S bw, S tier, const T& out) {
  using Sig = void(const T&, const T&, S, S, const T&);
  static const auto op = find_op<Sig>(qualified(Op, "_backward"), "out");
  below_autograd(op, std::string(family_op(Op).name) + "_backward(out=)", {&g, &x, &out}, {&out}, g,
                 x, bw, tier, out);
}
template <FamilyOp Op>
void from_output_out_ag(const T& g, const T& y, const T& out) {
  using Sig = void(const T&, const T&, const T&);
  static const auto op = find_op<Sig>("turbogelu::" + from_output_name(Op), "out");
  below_autograd(op, from_output_name(Op) + "(out=)", {&g, &y, &out}, {&out}, g, y, out);
}
void softcap_from_output_out_ag(const T& g, const T& y, double cap, const T& out) {
  using Sig = void(const T&, const T&, double, const T&);
  static const auto op = find_op<Sig>("turbogelu::softcap_backward_from_output", "out");
  below_autograd(op, "softcap_backward_from_output(out=)", {&g, &y, &out}, {&out}, g, y, cap, out);
}
void softcap_out_ag(const T& x, double cap, S tier, const T& out) {
  static const auto op = find_op<void(const T&, double, S, const T&)>("turbogelu::softcap", "out");
  below_autograd(op, "softcap(out=)", {&x, &out}, {&out}, x, cap, tier, out);
}
void softcap_inplace_ag(const T& x, double cap, S tier) {
  static const auto op = find_op<void(const T&, double, S)>("turbogelu::softcap_", "");
  below_autograd(op, "softcap_", {&x}, {&x}, x, cap, tier);
}
void softcap_backward_out_ag(const T& g, const T& x, double cap, S bw, S tier, const T& out) {
  using Sig = void(const T&, const T&, double, S, S, const T&);
  static const auto op = find_op<Sig>("turbogelu::softcap_backward", "out");
  below_autograd(op, "softcap_backward(out=)", {&g, &x, &out}, {&out}, g, x, cap, bw, tier, out);
}
void gelu_out_ag(const T& x, S approximate, S tier, const T& out) {
  static const auto op = find_op<void(const T&, S, S, const T&)>("turbogelu::gelu", "out");
  below_autograd(op, "gelu(out=)", {&x, &out}, {&out}, x, approximate, tier, out);
}
void gelu_inplace_ag(const T& x, S approximate, S tier) {
  static const auto op = find_op<void(const T&, S, S)>("turbogelu::gelu_", "");
  below_autograd(op, "gelu_", {&x}, {&x}, x, approximate, tier);
}
void gelu_backward_out_ag(const T& g, const T& x, S approximate, S bw, S tier, const T& out) {
  using Sig = void(const T&, const T&, S, S, S, const T&);
  static const auto op = find_op<Sig>("turbogelu::gelu_backward", "out");
  below_autograd(op, "gelu_backward(out=)", {&g, &x, &out}, {&out}, g, x, approximate, bw, tier,
                 out);
}
void swiglu_out_ag(const T& a, const T& b, S tier, const T& out) {
  using Sig = void(const T&, const T&, S, const T&);
  static const auto op = find_op<Sig>("turbogelu::swiglu", "out");
  below_autograd(op, "swiglu(out=)", {&a, &b, &out}, {&out}, a, b, tier, out);
}
void swiglu_backward_out_ag(const T& g, const T& a, const T& b, S bw, S tier, const T& ga,
                            const T& gb) {
  using Sig = void(const T&, const T&, const T&, S, S, const T&, const T&);
  static const auto op = find_op<Sig>("turbogelu::swiglu_backward", "out");
  below_autograd(op, "swiglu_backward(out=)", {&g, &a, &b, &ga, &gb}, {&ga, &gb}, g, a, b, bw, tier,
                 ga, gb);
}

// The registrations of the Plain ops, one per row of the table (TG_FAMILY_OPS, TG_FROM_OUTPUT_
// OPS), so that a new Plain function needs no line here; softcap and swiglu have their own.
template <FamilyOp Op>
void impl_plain_from_output(torch::Library& m, const std::string& op) {
  if constexpr (kind_of(Op) == Kind::Plain) {
    m.impl((op + "_backward_from_output").c_str(), &from_output_plain<Op>);
    m.impl((op + "_backward_from_output.out").c_str(), &from_output_plain_out<Op>);
  }
}
template <FamilyOp Op>
void impl_plain_autograd(torch::Library& m, const std::string& op) {
  if constexpr (kind_of(Op) == Kind::Plain) {
    m.impl((op + ".out").c_str(), &unary_out_ag<Op>);
    m.impl((op + "_").c_str(), &unary_inplace_ag<Op>);
    m.impl((op + "_backward.out").c_str(), &unary_backward_out_ag<Op>);
  }
}
template <FamilyOp Op>
void impl_plain_from_output_autograd(torch::Library& m, const std::string& op) {
  if constexpr (kind_of(Op) == Kind::Plain) {
    m.impl((op + "_backward_from_output.out").c_str(), &from_output_out_ag<Op>);
  }
}

// [forward, direct derivative, matched derivative]: the degrees of the programs that the
// accurate tier of a plain op (a row of the kernels' table: gelu_none, gelu_tanh, sigmoid, ...)
// runs on the CPU now in `dtype`, the cells tables' where it runs them (for_dtype's), else the
// polynomial's: turbogelu.cpu_program()'s "degrees".
std::vector<int64_t> cpu_degrees(c10::string_view name, c10::ScalarType dtype) {
  FamilyOp op = kNumFamilyOps;
#define TG_NAMED(o, fn, kind) \
  if (kind_of(kFamily_##o) == Kind::Plain && name == #o) op = kFamily_##o;
  TG_KERNEL_OPS(TG_NAMED)
#undef TG_NAMED
  TORCH_CHECK_VALUE(op != kNumFamilyOps, "turbogelu._cpu_degrees: no plain op named '", name, "'");
  const int d = cpu::dtype_index_of(dtype, "_cpu_degrees");
  std::vector<int64_t> out;
  for (const char* backward : {"direct", "matched"}) {
    Tier tier = kTier_accurate;
    const FamilyCall c =
        for_dtype(op, tier, d, ops::family_call(op, "accurate", backward, 1.0, &tier));
    const bool cells = runs_cells_of(&c, tier);
    if (out.empty()) out.push_back(cells ? c.fcells->degree : c.f.degree);
    out.push_back(cells ? c.dcells->degree : c.d.degree);
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(turbogelu, m) {
  m.def("_cpu_degrees(str op, ScalarType dtype) -> int[]", &cpu_degrees);
}

// Entry points for poly_ops.cpp (poly_gelu: coefficients given at run time), through the same
// instruction set, scheme, grain and stores as the ops.
namespace cpu {

at::Tensor forward_with(const at::Tensor& x, const PolyCoeffs& k) {
  cpu::check_on_cpu(x, "poly_gelu", "x");
  at::Tensor out = at::empty_like(x);
  launch_poly_forward(ops::in_layout_of(x, out), out, k);
  return out;
}

at::Tensor backward_with(const at::Tensor& grad, const at::Tensor& x, const PolyCoeffs& k) {
  CpuGeluOps::check_backward_args(grad, x);
  at::Tensor out = at::empty_like(x);
  launch_poly_backward(ops::in_layout_of(grad, out), ops::in_layout_of(x, out), out, k);
  return out;
}

}  // namespace cpu

TORCH_LIBRARY_IMPL(turbogelu, CPU, m) {
  m.impl("gelu", &CpuGeluOps::gelu);
  m.impl("gelu.out", &CpuGeluOps::gelu_out);
  m.impl("gelu_", &CpuGeluOps::gelu_inplace);
  m.impl("gelu_backward", &CpuGeluOps::gelu_backward);
  m.impl("gelu_backward.out", &CpuGeluOps::gelu_backward_out);
  ops::impl_family_ops<CpuFamilyBackend>(m);
  m.impl("softmax", &softmax_cpu);
#define TG_FROM_OUTPUT(op) impl_plain_from_output<kFamily_##op>(m, #op);
  TG_FROM_OUTPUT_OPS(TG_FROM_OUTPUT)
#undef TG_FROM_OUTPUT
  m.impl("softcap_backward_from_output", &softcap_from_output);
  m.impl("softcap_backward_from_output.out", &softcap_from_output_out);
}

TORCH_LIBRARY_IMPL(turbogelu, Autograd, m) {
  m.impl("gelu_", &gelu_inplace_ag);
  m.impl("gelu.out", &gelu_out_ag);
  m.impl("gelu_backward.out", &gelu_backward_out_ag);
#define TG_PLAIN(op, fn, kind) impl_plain_autograd<kFamily_##op>(m, #op);
  TG_FAMILY_OPS(TG_PLAIN)
#undef TG_PLAIN
#define TG_FROM_OUTPUT(op) impl_plain_from_output_autograd<kFamily_##op>(m, #op);
  TG_FROM_OUTPUT_OPS(TG_FROM_OUTPUT)
#undef TG_FROM_OUTPUT
  m.impl("softcap.out", &softcap_out_ag);
  m.impl("softcap_", &softcap_inplace_ag);
  m.impl("softcap_backward.out", &softcap_backward_out_ag);
  m.impl("swiglu.out", &swiglu_out_ag);
  m.impl("swiglu_backward.out", &swiglu_backward_out_ag);
  m.impl("softcap_backward_from_output.out", &softcap_from_output_out_ag);
}

}  // namespace turbogelu
