// kforge/vulkan/shaders/gemm_tiled.hpp — register-blocked GEMM with vector
// loads and double-buffered shared memory (f32 arithmetic, f32, f16 or
// bf16 storage), with gemm's fused epilogue.
//
// Tiling: a workgroup computes a BM×BN tile of C, stepping K by BK. Each
// invocation owns TM×TN outputs as (TM/4)×(TN/4) blocks of 4×4 contiguous
// elements (rows tr·4 + g·BM/(TM/4), columns tc·4 + g·BN/(TN/4)), so every
// shared-memory read in the inner loop is one 16-byte vec4: per k step an
// invocation reads TM/4 + TN/4 vec4 and does TM·TN FMAs, as TM·TN/4 vec4
// FMAs into vec4 accumulators, which every loop indexes only by unrolled
// counters (the epilogue too: when it indexed them element by element, 8×8
// ran at 2 TFLOP/s on the H100, the accumulators out of registers; now 36 at
// 4096³). A is stored k-major
// (transposed on the way in), B as is; rows are padded by 4 floats, which
// keeps vec4 alignment and makes the transposed A stores conflict-free
// (two k rows land 16 banks apart). Double-buffered by the K loop both
// shared-memory kernels share (KF_K_LOOP, shaders/gemm_common.hpp): two
// shared buffers (ping-pong) and a register prefetch of the next K tile.
// Workgroup order: kf_tile_of_group(GROUP_M). BM, BN, BK, TM, TN, GROUP_M are
// specialization constants 1..6; workgroup size = (BM/TM)·(BN/TN) (constant 0).
// Split-K (KF_SPLIT, grid z > 1): the workgroup runs only its split's K range
// (kf_split_k, a multiple of BK) and stores raw partial sums.
//
// Bounds: KF_VEC = 1 reads A and B as 4-vectors and needs K % 4 == 0 and
// N % 4 == 0 (the host picks KF_VEC = 0 otherwise, which reads scalars); a
// vector or scalar outside [M,K] / [K,N] loads 0; stores outside [M,N] are
// skipped. So any M, N, K (including 0) is handled without padding.
//
// Conv2d (KF_CONV, KF_VW = 4): the implicit GEMM of one group, B gathered
// from x as it is fetched (kf_conv_b) and C stored as NKPQ (or, split, the
// partial sums); A (the filters) is read as vectors where C·R·S % 4 == 0
// (KF_VEC).
//
// Bindings, push constants and the epilogue: shaders/gemm_common.hpp (KF_VEC_T = T4).
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm_tiled = R"glsl(
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 8;
layout(constant_id = 4) const uint TM = 8;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const uint GROUP_M = 8;


const uint WG = (BM / TM) * (BN / TN), VW = 4;
const uint SA = (BM + 4) / 4, SB = (BN + 4) / 4;  // padded row strides in vec4
const uint NA = (BM * BK / 4 + WG - 1) / WG;     // A vec4 loads per invocation
const uint NB = (BK * BN / 4 + WG - 1) / WG;     // B vec4 loads per invocation
shared vec4 As[2 * BK * SA];
shared vec4 Bs[2 * BK * SB];

// A[gm, gk..gk+3] and B[gk, gn..gn+3], zero outside the matrices.
vec4 load_a(uint gm, uint gk) {
#if KF_VEC
  return (gm < pc.M && gk < pc.K) ? kf_ld4(a_[(gm * pc.K + gk) / 4]) : vec4(0.0);
#else
  vec4 v = vec4(0.0);
  if (gm < pc.M)
    [[unroll]] for (uint j = 0; j < 4; ++j) if (gk + j < pc.K) v[j] = kf_ld(a_[gm * pc.K + gk + j]);
  return v;
#endif
}
vec4 load_b(uint gk, uint gn) {
#if KF_CONV  // gn: this invocation's columns, decoded by kf_conv_columns
  ivec3 row = kf_conv_row(gk);
  return vec4(kf_conv_b(row, 0u), kf_conv_b(row, 1u), kf_conv_b(row, 2u), kf_conv_b(row, 3u));
#elif KF_VEC
  return (gk < pc.K && gn < pc.N) ? kf_ld4(b_[(gk * pc.N + gn) / 4]) : vec4(0.0);
#else
  vec4 v = vec4(0.0);
  if (gk < pc.K)
    [[unroll]] for (uint j = 0; j < 4; ++j) if (gn + j < pc.N) v[j] = kf_ld(b_[gk * pc.N + gn + j]);
  return v;
#endif
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint CS = BN / TN, tr = t / CS, tc = t % CS;
  const uint GM = TM / 4, GN = TN / 4, RS = BM / GM, CSTR = BN / GN;
  const uvec2 tile = kf_tile_of_group(GROUP_M);
  const uint m0 = tile.x * BM, n0 = tile.y * BN;
  vec4 acc[TM * GN];  // acc[i * GN + j / 4][j % 4]: output row i, column j of the thread tile
  [[unroll]] for (uint i = 0; i < TM * GN; ++i) acc[i] = vec4(0.0);
  vec4 ra[NA], rb[NB];
#if KF_CONV
  kf_conv_columns(n0 + t % (BN / VW), BN / VW);
#endif

  // Registers -> shared buffer `buf` (A transposed to k-major).
  #define KF_STORE(buf)                                                              \
    [[unroll]] for (uint l = 0; l < NA; ++l) {                                       \
      uint i = t + l * WG, r = i / (BK / 4), kv = i % (BK / 4);                      \
      if (i < BM * BK / 4)                                                           \
        [[unroll]] for (uint j = 0; j < 4; ++j) As[((buf) * BK + kv * 4 + j) * SA + r / 4][r % 4] = ra[l][j]; \
    }                                                                                \
    KF_STORE_B(buf)
  // The BK k steps over shared buffer buf: TM/4 + TN/4 vec4 reads, TM·TN FMAs each.
  #define KF_MMA(buf)                                                                \
    [[unroll]] for (uint kk = 0; kk < BK; ++kk) {                                    \
      vec4 av[GM], bv[GN];                                                           \
      [[unroll]] for (uint g = 0; g < GM; ++g) av[g] = As[((buf) * BK + kk) * SA + (g * RS) / 4 + tr]; \
      [[unroll]] for (uint g = 0; g < GN; ++g) bv[g] = Bs[((buf) * BK + kk) * SB + (g * CSTR) / 4 + tc]; \
      [[unroll]] for (uint i = 0; i < TM; ++i)                                       \
        [[unroll]] for (uint g = 0; g < GN; ++g)                                     \
          acc[i * GN + g] = fma(vec4(av[i / 4][i % 4]), bv[g], acc[i * GN + g]);     \
    }
  KF_K_LOOP()

  // Epilogue, one accumulator vector (4 adjacent columns) at a time, so acc
  // is only ever indexed by the unrolled i and g.
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    uint gm = m0 + (i / 4) * RS + tr * 4 + i % 4;
    [[unroll]] for (uint g = 0; g < GN; ++g) {
      vec4 v = acc[i * GN + g];
      uint gn0 = n0 + g * CSTR + tc * 4;
      if (gm >= pc.M) continue;
      for (uint e = 0; e < 4; ++e) {
        if (gn0 + e >= pc.N) break;
        kf_gemm_store(gm, gn0 + e, v[e]);
      }
    }
  }
}
)glsl";

}  // namespace kforge::vulkan::shaders
