// The turbogelu operator library: schemas, the CPU implementation, and the autograd guards of
// the mutating forms. The functional ops get their autograd formula in turbogelu/ops.py.
//
//   gelu(x)  ~ x (1/2 + x P(z)),  gelu'(x) ~ 1/2 + x Q(z),  z = x^2 * 2/R^2 - 1, |x| <= R
//   (kernels/include/turbogelu/poly_eval.h; coefficients in gelu_coeffs.h, generated).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "cpu_kernels.h"
#include "turbogelu/gelu_coeffs.h"

namespace turbogelu {
namespace {

using cpu::KernelTable;

// ---------------------------------------------------------------- instruction-set choice

bool cpu_has_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return cpu::avx512_table() != nullptr && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

bool cpu_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return cpu::avx2_table() != nullptr && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

// Best first.
std::vector<std::string> available_isas() {
  std::vector<std::string> out;
  if (cpu_has_avx512()) out.push_back("avx512");
  if (cpu_has_avx2()) out.push_back("avx2");
  out.push_back("scalar");
  return out;
}

const KernelTable* table_for(const std::string& name) {
  const auto avail = available_isas();
  if (name == "auto") return table_for(avail.front());
  const bool known = name == "avx512" || name == "avx2" || name == "scalar";
  TORCH_CHECK_VALUE(known, "turbogelu: unknown CPU instruction set '", name,
                    "'; choose auto, avx512, avx2 or scalar (TURBOGELU_CPU_ISA)");
  bool ok = false;
  for (const auto& a : avail) ok = ok || a == name;
  TORCH_CHECK(ok, "turbogelu: the CPU instruction set '", name,
              "' is not available on this machine (available: ", c10::Join(", ", avail), ")");
  if (name == "avx512") return cpu::avx512_table();
  if (name == "avx2") return cpu::avx2_table();
  return &cpu::scalar_table();
}

// Chosen once from TURBOGELU_CPU_ISA (auto | avx512 | avx2 | scalar); tests switch it with
// turbogelu::_set_cpu_isa. An unusable value makes every call fail with the reason.
std::atomic<const KernelTable*>& isa_slot() {
  static std::atomic<const KernelTable*> slot{nullptr};
  return slot;
}

const KernelTable& current_table() {
  const KernelTable* t = isa_slot().load(std::memory_order_acquire);
  if (t == nullptr) {
    const char* env = std::getenv("TURBOGELU_CPU_ISA");
    t = table_for(env != nullptr && *env != '\0' ? std::string(env) : std::string("auto"));
    isa_slot().store(t, std::memory_order_release);
  }
  return *t;
}

std::string cpu_isa() { return current_table().name; }

std::string set_cpu_isa(c10::string_view name) {
  const std::string previous = cpu_isa();
  isa_slot().store(table_for(std::string(name)), std::memory_order_release);
  return previous;
}

std::vector<std::string> cpu_isas() { return available_isas(); }

// ---------------------------------------------------------------- coefficient choice

enum class Direction { Forward, Backward };

bool is_tanh(c10::string_view approximate) {
  TORCH_CHECK_VALUE(approximate == "none" || approximate == "tanh",
                    "turbogelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  return approximate == "tanh";
}

const PolyCoeffs& forward_coeffs(c10::string_view approximate) {
  return is_tanh(approximate) ? coeffs::gelu_tanh_forward : coeffs::gelu_none_forward;
}

const PolyCoeffs& backward_coeffs(c10::string_view approximate, c10::string_view backward) {
  TORCH_CHECK_VALUE(backward == "default" || backward == "direct" || backward == "matched",
                    "turbogelu: backward must be 'default', 'direct' or 'matched', got '", backward,
                    "'");
  const bool tanh = is_tanh(approximate);
  bool direct = backward == "direct";
  if (backward == "default")
    direct = tanh ? coeffs::gelu_tanh_default_backward_is_direct
                  : coeffs::gelu_none_default_backward_is_direct;
  if (tanh) return direct ? coeffs::gelu_tanh_backward_direct : coeffs::gelu_tanh_backward_matched;
  return direct ? coeffs::gelu_none_backward_direct : coeffs::gelu_none_backward_matched;
}

// Horner is the default: `python -m turbogelu bench` times both schemes in the same process
// (the "turbogelu (Estrin)" rows), and on the AVX-512 build machine Horner is the faster
// (fewer operations; out-of-order execution overlaps independent elements, so the long
// dependency chain costs little). Estrin stays selectable for the benchmark.
std::atomic<Scheme> g_scheme{Scheme::Horner};

Scheme current_scheme() { return g_scheme.load(std::memory_order_relaxed); }

std::string scheme_name(Scheme s) { return s == Scheme::Horner ? "horner" : "estrin"; }

std::string set_poly_scheme(c10::string_view name) {
  TORCH_CHECK_VALUE(name == "horner" || name == "estrin",
                    "turbogelu: the polynomial scheme must be 'horner' or 'estrin', got '", name,
                    "'");
  return scheme_name(g_scheme.exchange(name == "horner" ? Scheme::Horner : Scheme::Estrin));
}

// ---------------------------------------------------------------- checks and layout

int dtype_index(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return cpu::kF32;
    case at::kHalf:
      return cpu::kF16;
    case at::kBFloat16:
      return cpu::kBF16;
    case at::kDouble:
      return cpu::kF64;
    default:
      TORCH_CHECK_TYPE(false, "turbogelu.", op, ": unsupported dtype ", t.scalar_type(),
                       "; supported dtypes are float32, float64, float16 and bfloat16");
  }
  return -1;
}

void check_cpu(const at::Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "turbogelu.", op, ": expected ", what,
              " on the CPU (this is the CPU kernel), got a tensor on ", t.device());
}

// Elements laid out in one dense block, so a flat loop over memory visits each exactly once.
bool flat(const at::Tensor& t) { return t.is_non_overlapping_and_dense(); }

// Grain of at::parallel_for: tensors of up to this many elements run on one thread, larger
// ones are split into chunks of at least this size. `python -m turbogelu bench --grain`
// (float32 forward, 1 vs 2 threads) on the 2-core build machine: 2 threads lose at 4K
// (0.89x), break even at 8K-16K and win from 32K (1.12x; 1.30x at 64K). A grain of 16K
// splits from 32K elements on.
constexpr int64_t kDefaultGrain = 1 << 14;
std::atomic<int64_t> g_grain{kDefaultGrain};

int64_t set_parallel_grain(int64_t grain) {
  TORCH_CHECK_VALUE(grain >= 1, "turbogelu: the parallel grain must be >= 1, got ", grain);
  return g_grain.exchange(grain);
}

void launch_forward(const at::Tensor& x, const at::Tensor& out, const PolyCoeffs& k) {
  const int d = dtype_index(x, "gelu");
  const KernelTable& table = current_table();
  const auto fn = table.forward[d] != nullptr ? table.forward[d] : cpu::scalar_table().forward[d];
  const int64_t n = x.numel();
  if (n == 0) return;
  const char* xp = static_cast<const char*>(x.const_data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t es = x.element_size();
  const Scheme s = current_scheme();
  TORCH_CHECK(fn(xp, op, 0, k, s), "turbogelu: no kernel compiled for degree ", k.degree);
  at::parallel_for(0, n, g_grain.load(std::memory_order_relaxed),
                   [&](int64_t b, int64_t e) { fn(xp + b * es, op + b * es, e - b, k, s); });
}

void launch_backward(const at::Tensor& g, const at::Tensor& x, const at::Tensor& out,
                     const PolyCoeffs& k) {
  const int d = dtype_index(x, "gelu_backward");
  const KernelTable& table = current_table();
  const auto fn =
      table.backward[d] != nullptr ? table.backward[d] : cpu::scalar_table().backward[d];
  const int64_t n = x.numel();
  if (n == 0) return;
  const char* gp = static_cast<const char*>(g.const_data_ptr());
  const char* xp = static_cast<const char*>(x.const_data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t es = x.element_size();
  const Scheme s = current_scheme();
  TORCH_CHECK(fn(gp, xp, op, 0, k, s), "turbogelu: no kernel compiled for degree ", k.degree);
  at::parallel_for(0, n, g_grain.load(std::memory_order_relaxed), [&](int64_t b, int64_t e) {
    fn(gp + b * es, xp + b * es, op + b * es, e - b, k, s);
  });
}

// ---------------------------------------------------------------- forward ops

// The kernels run over flat memory: the input(s) and the output must share one dense layout.
// That layout is at::empty_like(x)'s (x's own strides when x is dense, e.g. channels_last or
// a transpose; otherwise contiguous in x's suggested memory format), which is also what the
// fake kernels in ops.py return, so eager and traced results agree on strides.
at::Tensor in_layout_of(const at::Tensor& src, const at::Tensor& like) {
  if (flat(src) && src.strides() == like.strides()) return src;
  return at::empty_like(like).copy_(src);
}

// out= must already have x's shape. ATen's out= ops resize an empty out, but a custom op
// that resizes a mutated argument cannot be functionalized (torch.compile), so here it is an
// error in eager and traced code alike.
void check_out_shape(const at::Tensor& out, const at::Tensor& x, const char* op) {
  TORCH_CHECK(out.sizes() == x.sizes(), "turbogelu.", op, ": out has shape ", out.sizes(),
              " but x has shape ", x.sizes(), " (out= tensors are not resized)");
}

// Where an out= result is computed: `out` itself when it is dense, else a temporary.
at::Tensor result_buffer(const at::Tensor& out, const at::Tensor& x) {
  return flat(out) ? out : at::empty_like(x);
}

at::Tensor gelu_cpu(const at::Tensor& x, c10::string_view approximate, c10::string_view backward) {
  check_cpu(x, "gelu", "x");
  dtype_index(x, "gelu");
  const PolyCoeffs& k = forward_coeffs(approximate);
  backward_coeffs(approximate, backward);  // validate it here too, not only at backward time
  at::Tensor out = at::empty_like(x);
  launch_forward(in_layout_of(x, out), out, k);
  return out;
}

void gelu_out_cpu(const at::Tensor& x, c10::string_view approximate, const at::Tensor& out) {
  check_cpu(x, "gelu", "x");
  check_cpu(out, "gelu", "out");
  dtype_index(x, "gelu");
  TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), "turbogelu.gelu: out has dtype ",
                   out.scalar_type(), " but x has dtype ", x.scalar_type());
  const PolyCoeffs& k = forward_coeffs(approximate);
  check_out_shape(out, x, "gelu");
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, x);
  // When out is x itself (gelu_), both are the same flat buffer and each element is read
  // before it is written.
  at::Tensor target = result_buffer(out, x);
  launch_forward(in_layout_of(x, target), target, k);
  if (!target.is_same(out)) out.copy_(target);
}

