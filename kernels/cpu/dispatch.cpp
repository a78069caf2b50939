// The CPU back end's run-time choices, which every operator file shares (dispatch.h): the
// instruction set (cpuid, TURBOGELU_CPU_ISA, use_cpu_isa), the program (TURBOGELU_CPU_KERNEL:
// the polynomial or the cells), the stores (TURBOGELU_CPU_STORE and the caches), the parallel
// grain, the polynomial scheme and the CUDA packed switch, with their introspection ops
// (_cpu_isa, _cpu_program, ...). The operators themselves (ops.cpp, poly_ops.cpp) only ask
// what the calling thread runs now.
#include "dispatch.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "arm_features.h"
#include "cpu_kernels.h"
#include "hooks.h"
#include "turbogelu/ops_common.h"

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

// avx512 plus vcvtne2ps2bf16 (AVX512-BF16) and vfpclassps (AVX512-DQ) for bfloat16 stores.
bool cpu_has_avx512bf16() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return cpu_has_avx512() && cpu::avx512bf16_table() != nullptr &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bf16");
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

// ARM64: AdvSIMD is in every ARMv8-A core; the BF16 extension (BFCVTN) is optional
// (arm_features.h asks the operating system).
bool cpu_has_neon() { return cpu::neon_table() != nullptr; }

bool cpu_has_neonbf16() {
  return cpu_has_neon() && cpu::neonbf16_table() != nullptr && cpu::arm_has_bf16();
}

// Best first.
std::vector<std::string> available_isas() {
  std::vector<std::string> out;
  if (cpu_has_avx512bf16()) out.push_back("avx512bf16");
  if (cpu_has_avx512()) out.push_back("avx512");
  if (cpu_has_avx2()) out.push_back("avx2");
  if (cpu_has_neonbf16()) out.push_back("neonbf16");
  if (cpu_has_neon()) out.push_back("neon");
  out.push_back("scalar");
  return out;
}

const KernelTable* table_for(const std::string& name) {
  const auto avail = available_isas();
  if (name == "auto") return table_for(avail.front());
  const bool known = name == "avx512bf16" || name == "avx512" || name == "avx2" ||
                     name == "neonbf16" || name == "neon" || name == "scalar";
  TORCH_CHECK_VALUE(known, "turbogelu: unknown CPU instruction set '", name,
                    "'; choose auto, avx512bf16, avx512, avx2, neonbf16, neon or scalar "
                    "(TURBOGELU_CPU_ISA)");
  bool ok = false;
  for (const auto& a : avail) ok = ok || a == name;
  TORCH_CHECK(ok, "turbogelu: the CPU instruction set '", name,
              "' is not available on this machine (available: ", c10::Join(", ", avail), ")");
  if (name == "avx512bf16") return cpu::avx512bf16_table();
  if (name == "avx512") return cpu::avx512_table();
  if (name == "avx2") return cpu::avx2_table();
  if (name == "neonbf16") return cpu::neonbf16_table();
  if (name == "neon") return cpu::neon_table();
  return &cpu::scalar_table();
}

// The switches below (instruction set, program, stores) each have a process-wide value,
// read from an environment variable at the first call, and a per-thread override that the
// use_* blocks of turbogelu/ops.py set through the _set_* hooks: a block on one thread does
// not change what another thread runs. Every setting is read on the calling thread before
// at::parallel_for, so all the workers of one call run what its caller chose. "process" as
// a hook's argument drops the override; a hook returns the previous override, or "process".
constexpr const char* kProcess = "process";

// The instruction set, from TURBOGELU_CPU_ISA (auto | avx512bf16 | avx512 | avx2 | neonbf16 |
// neon | scalar). An
// unusable value makes every call fail with the reason.
std::atomic<const KernelTable*>& isa_slot() {
  static std::atomic<const KernelTable*> slot{nullptr};
  return slot;
}
thread_local const KernelTable* t_isa = nullptr;  // this thread's override (use_cpu_isa)

const KernelTable& current_table() {
  if (t_isa != nullptr) return *t_isa;
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
  const std::string previous = t_isa != nullptr ? std::string(t_isa->name) : kProcess;
  t_isa = name == kProcess ? nullptr : table_for(std::string(name));
  return previous;
}

std::vector<std::string> cpu_isas() { return available_isas(); }

// ---------------------------------------------------------------- polynomial scheme

