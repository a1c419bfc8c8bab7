// kforge/vulkan/shaders/gemm_gemv.hpp — gemm for few rows of A (decode:
// M = 1..16): streams B once, f32 arithmetic, f32, f16 or bf16 storage, with
// gemm's fused epilogue. Memory-bound by design: B is read once, with
// 16-byte loads where it can be, and nothing is staged in shared memory.
//
// Tiling: a workgroup computes BM rows × BN columns of C over its split's K
// range (grid z, kf_split_k; all of K without KF_SPLIT). Its WG invocations
// form BN/TN column groups of KL = WG·TN/BN consecutive lanes of one
// subgroup; a column group owns TN adjacent columns, and each of its lanes a
// different run of BK rows of every K step of KL·BK rows (lane ks: rows
// ks·BK … ks·BK+BK-1), so one subgroup load instruction reads KL rows of B,
// each 32/KL·TN contiguous elements. Per step a lane loads its BK×TN block
// of B (BK·TN/4 vec4, or BK·TN/8 uvec4 of packed 16-bit elements, in
// flight), then for each of the BM rows of A one vector of 4 A elements per
// 4 rows, and does BM·BK·TN FMAs into BM·TN/4 vec4 accumulators (indexed only by unrolled
// counters). At the end the KL lanes of a column group are summed by a
// subgroupShuffleXor butterfly (every lane gets the same sum: the order is
// fixed), and lane ks stores rows m ≡ ks (mod KL). The grid is
// ⌈N/BN⌉ × ⌈M/BM⌉ × splits; rows of A beyond BM are another workgroup row
// (B read again), so BM ≥ M is what the default picks.
//
// Bounds: KF_VEC = 1 reads B as vectors of TN elements (KF_VEC_T: T4, or a
// uvec4 of 8 f16 or bf16 elements with KF_B_PACKED, unpacked by the prelude's
// kf_unpack2) and A as 4-vectors (KF_VEC_A_T = T4),
// and needs N % TN == 0 and K % 4 == 0 (the host picks KF_VEC = 0 otherwise:
// scalar loads, each element guarded). Rows outside [0, M) and K rows outside
// the split's range load 0 (B and A both, so an Inf in B beyond the range
// never meets a 0); stores outside [M, N] are skipped: any M, N, K works.
// Needs subgroup shuffles, KL ≤ the subgroup size and whole subgroups (the
// host checks). Specialization constants: 1 BM, 2 BN, 3 BK, 4 TN; 0 is WG.
//
// Bindings, push constants, the split's K range and the epilogue:
// shaders/gemm_common.hpp.
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm_gemv = R"glsl(
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 1) const uint BM = 1;
layout(constant_id = 2) const uint BN = 256;
layout(constant_id = 3) const uint BK = 8;
layout(constant_id = 4) const uint TN = 4;

const uint WG = gl_WorkGroupSize.x;
const uint KL = WG * TN / BN;  // lanes per column group
const uint NV = TN / 4;        // vec4 per row of a column group

// A[m, k..k+3] (zero outside [M, kend)).
vec4 load_a4(uint m, uint k, uint kend) {
#if KF_VEC
  return (m < pc.M && k < kend) ? kf_ld4(a_[(m * pc.K + k) / 4]) : vec4(0.0);
#else
  vec4 v = vec4(0.0);
  if (m < pc.M)
    [[unroll]] for (uint e = 0; e < 4; ++e) if (k + e < kend) v[e] = kf_ld(a_[m * pc.K + k + e]);
  return v;
#endif
}

void main() {
  const uint lane = gl_SubgroupInvocationID, ks = lane % KL;
  const uint n = gl_WorkGroupID.x * BN + (gl_SubgroupID * (gl_SubgroupSize / KL) + lane / KL) * TN;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uvec2 kr = kf_split_k(KL * BK);
  vec4 acc[BM * NV];
  [[unroll]] for (uint i = 0; i < BM * NV; ++i) acc[i] = vec4(0.0);

  for (uint k0 = kr.x + ks * BK; k0 < kr.y; k0 += KL * BK) {
    // This lane's BK rows of B first (all loads in flight), then the FMAs.
    vec4 bv[BK * NV];
    [[unroll]] for (uint u = 0; u < BK; ++u) {
      const uint k = k0 + u;
      const bool in_k = k < kr.y;
#if KF_VEC && KF_B_PACKED
      [[unroll]] for (uint j = 0; j < TN / 8; ++j) {
        uvec4 w = (in_k && n < pc.N) ? b_[(k * pc.N + n) / 8 + j] : uvec4(0);
        bv[u * NV + 2 * j] = vec4(kf_unpack2(w.x), kf_unpack2(w.y));
        bv[u * NV + 2 * j + 1] = vec4(kf_unpack2(w.z), kf_unpack2(w.w));
      }
#elif KF_VEC
      [[unroll]] for (uint j = 0; j < NV; ++j)
        bv[u * NV + j] = (in_k && n < pc.N) ? kf_ld4(b_[(k * pc.N + n) / 4 + j]) : vec4(0.0);
#else
      [[unroll]] for (uint j = 0; j < NV; ++j)
        [[unroll]] for (uint e = 0; e < 4; ++e) {
          const uint c = n + 4 * j + e;
          bv[u * NV + j][e] = (in_k && c < pc.N) ? kf_ld(b_[k * pc.N + c]) : 0.0;
        }
#endif
    }
    [[unroll]] for (uint m = 0; m < BM; ++m)
      if (m0 + m < pc.M)  // uniform: rows past M do no work
        [[unroll]] for (uint q = 0; q < BK / 4; ++q) {
          const vec4 a = load_a4(m0 + m, k0 + 4 * q, kr.y);
          [[unroll]] for (uint e = 0; e < 4; ++e)
            [[unroll]] for (uint j = 0; j < NV; ++j)
              acc[m * NV + j] = fma(vec4(a[e]), bv[(4 * q + e) * NV + j], acc[m * NV + j]);
        }
  }

  // Sum the KL lanes of each column group (butterfly over lane bits below KL).
  [[unroll]] for (uint s = 1; s < KL; s *= 2)
    [[unroll]] for (uint i = 0; i < BM * NV; ++i) acc[i] += subgroupShuffleXor(acc[i], s);

  [[unroll]] for (uint m = 0; m < BM; ++m) {
    if (m % KL != ks || m0 + m >= pc.M) continue;
    [[unroll]] for (uint j = 0; j < NV; ++j)
      [[unroll]] for (uint e = 0; e < 4; ++e) {
        const uint gn = n + 4 * j + e;
        if (gn < pc.N) kf_gemm_store(m0 + m, gn, acc[m * NV + j][e]);
      }
  }
}
)glsl";

}  // namespace kforge::vulkan::shaders
