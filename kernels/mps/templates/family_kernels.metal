//! A part of kernels/mps/family_kernels.metal, which `python -m turbogelu codegen`
//! (turbogelu/approx/codegen.py) writes from it without these //! lines.

// One kernel pair per op kind, instantiated per op, tier and storage type: OP##_##TIER names
// the pair, PF is its forward program, (FF, NF, VF) and (FD, ND, VD) the shapes. One element
// per thread, the grid has n threads (or more: hence the guard). Storage is widened to float
// and rounded once.
#define TG_PLAIN_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, T, NAME)                   \
  kernel void OP##_##TIER##_forward_##NAME(device const T* x [[buffer(0)]],              \
                                           device T* out [[buffer(1)]],                  \
                                           constant long& n [[buffer(2)]],               \
                                           uint i [[thread_position_in_grid]]) {         \
    if (i < n) out[i] = tg_store(tg_plain_forward<FF, NF, VF>(tg_load(x[i]), PF), T());  \
  }                                                                                      \
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \
                                            device const T* x [[buffer(1)]],             \
                                            device T* out [[buffer(2)]],                 \
                                            constant long& n [[buffer(3)]],              \
                                            constant long& d [[buffer(4)]],              \
                                            uint i [[thread_position_in_grid]]) {        \
    if (i < n)                                                                           \
      out[i] = tg_store(                                                                 \
          tg_plain_backward<FD, ND, VD>(tg_load(g[i]), tg_load(x[i]), int(d)), T());     \
  }

#define TG_SCALED_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, T, NAME)                  \
  kernel void OP##_##TIER##_forward_##NAME(device const T* x [[buffer(0)]],              \
                                           device T* out [[buffer(1)]],                  \
                                           constant long& n [[buffer(2)]],               \
                                           constant float& inv [[buffer(3)]],            \
                                           constant float& cap [[buffer(4)]],            \
                                           uint i [[thread_position_in_grid]]) {         \
    if (i < n)                                                                           \
      out[i] =                                                                           \
          tg_store(tg_scaled_forward<FF, NF, VF>(tg_load(x[i]), PF, inv, cap), T());     \
  }                                                                                      \
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \
                                            device const T* x [[buffer(1)]],             \
                                            device T* out [[buffer(2)]],                 \
                                            constant long& n [[buffer(3)]],              \
                                            constant long& d [[buffer(4)]],              \
                                            constant float& inv [[buffer(5)]],           \
                                            uint i [[thread_position_in_grid]]) {        \
    if (i < n)                                                                           \
      out[i] = tg_store(                                                                 \
          tg_scaled_backward<FD, ND, VD>(tg_load(g[i]), tg_load(x[i]), int(d), inv),     \
          T());                                                                          \
  }

#define TG_GATED_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, T, NAME)                   \
  kernel void OP##_##TIER##_forward_##NAME(device const T* a [[buffer(0)]],              \
                                           device const T* b [[buffer(1)]],              \
                                           device T* out [[buffer(2)]],                  \
                                           constant long& n [[buffer(3)]],               \
                                           uint i [[thread_position_in_grid]]) {         \
    if (i < n)                                                                           \
      out[i] =                                                                           \
          tg_store(tg_gated_forward<FF, NF, VF>(tg_load(a[i]), tg_load(b[i]), PF), T()); \
  }                                                                                      \
  kernel void OP##_##TIER##_backward_##NAME(device const T* g [[buffer(0)]],             \
                                            device const T* a [[buffer(1)]],             \
                                            device const T* b [[buffer(2)]],             \
                                            device T* out_a [[buffer(3)]],               \
                                            device T* out_b [[buffer(4)]],               \
                                            constant long& n [[buffer(5)]],              \
                                            constant long& d [[buffer(6)]],              \
                                            uint i [[thread_position_in_grid]]) {        \
    if (i < n) {                                                                         \
      /* every input is read before either output is written: out_a or out_b may be */   \
      /* one of the inputs */                                                            \
      const tg_pair r = tg_gated_backward<FF, NF, VF, FD, ND, VD>(                       \
          tg_load(g[i]), tg_load(a[i]), tg_load(b[i]), PF, int(d));                      \
      out_a[i] = tg_store(r.first, T());                                                 \
      out_b[i] = tg_store(r.second, T());                                                \
    }                                                                                    \
  }

// Every op in every tier for every storage type: <op>_<tier>_forward_<type>,
// <op>_<tier>_backward_<type>.
#define TG_FAMILY_KERNELS(OP, TIER, KIND, PF, FF, NF, VF, FD, ND, VD)     \
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, float, float) \
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, half, half)   \
  TG_##KIND##_KERNELS(OP, TIER, PF, FF, NF, VF, FD, ND, VD, tg_bf16, bfloat)

TG_KERNEL_OPS(TG_FAMILY_KERNELS)