// Horner is the default: `python -m experiments bench` times both schemes in the same process
// (the "turbogelu (Estrin)" rows), and on the AVX-512 build machine Horner is the faster
// (fewer operations; out-of-order execution overlaps independent elements, so the long
// dependency chain costs little). Estrin stays selectable for the benchmark.
std::atomic<Scheme> g_scheme{Scheme::Horner};

std::string scheme_name(Scheme s) { return s == Scheme::Horner ? "horner" : "estrin"; }

// ---------------------------------------------------------------- CPU program: poly or cells

// "poly" runs the shipped polynomial (the program every backend shares); "cells" runs the
// CPU's table-driven program (family_eval.h's cells_eval: a cubic in each
// of 32 cells, fitted by turbogelu/approx/cells.py), more accurate and, where the lookups are
// one two-table permute (AVX-512 vpermt2ps), fewer operations. "auto" (the default) takes
// cells on the AVX-512 instruction sets and the polynomial on AVX2 and scalar code, where
// the lookups cost permutes and blends (AVX2) or loads (scalar) and the polynomial is the
// faster. The same choice picks the family's programs for sigmoid, tanh and SiLU (softcap
// and SwiGLU through them; turbogelu/approx/family_cells.py); exp2 has a polynomial only. The
// process-wide setting comes from TURBOGELU_CPU_KERNEL; use_cpu_kernel overrides it on one
// thread (_set_cpu_kernel). Coefficients given at run time (poly_gelu) always take the
// polynomial.
enum class CpuKernel : int { Auto = 0, Poly = 1, Cells = 2, Unset = 3 };
std::atomic<CpuKernel> g_cpu_kernel{CpuKernel::Unset};
// Whether the process-wide setting forces a program, for cpu_program()'s reason.
std::atomic<bool> g_cpu_kernel_from_env{false};
thread_local CpuKernel t_cpu_kernel = CpuKernel::Unset;  // this thread's override

CpuKernel parse_cpu_kernel(const std::string& name) {
  TORCH_CHECK_VALUE(name == "auto" || name == "poly" || name == "cells",
                    "turbogelu: the CPU kernel must be 'auto', 'poly' or 'cells', got '", name,
                    "' (TURBOGELU_CPU_KERNEL)");
  return name == "auto" ? CpuKernel::Auto : name == "poly" ? CpuKernel::Poly : CpuKernel::Cells;
}

std::string kernel_name(CpuKernel k) {
  return k == CpuKernel::Auto ? "auto" : k == CpuKernel::Poly ? "poly" : "cells";
}

CpuKernel cpu_kernel_setting() {
  if (t_cpu_kernel != CpuKernel::Unset) return t_cpu_kernel;
  CpuKernel k = g_cpu_kernel.load(std::memory_order_relaxed);
  if (k == CpuKernel::Unset) {
    const char* env = std::getenv("TURBOGELU_CPU_KERNEL");
    const bool set = env != nullptr && *env != '\0';
    k = parse_cpu_kernel(set ? std::string(env) : std::string("auto"));
    g_cpu_kernel_from_env.store(set && k != CpuKernel::Auto, std::memory_order_relaxed);
    g_cpu_kernel.store(k, std::memory_order_relaxed);
  }
  return k;
}

// Instruction sets whose cells lookups are two-table permutes (see above).
bool isa_prefers_cells(const KernelTable& t) {
  const std::string name = t.name;
  return name == "avx512bf16" || name == "avx512";
}

// The program the ops run now, under the current setting and instruction set.
CpuKernel current_cpu_kernel() {
  const CpuKernel k = cpu_kernel_setting();
  if (k != CpuKernel::Auto) return k;
  return isa_prefers_cells(current_table()) ? CpuKernel::Cells : CpuKernel::Poly;
}

std::string cpu_kernel() { return kernel_name(current_cpu_kernel()); }

// This thread's override ("auto", "poly", "cells" or "process"), which is what
// _set_cpu_kernel returns and takes back: "auto" follows the instruction set.
std::string set_cpu_kernel(c10::string_view name) {
  const CpuKernel next = name == kProcess ? CpuKernel::Unset : parse_cpu_kernel(std::string(name));
  const std::string previous =
      t_cpu_kernel == CpuKernel::Unset ? kProcess : kernel_name(t_cpu_kernel);
  t_cpu_kernel = next;
  return previous;
}

std::string store_description();

