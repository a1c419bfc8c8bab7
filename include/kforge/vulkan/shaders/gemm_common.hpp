// kforge/vulkan/shaders/gemm_common.hpp — the prelude of the gemm kernels
// that run gemm's own interface (gemm_tiled, gemm_coopmat, gemm_gemv): the
// operand bindings, the push constants, the K range of a split, and the
// fused epilogue every one of them ends with. (The generic kernel of
// shaders/gemm.hpp keeps its own: it doubles as conv2d's implicit GEMM, and
// the generation module's templates quote it.) The split-K reduction
// (shaders/gemm_splitk.hpp) shares the push constants and the epilogue.
//
// Defines set by the host: KF_VEC (1: A and B are read as vectors, B of type
// KF_VEC_T and A of KF_VEC_A_T (default KF_VEC_T), which each kernel's host
// side names; 0: as scalars of T), KF_BIAS and KF_ACT (the epilogue), and
// KF_SPLIT (1: the kernel computes one K split of a split-K gemm, see below),
// and for conv2d's implicit GEMM on gemm_tiled KF_CONV (1) with KF_VW (4,
// the columns an invocation gathers); without them KF_CONV is 0.
//
// Epilogue: v = alpha·acc; if beta != 0, v += beta·C (beta == 0 never reads
// C); v += bias[n] (KF_BIAS); v = act(v) with KF_ACT = kforge::fn code.
//
// Conv2d (KF_CONV = 1, gemm_tiled): the implicit GEMM of one group, B
// gathered from x (kf_conv_columns, kf_conv_row, kf_conv_b below), C stored
// as NKPQ with a bias per filter; split, the partial sums as below (the
// conv2d sum pass, shaders/conv2d.hpp, adds them and writes y).
//
// K split (KF_SPLIT = 1): the grid's z axis splits K into gl_NumWorkGroups.z
// ranges (kf_split_k); binding 3 is then an f32 scratch buffer of partial
// sums [splits][M][N] that kf_gemm_store fills with the raw dot products (no
// epilogue), and gemm_splitk_reduce sums them in split order and applies the
// epilogue: the result does not depend on which workgroup finishes first.
#pragma once

#include <string>

namespace kforge::vulkan::shaders {

/// The push constants of gemm's kernels (the split-K reduction reads K as the
/// number of splits); under KF_CONV (gemm_tiled only) those of conv2d's
/// implicit GEMM (M = filters, N = images·P·Q, K = C·R·S, then the
/// convolution's geometry).
inline constexpr const char* gemm_push = R"glsl(
#ifndef KF_CONV
#define KF_CONV 0
#endif
#if KF_CONV
layout(push_constant) uniform Push {
  uint M, N, K, C, H, W, P, Q, R, S, KT;
  int sh, sw, ph, pw, dh, dw;
  float slope;
} pc;
#else
layout(push_constant) uniform Push { uint M, N, K; float alpha, beta, slope; } pc;
#endif
)glsl";

/// kf_gemm_store(gm, gn, acc): the epilogue into C[gm, gn] (c_ of T), or the
/// raw partial into c_ of float under KF_SPLIT. Needs bias_, c_ and pc.
inline constexpr const char* gemm_epilogue = R"glsl(
// C[gm, gn] from its accumulated dot product; the caller checks gm < M, gn < N.
void kf_gemm_store(uint gm, uint gn, float acc) {
#if KF_SPLIT
  c_[(gl_WorkGroupID.z * pc.M + gm) * pc.N + gn] = acc;
#elif KF_CONV
  // y[img][gm][pixel] for column gn = img·P·Q + pixel; the bias is per filter (row).
  float v = acc;
#if KF_BIAS
  v += kf_ld(bias_[gm]);
#endif
  uint pq = pc.P * pc.Q, img = gn / pq;
  c_[(img * pc.KT + gm) * pq + (gn - img * pq)] = kf_st(kf_apply(KF_ACT, v, pc.slope));
#else
  uint idx = gm * pc.N + gn;
  float v = acc * pc.alpha;
  if (pc.beta != 0.0) v += pc.beta * kf_ld(c_[idx]);
#if KF_BIAS
  v += kf_ld(bias_[gn]);
#endif
  c_[idx] = kf_st(kf_apply(KF_ACT, v, pc.slope));
#endif
}
)glsl";

