// Runs every NEON kernel against the scalar table of the same build, element for element, on
// ARM64 (tests/test_neon.py cross-compiles it with Debian's aarch64-linux-gnu-g++, links it
// statically and runs it under qemu-aarch64, with and without the BF16 extension):
//
//   neon_harness TABLE [DUMP_DIR]
//   neon_harness features     prints "bf16 1" or "bf16 0": what dispatch.cpp would see
//
// TABLE: neon | neonbf16 (its bfloat16 kernels; its others are checked to be neon's). For each row
// of the kernels' table (every op in both tiers, its cells program, GELU's rows), each dtype
// (float32, float16, bfloat16) and each direction (forward, backward with both derivative programs,
// the gated pair, the backward from the saved output), the inputs are every 16-bit pattern
// (float16, bfloat16) or the accuracy report's float32 grid (np.linspace(-6, 6, 1000001)) plus
// every bfloat16 value widened; then each kernel again at every output and input alignment of a
// block and every tail length up to two blocks. Also GELU's run-time-coefficient kernels (degrees
// 2-12, Horner and Estrin), poly_family's run-time programs and the softmax kernels (rows and
// lanes). Two results agree when their bits are equal or both are NaN. The scalar table is the code
// that the x86 suite holds equal to the replay bit for bit; DUMP_DIR receives the NEON forward and
// default backward of the 16-bit inputs, which the test compares with the x86 kernels' bits.
// Prints one line per group and exits 1 on any difference (the first few are printed).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define TG_ISA_NAMESPACE harness
#include "arm_features.h"
#include "cpu_kernels.h"
#include "turbogelu/family.h"

using namespace turbogelu;
using namespace turbogelu::cpu;

namespace {

long g_checked = 0, g_bad = 0;
const char* g_group = "";

size_t esize(int d) { return d == kF32 ? 4 : 2; }
const char* dname(int d) { return d == kF32 ? "float32" : d == kF16 ? "float16" : "bfloat16"; }

bool is_nan(const uint8_t* p, int d) {
  if (d == kF32) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return (u & 0x7FFFFFFFu) > 0x7F800000u;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return d == kF16 ? (h & 0x7FFF) > 0x7C00 : (h & 0x7FFF) > 0x7F80;
}

// Counts and reports differences between two outputs of n elements of dtype d.
void compare(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got, long n, int d,
             const std::string& what, long shown_offset = 0) {
  const size_t es = esize(d);
  for (long i = 0; i < n; ++i) {
    const uint8_t* a = want.data() + i * es;
    const uint8_t* b = got.data() + i * es;
    ++g_checked;
    if (std::memcmp(a, b, es) == 0 || (is_nan(a, d) && is_nan(b, d))) continue;
    if (++g_bad <= 10) {
      uint32_t wa = 0, wb = 0;
      std::memcpy(&wa, a, es);
      std::memcpy(&wb, b, es);
      std::printf("MISMATCH %s %s %s element %ld: scalar 0x%x, neon 0x%x\n", g_group, what.c_str(),
                  dname(d), i + shown_offset, wa, wb);
    }
  }
}

// The inputs of dtype d: every 16-bit pattern, or the float32 grid; `salt` permutes them
// (a second or third input of a kernel: an odd multiplier visits every pattern).
std::vector<uint8_t> inputs(int d, unsigned salt) {
  std::vector<uint8_t> v;
  if (d != kF32) {
    v.resize(65536 * 2);
    for (uint32_t i = 0; i < 65536; ++i) {
      const uint16_t h = static_cast<uint16_t>(i * (2 * salt + 1) + 12345 * salt);
      std::memcpy(v.data() + 2 * i, &h, 2);
    }
    return v;
  }
  std::vector<float> f;
  const long n = 1000001;
  const double step = 12.0 / (n - 1);
  for (long i = 0; i < n; ++i) f.push_back(static_cast<float>(i * step - 6.0));  // numpy's order
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint32_t u = i << 16;
    float x;
    std::memcpy(&x, &u, 4);
    f.push_back(x);
  }
  if (salt != 0)  // another order of the same values
    for (size_t i = 0; i < f.size(); ++i)
      std::swap(f[i], f[(i * (2 * salt + 1) + salt) % f.size()]);
  v.resize(f.size() * 4);
  std::memcpy(v.data(), f.data(), v.size());
  return v;
}

