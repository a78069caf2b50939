// Runs the generated family Metal kernels on the CPU through the stub header
// (tests/test_mps.py):
//
//   family_harness OP TIER TYPE IN OUT
//
// OP and TIER: an (op, tier) of the source's TG_KERNEL_OPS (its kernels <op>_<tier>_*;
// GELU's rows gelu_none and gelu_tanh among them);
// TYPE: float | half | bfloat.
// IN holds int64 n, int64 d[2] (two derivative programs), float inv, float cap, then grad[n],
// a[n] and b[n] in TYPE's storage. OUT receives the forward (Plain, Scaled: of a; Gated: of
// a, b), then for each d the backward (Plain, Scaled: of grad, a; Gated: of grad, a, b, both
// outputs), n elements each, in that order. Every element goes through the kernel functions
// themselves, one "thread" i at a time.
#include <cstdio>
#include <cstring>
#include <vector>

#include "family_kernels.metal"

template <class T>
struct Input {
  long n = 0;
  long d[2] = {0, 0};
  float inv = 1.0f, cap = 1.0f;
  std::vector<T> g, a, b;
};

template <class T>
bool read_input(const char* path, Input<T>& in) {
  FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  bool ok = std::fread(&in.n, sizeof in.n, 1, f) == 1 && std::fread(in.d, sizeof in.d, 1, f) == 1 &&
            std::fread(&in.inv, sizeof in.inv, 1, f) == 1 &&
            std::fread(&in.cap, sizeof in.cap, 1, f) == 1;
  if (ok) {
    for (std::vector<T>* v : {&in.g, &in.a, &in.b}) {
      v->resize(in.n);
      ok = ok && std::fread(v->data(), sizeof(T), in.n, f) == size_t(in.n);
    }
  }
  std::fclose(f);
  return ok;
}

template <class T>
int write_output(const char* path, const std::vector<const std::vector<T>*>& parts) {
  FILE* o = std::fopen(path, "wb");
  if (!o) return 2;
  for (const std::vector<T>* p : parts) std::fwrite(p->data(), sizeof(T), p->size(), o);
  std::fclose(o);
  return 0;
}

template <class T, class Fwd, class Bwd>
int run_PLAIN(const char* in_path, const char* out_path, Fwd fwd, Bwd bwd) {
  Input<T> in;
  if (!read_input(in_path, in)) return 2;
  std::vector<T> f(in.n), b0(in.n), b1(in.n);
  for (uint i = 0; i < uint(in.n); ++i) fwd(in.a.data(), f.data(), in.n, i);
  for (uint i = 0; i < uint(in.n); ++i) bwd(in.g.data(), in.a.data(), b0.data(), in.n, in.d[0], i);
  for (uint i = 0; i < uint(in.n); ++i) bwd(in.g.data(), in.a.data(), b1.data(), in.n, in.d[1], i);
  return write_output<T>(out_path, {&f, &b0, &b1});
}

template <class T, class Fwd, class Bwd>
int run_SCALED(const char* in_path, const char* out_path, Fwd fwd, Bwd bwd) {
  Input<T> in;
  if (!read_input(in_path, in)) return 2;
  std::vector<T> f(in.n), b0(in.n), b1(in.n);
  const T* g = in.g.data();
  const T* x = in.a.data();
  for (uint i = 0; i < uint(in.n); ++i) fwd(x, f.data(), in.n, in.inv, in.cap, i);
  for (uint i = 0; i < uint(in.n); ++i) bwd(g, x, b0.data(), in.n, in.d[0], in.inv, i);
  for (uint i = 0; i < uint(in.n); ++i) bwd(g, x, b1.data(), in.n, in.d[1], in.inv, i);
  return write_output<T>(out_path, {&f, &b0, &b1});
}

template <class T, class Fwd, class Bwd>
int run_GATED(const char* in_path, const char* out_path, Fwd fwd, Bwd bwd) {
  Input<T> in;
  if (!read_input(in_path, in)) return 2;
  std::vector<T> f(in.n), a0(in.n), b0(in.n), a1(in.n), b1(in.n);
  const T* g = in.g.data();
  const T* a = in.a.data();
  const T* b = in.b.data();
  for (uint i = 0; i < uint(in.n); ++i) fwd(a, b, f.data(), in.n, i);
  for (uint i = 0; i < uint(in.n); ++i) bwd(g, a, b, a0.data(), b0.data(), in.n, in.d[0], i);
  for (uint i = 0; i < uint(in.n); ++i) bwd(g, a, b, a1.data(), b1.data(), in.n, in.d[1], i);
  return write_output<T>(out_path, {&f, &a0, &b0, &a1, &b1});
}

int main(int argc, char** argv) {
  if (argc != 6) return 2;
#define TG_RUN_TYPE(OP, TIER, KIND, T, NAME)                             \
  if (!std::strcmp(argv[3], #NAME))                                      \
    return run_##KIND<T>(argv[4], argv[5], OP##_##TIER##_forward_##NAME, \
                         OP##_##TIER##_backward_##NAME);
#define TG_RUN(OP, TIER, KIND, PF, FF, NF, VF, FD, ND, VD)          \
  if (!std::strcmp(argv[1], #OP) && !std::strcmp(argv[2], #TIER)) { \
    TG_RUN_TYPE(OP, TIER, KIND, float, float)                       \
    TG_RUN_TYPE(OP, TIER, KIND, metal::half, half)                  \
    TG_RUN_TYPE(OP, TIER, KIND, tg_bf16, bfloat)                    \
    return 2;                                                       \
  }
  TG_KERNEL_OPS(TG_RUN)
#undef TG_RUN
#undef TG_RUN_TYPE
  return 2;
}