inline constexpr const char* gemm_bindings = R"glsl(
#ifndef KF_VEC_A_T
#define KF_VEC_A_T KF_VEC_T
#endif
#if KF_CONV && KF_VEC
layout(std430, set = 0, binding = 0) readonly buffer BufA { KF_VEC_A_T a_[]; };  // the filters [KT][C·R·S]
layout(std430, set = 0, binding = 1) readonly buffer BufB { T b_[]; };           // x, gathered (kf_conv_b)
#elif KF_VEC
layout(std430, set = 0, binding = 0) readonly buffer BufA { KF_VEC_A_T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { KF_VEC_T b_[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer BufA { T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { T b_[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer BufBias { T bias_[]; };
#if KF_SPLIT
layout(std430, set = 0, binding = 3) writeonly buffer BufC { float c_[]; };  // partial sums [splits][M][N]
#else
layout(std430, set = 0, binding = 3) buffer BufC { T c_[]; };
#endif

// K range [x, y) of this workgroup's split: K in gl_NumWorkGroups.z equal
// chunks rounded up to a multiple of `align` (the kernel's K step), so no K
// step straddles two splits. The host dispatches no more splits than the
// chunks it takes (gemm_splits_used), so only K == 0 leaves a range empty.
uvec2 kf_split_k(uint align) {
  uint s = gl_NumWorkGroups.z;
  uint chunk = ((pc.K + s - 1u) / s + align - 1u) / align * align;
  uint first = min(pc.K, gl_WorkGroupID.z * chunk);
  return uvec2(first, min(pc.K, first + chunk));
}

#if KF_CONV
// conv2d's implicit GEMM (gemm_tiled): B[k][n] = x[img][c][p·sh − ph + r·dh][q·sw − pw + s·dw]
// for k = (c·R + r)·S + s and n = (img·P + p)·Q + q, 0 outside the image and
// for n >= N. An invocation fetches the same KF_VW columns in every K tile
// (the host checks that the workgroup size is a multiple of the tile's
// column vectors), BN/KF_VW apart so that each of its scalar loads has the
// subgroup's lanes on consecutive columns (KF_STORE_B stores them one by
// one), and each column is decoded once (kf_conv_columns(first, step)):
// its image offset with the top-left tap's row and column folded in (uint
// arithmetic, wrapping where that tap lies in the padding) and that row and
// column; a far-negative row marks a column past N.
uint kf_cx_off[KF_VW];
int kf_cx_ih[KF_VW], kf_cx_iw[KF_VW];
void kf_conv_columns(uint gn0, uint step) {
  const uint pq = pc.P * pc.Q;
  [[unroll]] for (uint e = 0; e < KF_VW; ++e) {
    uint gn = gn0 + e * step, img = gn / pq, pix = gn - img * pq, p = pix / pc.Q, q = pix - p * pc.Q;
    int ih = int(p) * pc.sh - pc.ph, iw = int(q) * pc.sw - pc.pw;
    kf_cx_off[e] = img * pc.C * pc.H * pc.W + uint(ih) * pc.W + uint(iw);
    kf_cx_ih[e] = gn < pc.N ? ih : -0x40000000;
    kf_cx_iw[e] = iw;
  }
}
// R and S as constants 7 and 8 (the kernel's constants 0..6 are its tiling), so that the
// divisions by them below fold into multiplications.
layout(constant_id = 7) const uint KF_R = 1;
layout(constant_id = 8) const uint KF_S = 1;
// Row gk's tap: (offset of channel c and tap (r, s) from the top-left tap, r·dh, s·dw), the
// middle one far negative for gk >= K (every load of the row then reads 0).
ivec3 kf_conv_row(uint gk) {
  uint rs = KF_R * KF_S;
  uint c = gk / rs, t = gk - c * rs, r = t / KF_S, s = t - r * KF_S;
  int dy = int(r) * pc.dh, dx = int(s) * pc.dw;
  return ivec3(int((c * pc.H + uint(dy)) * pc.W + uint(dx)), gk < pc.K ? dy : -0x40000000, dx);
}
// B[row][column e of this invocation] as f32.
float kf_conv_b(ivec3 row, uint e) {
  int ih = kf_cx_ih[e] + row.y, iw = kf_cx_iw[e] + row.z;
  return (uint(ih) < pc.H && uint(iw) < pc.W) ? kf_ld(b_[kf_cx_off[e] + uint(row.x)]) : 0.0;
}
#endif
)glsl";

/// The double-buffered K loop of the shared-memory kernels (gemm_tiled,
/// gemm_coopmat): two shared buffers (ping-pong) and a register prefetch of
/// the next K tile, so the global loads of tile k+1 are in flight while tile
/// k is multiplied, and one barrier per K tile suffices (a buffer is
/// rewritten only after the barrier that ends its last read). The kernel
/// declares WG, BM, BN, BK, VW (elements per vector load), NA and NB (A and
/// B vector loads per invocation), registers ra[NA] and rb[NB], load_a and
/// load_b (zero outside the matrices), t (local invocation), m0 and n0 (the
/// tile's origin), shared Bs with row stride SB, and the macros KF_STORE(buf)
/// (registers -> shared buffer buf, KF_STORE_B for B) and KF_MMA(buf) (multiply shared buffer buf into the accumulators);
/// then KF_K_LOOP() runs the K range of its split.
inline constexpr const char* gemm_k_loop = R"glsl(
// Global -> registers: the A [BM x BK] and B [BK x BN] tiles at K offset k0,
// as vectors of VW elements. Loads past a tile's last vector (i beyond it,
// when WG does not divide the tile) are skipped: KF_STORE skips them too.
#define KF_FETCH(k0)                                                             \
  [[unroll]] for (uint l = 0; l < NA; ++l) {                                     \
    uint i = t + l * WG, r = i / (BK / VW), kv = i % (BK / VW);                  \
    if (i < BM * BK / VW) ra[l] = load_a(m0 + r, (k0) + kv * VW);                \
  }                                                                              \
  [[unroll]] for (uint l = 0; l < NB; ++l) {                                     \
    uint i = t + l * WG, r = i / (BN / VW), cv = i % (BN / VW);                  \
    if (i < BK * BN / VW) rb[l] = load_b((k0) + r, n0 + cv * VW);                \
  }
// Registers -> shared buffer buf for B, row-major with padded row stride SB
// (in vectors), as both kernels keep it; each kernel stores A its own way.
#if KF_CONV
// conv2d's implicit GEMM: vector cv holds columns cv + e·BN/VW (kf_conv_columns), stored one by one.
#define KF_STORE_B(buf)                                                          \
  [[unroll]] for (uint l = 0; l < NB; ++l) {                                     \
    uint i = t + l * WG, r = i / (BN / VW), cv = i % (BN / VW);                  \
    if (i < BK * BN / VW)                                                        \
      [[unroll]] for (uint e = 0; e < VW; ++e) {                                 \
        uint col = cv + e * (BN / VW);                                           \
        Bs[((buf) * BK + r) * SB + col / VW][col % VW] = rb[l][e];               \
      }                                                                          \
  }
#else
#define KF_STORE_B(buf)                                                          \
  [[unroll]] for (uint l = 0; l < NB; ++l) {                                     \
    uint i = t + l * WG, r = i / (BN / VW), cv = i % (BN / VW);                  \
    if (i < BK * BN / VW) Bs[((buf) * BK + r) * SB + cv] = rb[l];                \
  }
#endif
#define KF_K_LOOP()                                                              \
  const uvec2 kr = kf_split_k(BK); /* all of K unless the grid splits it */      \
  const uint tiles = (kr.y - kr.x + BK - 1) / BK;                                \
  KF_FETCH(kr.x)                                                                 \
  KF_STORE(0u)                                                                   \
  barrier();                                                                     \
  for (uint kt = 0; kt < tiles; ++kt) {                                          \
    const uint buf = kt & 1u;                                                    \
    const bool more = kt + 1 < tiles;                                            \
    if (more) { KF_FETCH(kr.x + (kt + 1) * BK) }                                 \
    KF_MMA(buf)                                                                  \
    if (more) { KF_STORE(buf ^ 1u) }                                             \
    barrier();                                                                   \
  }
)glsl";

/// The whole prelude of a kernel on gemm's interface: bindings, push constants, K split, epilogue, K loop.
inline const std::string& gemm_common() {
  static const std::string s = std::string(gemm_push) + gemm_bindings + gemm_epilogue + gemm_k_loop;
  return s;
}

}  // namespace kforge::vulkan::shaders
