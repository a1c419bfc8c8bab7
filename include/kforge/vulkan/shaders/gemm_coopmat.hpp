// kforge/vulkan/shaders/gemm_coopmat.hpp — f16 GEMM on the tensor cores
// through GL_NV_cooperative_matrix (16×16×16 f16·f16 + f32 tiles at subgroup
// scope), f32 accumulation, with gemm's fused epilogue.
//
// Tiling: a workgroup of WG = 32·WARPS invocations computes a BM×BN tile of C
// stepping K by BK (BK % 16 == 0). Subgroups form a WARPS_M × (WARPS/WARPS_M)
// grid; each owns a (BM/WARPS_M)×(BN/WARPS_N) block as FM×FN accumulator
// fragments, and per 16-deep k step loads FM A and FN B fragments from shared
// memory for FM·FN coopMatMulAdd (KF_MMA). Shared tiles hold f16 packed 8 to a uvec4,
// rows padded by one uvec4 (16 bytes): the 8 rows a fragment load reads per
// phase then fall in distinct bank groups. Double-buffered by the K loop
// both shared-memory kernels share (KF_K_LOOP, shaders/gemm_common.hpp):
// ping-pong shared buffers, a register prefetch, one barrier per K tile. Workgroup order: kf_tile_of_group(GROUP_M).
// Specialization constants: 1 BM, 2 BN, 3 BK, 4 WARPS_M, 5 GROUP_M; constant
// 0 is WG. Needs a subgroup size of 32 (the host checks). Split-K (KF_SPLIT,
// grid z > 1): the workgroup runs only its split's K range (kf_split_k, a
// multiple of BK) and stores raw partial sums through the same staging area.
//
// Bounds: KF_VEC = 1 reads A and B as 8-half vectors and needs K % 8 == 0 and
// N % 8 == 0 (the host picks KF_VEC = 0 otherwise: scalar loads, each element
// guarded); loads outside [M,K] / [K,N] put 0 in shared memory, so partial
// tiles multiply zeros. Results leave through a per-subgroup 16×16 f32
// staging area in shared memory, from which each invocation applies the
// epilogue to 8 elements and stores those inside [M,N]: any M, N, K works.
//
// Bindings, push constants and the epilogue: shaders/gemm_common.hpp (KF_VEC_T
// = uvec4, eight halves; T is float16_t, the kernel runs f16 data only).
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm_coopmat_f16 = R"glsl(
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WARPS_M = 2;
layout(constant_id = 5) const uint GROUP_M = 8;


const uint WG = gl_WorkGroupSize.x, WARPS = WG / 32, WARPS_N = WARPS / WARPS_M, VW = 8;
const uint FM = BM / WARPS_M / 16, FN = BN / WARPS_N / 16;
const uint SA = BK / 8 + 1, SB = BN / 8 + 1;     // padded row strides in uvec4
const uint NA = (BM * BK / 8 + WG - 1) / WG;     // A uvec4 loads per invocation
const uint NB = (BK * BN / 8 + WG - 1) / WG;
shared uvec4 As[2 * BM * SA];
shared uvec4 Bs[2 * BK * SB];
shared float Cs[WARPS * 256];

#if !KF_VEC
uvec4 gather8(bool a, uint row, uint col) {
  float16_t h[8];
  [[unroll]] for (uint j = 0; j < 8; ++j) {
    bool in_ = a ? (row < pc.M && col + j < pc.K) : (row < pc.K && col + j < pc.N);
    h[j] = in_ ? (a ? a_[row * pc.K + col + j] : b_[row * pc.N + col + j]) : float16_t(0.0);
  }
  return uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
               packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
}
#endif
// A[gm, gk..gk+7] and B[gk, gn..gn+7] as packed halves, zero outside.
uvec4 load_a(uint gm, uint gk) {
#if KF_VEC
  return (gm < pc.M && gk < pc.K) ? a_[(gm * pc.K + gk) / 8] : uvec4(0);
#else
  return gather8(true, gm, gk);
#endif
}
uvec4 load_b(uint gk, uint gn) {
#if KF_VEC
  return (gk < pc.K && gn < pc.N) ? b_[(gk * pc.N + gn) / 8] : uvec4(0);
#else
  return gather8(false, gk, gn);
#endif
}

void main() {
  const uint t = gl_LocalInvocationID.x, warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = warp / WARPS_N, wn = warp % WARPS_N;
  const uvec2 tile = kf_tile_of_group(GROUP_M);
  const uint m0 = tile.x * BM, n0 = tile.y * BN;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM * FN];
  [[unroll]] for (uint i = 0; i < FM * FN; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  uvec4 ra[NA], rb[NB];

  #define KF_STORE(buf)                                                              \
    [[unroll]] for (uint l = 0; l < NA; ++l) {                                       \
      uint i = t + l * WG, r = i / (BK / 8), kv = i % (BK / 8);                      \
      if (i < BM * BK / 8) As[((buf) * BM + r) * SA + kv] = ra[l];                   \
    }                                                                                \
    KF_STORE_B(buf)
  // 16-deep k steps over shared buffer buf: FM A and FN B fragments, FM·FN products.
  #define KF_MMA(buf)                                                                \
    [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {                                \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM], fb[FN];                       \
      [[unroll]] for (uint i = 0; i < FM; ++i)                                       \
        coopMatLoadNV(fa[i], As, ((buf) * BM + wm * FM * 16 + i * 16) * SA + kk / 8, SA, false); \
      [[unroll]] for (uint j = 0; j < FN; ++j)                                       \
        coopMatLoadNV(fb[j], Bs, ((buf) * BK + kk) * SB + (wn * FN * 16 + j * 16) / 8, SB, false); \
      [[unroll]] for (uint i = 0; i < FM; ++i)                                       \
        [[unroll]] for (uint j = 0; j < FN; ++j)                                     \
          acc[i * FN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * FN + j]);          \
    }
  KF_K_LOOP()

  // Epilogue through the subgroup's 16×16 staging area: lane l handles row
  // l/2, columns (l%2)·8 … +7 of each fragment.
  const uint row = lane / 2, col = (lane % 2) * 8;
  [[unroll]] for (uint i = 0; i < FM; ++i)
    [[unroll]] for (uint j = 0; j < FN; ++j) {
      coopMatStoreNV(acc[i * FN + j], Cs, warp * 256, 16, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      uint gm = m0 + wm * FM * 16 + i * 16 + row;
      uint gn0 = n0 + wn * FN * 16 + j * 16 + col;
      if (gm < pc.M)
        [[unroll]] for (uint e = 0; e < 8; ++e) {
          uint gn = gn0 + e;
          if (gn < pc.N) kf_gemm_store(gm, gn, Cs[warp * 256 + row * 16 + col + e]);
        }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
}
)glsl";

}  // namespace kforge::vulkan::shaders