// One kernel call on byte buffers: ins (1-3 inputs), outs (1-2 outputs), n elements.
using Run = void (*)(const KernelTable&, const void* const*, void* const*, long, const void*);

// Runs `run` on both tables over the whole inputs, then at every alignment and tail on the
// NEON table against the whole run's elements.
void check(const KernelTable& scalar, const KernelTable& neon, Run run, const void* ctx, int d,
           int nin, int nout, const std::string& what) {
  const size_t es = esize(d);
  std::vector<std::vector<uint8_t>> in;
  for (int a = 0; a < nin; ++a) in.push_back(inputs(d, static_cast<unsigned>(a)));
  const long n = static_cast<long>(in[0].size() / es);
  std::vector<std::vector<uint8_t>> ws(nout, std::vector<uint8_t>(n * es)), gs = ws;
  const void* ip[3];
  void *wp[2], *gp[2];
  for (int a = 0; a < nin; ++a) ip[a] = in[a].data();
  for (int o = 0; o < nout; ++o) wp[o] = ws[o].data(), gp[o] = gs[o].data();
  run(scalar, ip, wp, n, ctx);
  run(neon, ip, gp, n, ctx);
  for (int o = 0; o < nout; ++o) compare(ws[o], gs[o], n, d, what + " out" + std::to_string(o));
  // alignments: the output and the inputs shifted by s elements from a 64-byte boundary,
  // 3 blocks and a tail; tails: every length up to two blocks and one over
  const long B = 8;
  alignas(64) static uint8_t ib[3][64 * 8], ob[2][64 * 8];
  const auto slice = [&](long start, long s_in, long s_out, long len) {
    for (int a = 0; a < nin; ++a)
      std::memcpy(ib[a] + s_in * es, in[a].data() + start * es, len * es);
    const void* sp[3] = {ib[0] + s_in * es, ib[1] + s_in * es, ib[2] + s_in * es};
    void* so[2] = {ob[0] + s_out * es, ob[1] + s_out * es};
    run(neon, sp, so, len, ctx);
    for (int o = 0; o < nout; ++o) {
      std::vector<uint8_t> want(ws[o].begin() + start * es, ws[o].begin() + (start + len) * es);
      std::vector<uint8_t> got(ob[o] + s_out * es, ob[o] + (s_out + len) * es);
      compare(want, got, len, d, what + " slice", start);
    }
  };
  for (long s = 0; s < 2 * B; ++s) slice(1000 + 37 * s, s, (s * 5) % (2 * B), 3 * B + 5);
  for (long len = 0; len <= 2 * B + 1; ++len) slice(500 + 3 * len, len % 4, 0, len);
}

struct RowCtx {
  const FamilyKernels* scalar;
  const FamilyKernels* neon;
  int row, d;
  FamilyCall call;
};
// A table's entry, or the scalar table's where it has none (as ops.cpp's pick).
void run_unary(const KernelTable& t, const void* const* in, void* const* out, long n,
               const void* c) {
  const auto* r = static_cast<const RowCtx*>(c);
  auto f = t.family[r->row].unary[r->d];
  if (f == nullptr) f = r->scalar[r->row].unary[r->d];
  f(in[0], out[0], n, r->call, true);
}
void run_binary(const KernelTable& t, const void* const* in, void* const* out, long n,
                const void* c) {
  const auto* r = static_cast<const RowCtx*>(c);
  auto f = t.family[r->row].binary[r->d];
  if (f == nullptr) f = r->scalar[r->row].binary[r->d];
  f(in[0], in[1], out[0], n, r->call, true);
}
void run_pair(const KernelTable& t, const void* const* in, void* const* out, long n,
              const void* c) {
  const auto* r = static_cast<const RowCtx*>(c);
  auto f = t.family[r->row].pair[r->d];
  if (f == nullptr) f = r->scalar[r->row].pair[r->d];
  f(in[0], in[1], in[2], out[0], out[1], n, r->call, true);
}
void run_from_output(const KernelTable& t, const void* const* in, void* const* out, long n,
                     const void* c) {
  const auto* r = static_cast<const RowCtx*>(c);
  t.family[r->row].from_output[r->d](in[0], in[1], out[0], n, r->call, true);
}

