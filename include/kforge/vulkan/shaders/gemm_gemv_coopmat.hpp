// kforge/vulkan/shaders/gemm_gemv_coopmat.hpp — f16 gemm for a few rows of A
// (decode with M = 5..16) on the tensor cores (GL_NV_cooperative_matrix,
// 16×16×16 f16·f16 + f32 fragments), with gemm's fused epilogue. Like gemv it
// streams B once, but the products run as fragments: a lane does no scalar
// FMAs and no conversions, so 8 or 16 rows of A cost what one does.
//
// Tiling: a workgroup of WG = 32·WARPS invocations computes BM = 16 rows
// (one fragment: rows past M are zero) × BN columns of C over its split's K
// range (grid z, kf_split_k(BK); all of K without KF_SPLIT). Each subgroup
// owns NF = BN/WARPS/16 adjacent column fragments and streams its own B block
// of BK rows × NF·16 columns per step: 16-byte loads into registers
// (consecutive lanes along a row), prefetched two steps ahead, then through the
// subgroup's own area of shared memory (Bs, rows padded by one uvec4) into
// fragments — no workgroup barrier per step, and each B element is read by
// one subgroup once. (Fragments loaded from global memory directly ran at a
// third of the bandwidth on the H200.) A is staged in shared memory (As,
// 16 rows × KC columns per chunk, padded) once per chunk for the whole
// workgroup, zero outside [M, kend).
//
// Bounds: KF_VEC = 1 reads A and B as 8-half vectors and needs K % 8 == 0 and
// N % 8 == 0 (the host picks KF_VEC = 0 otherwise). A subgroup's B block that
// lies inside the split's K range and N (KF_VEC only) is read with vector
// loads; any other element by element, zero outside. Results leave through a
// per-subgroup 16×16 f32 area (Cs), lane l applying the epilogue to row l/2,
// columns (l%2)·8 … +7 of each fragment, inside [M, N]: any M, N, K works.
// Specialization constants: 1 BM (16), 2 BN, 3 BK, 4 KC; 0 is WG. Needs a subgroup
// size of 32 (the host checks).
//
// Bindings, push constants and the epilogue: shaders/gemm_common.hpp (KF_VEC_T
// = uvec4, eight halves; T is float16_t, the kernel runs f16 data only).
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm_gemv_coopmat = R"glsl(
layout(constant_id = 1) const uint BM = 16;
layout(constant_id = 2) const uint BN = 256;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint KC = 256;  // A columns staged per chunk (a multiple of 256)

#define F16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
const uint WG = gl_WorkGroupSize.x, WARPS = WG / 32;
const uint NF = BN / WARPS / 16, KU = BK / 16;
const uint SA = KC / 8 + 1;          // As row stride in uvec4 (padded)
const uint NA = (16 * KC / 8 + WG - 1) / WG;
const uint RW = NF * 2;              // uvec4 per row of a subgroup's B block
const uint SB = RW + 1;              // its row stride in Bs (padded)
const uint RB = BK * RW / 32;        // B uvec4 per lane per step
shared uvec4 As[16 * SA];
shared uvec4 Bs[WARPS * BK * SB];    // each subgroup's B block of the current step
shared float Cs[WARPS * 256];

float16_t a_at(uint m, uint k) {
#if KF_VEC
  return unpackFloat2x16(a_[(m * pc.K + k) / 8][(k % 8) / 2])[k % 2];
#else
  return a_[m * pc.K + k];
#endif
}
float16_t b_at(uint k, uint n) {
#if KF_VEC
  const uint e = k * pc.N + n;
  return unpackFloat2x16(b_[e / 8][(e % 8) / 2])[e % 2];
#else
  return b_[k * pc.N + n];
#endif
}
// 8 halves of row r of a matrix from column c, zero where r >= rows or column >= cols.
uvec4 gather8(bool a, uint r, uint c, uint rows, uint cols) {
  float16_t h[8];
  [[unroll]] for (uint j = 0; j < 8; ++j)
    h[j] = r < rows && c + j < cols ? (a ? a_at(r, c + j) : b_at(r, c + j)) : float16_t(0.0);
  return uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
               packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
}