void gelu_inplace_cpu(const at::Tensor& x, c10::string_view approximate) {
  gelu_out_cpu(x, approximate, x);
}

// ---------------------------------------------------------------- backward ops

void check_backward_args(const at::Tensor& grad, const at::Tensor& x) {
  check_cpu(x, "gelu_backward", "x");
  check_cpu(grad, "gelu_backward", "grad");
  dtype_index(x, "gelu_backward");
  TORCH_CHECK_TYPE(grad.scalar_type() == x.scalar_type(),
                   "turbogelu.gelu_backward: grad has dtype ", grad.scalar_type(),
                   " but x has dtype ", x.scalar_type());
  TORCH_CHECK(grad.sizes() == x.sizes(), "turbogelu.gelu_backward: grad has shape ", grad.sizes(),
              " but x has shape ", x.sizes());
}

at::Tensor gelu_backward_cpu(const at::Tensor& grad, const at::Tensor& x,
                             c10::string_view approximate, c10::string_view backward) {
  check_backward_args(grad, x);
  const PolyCoeffs& k = backward_coeffs(approximate, backward);
  at::Tensor out = at::empty_like(x);
  launch_backward(in_layout_of(grad, out), in_layout_of(x, out), out, k);
  return out;
}

void gelu_backward_out_cpu(const at::Tensor& grad, const at::Tensor& x,
                           c10::string_view approximate, c10::string_view backward,
                           const at::Tensor& out) {
  check_backward_args(grad, x);
  check_cpu(out, "gelu_backward", "out");
  TORCH_CHECK_TYPE(out.scalar_type() == x.scalar_type(), "turbogelu.gelu_backward: out has dtype ",
                   out.scalar_type(), " but x has dtype ", x.scalar_type());
  const PolyCoeffs& k = backward_coeffs(approximate, backward);
  check_out_shape(out, x, "gelu_backward");
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, x);
  at::assert_no_partial_overlap(out, grad);
  at::Tensor target = result_buffer(out, x);
  launch_backward(in_layout_of(grad, target), in_layout_of(x, target), target, k);
  if (!target.is_same(out)) out.copy_(target);
}

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
  check_cpu(x, "poly_gelu", "x");
  at::Tensor out = at::empty_like(x);
  launch_forward(in_layout_of(x, out), out, k);
  return out;
}