struct GeluCtx {
  PolyCoeffs k;
  Scheme s;
  int d;
  bool backward;
};
void run_gelu(const KernelTable& t, const void* const* in, void* const* out, long n,
              const void* c) {
  const auto* g = static_cast<const GeluCtx*>(c);
  if (g->backward)
    t.backward[g->d](in[0], in[1], out[0], n, g->k, g->s, true);
  else
    t.forward[g->d](in[0], out[0], n, g->k, g->s, true);
}

struct ProgCtx {
  FamilyProgram p;
  Form form;
  bool in_y;
};
void run_program(const KernelTable& t, const void* const* in, void* const* out, long n,
                 const void* c) {
  const auto* g = static_cast<const ProgCtx*>(c);
  if (!t.program_forward(static_cast<const float*>(in[0]), static_cast<float*>(out[0]), n, g->p,
                         g->form, g->in_y))
    std::memset(out[0], 0xFF, n * 4);  // none compiled: the same on both tables, or a mismatch
}

bool dump(const std::string& dir, const std::string& name, const void* p, size_t bytes) {
  if (dir.empty()) return true;
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (f == nullptr) return false;
  std::fwrite(p, 1, bytes, f);
  std::fclose(f);
  return true;
}

// The NEON forward and default backward of one op row on the 16-bit inputs (x: every
// pattern; grad: the patterns in another order; swiglu's b likewise), for the x86 comparison.
// A cells row's call takes a 16-bit format's own tables, as ops.cpp's does.
void dump_row(const KernelTable& neon, const FamilyKernels* scalar, int row, const FamilyCall& c,
              const FamilyOpInfo& info, const std::string& dir, const std::string& stem) {
  const Kind kind = info.kind;
  for (int d : {kF16, kBF16}) {
    const auto x = inputs(d, 0), g = inputs(d, 1), b = inputs(d, 2);
    std::vector<uint8_t> o0(x.size()), o1(x.size());
    RowCtx r{scalar, neon.family, row, d, sized_cells_call(info, c, d == kF16)};
    const void* in1[1] = {x.data()};
    const void* in2[2] = {g.data(), x.data()};
    const void* ab[2] = {x.data(), b.data()};
    const void* gab[3] = {g.data(), x.data(), b.data()};
    void* out1[1] = {o0.data()};
    void* out2[2] = {o0.data(), o1.data()};
    const long n = 65536;
    const std::string s = stem + "_" + dname(d);
    if (kind == Kind::Gated) {
      run_binary(neon, ab, out1, n, &r);
      dump(dir, s + "_forward.bin", o0.data(), o0.size());
      run_pair(neon, gab, out2, n, &r);
      dump(dir, s + "_backward_a.bin", o0.data(), o0.size());
      dump(dir, s + "_backward_b.bin", o1.data(), o1.size());
    } else {
      run_unary(neon, in1, out1, n, &r);
      dump(dir, s + "_forward.bin", o0.data(), o0.size());
      run_binary(neon, in2, out1, n, &r);
      dump(dir, s + "_backward.bin", o0.data(), o0.size());
    }
  }
}

