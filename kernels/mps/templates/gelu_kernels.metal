//! A part of kernels/mps/gelu_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines.

// One element per thread; the grid has n threads (or more: hence the guard).
#define TG_KERNELS(T, NAME)                                                            \
  kernel void gelu_forward_##NAME(device const T* x [[buffer(0)]],                     \
                                  device T* out [[buffer(1)]],                         \
                                  constant long& n [[buffer(2)]],                      \
                                  constant long& s [[buffer(3)]],                      \
                                  uint i [[thread_position_in_grid]]) {                \
    if (i < n) out[i] = tg_store(tg_forward(tg_load(x[i]), s), T());                   \
  }                                                                                    \
  kernel void gelu_backward_##NAME(device const T* g [[buffer(0)]],                    \
                                   device const T* x [[buffer(1)]],                    \
                                   device T* out [[buffer(2)]],                        \
                                   constant long& n [[buffer(3)]],                     \
                                   constant long& s [[buffer(4)]],                     \
                                   uint i [[thread_position_in_grid]]) {               \
    if (i < n) out[i] = tg_store(tg_backward(tg_load(g[i]), tg_load(x[i]), s), T());  \
  }

TG_KERNELS(float, float)
TG_KERNELS(half, half)
TG_KERNELS(tg_bf16, bfloat)