// (program, instruction set, why this program, the stores): turbogelu.cpu_program().
std::tuple<std::string, std::string, std::string, std::string> cpu_program() {
  const CpuKernel setting = cpu_kernel_setting();
  const std::string isa = cpu_isa();
  const std::string program = cpu_kernel();
  std::string reason;
  if (setting != CpuKernel::Auto) {
    reason = t_cpu_kernel != CpuKernel::Unset
                 ? "forced by use_cpu_kernel('" + program + "') on this thread"
                 : "forced by TURBOGELU_CPU_KERNEL=" + program;
  } else if (program == "cells") {
    reason = "default on " + isa + ": the cells' lookups are one two-table permute (vpermt2ps)";
  } else if (isa == "neon" || isa == "neonbf16") {
    reason = "default on " + isa +
             ": the cells' 32-entry lookups are two four-register TBLs or lane loads there, "
             "and neither program's speed has been measured on ARM64";
  } else {
    reason = "default on " + isa +
             ": without AVX-512 two-table permutes the cells' lookups cost more than the "
             "polynomial";
  }
  return {program, isa, reason, store_description()};
}

// ---------------------------------------------------------------- stores: plain or streaming

// Non-temporal (streaming) stores write whole lines to memory without reading them first
// (no read-for-ownership) and without evicting the inputs; they lose when the output would
// have stayed in a cache that the next reader hits. The choice is made from the bytes a call
// moves (inputs and output) and the caches the CPU reports (cache_bytes below; no timing at
// run time):
// stream when they exceed half of the cache that would otherwise hold them,
//   * Intel: the core's private L2, per thread. On Intel server parts the L3 is a
//     socket-wide mesh whose bandwidth per core is close to memory's: on a Sapphire
//     Rapids-class Xeon (2 MiB L2) a streaming copy wins from about 1.5 MiB moved per call
//     (float32, one thread), and at 1M float32 it takes 0.8x the plain copy's time;
//   * AMD and others: the L3, per call (an AMD core reads and writes its CCX's L3 at about
//     three times the Xeon's rate: on a Zen 4 with 32 MiB of L3 the plain copy wins at 8 MiB
//     moved, 103 against 157 us, and the streaming one at 32 MiB, 669 against 767 us); 32
//     MiB when no L3 size is reported (half of an assumed 64 MiB).
// TURBOGELU_CPU_STORE=auto|plain|stream overrides it for the process, use_cpu_store on one
// thread (the benchmark times each); the bits are the same either way.
enum class StoreMode : int { Auto = 0, Plain = 1, Stream = 2, Unset = 3 };
std::atomic<StoreMode> g_store{StoreMode::Unset};
thread_local StoreMode t_store = StoreMode::Unset;  // this thread's override

StoreMode parse_store(const std::string& name) {
  TORCH_CHECK_VALUE(name == "auto" || name == "plain" || name == "stream",
                    "turbogelu: the CPU store must be 'auto', 'plain' or 'stream', got '", name,
                    "' (TURBOGELU_CPU_STORE)");
  return name == "auto" ? StoreMode::Auto : name == "plain" ? StoreMode::Plain : StoreMode::Stream;
}

StoreMode store_setting() {
  if (t_store != StoreMode::Unset) return t_store;
  StoreMode m = g_store.load(std::memory_order_relaxed);
  if (m == StoreMode::Unset) {
    const char* env = std::getenv("TURBOGELU_CPU_STORE");
    m = parse_store(env != nullptr && *env != '\0' ? std::string(env) : std::string("auto"));
    g_store.store(m, std::memory_order_relaxed);
  }
  return m;
}

std::string store_name(StoreMode m) {
  return m == StoreMode::Auto ? "auto" : m == StoreMode::Plain ? "plain" : "stream";
}

std::string set_cpu_store(c10::string_view name) {
  const StoreMode next = name == kProcess ? StoreMode::Unset : parse_store(std::string(name));
  const std::string previous = t_store == StoreMode::Unset ? kProcess : store_name(t_store);
  t_store = next;
  return previous;
}

struct StoreRule {
  bool per_thread;    // compare the bytes per thread (Intel) or per call (others)
  int64_t threshold;  // stream above this many bytes
  std::string why;
};