void softmax_checks(const KernelTable& scalar, const KernelTable& neon,
                    const std::vector<int>& dts) {
  for (int tier = 0; tier < kNumTiers; ++tier) {
    const int row = family_index(kFamily_exp2, static_cast<Tier>(tier));
    FamilyCall c{};
    c.f = *family_op(kFamily_exp2, static_cast<Tier>(tier)).forward;
    c.cap = c.inv = 1.0f;
    for (int d : dts) {
      const size_t es = esize(d);
      for (long cols : {1L, 3L, 4L, 8L, 15L, 16L, 17L, 33L, 100L, 1000L}) {
        for (long inner : {1L, 3L, 8L, 16L, 40L}) {
          const long outer = 3, total = outer * cols * inner;
          auto x = inputs(d, 3);
          x.resize(total * es);
          if (d == kF32)  // the grid's values in [-6, 6], with a NaN and an inf in row 1
            for (long i = 0; i < total; ++i) {
              float v = static_cast<float>((i * 7919 % 1201) * 0.01 - 6.0);
              if (i == cols * inner + 1) v = NAN;
              if (i == 2 * cols * inner) v = -INFINITY;
              std::memcpy(x.data() + 4 * i, &v, 4);
            }
          std::vector<uint8_t> ys(total * es), yn(total * es);
          std::vector<float> scratch(cols * kSoftmaxLaneBlock * 2 + 64);
          const std::string what = "softmax cols " + std::to_string(cols) + " inner " +
                                   std::to_string(inner) + " tier " + std::to_string(tier);
          if (inner == 1) {
            scalar.family[row].softmax[d](x.data(), ys.data(), outer, cols, c, scratch.data());
            auto f = neon.family[row].softmax[d];
            f(x.data(), yn.data(), outer, cols, c, scratch.data());
            compare(ys, yn, total, d, what + " rows");
          }
          const long lanes = outer * inner;
          scalar.family[row].softmax_lanes[d](x.data(), ys.data(), 0, lanes, cols, inner, c,
                                              scratch.data());
          neon.family[row].softmax_lanes[d](x.data(), yn.data(), 0, lanes, cols, inner, c,
                                            scratch.data());
          compare(ys, yn, total, d, what + " lanes");
          if (lanes > 2) {  // a range that starts and ends inside a slice
            std::fill(yn.begin(), yn.end(), 0);
            neon.family[row].softmax_lanes[d](x.data(), yn.data(), 1, lanes - 1, cols, inner, c,
                                              scratch.data());
            for (long l = 1; l < lanes - 1; ++l)
              for (long j = 0; j < cols; ++j) {
                const long e = (l / inner) * cols * inner + j * inner + l % inner;
                std::vector<uint8_t> a(ys.begin() + e * es, ys.begin() + (e + 1) * es);
                std::vector<uint8_t> b(yn.begin() + e * es, yn.begin() + (e + 1) * es);
                compare(a, b, 1, d, what + " lane range", e);
              }
          }
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: neon_harness neon|neonbf16 [DUMP_DIR]\n");
    return 2;
  }
  const std::string which = argv[1], dir = argc > 2 ? argv[2] : "";
  if (which == "features") {
    std::printf("bf16 %d\n", arm_has_bf16() ? 1 : 0);
    return 0;
  }
  const KernelTable* neon = which == "neon"       ? neon_table()
                            : which == "neonbf16" ? neonbf16_table()
                                                  : nullptr;
  if (neon == nullptr) {
    std::fprintf(stderr, "unknown table %s\n", which.c_str());
    return 2;
  }
  const KernelTable& scalar = scalar_table();
  // neonbf16 differs from neon in its bfloat16 kernels only: its float32 and float16 entries
  // are the neon table's own (checked here), which the neon run compares
  const bool bf16_only = which == "neonbf16";
  if (bf16_only) {
    const KernelTable& base = *neon_table();
    bool same = neon->program_forward == base.program_forward;
    for (int d : {kF32, kF16}) {
      same = same && neon->forward[d] == base.forward[d] && neon->backward[d] == base.backward[d];
      for (int i = 0; i < kFamilyTableSize; ++i)
        same = same && neon->family[i].unary[d] == base.family[i].unary[d] &&
               neon->family[i].binary[d] == base.family[i].binary[d] &&
               neon->family[i].pair[d] == base.family[i].pair[d];
    }
    if (!same) {
      std::printf("neonbf16's float32 / float16 kernels are not the neon table's\n");
      return 1;
    }
  }
  std::vector<int> dts = {kF32, kF16, kBF16};
  if (bf16_only) dts = {kBF16};

  // Every row of the family table: ops x tiers, then the cells rows.
  g_group = "family";
  long rows = 0;
  for (int op = 0; op < kNumFamilyOps; ++op) {
    for (int tier = 0; tier <= kNumTiers; ++tier) {  // tier == kNumTiers: the cells row
      const bool cells = tier == kNumTiers;
      const FamilyOpInfo& info =
          family_op(static_cast<FamilyOp>(op), cells ? kTier_accurate : static_cast<Tier>(tier));
      if (!info.shipped || (cells && info.cells.forward == nullptr)) continue;
      const int row = cells ? family_cells_index(static_cast<FamilyOp>(op))
                            : family_index(static_cast<FamilyOp>(op), static_cast<Tier>(tier));
      static const char* const kOpNames[] = {
#define TG_OP_NAME(o, fn, kind) #o,
          TG_KERNEL_OPS(TG_OP_NAME)
#undef TG_OP_NAME
      };
      const std::string stem = std::string(kOpNames[op]) + "_" +
                               (cells       ? "cells"
                                : tier == 0 ? "accurate"
                                            : "paper");
      for (int direct = 0; direct < 2; ++direct) {
        FamilyCall c{};
        c.f = *info.forward;
        c.d = direct ? *info.direct : *info.matched;
        c.fcells = info.cells.forward;
        c.dcells = direct ? info.cells.direct : info.cells.matched;
        c.cap = c.inv = 1.0f;
        for (float cap : {1.0f, 30.0f}) {
          if (info.kind != Kind::Scaled && cap != 1.0f) continue;
          c.cap = cap;
          c.inv = 1.0f / cap;
          for (int d : dts) {
            // cells rows: a 16-bit format's own tables where it has them, as ops.cpp's calls
            const FamilyCall cd = cells && d != kF32 ? sized_cells_call(info, c, d == kF16) : c;
            RowCtx r{scalar.family, neon->family, row, d, cd};
            const std::string what = stem + (direct ? " direct" : " matched") + " cap " +
                                     std::to_string(static_cast<int>(cap));
            if (info.kind == Kind::Gated) {
              if (direct) check(scalar, *neon, run_binary, &r, d, 2, 1, what + " forward");
              check(scalar, *neon, run_pair, &r, d, 3, 2, what + " backward");
            } else {
              if (direct) check(scalar, *neon, run_unary, &r, d, 1, 1, what + " forward");
              check(scalar, *neon, run_binary, &r, d, 2, 1, what + " backward");
              if (!cells && direct && scalar.family[row].from_output[d] != nullptr)
                check(scalar, *neon, run_from_output, &r, d, 2, 1, what + " from_output");
            }
          }
          if (cap == 1.0f && direct == (info.default_direct ? 1 : 0))
            dump_row(*neon, scalar.family, row, c, info, dir, stem);
        }
      }
      ++rows;
    }
  }
  std::printf("family: %ld rows, %ld elements compared, %ld differ\n", rows, g_checked, g_bad);

  // GELU's run-time-coefficient kernels at every compiled degree (the shipped sets' values
  // truncated to the degree: any coefficients serve), both schemes
  g_group = "gelu run-time";
  const long before = g_checked;
  for (int deg = 2; deg <= 12; ++deg)
    for (Scheme s : {Scheme::Horner, Scheme::Estrin})
      for (int bwd = 0; bwd < 2; ++bwd)
        for (int d : dts) {
          GeluCtx g{bwd ? coeffs::gelu_none_backward_direct : coeffs::gelu_none_forward, s, d,
                    bwd == 1};
          g.k.degree = deg;
          check(scalar, *neon, run_gelu, &g, d, bwd ? 2 : 1, 1,
                "degree " + std::to_string(deg) + (bwd ? " backward" : " forward") +
                    (s == Scheme::Horner ? " horner" : " estrin"));
        }
  std::printf("gelu run-time: %ld elements compared\n", g_checked - before);

  // poly_family's programs: each shipped forward program in its form
  g_group = "poly_family";
  const long before2 = g_checked;
  struct P {
    const FamilyProgram* p;
    Form form;
    bool in_y;
  };
  const P progs[] = {
#define TG_PROG(fn, tier, Ff, Df, Yf, Fd, Dd, Yd) \
  {&coeffs::fn##_##tier##_forward, Form::Ff, Yf}, \
      {&coeffs::fn##_##tier##_backward_direct, Form::Fd, Yd},
      TG_FAMILY_SHAPES(TG_PROG)
#undef TG_PROG
  };
  for (const P& p : progs) {
    if (bf16_only) break;  // float32 only: the neon table's
    ProgCtx g{*p.p, p.form, p.in_y};
    check(scalar, *neon, run_program, &g, kF32, 1, 1,
          "form " + std::to_string(static_cast<int>(p.form)) + " degree " +
              std::to_string(p.p->degree));
  }
  std::printf("poly_family: %zu programs, %ld elements compared\n", sizeof progs / sizeof progs[0],
              g_checked - before2);

  g_group = "softmax";
  const long before3 = g_checked;
  softmax_checks(scalar, *neon, dts);
  std::printf("softmax: %ld elements compared\n", g_checked - before3);

  std::printf("%s: %ld elements compared, %ld differ\n", which.c_str(), g_checked, g_bad);
  return g_bad == 0 ? 0 : 1;
}
