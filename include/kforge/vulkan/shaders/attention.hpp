// kforge/vulkan/shaders/attention.hpp — flash-style attention: scores are
// never materialised.
//
// Tiling: one workgroup per (batch, head, query row). The query row is kept
// in shared memory; keys are visited in blocks of WG (one key per invocation
// computes its score q·k·scale); the block's max and exp-sum update a running
// (m, l) and rescale the output accumulator acc[Dv] (shared; invocation t owns
// columns t, t+WG, …), which then adds Σ p_j·V[j]. MAXD (spec constant 1) sizes
// the shared q and acc arrays; the host sets it to max(D, Dv) rounded up and
// refuses heads that do not fit the device's shared memory.
//
// Bounds: keys past L get no score and add nothing; causal-masked keys get
// score -inf, p = 0, and still multiply V (0·Inf = NaN, as in the reference's
// matrix product). L == 0 writes zeros; NaN or +Inf scores, or a row whose
// scores are all -inf, write NaN (the reference's softmax does the same).
#pragma once

#include "kforge/ops/attention_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* attention = R"glsl(
layout(constant_id = 1) const uint MAXD = 64;
layout(std430, set = 0, binding = 0) readonly buffer BufQ { T q_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { T k_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { T v_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { T o_[]; };
layout(push_constant) uniform Push { uint BH, S, L, D, DV; float scale; uint causal; } pc;
shared float qs[MAXD];
shared float acc[MAXD];
shared float ps[gl_WorkGroupSize.x];
void main() {
  uint id = kf_group_id();
  if (id >= pc.BH * pc.S) return;  // uniform per workgroup
  uint bh = id / pc.S, row = id % pc.S, t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  for (uint d = t; d < pc.D; d += WG) qs[d] = float(q_[id * pc.D + d]);
  for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;
  barrier();
  float m = -KF_INF, l = 0.0;
  bool nan = false;
  for (uint j0 = 0; j0 < pc.L; j0 += WG) {
    uint j = j0 + t;
    bool valid = j < pc.L;
    float s = -KF_INF;
    if (valid) {
      float dot = 0.0;
      for (uint d = 0; d < pc.D; ++d) dot = fma(qs[d], float(k_[(bh * pc.L + j) * pc.D + d]), dot);
      s = dot * pc.scale;
      if (pc.causal != 0u && j > row) s = -KF_INF;
    }
    bool bad = valid && isnan(s);
    float bm = kf_wg_max(bad ? -KF_INF : s);
    nan = kf_wg_any(bad) || nan;
    float mnew = max(m, bm);
    float corr = m == -KF_INF ? 0.0 : exp(m - mnew);
    float p = (!valid || bad || s == -KF_INF || mnew == -KF_INF) ? 0.0 : exp(s - mnew);
    ps[t] = p;
    l = l * corr + kf_wg_sum(p);
    m = mnew;
    uint nb = min(WG, pc.L - j0);
    for (uint d = t; d < pc.DV; d += WG) {
      float a = acc[d] * corr;
      for (uint jj = 0; jj < nb; ++jj) a = fma(ps[jj], float(v_[(bh * pc.L + j0 + jj) * pc.DV + d]), a);
      acc[d] = a;
    }
    barrier();
  }
  bool undefined = nan || isinf(m);
  for (uint d = t; d < pc.DV; d += WG)
    o_[id * pc.DV + d] = T(pc.L == 0u ? 0.0 : (undefined ? KF_NAN : acc[d] / l));
}
)glsl";

// attention_coopmat: f16 data on NV cooperative matrices (16×16×16 f16·f16 +
// f32), for head dims D, Dv that are multiples of 16 and at most 64 (spec
// constants 1 and 2). A workgroup of WARPS subgroups takes 16·WARPS query rows
// (Q staged through shared memory, zero past S, then held as fragments);
// key blocks of BKV = 32 are staged in shared memory (K and V, zero past L)
// through registers, the next block's global loads issued before this
// block's work.
// Per block each subgroup computes its 16×BKV scores S = Q·Kᵀ (K loaded
// column-major as Kᵀ), stores them to shared memory, and lane pairs (row
// lane/2, half lane%2 of the keys) run the online softmax in f32: scale,
// mask (keys past L, causal), a reference max m and the sum l of
// exp(s − m). m moves only when a block's max exceeds it by more than 8
// (lazy rescaling: p <= e^8), and only then do the output fragments make a
// round trip through shared memory to be rescaled row by row (NV cooperative
// matrices cannot be scaled per row). Probabilities are split into two halves
// p = hi + lo (hi = p truncated to f16 precision, lo = p − hi, stored as
// f16(4096·lo) so that it stays clear of f16 subnormals), so P·V on the
// tensor cores (hi·V and (4096·lo)·V into two f32 accumulators, combined at
// the end) keeps f32 accuracy instead of rounding p to f16. The output leaves
// through shared memory: O = (Σ hi·V + Σ (4096·lo)·V / 4096) / l. NaN/Inf
// rules as above: NaN or +Inf scores, or a row whose
// scores are all -inf, write NaN; L == 0 writes zeros; masked keys still
// multiply V (every key block is visited, causal or not). One difference: an
// infinite value in V gives NaN here (one of the hi/lo halves of p is 0, and
// 0·Inf = NaN) where the scalar kernel may give ±Inf; the reference gives
// either, depending on whether some p underflows to 0. policy::coopmat<false>
// selects the scalar kernel.
inline constexpr const char* attention_coopmat = R"glsl(
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 1) const uint D = 64;
layout(constant_id = 2) const uint DV = 64;
layout(std430, set = 0, binding = 0) readonly buffer BufQ { uvec4 q_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { uvec4 k_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { uvec4 v_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { float16_t o_[]; };
layout(push_constant) uniform Push { uint BH, S, L, D_, DV_; float scale; uint causal; } pc;

const uint WARPS = gl_WorkGroupSize.x / 32, BQ = 16 * WARPS, BKV = 32;
const uint SQ = D / 8 + 1, SK = D / 8 + 1, SV = DV / 8 + 1;  // padded row strides in uvec4 (8 halves)
const uint SS = (DV > BKV ? DV : BKV) + 4;                   // f32 stride of the score / P·V staging
const uint SP = BKV + 8;                                     // f16 stride of the probabilities
const uint NK = (BKV * (D / 8) + gl_WorkGroupSize.x - 1) / gl_WorkGroupSize.x;  // K uvec4 per invocation
const uint NV = (BKV * (DV / 8) + gl_WorkGroupSize.x - 1) / gl_WorkGroupSize.x;
shared uvec4 Qs[BQ * SQ];
shared uvec4 Ks[BKV * SK];
shared uvec4 Vs[BKV * SV];
shared float Ss[WARPS * 16 * SS];
shared float16_t Ph[WARPS * 16 * SP];
shared float16_t Pl[WARPS * 16 * SP];

void main() {
  const uint t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint nqb = (pc.S + BQ - 1) / BQ, id = kf_group_id();
  if (id >= pc.BH * nqb) return;  // uniform per workgroup
  const uint bh = id / nqb, q0 = (id % nqb) * BQ;
  for (uint i = t; i < BQ * (D / 8); i += WG) {
    uint r = i / (D / 8), c = i % (D / 8);
    Qs[r * SQ + c] = q0 + r < pc.S ? q_[(bh * pc.S + q0 + r) * (D / 8) + c] : uvec4(0);
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[D / 16];
  [[unroll]] for (uint kd = 0; kd < D / 16; ++kd) coopMatLoadNV(qf[kd], Qs, (warp * 16) * SQ + kd * 2, SQ, false);

  const uint r = lane / 2, h = lane % 2, qrow = q0 + warp * 16 + r;
  const uint sb = warp * 16 * SS, pb = warp * 16 * SP;
  float m = -KF_INF, l = 0.0;  // the row's reference max and Σ exp(s - m)
  bool bad = false;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> oh[DV / 16], ol[DV / 16];  // Σ hi·V and Σ (4096·lo)·V
  [[unroll]] for (uint dv = 0; dv < DV / 16; ++dv) {
    oh[dv] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    ol[dv] = oh[dv];
  }

  // K and V blocks go global -> registers -> shared; the next block's loads
  // are issued before this block's work, so they are in flight meanwhile.
  uvec4 rk[NK], rv[NV];
  #define FETCH_KV(j)                                                                      \
    [[unroll]] for (uint l = 0; l < NK; ++l) {                                            \
      uint i = t + l * WG, kr = i / (D / 8), c = i % (D / 8);                             \
      rk[l] = (i < BKV * (D / 8) && (j) + kr < pc.L) ? k_[(bh * pc.L + (j) + kr) * (D / 8) + c] : uvec4(0); \
    }                                                                                     \
    [[unroll]] for (uint l = 0; l < NV; ++l) {                                            \
      uint i = t + l * WG, kr = i / (DV / 8), c = i % (DV / 8);                           \
      rv[l] = (i < BKV * (DV / 8) && (j) + kr < pc.L) ? v_[(bh * pc.L + (j) + kr) * (DV / 8) + c] : uvec4(0); \
    }
  FETCH_KV(0u)
  for (uint j0 = 0; j0 < pc.L; j0 += BKV) {
    barrier();  // every subgroup is done with the previous block's K and V
    [[unroll]] for (uint l = 0; l < NK; ++l) {
      uint i = t + l * WG;
      if (i < BKV * (D / 8)) Ks[(i / (D / 8)) * SK + i % (D / 8)] = rk[l];
    }
    [[unroll]] for (uint l = 0; l < NV; ++l) {
      uint i = t + l * WG;
      if (i < BKV * (DV / 8)) Vs[(i / (DV / 8)) * SV + i % (DV / 8)] = rv[l];
    }
    barrier();
    if (j0 + BKV < pc.L) { FETCH_KV(j0 + BKV) }

    [[unroll]] for (uint n = 0; n < BKV / 16; ++n) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> sc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
      [[unroll]] for (uint kd = 0; kd < D / 16; ++kd) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> kf;
        coopMatLoadNV(kf, Ks, (n * 16) * SK + kd * 2, SK, true);
        sc = coopMatMulAddNV(qf[kd], kf, sc);
      }
      coopMatStoreNV(sc, Ss, sb + n * 16, SS, false);
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();

    float sv[BKV / 2];
    float bmax = -KF_INF;
    [[unroll]] for (uint e = 0; e < BKV / 2; ++e) {
      uint key = j0 + h * (BKV / 2) + e;
      float x = Ss[sb + r * SS + h * (BKV / 2) + e] * pc.scale;
      if (key >= pc.L || (pc.causal != 0u && key > qrow)) x = -KF_INF;
      if (isnan(x) || x == KF_INF) bad = true;
      else bmax = max(bmax, x);
      sv[e] = x;
    }
    bmax = max(bmax, subgroupShuffleXor(bmax, 1u));
    bad = bad || subgroupShuffleXor(bad, 1u);
    // Lazy rescaling: the reference max moves only when the block's max
    // exceeds it by more than 8 (p = exp(s - m) <= e^8 stays well inside f16
    // and f32), so the output fragments are rescaled, through shared memory,
    // only then and not every block.
    float mnew = m == -KF_INF || bmax > m + 8.0 ? max(m, bmax) : m;
    bool grow = m != -KF_INF && mnew > m;
    float corr = grow ? exp(m - mnew) : 1.0;
    subgroupMemoryBarrierShared();
    subgroupBarrier();  // every lane has read its scores: Ss is free
    if (subgroupAny(grow)) {
      [[unroll]] for (uint dv = 0; dv < DV / 16; ++dv) {
        oh[dv] = oh[dv] + ol[dv] * (1.0 / 4096.0);
        ol[dv] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
        coopMatStoreNV(oh[dv], Ss, sb + dv * 16, SS, false);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      [[unroll]] for (uint c = 0; c < DV / 2; ++c) Ss[sb + r * SS + h * (DV / 2) + c] *= corr;
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      [[unroll]] for (uint dv = 0; dv < DV / 16; ++dv) coopMatLoadNV(oh[dv], Ss, sb + dv * 16, SS, false);
    }
    float psum = 0.0;
    [[unroll]] for (uint e = 0; e < BKV / 2; ++e) {
      float x = sv[e];
      float p = (isnan(x) || x == -KF_INF || x == KF_INF || mnew == -KF_INF) ? 0.0 : exp(x - mnew);
      // hi: p cut to f16's 11 significant bits with a bit mask (a compiler may
      // fold float(float16_t(p)) back to p, which left lo = 0 on the H100);
      // below f16's normal range hi = 0 and lo carries p.
      float hi = p >= 6.103515625e-05 ? uintBitsToFloat(floatBitsToUint(p) & 0xffffe000u) : 0.0;
      float lo = (p - hi) * 4096.0;
      uint at = pb + r * SP + h * (BKV / 2) + e;
      Ph[at] = float16_t(hi);
      Pl[at] = float16_t(lo);
      psum += p;
    }
    psum += subgroupShuffleXor(psum, 1u);
    l = l * corr + psum;
    m = mnew;
    subgroupMemoryBarrierShared();
    subgroupBarrier();

    [[unroll]] for (uint n = 0; n < BKV / 16; ++n) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ph, pl;
      coopMatLoadNV(ph, Ph, pb + n * 16, SP, false);
      coopMatLoadNV(pl, Pl, pb + n * 16, SP, false);
      [[unroll]] for (uint dv = 0; dv < DV / 16; ++dv) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> vf;
        coopMatLoadNV(vf, Vs, (n * 16) * SV + dv * 2, SV, false);
        oh[dv] = coopMatMulAddNV(ph, vf, oh[dv]);
        ol[dv] = coopMatMulAddNV(pl, vf, ol[dv]);
      }
    }
  }

  // The output rows through shared memory: O = (Σ hi·V + Σ (4096·lo)·V / 4096) / l.
  [[unroll]] for (uint dv = 0; dv < DV / 16; ++dv)
    coopMatStoreNV(oh[dv] + ol[dv] * (1.0 / 4096.0), Ss, sb + dv * 16, SS, false);
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  if (qrow < pc.S) {
    bool undefined = bad || isinf(m);
    [[unroll]] for (uint c = 0; c < DV / 2; ++c)
      o_[(bh * pc.S + qrow) * DV + h * (DV / 2) + c] =
          float16_t(pc.L == 0u ? 0.0 : (undefined ? KF_NAN : Ss[sb + r * SS + h * (DV / 2) + c] / l));
  }
}
)glsl";

/// MAXD is a literal in contract form (the host of generated kernels sets no
/// specialization constant): max(D, Dv) rounded up to 32, as the backend's host does.
template <>
struct contract_form<attention_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    const index_t d = p.dims[3];
    const index_t maxd = std::max<index_t>(32, (d + 31) / 32 * 32);
    return {replace_all(attention, "layout(constant_id = 1) const uint MAXD = 64;",
                        "const uint MAXD = " + std::to_string(maxd) + ";", "MAXD"),
            {},
            k.wg};
  }
  static std::vector<edit> edits(const problem&) {
    return {
        {"dropped_scale", "no_scale", "scores are not multiplied by 1/sqrt(D)", "s = dot * pc.scale;", "s = dot;"},
        {"off_by_one", "causal_diagonal", "the causal mask also hides the diagonal", "j > row) s = -KF_INF;",
         "j >= row) s = -KF_INF;", [](const problem& p) { return p.causal; }},
        {"missing_tail", "no_causal_mask", "the causal mask is ignored", "      if (pc.causal != 0u && j > row) s = -KF_INF;\n",
         "", [](const problem& p) { return p.causal; }},
        // (l's and acc's inits are scaled by 0 on the first key block, so
        // mutating them would be equivalent; the workgroup sum's init is not.)
        {"wrong_init", "wg_sum_init", "the workgroup sum of probabilities starts at 1", "  float r = 0.0;\n",
         "  float r = 1.0;\n"},
        {"missing_barrier", "q_barrier", "no barrier after staging the query row in shared memory",
         "for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;\n  barrier();", "for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;"},
        {"read_past_end", "key_bound", "keys are valid up to j <= L, reading one key past the end",
         "bool valid = j < pc.L;", "bool valid = j <= pc.L;"},
        {"partial_output", "last_column", "the last output column is never written",
         "for (uint d = t; d < pc.DV; d += WG)\n    o_[id * pc.DV + d]", "for (uint d = t; d + 1u < pc.DV; d += WG)\n    o_[id * pc.DV + d]"},
        {"returns_input", "copy_q", "O receives Q's elements",
         "o_[id * pc.DV + d] = T(pc.L == 0u ? 0.0 : (undefined ? KF_NAN : acc[d] / l));", "o_[id * pc.DV + d] = q_[id * pc.D + d];"},
        {"f16_accumulation", "score_f16", "the q·k dot product is accumulated in f16",
         "dot = fma(qs[d], float(k_[(bh * pc.L + j) * pc.D + d]), dot);",
         "dot = uintBitsToFloat((floatBitsToUint(fma(qs[d], float(k_[(bh * pc.L + j) * pc.D + d]), dot)) + 0x1000u) & 0xffffe000u);"},
    };
  }
};

}  // namespace kforge::vulkan::shaders