// The size of the data cache of `level` as one core sees it: Linux's sysfs describes each
// cache a CPU uses (/sys/devices/system/cpu/cpu0/cache/index*/); glibc's sysconf where it
// does not exist. sysfs first because sysconf can report a cache the core does not have:
// on a 2-vCPU AMD EPYC (Zen 3 class) it gave the socket's 256 MiB of L3, eight CCXs' worth,
// while the core's CCX holds 32 MiB (sysfs: 32768K, shared by CPUs 0-1), so every call below
// 128 MiB kept plain stores; there, at 4M float32 elements, streaming is 2-20 % faster.
// Read with C stdio, not iostreams: where the extension is linked against a static copy of
// libstdc++ (the GPU check's machine: its g++ wrapper links one in) beside the shared one
// that torch loads, a stream's locale facets come from the other copy, and the first
// `ifstream >> int` crashed the process (issue 16's first run on an H200, in cpu_program()).
//
// The first line of a sysfs file, without its newline; empty when it cannot be read.
std::string sysfs_line(const std::string& path) {
  std::string line;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[64];
    if (std::fgets(buf, sizeof buf, f) != nullptr) line = buf;
    std::fclose(f);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

int64_t cache_bytes(int level) {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 16; ++i) {
    const std::string index = dir + std::to_string(i);
    const std::string lv = sysfs_line(index + "/level");
    if (lv.empty()) break;
    const std::string type = sysfs_line(index + "/type");
    const std::string size = sysfs_line(index + "/size");
    if (std::atoi(lv.c_str()) != level || type.empty() || type == "Instruction" || size.empty())
      continue;
    char* end = nullptr;
    const long long v = std::strtoll(size.c_str(), &end, 10);
    const int64_t unit = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
    if (v > 0) return static_cast<int64_t>(v) * unit;
  }
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long v = sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return v > 0 ? static_cast<int64_t>(v) : 0;
#else
  return 0;
#endif
}

const StoreRule& store_rule() {
  static const StoreRule rule = [] {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const bool intel = __builtin_cpu_is("intel");
#else
    const bool intel = false;
#endif
    const int64_t l2 = cache_bytes(2), l3 = cache_bytes(3);
    if (intel && l2 > 0)
      return StoreRule{
          true, l2 / 2,
          "above " + std::to_string(l2 / 2) + " bytes per thread (Intel: half the L2)"};
    const int64_t t = (l3 > 0 ? l3 : int64_t{64} << 20) / 2;
    return StoreRule{false, t,
                     "above " + std::to_string(t) +
                         (l3 > 0 ? " bytes per call (half the L3)"
                                 : " bytes per call (no L3 reported: half of 64 MiB)")};
  }();
  return rule;
}

// Whether a call that moves `bytes` (inputs and output) on `threads` threads streams.
bool stream_stores(int64_t bytes, int64_t threads) {
  const StoreMode m = store_setting();
  if (m != StoreMode::Auto) return m == StoreMode::Stream;
  const StoreRule& r = store_rule();
  return (r.per_thread ? bytes / std::max<int64_t>(threads, 1) : bytes) > r.threshold;
}

// What cpu_program() says of the stores.
std::string store_description() {
  const StoreMode m = store_setting();
  if (m != StoreMode::Auto) return store_name(m) + " (forced)";
  return "auto: streaming " + store_rule().why;
}

// The opt-in packed bfloat16 CUDA path (kernels/cuda/): off unless TURBOGELU_CUDA_PACKED=1
// at the first call, or switched with _set_cuda_packed. Process-wide, unlike the CPU
// switches: autograd runs a CUDA tensor's backward on its own device thread, which a
// per-thread setting would not reach (the backward would silently leave the packed path).
std::atomic<bool>& packed_slot() {
  static std::atomic<bool> slot{[] {
    const char* env = std::getenv("TURBOGELU_CUDA_PACKED");
    return env != nullptr && std::string(env) == "1";
  }()};
  return slot;
}

bool set_cuda_packed(bool on) { return packed_slot().exchange(on); }

// ---------------------------------------------------------------- checks and layout

int dtype_index(at::ScalarType dtype, const char* op) {
  switch (dtype) {
    case at::kFloat:
      return cpu::kF32;
    case at::kHalf:
      return cpu::kF16;
    case at::kBFloat16:
      return cpu::kBF16;
    case at::kDouble:
      return cpu::kF64;
    default:
      TORCH_CHECK_TYPE(false, "turbogelu.", op, ": unsupported dtype ", dtype,
                       "; supported dtypes are float32, float64, float16 and bfloat16");
  }
  return -1;
}

void check_cpu(const at::Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "turbogelu.", op, ": expected ", what,
              " on the CPU (this is the CPU kernel), got a tensor on ", t.device());
}