void main() {
  const uint t = gl_LocalInvocationID.x, warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN + warp * NF * 16;
  const uvec2 kr = kf_split_k(BK);
  ACC acc[NF];
  [[unroll]] for (uint f = 0; f < NF; ++f) acc[f] = ACC(0.0);
#if KF_VEC
  const bool full_n = n0 + NF * 16 <= pc.N;  // uniform over the subgroup
#else
  const bool full_n = false;
#endif
  // This subgroup's B block of BK rows × NF·16 columns at row k: consecutive
  // lanes read consecutive 16 bytes of a row (RW lanes per row), into registers.
#if KF_VEC
  #define FETCH_B_FAST(rb, k)                                                                \
      [[unroll]] for (uint e = 0; e < RB; ++e) {                                             \
        const uint i = lane + 32 * e;                                                        \
        rb[e] = b_[(((k) + i / RW) * pc.N + n0) / 8 + i % RW];                               \
      }
#else
  #define FETCH_B_FAST(rb, k)
#endif
  #define FETCH_B(rb, k)                                                                     \
    if (full_n && (k) + BK <= kr.y) {                                                        \
      FETCH_B_FAST(rb, k)                                                                    \
    } else {                                                                                 \
      [[unroll]] for (uint e = 0; e < RB; ++e) {                                             \
        const uint i = lane + 32 * e;                                                        \
        rb[e] = gather8(false, (k) + i / RW, n0 + (i % RW) * 8, kr.y, pc.N);                 \
      }                                                                                      \
    }
  // Two steps in flight: rb0 holds the even steps of a chunk, rb1 the odd
  // ones (a chunk of KC columns has an even number of BK steps, so every
  // chunk starts on rb0; only the last one may end on an even step).
  uvec4 rb0[RB], rb1[RB];
  if (kr.x < kr.y) { FETCH_B(rb0, kr.x) }
  if (kr.x + BK < kr.y) { FETCH_B(rb1, kr.x + BK) }

  for (uint c0 = kr.x; c0 < kr.y; c0 += KC) {
    const uint cend = min(kr.y, c0 + KC);
    barrier();  // every subgroup is done with the previous chunk
    [[unroll]] for (uint l = 0; l < NA; ++l) {
      const uint i = t + l * WG, r = i / (KC / 8), cv = i % (KC / 8), k = c0 + cv * 8;
      if (i < 16 * KC / 8) {
#if KF_VEC
        As[r * SA + cv] = m0 + r < pc.M && k < cend ? a_[((m0 + r) * pc.K + k) / 8] : uvec4(0);
#else
        As[r * SA + cv] = gather8(true, m0 + r, k, pc.M, cend);
#endif
      }
    }
    barrier();
    // One step: this subgroup's B block (registers rb) -> its shared area,
    // the loads of the step two ahead into rb, the products.
    #define STEP(rb, k0)                                                                       \
      [[unroll]] for (uint e = 0; e < RB; ++e) {                                               \
        const uint i = lane + 32 * e;                                                          \
        Bs[(warp * BK + i / RW) * SB + i % RW] = rb[e];                                        \
      }                                                                                        \
      subgroupMemoryBarrierShared();                                                           \
      subgroupBarrier();                                                                       \
      if ((k0) + 2 * BK < kr.y) { FETCH_B(rb, (k0) + 2 * BK) }                                \
      [[unroll]] for (uint u = 0; u < KU; ++u) {                                               \
        F16 fa;                                                                                \
        coopMatLoadNV(fa, As, ((k0) - c0 + u * 16) / 8, SA, false);                            \
        [[unroll]] for (uint f = 0; f < NF; ++f) {                                             \
          F16 fb;                                                                              \
          coopMatLoadNV(fb, Bs, (warp * BK + u * 16) * SB + f * 2, SB, false);                 \
          acc[f] = coopMatMulAddNV(fa, fb, acc[f]);                                            \
        }                                                                                      \
      }                                                                                        \
      subgroupMemoryBarrierShared();                                                           \
      subgroupBarrier(); /* Bs is rewritten by the next step */
    for (uint k0 = c0; k0 < cend; k0 += 2 * BK) {
      STEP(rb0, k0)
      if (k0 + BK < cend) { STEP(rb1, k0 + BK) }
    }
  }

  const uint row = lane / 2, col = (lane % 2) * 8;
  [[unroll]] for (uint f = 0; f < NF; ++f) {
    coopMatStoreNV(acc[f], Cs, warp * 256, 16, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const uint gm = m0 + row, gn0 = n0 + f * 16 + col;
    if (gm < pc.M)
      [[unroll]] for (uint e = 0; e < 8; ++e)
        if (gn0 + e < pc.N) kf_gemm_store(gm, gn0 + e, Cs[warp * 256 + row * 16 + col + e]);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
  }
}
)glsl";

}  // namespace kforge::vulkan::shaders