at::Tensor backward_with(const at::Tensor& grad, const at::Tensor& x, const PolyCoeffs& k) {
  check_backward_args(grad, x);
  at::Tensor out = at::empty_like(x);
  launch_backward(in_layout_of(grad, out), in_layout_of(x, out), out, k);
  return out;
}

}  // namespace cpu

TORCH_LIBRARY(turbogelu, m) {
  // `backward` picks the coefficients autograd uses for this call: "default" (the more
  // accurate, as measured by the fit), "direct" (a fit of GELU') or "matched" (the derivative
  // of the forward polynomial). The forward result does not depend on it.
  m.def("gelu(Tensor x, str approximate=\"none\", *, str backward=\"default\") -> Tensor");
  // The mutating forms return nothing: PyTorch functionalizes (torch.compile) custom ops only
  // when a mutated argument is not also returned. The Python wrappers return it.
  m.def("gelu.out(Tensor x, str approximate=\"none\", *, Tensor(a!) out) -> ()");
  m.def("gelu_(Tensor(a!) x, str approximate=\"none\") -> ()");
  m.def(
      "gelu_backward(Tensor grad, Tensor x, str approximate=\"none\", "
      "str backward=\"default\") -> Tensor");
  m.def(
      "gelu_backward.out(Tensor grad, Tensor x, str approximate=\"none\", "
      "str backward=\"default\", *, Tensor(a!) out) -> ()");
  // Introspection and test hooks for the CPU instruction-set dispatch.
  m.def("_cpu_isa() -> str", &cpu_isa);
  m.def("_cpu_isas() -> str[]", &cpu_isas);
  m.def("_set_cpu_isa(str isa) -> str", &set_cpu_isa);
  // Benchmark hook: elements per parallel chunk (returns the previous value).
  m.def("_set_parallel_grain(int grain) -> int", &set_parallel_grain);
  // Benchmark hook: evaluate P by "horner" (default) or "estrin"; returns the previous one.
  m.def("_set_poly_scheme(str scheme) -> str", &set_poly_scheme);
}

TORCH_LIBRARY_IMPL(turbogelu, CPU, m) {
  m.impl("gelu", &gelu_cpu);
  m.impl("gelu.out", &gelu_out_cpu);
  m.impl("gelu_", &gelu_inplace_cpu);
  m.impl("gelu_backward", &gelu_backward_cpu);
  m.impl("gelu_backward.out", &gelu_backward_out_cpu);
}

TORCH_LIBRARY_IMPL(turbogelu, Autograd, m) {
  m.impl("gelu_", &gelu_inplace_autograd);
  m.impl("gelu.out", &gelu_out_autograd);
  m.impl("gelu_backward.out", &gelu_backward_out_autograd);
}

}  // namespace turbogelu