// Grain of at::parallel_for: tensors of up to this many elements run on one thread, larger
// ones are split into chunks of at least this size. `python -m experiments bench --grain`
// (float32 forward, 1 vs 2 threads) on the 2-core build machine: 2 threads lose at 4K
// (0.89x), break even at 8K-16K and win from 32K (1.12x; 1.30x at 64K). A grain of 16K
// splits from 32K elements on.
constexpr int64_t kDefaultGrain = 1 << 14;
std::atomic<int64_t> g_grain{kDefaultGrain};
std::atomic<bool> g_sized{true};  // hooks::set_sized_cells

// Streaming stores for a call of n elements moving `bytes` with this grain: the threads that
// at::parallel_for will use share the bytes. Only for an element-aligned output (always so
// for a tensor; the streaming loop aligns each chunk to a line by elements).
bool streams(const char* out, int64_t es, int64_t n, int64_t bytes, int64_t grain) {
  if (reinterpret_cast<uintptr_t>(out) % static_cast<uintptr_t>(es) != 0) return false;
  const int64_t chunks = (n + grain - 1) / grain;
  const int64_t threads = std::min<int64_t>(at::get_num_threads(), std::max<int64_t>(chunks, 1));
  return stream_stores(bytes, threads);
}

}  // namespace

// The benchmark's switches (hooks.h), registered only in builds with the probes.
namespace hooks {

std::string set_poly_scheme(c10::string_view name) {
  TORCH_CHECK_VALUE(name == "horner" || name == "estrin",
                    "turbogelu: the polynomial scheme must be 'horner' or 'estrin', got '", name,
                    "'");
  return scheme_name(g_scheme.exchange(name == "horner" ? Scheme::Horner : Scheme::Estrin));
}

int64_t set_parallel_grain(int64_t grain) {
  TORCH_CHECK_VALUE(grain >= 1, "turbogelu: the parallel grain must be >= 1, got ", grain);
  return g_grain.exchange(grain);
}

bool set_sized_cells(bool on) { return g_sized.exchange(on); }

}  // namespace hooks

Scheme current_scheme() { return g_scheme.load(std::memory_order_relaxed); }

bool cuda_packed() { return packed_slot().load(std::memory_order_relaxed); }

// What the operator files ask (dispatch.h).
namespace cpu {

const KernelTable& current_kernel_table() { return current_table(); }
bool runs_cells() { return current_cpu_kernel() == CpuKernel::Cells; }
bool sized_cells() { return g_sized.load(std::memory_order_relaxed); }
int64_t parallel_grain() { return g_grain.load(std::memory_order_relaxed); }
bool stream_output(const void* out, int64_t es, int64_t n, int64_t bytes, int64_t grain) {
  return streams(static_cast<const char*>(out), es, n, bytes, grain);
}
int dtype_index_of(const at::Tensor& t, const char* op) { return dtype_index(t.scalar_type(), op); }
int dtype_index_of(at::ScalarType dtype, const char* op) { return dtype_index(dtype, op); }
void check_on_cpu(const at::Tensor& t, const char* op, const char* what) { check_cpu(t, op, what); }

}  // namespace cpu

// The CPU back end's switches (the public schemas: kernels/common/schema.cpp).
TORCH_LIBRARY_FRAGMENT(turbogelu, m) {
  // Introspection and test hooks for the CPU instruction-set dispatch.
  m.def("_cpu_isa() -> str", &cpu_isa);
  m.def("_cpu_isas() -> str[]", &cpu_isas);
  m.def("_set_cpu_isa(str isa) -> str", &set_cpu_isa);  // this thread; see kProcess
  // The CPU program: "auto" (the default: cells on AVX-512, the polynomial elsewhere), "poly"
  // or "cells". _cpu_kernel is the program running now; _set_cpu_kernel sets this thread's
  // override and returns the previous one (see kProcess); _cpu_program is (program, isa,
  // reason, stores).
  m.def("_cpu_kernel() -> str", &cpu_kernel);
  m.def("_set_cpu_kernel(str kernel) -> str", &set_cpu_kernel);
  m.def("_cpu_program() -> (str, str, str, str)", &cpu_program);
  // Stores: "auto" (non-temporal above a size from the caches), "plain" or "stream", on this
  // thread; returns the previous override (see kProcess).
  m.def("_set_cpu_store(str store) -> str", &set_cpu_store);
  // The opt-in packed bfloat16 CUDA path on (true) or off; returns the previous setting.
  m.def("_set_cuda_packed(bool on) -> bool", &set_cuda_packed);
  m.def("_cuda_packed() -> bool", &cuda_packed);
}

}  // namespace turbogelu
