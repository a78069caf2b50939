// Runs the generated Metal kernels on the CPU through the stub header (tests/test_mps.py):
//
//   harness TYPE IN OUT    TYPE: float | half | bfloat
//
// IN holds int64 n, then grad[n] and x[n] in TYPE's storage; OUT receives, for each of the
// TG_SETS coefficient sets s, the forward of x with set s and the backward of (grad, x) with
// set s (n elements each, in that order). Every element goes through the kernel functions
// themselves, one "thread" i at a time.
#include <cstdio>
#include <cstring>
#include <vector>

#include "gelu_kernels.metal"

template <class T, class Fwd, class Bwd>
int run(const char* in, const char* out, Fwd fwd, Bwd bwd) {
  FILE* f = std::fopen(in, "rb");
  if (!f) return 2;
  long n = 0;
  if (std::fread(&n, sizeof n, 1, f) != 1) return 2;
  std::vector<T> g(n), x(n), r(n);
  if (std::fread(g.data(), sizeof(T), n, f) != size_t(n)) return 2;
  if (std::fread(x.data(), sizeof(T), n, f) != size_t(n)) return 2;
  std::fclose(f);
  FILE* o = std::fopen(out, "wb");
  if (!o) return 2;
  for (long s = 0; s < TG_SETS; ++s) {
    for (uint i = 0; i < uint(n); ++i) fwd(x.data(), r.data(), n, s, i);
    std::fwrite(r.data(), sizeof(T), n, o);
    for (uint i = 0; i < uint(n); ++i) bwd(g.data(), x.data(), r.data(), n, s, i);
    std::fwrite(r.data(), sizeof(T), n, o);
  }
  std::fclose(o);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  if (!std::strcmp(argv[1], "float"))
    return run<float>(argv[2], argv[3], gelu_forward_float, gelu_backward_float);
  if (!std::strcmp(argv[1], "half"))
    return run<metal::half>(argv[2], argv[3], gelu_forward_half, gelu_backward_half);
  if (!std::strcmp(argv[1], "bfloat"))
    return run<tg_bf16>(argv[2], argv[3], gelu_forward_bfloat, gelu_backward_bfloat);
  return 2;
}
