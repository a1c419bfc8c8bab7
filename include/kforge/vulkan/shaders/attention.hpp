// kforge/vulkan/shaders/attention.hpp — attention kernels: scores are never
// materialised. Every kernel takes the same push constants (the contract's:
// BH, S, L, D, DV, scale, causal, H, G, bshd; the split kernels add two) and
// indexes its tensors with a head stride and a row stride: [B,H,rows,dim]
// (bshd = 0) or [B,rows,H,dim] (bshd = 1); query head h reads KV head h / G.
// Masked keys are excluded everywhere: their V rows are never multiplied.
//
// attention (scalar flash; any dtype, any head dims; the contract form):
// one workgroup per (batch, head, query row). The query row is kept in shared
// memory; the keys the row sees (all L, or min(L, row + 1) with the causal
// mask: masked keys are not visited at all) are taken in blocks of WG (one
// key per invocation computes its score q·k·scale); the block's max and
// exp-sum update a running (m, l) and rescale the output accumulator acc[Dv]
// (shared; invocation t owns columns t, t+WG, …), which then adds Σ p_j·V[j].
// MAXD (spec constant 1) sizes the shared q and acc arrays; the host sets it
// to max(D, Dv) rounded up and refuses heads that do not fit the device's
// shared memory.
//
// Bounds: keys past the row's last visible key get no score, add nothing and
// are not read. L == 0 writes zeros; NaN or +Inf scores, or a row whose
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
layout(push_constant) uniform Push { uint BH, S, L, D, DV; float scale; uint causal, H, G, bshd; } pc;
shared float qs[MAXD];
shared float acc[MAXD];
shared float ps[gl_WorkGroupSize.x];
void main() {
  uint id = kf_group_id();
  if (id >= pc.BH * pc.S) return;  // uniform per workgroup
  uint bh = id / pc.S, row = id % pc.S, t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  uint b = bh / pc.H, h = bh % pc.H, HK = pc.H / pc.G, hk = h / pc.G;
  bool bshd = pc.bshd != 0u;
  uint qo = bshd ? ((b * pc.S + row) * pc.H + h) * pc.D : id * pc.D;
  uint oo = bshd ? ((b * pc.S + row) * pc.H + h) * pc.DV : id * pc.DV;
  uint krs = bshd ? HK * pc.D : pc.D, vrs = bshd ? HK * pc.DV : pc.DV;  // key row strides
  uint kb = bshd ? (b * pc.L * HK + hk) * pc.D : (b * HK + hk) * pc.L * pc.D;
  uint vb = bshd ? (b * pc.L * HK + hk) * pc.DV : (b * HK + hk) * pc.L * pc.DV;
  uint nk = pc.causal != 0u ? min(pc.L, row + 1u) : pc.L;  // the keys this row sees
  for (uint d = t; d < pc.D; d += WG) qs[d] = kf_ld(q_[qo + d]);
  for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;
  barrier();
  float m = -KF_INF, l = 0.0;
  bool nan = false;
  for (uint j0 = 0; j0 < nk; j0 += WG) {
    uint j = j0 + t;
    bool valid = j < nk;
    float s = -KF_INF;
    if (valid) {
      float dot = 0.0;
      for (uint d = 0; d < pc.D; ++d) dot = fma(qs[d], kf_ld(k_[kb + j * krs + d]), dot);
      s = dot * pc.scale;
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
    uint nb = min(WG, nk - j0);
    for (uint d = t; d < pc.DV; d += WG) {
      float a = acc[d] * corr;
      for (uint jj = 0; jj < nb; ++jj) a = fma(ps[jj], kf_ld(v_[vb + (j0 + jj) * vrs + d]), a);
      acc[d] = a;
    }
    barrier();
  }
  bool undefined = nan || isinf(m);
  for (uint d = t; d < pc.DV; d += WG)
    o_[oo + d] = kf_st(pc.L == 0u ? 0.0 : (undefined ? KF_NAN : acc[d] / l));
}
)glsl";

// attention_coopmat: f16 or bf16 data on NV cooperative matrices (16×16×16
// f16·f16 + f32), FlashAttention-2 style, for head dims D, Dv that are multiples of 16
// (spec constants 1, 2; the host allows up to 256 within the device's shared
// memory). Tiling: WARPS subgroups (local size 32·WARPS) each own RW = 16·RF
// query rows (spec constant 4: RF row fragments), BQ = RW·WARPS per
// workgroup; key blocks of BKV keys (spec constant 3). Q stays in registers
// as fragments for the whole key loop. K and V blocks go global → registers →
// shared (Ks, Vs; rows padded by one uvec4 so that fragment loads are free of
// bank conflicts): V's global loads are issued before the scores are
// computed, the next K block's before P·V, so each is in flight during the
// other half of the work; two barriers per block, and the registers of the K
// and V stages are never live at once.
// Scores S = Q·Kᵀ and P·V run on the tensor cores for every fragment of a
// block, with no branches around them (a causal mask empties fragments only
// in the diagonal block, and a branch there would diverge the subgroup's
// uniform fragment loop; not timed either way on the H100 yet); the online
// softmax runs in registers on the accumulator fragments (the layout they
// rely on is checked at start, see below). The reference max moves only when
// a block's max exceeds it by more than 8 (in log2 units: p = exp2(s·scale·
// log2 e − m) <= 256), so the output fragments are rescaled rarely. P is
// rounded to f16 for P·V, as PyTorch's SDPA does (the f16 tolerance allows
// 2^-11·max|V| for it: ops/attention.hpp); the row sums are of the unrounded
// p, in f32.
// Causal: a workgroup visits only the key blocks its rows see (keys <
// min(L, last row + 1)), so causal attention costs about half; elements are
// masked only in blocks that hold keys past L or past one of the subgroup's
// rows. Heads vary fastest over the workgroups (the query heads of one KV
// head run side by side and share its K, V in L2); the last query blocks,
// the longest under a causal mask, go first.
// Bounds: Q rows past S and K, V rows past the last visible key are zero in
// shared memory (never read from global memory); output rows past S are not
// stored. Masked keys are excluded: their p is 0, but 0·Inf is NaN on the
// tensor cores, so in blocks that hold keys at or past a subgroup's first
// row, the non-finite V values of those fragments are multiplied as 0, and
// the ones a row does see are added back after the key loop (rare: read from
// global memory). NaN scores, a +Inf score or a row of -Inf scores write
// NaN; L == 0 writes zeros. Output rows leave through shared memory, 8 halves
// per store.
// bf16 (KF_BF16; glslang 12 has no bf16 fragments): tiles are staged as
// f16. A K or V block whose largest |x| (Inf and NaN counted as large, so
// that the test is two integer max per word) is in [2^-6, 2^15) is staged
// as it is: f16 holds every bf16 value from 2^-14 to 2^15 exactly, and the
// smaller ones round to f16 subnormals (spacing 2^-24: an error below 2^-19
// of the block's largest |x|); one subgroup vote and a shared flag decide it,
// no barrier. Any other block (one with Inf or NaN too), and the Q tile
// always, is staged times a power of two chosen from its largest finite |x|
// (a max over the workgroup: two more barriers) so that it lands in [2^14, 2^15): exact for every value
// of at least 2^-28 of the largest, the others within 2^-39 of it. The Q and
// K scales leave with the scores (folded into the softmax's scale); a scaled
// V block takes its P·V products alone, each added times the inverse scale.
// Output rows are rounded to bf16 (to nearest even) from f32, not through
// f16. Inf and NaN keep their meaning.
inline constexpr const char* attention_coopmat = R"glsl(
#extension GL_KHR_shader_subgroup_shuffle : require
layout(constant_id = 1) const uint D = 64;
layout(constant_id = 2) const uint DV = 64;
layout(constant_id = 3) const uint BKV = 64;
layout(constant_id = 4) const uint RF = 1;
// Timing probes (vk_bench --attention-parts, f16 data only; wrong results by
// design), 0 in every real call: bit 0 one D step of S = Q·Kᵀ instead of D/16, bit 1 no
// softmax (P = S), bit 2 one Dv step of P·V, bit 3 no global loads of K, V in
// the key loop, bit 4 no staging of K, V into shared memory (and no barriers).
layout(constant_id = 5) const uint PROBE = 0;
layout(std430, set = 0, binding = 0) readonly buffer BufQ { uvec4 q_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { uvec4 k_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { uvec4 v_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { uvec4 o_[]; };
layout(push_constant) uniform Push { uint BH, S, L, D_, DV_; float scale; uint causal, H, G, bshd; } pc;

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define F16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
const uint WG = gl_WorkGroupSize.x, WARPS = WG / 32, RW = 16 * RF, BQ = RW * WARPS;
const uint D8 = D / 8, DV8 = DV / 8, SK = D8 + 1, SV = DV8 + 1;  // row strides in uvec4 (8 halves), padded by one
const uint NKF = BKV / 16, NDK = D / 16, NDV = DV / 16;
const uint NK = (BKV * D8 + WG - 1) / WG, NV = (BKV * DV8 + WG - 1) / WG;  // staged uvec4 per invocation
const uint WPR = BKV / RW;  // subgroups whose query (or output) rows one pass through Ks (Vs) holds
// Elements of a 16x16 fragment per lane (256 / 32; the kernel checks the
// driver agrees): a constant, so that element loops unroll and fragments stay in registers.
const int FE = 8;
#define ROW8(e) (uint((e) / 4) * 8u)                                                  // element e's row - lane/4
#define COL(e) (2u * (lane % 4u) + uint((e) % 2) + 8u * uint(((e) / 2) % 2))           // element e's column
shared uvec4 Ks[BKV * SK];
shared uvec4 Vs[BKV * SV];

#if KF_BF16
// bf16 data: staged into shared memory as f16. A K or V block whose largest
// |x| (Inf, NaN included) is in [2^-6, 2^15) is staged as it is (fast path: one subgroup
// vote and shared flag, no barrier); any other block, and the Q tile, times
// the power of two (exact) that brings its largest finite |x| to
// [2^14, 2^15). The scales leave with the scores (Q, K) and the P·V products
// (V). bf_red: the largest finite |x| (its bits) of the Q tile, and of the K
// and V blocks on the scaled path (two slots each, alternating by block);
// bf_flag: K, V blocks (two slots each): bit 0 some |x| >= 2^15 (or not
// finite), bit 1 some |x| >= 2^-6.
shared uint bf_red[5];
shared uint bf_flag[4];
const uint BF_HI = 0x4700u, BF_LO = 0x3c80u;  // the bits of 2^15 and 2^-6
// The largest finite |x| of 8 bf16 values, as bits (0 for none).
uint bf_absmax(uvec4 w) {
  uint m = 0u;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    const uint lo = w[i] & 0x7fffu, hi = (w[i] >> 16) & 0x7fffu;
    m = max(m, max(lo < 0x7f80u ? lo : 0u, hi < 0x7f80u ? hi : 0u));
  }
  return m;
}
// The largest |x| (as bits, Inf and NaN included) of 16-bit lanes whose low
// halves' maxima are lo and high halves' hi (masked to magnitudes, in place):
// the staging's cheap test. It can only overstate the finite maximum (a
// non-finite value reads as >= 2^15), which sends the block to the scaled
// path; that path takes the exact finite maximum (bf_absmax).
uint bf_absmax_any(uvec4 lo, uvec4 hi) {
  return max(max(max(lo.x, lo.y), max(lo.z, lo.w)), max(max(hi.x, hi.y), max(hi.z, hi.w)) >> 16);
}
// This invocation's part of a block: bit 0 if some |x| >= 2^15 (or, from bf_absmax_any, not finite), bit 1 if some |x| >= 2^-6.
uint bf_flags(uint m) { return (m >= BF_HI ? 1u : 0u) | (m >= BF_LO ? 2u : 0u); }
// log2 of the scale for a tile whose largest finite |x| has bits m: x < 2^(E-126) for exponent field E.
int bf_shift(uint m) { return m == 0u ? 0 : clamp(141 - int(m >> 7), -126, 126); }
// 8 bf16 values times 2^s as 8 halves (exact for the tile's values of at least 2^-28 of its max; Inf, NaN kept).
uvec4 bf_to_f16(uvec4 w, float s) {
  uvec4 r;
  [[unroll]] for (int i = 0; i < 4; ++i) r[i] = packHalf2x16(kf_unpack2(w[i]) * s);
  return r;
}
// The same with no scale.
uvec4 bf_to_f16_1(uvec4 w) {
  uvec4 r;
  [[unroll]] for (int i = 0; i < 4; ++i) r[i] = packHalf2x16(kf_unpack2(w[i]));
  return r;
}
const float KF_VMAX = 3.4028234663852886e38;  // the largest finite value
#define KF_CVT(w, s) bf_to_f16(w, s)
#else
const float KF_VMAX = 65504.0;
#define KF_CVT(w, s) (w)
#endif
// Element h (0..7) of a uvec4 of the data's type as float.
float elem_of(uvec4 v, uint h) { return kf_unpack2(v[h / 2u])[h % 2u]; }

void main() {
  const uint t = gl_LocalInvocationID.x, warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint nqb = (pc.S + BQ - 1) / BQ, id = kf_group_id();
  if (id >= pc.BH * nqb) return;  // uniform per workgroup
  // Heads vary fastest (the query heads of one KV head run side by side and
  // share its K, V in L2); the last query blocks, the longest under a causal
  // mask, go first.
  const uint bh = id % pc.BH, q0 = (nqb - 1 - id / pc.BH) * BQ;
  const uint b = bh / pc.H, h = bh % pc.H, HK = pc.H / pc.G, hk = h / pc.G;
  const bool bshd = pc.bshd != 0u, causal = pc.causal != 0u;
  // Row strides and head bases in uvec4.
  const uint qrs = bshd ? pc.H * D8 : D8, ors = bshd ? pc.H * DV8 : DV8;
  const uint krs = bshd ? HK * D8 : D8, vrs = bshd ? HK * DV8 : DV8;
  const uint qbase = bshd ? (b * pc.S * pc.H + h) * D8 : bh * pc.S * D8;
  const uint obase = bshd ? (b * pc.S * pc.H + h) * DV8 : bh * pc.S * DV8;
  const uint kbase = bshd ? (b * pc.L * HK + hk) * D8 : (b * HK + hk) * pc.L * D8;
  const uint vbase = bshd ? (b * pc.L * HK + hk) * DV8 : (b * HK + hk) * pc.L * DV8;
  const uint qw = q0 + warp * RW;  // this subgroup's first query row (rows past S are computed, not stored)

  // bf16: the Q tile's scale (and the K, V slots zeroed).
#if KF_BF16
  if (t == 0u) {
    bf_red[0] = bf_red[1] = bf_red[2] = bf_red[3] = bf_red[4] = 0u;
    bf_flag[0] = bf_flag[1] = bf_flag[2] = bf_flag[3] = 0u;
  }
  barrier();
  {
    uint mq = 0u;
    for (uint i = t; i < BQ * D8; i += WG)
      if (q0 + i / D8 < pc.S) mq = max(mq, bf_absmax(q_[qbase + (q0 + i / D8) * qrs + i % D8]));
    mq = subgroupMax(mq);
    if (lane == 0u) atomicMax(bf_red[0], mq);
  }
  barrier();
  const int sq = bf_shift(bf_red[0]);
#else
  const int sq = 0;
#endif
  const float qs = exp2(float(sq));
  // Q rows as fragments, staged through Ks (zero past S) WPR subgroups at a time.
  F16 qf[RF * NDK];
  for (uint w0 = 0; w0 < WARPS; w0 += WPR) {
    for (uint i = t; i < WPR * RW * D8; i += WG) {
      uint r = i / D8, c = i % D8, row = q0 + w0 * RW + r;
      Ks[r * SK + c] = row < pc.S && w0 * RW + r < BQ ? KF_CVT(q_[qbase + row * qrs + c], qs) : uvec4(0);
    }
    barrier();
    if (warp >= w0 && warp < w0 + WPR)
      [[unroll]] for (uint f = 0; f < RF; ++f)
        [[unroll]] for (uint kd = 0; kd < NDK; ++kd)
          coopMatLoadNV(qf[f * NDK + kd], Ks, ((warp - w0) * RW + f * 16) * SK + kd * 2, SK, false);
    barrier();
  }

  // The online softmax works on the accumulator fragments in registers, so
  // it relies on where a lane's elements lie: NVIDIA's mma layout, element e
  // of lane l at row l/4 + 8·(e/4), column 2·(l%4) + e%2 + 8·((e/2)%2) (a
  // row's 16 elements in one quad of lanes: a row max is two shuffles).
  // Checked here on fragments whose elements are their own row and column
  // index: under any other layout every output is NaN, never silently wrong.
  if (t < 64) {
    Ks[t] = floatBitsToUint(vec4(float(t / 4u)));
    Vs[t] = floatBitsToUint(vec4(0.0, 1.0, 2.0, 3.0) + float((t % 4u) * 4u));
  }
  barrier();
  bool ok;
  {
    ACC ri, ci;
    coopMatLoadNV(ri, Ks, 0, 4, false);
    coopMatLoadNV(ci, Vs, 0, 4, false);
    ok = ri.length() == FE && qf[0].length() == FE;
    [[unroll]] for (int e = 0; e < FE; ++e)
      ok = ok && uint(ri[e]) == lane / 4u + ROW8(e) && uint(ci[e]) == COL(e);
  }
  ok = subgroupAll(ok);
  barrier();  // Ks and Vs are free again

  const uint rA = lane / 4u;  // this lane's rows: rA and rA + 8 of each row fragment
  float m[2 * RF], l[2 * RF];  // per row (fragment f: 2f row rA, 2f+1 row rA + 8): reference max (log2 units), Σ p
  [[unroll]] for (uint i = 0; i < 2 * RF; ++i) m[i] = -KF_INF, l[i] = 0.0;
  ACC o[RF * NDV];
  [[unroll]] for (uint i = 0; i < RF * NDV; ++i) o[i] = ACC(0.0);
  const float c2 = pc.scale * 1.4426950408889634;  // scores in log2 units: p = exp2(s·c2 − m)

  // The keys a row of this workgroup (this subgroup, row fragment) can see: [0, kend).
  const uint qend = min(pc.S, q0 + BQ);
  const uint kend = causal ? min(pc.L, qend) : pc.L;
  const uint nkb = ok ? (kend + BKV - 1) / BKV : 0u;

  uvec4 rk[NK], rv[NV];
  #define FETCH_K(j)                                                                        \
    [[unroll]] for (uint e = 0; e < NK; ++e) {                                              \
      uint i = t + e * WG, kr = i / D8, c = i % D8;                                         \
      rk[e] = (PROBE & 8u) != 0u ? uvec4(i, j, 0, 0) : (i < BKV * D8 && (j) + kr < kend) ? k_[kbase + ((j) + kr) * krs + c] : uvec4(0); \
    }
  #define FETCH_V(j)                                                                        \
    [[unroll]] for (uint e = 0; e < NV; ++e) {                                              \
      uint i = t + e * WG, kr = i / DV8, c = i % DV8;                                       \
      rv[e] = (PROBE & 8u) != 0u ? uvec4(i, j, 0, 0) : (i < BKV * DV8 && (j) + kr < kend) ? v_[vbase + ((j) + kr) * vrs + c] : uvec4(0); \
    }
  // P·V of one block; SANITIZE zeroes the non-finite V values of the
  // fragments at or past this subgroup's first row (see below).
  // SCALED (bf16 blocks staged with a scale 2^sv != 1): each product is
  // formed alone and added times 2^-sv.
  #define PV(SANITIZE, SCALED)                                                              \
    [[unroll]] for (uint n = 0; n < NKF; ++n)                                               \
      [[unroll]] for (uint dv = 0; dv < ((PROBE & 4u) != 0u ? 1u : NDV); ++dv) {           \
        F16 vf;                                                                             \
        coopMatLoadNV(vf, Vs, (n * 16) * SV + dv * 2, SV, false);                           \
        if ((SANITIZE) && j0 + n * 16 >= qw)                                                \
          [[unroll]] for (int e = 0; e < FE; ++e) {                                         \
            const bool fin = abs(vf[e]) <= float16_t(65504.0);                              \
            vbad = vbad || (!fin && j0 + n * 16 < qw + RW);                                 \
            vf[e] = fin ? vf[e] : float16_t(0.0);                                           \
          }                                                                                 \
        [[unroll]] for (uint f = 0; f < RF; ++f)                                            \
          if (SCALED) {                                                                     \
            ACC pv = coopMatMulAddNV(pf[f * NKF + n], vf, ACC(0.0));                   \
            [[unroll]] for (int e = 0; e < FE; ++e) o[f * NDV + dv][e] += pv[e] * vinv;     \
          } else {                                                                          \
            o[f * NDV + dv] = coopMatMulAddNV(pf[f * NKF + n], vf, o[f * NDV + dv]);        \
          }                                                                                 \
      }
  // Registers R[0..N) (rows of W uvec4) → shared SH (row stride ST), then a
  // barrier. bf16: staged as f16 as they are, the flags of slot FS saying
  // whether the block needs a scale (a finite |x| >= 2^15, or none >= 2^-6;
  // decided by one subgroup vote, uniform over the workgroup after the
  // barrier); if so staged again times 2^SHIFT from the block's largest
  // finite |x| (max slot RS). The other block's slots are zeroed for the next.
#if KF_BF16
  #define STAGE(R, N, W, SH, ST, FS, RS, SHIFT)                                                 \
    {                                                                                           \
      uvec4 lo_ = uvec4(0u), hi_ = uvec4(0u);                                                  \
      [[unroll]] for (uint e = 0; e < N; ++e) {                                                 \
        uint i = t + e * WG;                                                                    \
        lo_ = max(lo_, R[e] & 0x7fffu);                                                         \
        hi_ = max(hi_, R[e] & 0x7fff0000u);                                                     \
        if (i < BKV * W) SH[(i / W) * ST + i % W] = bf_to_f16_1(R[e]);                          \
      }                                                                                         \
      uint m_ = bf_absmax_any(lo_, hi_);                                                        \
      const uint fl_ = subgroupOr(bf_flags(m_));                                                \
      if (lane == 0u && fl_ != 0u) atomicOr(bf_flag[FS + (jb & 1u)], fl_);                      \
      if (t == 0u) bf_flag[FS + ((jb + 1u) & 1u)] = bf_red[RS + ((jb + 1u) & 1u)] = 0u;         \
      barrier();                                                                                \
      if (bf_flag[FS + (jb & 1u)] != 2u) {                                                      \
        m_ = 0u;                                                                                \
        [[unroll]] for (uint e = 0; e < N; ++e) m_ = max(m_, bf_absmax(R[e]));                  \
        m_ = subgroupMax(m_);                                                                   \
        if (lane == 0u) atomicMax(bf_red[RS + (jb & 1u)], m_);                                  \
        barrier();                                                                              \
        SHIFT = bf_shift(bf_red[RS + (jb & 1u)]);                                               \
        const float s_ = exp2(float(SHIFT));                                                    \
        [[unroll]] for (uint e = 0; e < N; ++e) {                                               \
          uint i = t + e * WG;                                                                  \
          if (i < BKV * W) SH[(i / W) * ST + i % W] = bf_to_f16(R[e], s_);                      \
        }                                                                                       \
        barrier();                                                                              \
      }                                                                                         \
    }
#else
  #define STAGE(R, N, W, SH, ST, FS, RS, SHIFT)                                                 \
    if ((PROBE & 16u) == 0u) {                                                                  \
      [[unroll]] for (uint e = 0; e < N; ++e) {                                                 \
        uint i = t + e * WG;                                                                    \
        if (i < BKV * W) SH[(i / W) * ST + i % W] = R[e];                                       \
      }                                                                                         \
      barrier();                                                                                \
    }
#endif
  bool vbad = false;  // a V value of a key in [qw, qw + RW) was not finite (and was zeroed)
  if (nkb > 0u) { FETCH_K(0u) }
  for (uint jb = 0; jb < nkb; ++jb) {
    const uint j0 = jb * BKV;
    int sk = 0;  // bf16: the block's scale (log2)
    STAGE(rk, NK, D8, Ks, SK, 0u, 1u, sk)
    const float cb = c2 * exp2(-float(sq)) * exp2(-float(sk));  // c2 for the scaled scores
    FETCH_V(j0)

    // S = Q·Kᵀ for every fragment of the block: no branches around the
    // tensor-core work (they cost more than the few masked fragments they save).
    ACC sc[RF * NKF];
    F16 pf[RF * NKF];
    [[unroll]] for (uint n = 0; n < NKF; ++n) {
      [[unroll]] for (uint f = 0; f < RF; ++f) sc[f * NKF + n] = ACC(0.0);
      [[unroll]] for (uint kd = 0; kd < ((PROBE & 1u) != 0u ? 1u : NDK); ++kd) {
        F16 kt;
        coopMatLoadNV(kt, Ks, (n * 16) * SK + kd * 2, SK, true);
        [[unroll]] for (uint f = 0; f < RF; ++f) sc[f * NKF + n] = coopMatMulAddNV(qf[f * NDK + kd], kt, sc[f * NKF + n]);
      }
    }
    // Masks, only in a block that holds keys past L or (causal) past a row of this subgroup.
    if (j0 + BKV > pc.L || (causal && j0 + BKV - 1 > qw))
      [[unroll]] for (uint f = 0; f < RF; ++f)
        [[unroll]] for (uint n = 0; n < NKF; ++n)
          [[unroll]] for (int e = 0; e < FE; ++e) {
            const uint key = j0 + n * 16 + COL(e);
            const uint row = qw + f * 16 + rA + ROW8(e);
            if (key >= pc.L || (causal && key > row)) sc[f * NKF + n][e] = -KF_INF;
          }
    // Online softmax in registers: row max over the lane's elements and its quad, lazy rescale, p.
    if ((PROBE & 2u) != 0u)
      [[unroll]] for (uint i = 0; i < RF * NKF; ++i) pf[i] = F16(sc[i]);
    else
    [[unroll]] for (uint f = 0; f < RF; ++f) {
      float bm0 = -KF_INF, bm1 = -KF_INF;
      [[unroll]] for (uint n = 0; n < NKF; ++n)
        [[unroll]] for (int e = 0; e < FE; ++e) {
          const float x = sc[f * NKF + n][e];
          if ((e >= 4)) bm1 = max(bm1, x);
          else bm0 = max(bm0, x);
        }
      bm0 = max(bm0, subgroupShuffleXor(bm0, 1u));
      bm0 = max(bm0, subgroupShuffleXor(bm0, 2u));
      bm1 = max(bm1, subgroupShuffleXor(bm1, 1u));
      bm1 = max(bm1, subgroupShuffleXor(bm1, 2u));
      // Lazy rescaling: the reference max moves only when a block's max
      // exceeds it by more than 8 (p = exp2(s·c2 − m) <= 256 stays well inside
      // f16), so the output fragments are rescaled only then.
      const float n0 = bm0 * cb, n1 = bm1 * cb;
      const float mn0 = m[2 * f] == -KF_INF || n0 > m[2 * f] + 8.0 ? max(m[2 * f], n0) : m[2 * f];
      const float mn1 = m[2 * f + 1] == -KF_INF || n1 > m[2 * f + 1] + 8.0 ? max(m[2 * f + 1], n1) : m[2 * f + 1];
      const bool g0 = m[2 * f] != -KF_INF && mn0 > m[2 * f], g1 = m[2 * f + 1] != -KF_INF && mn1 > m[2 * f + 1];
      if (subgroupAny(g0 || g1)) {
        const float k0 = g0 ? exp2(m[2 * f] - mn0) : 1.0, k1 = g1 ? exp2(m[2 * f + 1] - mn1) : 1.0;
        l[2 * f] *= k0;
        l[2 * f + 1] *= k1;
        [[unroll]] for (uint dv = 0; dv < NDV; ++dv)
          [[unroll]] for (int e = 0; e < FE; ++e) o[f * NDV + dv][e] *= (e >= 4) ? k1 : k0;
      }
      m[2 * f] = mn0;
      m[2 * f + 1] = mn1;
      // A row that has seen no key yet (m = -inf) takes 0 as reference: its p are exp2(-inf) = 0.
      const float u0 = mn0 == -KF_INF ? 0.0 : mn0, u1 = mn1 == -KF_INF ? 0.0 : mn1;
      [[unroll]] for (uint n = 0; n < NKF; ++n) {
        [[unroll]] for (int e = 0; e < FE; ++e) {
          const bool hi = (e >= 4);
          const float p = exp2(fma(sc[f * NKF + n][e], cb, -(hi ? u1 : u0)));
          sc[f * NKF + n][e] = p;
          if (hi) l[2 * f + 1] += p;
          else l[2 * f] += p;
        }
        pf[f * NKF + n] = F16(sc[f * NKF + n]);
      }
    }

    int sv = 0;
    STAGE(rv, NV, DV8, Vs, SV, 2u, 3u, sv)
    const float vinv = exp2(-float(sv));
    if (jb + 1 < nkb) { FETCH_K(j0 + BKV) }
    // Masked keys have p = 0, but 0·Inf is NaN on the tensor cores: where a
    // block holds keys at or past this subgroup's first row, those fragments'
    // non-finite V values are multiplied as 0 and the visible ones are added
    // back after the loop (vbad).
    if (sv != 0) {
      PV(causal && j0 + BKV > qw, true)
    } else if (causal && j0 + BKV > qw) {
      PV(true, false)
    } else {
      PV(false, false)
    }
  }
  // (Rare.) Non-finite V values zeroed above that a row sees: keys qw .. row.
  // Their sum (Inf + -Inf or NaN: NaN) is what they contribute to the row.
  if (subgroupAny(vbad))
    [[unroll]] for (uint f = 0; f < RF; ++f)
      [[unroll]] for (uint dv = 0; dv < NDV; ++dv)
        [[unroll]] for (int e = 0; e < FE; ++e) {
          const uint row = qw + f * 16 + rA + ROW8(e), c = dv * 16 + COL(e);
          float add = 0.0;
          for (uint j = qw; j <= row && j < kend; ++j) {
            const float x = elem_of(v_[vbase + j * vrs + c / 8], c % 8);
            if (!(abs(x) <= KF_VMAX)) add += x;
          }
          o[f * NDV + dv][e] += add;
        }

  // O = acc / l per row, rounded to f16, leaving through Vs, WPR subgroups at a time.
  float inv[2 * RF];
  [[unroll]] for (uint i = 0; i < 2 * RF; ++i) {
    float s = l[i] + subgroupShuffleXor(l[i], 1u);
    s += subgroupShuffleXor(s, 2u);
    // NaN scores make s NaN; a +Inf score or a row of -Inf scores leaves m infinite: NaN, as the reference.
    inv[i] = pc.L == 0u ? 0.0 : (!ok || isnan(s) || isinf(m[i]) || s == 0.0 ? KF_NAN : 1.0 / s);
  }
  for (uint w0 = 0; w0 < WARPS; w0 += WPR) {
    barrier();  // every subgroup is done with Vs
    if (warp >= w0 && warp < w0 + WPR) {
      [[unroll]] for (uint f = 0; f < RF; ++f)
        [[unroll]] for (uint dv = 0; dv < NDV; ++dv) {
          ACC x = o[f * NDV + dv];
          [[unroll]] for (int e = 0; e < FE; ++e) x[e] *= (e >= 4) ? inv[2 * f + 1] : inv[2 * f];
#if KF_BF16
          // Rounded to bf16 (the output may exceed f16's range) and placed by the layout checked above
          // (elements e, e + 1 of a lane are adjacent columns of one row).
          [[unroll]] for (int e = 0; e < FE; e += 2) {
            const uint r = (warp - w0) * RW + f * 16 + rA + ROW8(e), c = dv * 16 + COL(e);
            Vs[r * SV + c / 8u][(c % 8u) / 2u] = kf_bf16_bits(x[e]) | (kf_bf16_bits(x[e + 1]) << 16);
          }
#else
          coopMatStoreNV(F16(x), Vs, ((warp - w0) * RW + f * 16) * SV + dv * 2, SV, false);
#endif
        }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint i = lane; i < RW * DV8; i += 32) {
        uint r = i / DV8, c = i % DV8;
        if (qw + r < pc.S) o_[obase + (qw + r) * ors + c] = Vs[((warp - w0) * RW + r) * SV + c];
      }
    }
  }
}
)glsl";

// attention_split (flash-decoding; any dtype and head dims): for few query
// rows per KV head (decode: S = 1 or a few, times the G query heads that share
// the KV head) and long keys. The keys [0, L) (causal: [0, min(L, S))) are cut
// into chunks; workgroup (split, batch·KV head) takes one chunk for all R =
// G·S rows of its KV head (spec constant 3), so K and V are read once for the
// whole group. Per block of WG keys: groups of KG lanes (spec constant 5)
// compute the scores of KG keys each against the R query rows (held in
// shared memory as f32), each lane a KG-th of every K row (on the H100, KG =
// 8 against one key per lane: B1 H32/8 L32768 D128 f16 0.098 → 0.084 ms:
// a subgroup load then reads 4 keys' rows, not 32), the
// subgroups run the online softmax row by row (max, p, sum in log2 units),
// and P·V accumulates in registers: invocation t owns output columns t % NC
// (vectors of KF_VEC = 4 elements where D and Dv allow, else 1) and adds the
// keys kl, kl + KL, … (kl = t / NC), reading each V row once per workgroup;
// the KL partial sums meet in shared memory at the end. Both passes issue
// about UB loads at a time (spec constant 4) before using them (KB keys'
// UBV vectors each of K, the V rows of UB keys): on a GPU one at a time left
// each load's latency exposed (H200, B1 H32/8 L32768 D128, UB = 8: 0.115 → 0.098 ms; 4
// or 16 at a time and V rows loaded ahead of the scores were slower), while
// llvmpipe, which builds a shader's machine code inside the first submission
// that runs it, took ~6 s more to build the tiny transformer's kernels with
// UB = 8 (see attention_split_loads). With one split the
// output is written directly; else (output, m, l) of each split go to the
// scratch binding (attention_merge combines them). Bounds: keys past the
// chunk (or L) are not read; a masked key's V row is not multiplied.
inline constexpr const char* attention_split = R"glsl(
#if defined(KF_SHUFFLE) && KF_SHUFFLE
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
layout(constant_id = 1) const uint D = 128;
layout(constant_id = 2) const uint DV = 128;
layout(constant_id = 3) const uint R = 4;  // query rows per workgroup: G query heads × S positions
layout(constant_id = 4) const uint UB = 8;  // loads of K (vectors) and of V (rows) issued together
// Lanes per key in the scores pass: a power of two, <= the subgroup size; 1 without KF_SHUFFLE.
layout(constant_id = 5) const uint KG_ = 1;
#if defined(KF_SHUFFLE) && KF_SHUFFLE
const uint KG = KG_;
#else
const uint KG = 1u;
#endif
#if KF_VEC == 4
#define TV T4
#define FV vec4
#define LDV(x) kf_ld4(x)
#define STV(v) kf_st4(v)
#define COMP(v, e) v[e]
#else
#define TV T
#define FV float
#define LDV(x) kf_ld(x)
#define STV(v) kf_st(v)
#define COMP(v, e) v
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufQ { TV q_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufK { TV k_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufV { TV v_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufO { TV o_[]; };
layout(std430, set = 0, binding = 4) writeonly buffer BufP { float part_[]; };
layout(push_constant) uniform Push { uint BH, S, L, D_, DV_; float scale; uint causal, H, G, bshd, chunk, nsplit; } pc;

const uint WG = gl_WorkGroupSize.x;
const uint DQ = D / KF_VEC, NC = DV / KF_VEC;  // vectors per row of Q/K and of V/O
// P·V: invocation t owns output columns c = t % NC (and c + WG, … when NC > WG)
// for every row, and takes the keys kl, kl + KL, … of a block (kl = t / NC).
const uint KL = NC <= WG ? WG / NC : 1u, NCT = NC <= WG ? 1u : (NC + WG - 1u) / WG;
const uint SSN = R * (WG > KL * DV ? WG : KL * DV);
// Scores: NG groups of KG lanes, KPG keys per group and block, NVK vectors of
// a K row per lane; KB keys of UBV vectors each per batch of loads.
const uint NG = WG / KG, KPG = KG, NVK = (DQ + KG - 1u) / KG;
const uint UBV = UB < NVK ? UB : NVK, KB = UB / UBV < KPG ? UB / UBV : KPG;
shared FV qs[R * DQ];
shared float ss[SSN];  // a block's scores, then p; at the end the key lanes' partial outputs ([KL][R][DV])
shared float mrow[R], lrow[R], crow[R];

void main() {
  const uint t = gl_LocalInvocationID.x, lane = gl_SubgroupInvocationID;
  const uint HK = pc.H / pc.G, nbk = (pc.BH / pc.H) * HK, id = kf_group_id();
  if (id >= nbk * pc.nsplit) return;  // uniform per workgroup
  const uint bk = id % nbk, split = id / nbk, b = bk / HK, hk = bk % HK;
  const bool bshd = pc.bshd != 0u, causal = pc.causal != 0u;
  // Causal (top-left): no query sees a key at or past S.
  const uint lend = causal ? min(pc.L, pc.S) : pc.L;
  const uint jb = split * pc.chunk, je = min(lend, jb + pc.chunk);
  const uint krs = bshd ? HK * DQ : DQ, vrs = bshd ? HK * NC : NC;
  const uint kbase = bshd ? (b * pc.L * HK + hk) * DQ : bk * pc.L * DQ;
  const uint vbase = bshd ? (b * pc.L * HK + hk) * NC : bk * pc.L * NC;
  // Row rr of this workgroup: query head hk·G + rr / S at position rr % S.
  for (uint e = t; e < R * DQ; e += WG) {
    uint rr = e / DQ, hh = hk * pc.G + rr / pc.S, i = rr % pc.S;
    uint qo = bshd ? ((b * pc.S + i) * pc.H + hh) * DQ : ((b * pc.H + hh) * pc.S + i) * DQ;
    qs[e] = LDV(q_[qo + e % DQ]);
  }
  if (t < R) {
    mrow[t] = -KF_INF;
    lrow[t] = 0.0;
  }
  const uint kl = t / NC, c0 = NC <= WG ? t % NC : t;
  const bool owns = kl < KL;
  // This lane's key group and its place in it (groups of KG consecutive lanes of one subgroup).
  const uint g = gl_SubgroupID * (gl_SubgroupSize / KG) + lane / KG, kq = lane % KG;
  FV acc[R * NCT];
  for (uint i = 0; i < R * NCT; ++i) acc[i] = FV(0.0);
  const float c2 = pc.scale * 1.4426950408889634;  // scores in log2 units
  barrier();

  for (uint j0 = jb; j0 < je; j0 += WG) {
    // Scores: KG lanes per key (group g of the block's WG / KG takes keys
    // g, g + NG, …), each lane a KG-th of the row's vectors, so a subgroup
    // load reads KG consecutive vectors of several keys (one key per lane
    // read 32 rows of a K block per load on the H100); the lanes' partial
    // dots meet by a shuffle butterfly. KB keys of a group at a time, UBV
    // vectors each: about UB loads in flight.
    for (uint i0 = 0; i0 < KPG; i0 += KB) {
      float sr[KB * R];
      [[unroll]] for (uint x = 0; x < KB * R; ++x) sr[x] = 0.0;
      for (uint d0 = 0; d0 < NVK; d0 += UBV) {
        FV kv[KB * UBV];
        [[unroll]] for (uint a = 0; a < KB; ++a)
          [[unroll]] for (uint u = 0; u < UBV; ++u) {
            const uint j = j0 + g + (i0 + a) * NG, dq = kq + (d0 + u) * KG;
            kv[a * UBV + u] = i0 + a < KPG && j < je && dq < DQ ? LDV(k_[kbase + j * krs + dq]) : FV(0.0);
          }
        [[unroll]] for (uint a = 0; a < KB; ++a)
          [[unroll]] for (uint u = 0; u < UBV; ++u) {
            const uint dq = kq + (d0 + u) * KG;
            if (dq < DQ)
              for (uint rr = 0; rr < R; ++rr) sr[a * R + rr] += dot(qs[rr * DQ + dq], kv[a * UBV + u]);
          }
      }
#if defined(KF_SHUFFLE) && KF_SHUFFLE
      [[unroll]] for (uint s = 1; s < KG; s *= 2)
        [[unroll]] for (uint x = 0; x < KB * R; ++x) sr[x] += subgroupShuffleXor(sr[x], s);
#endif
      // Lane kq of the group stores the sums x ≡ kq (mod KG).
      [[unroll]] for (uint a = 0; a < KB; ++a)
        for (uint rr = 0; rr < R; ++rr)
          if ((a * R + rr) % KG == kq && i0 + a < KPG) {
            const uint key = g + (i0 + a) * NG, j = j0 + key;
            ss[rr * WG + key] = j < je && !(causal && j > rr % pc.S) ? sr[a * R + rr] * c2 : -KF_INF;
          }
    }
    barrier();
    // Online softmax: subgroup w takes rows w, w + (number of subgroups), …
    for (uint rr = gl_SubgroupID; rr < R; rr += gl_NumSubgroups) {
      float mx = -KF_INF;
      for (uint k = lane; k < WG; k += gl_SubgroupSize) mx = max(mx, ss[rr * WG + k]);
      mx = subgroupMax(mx);
      const float mo = mrow[rr], mn = max(mo, mx), u = mn == -KF_INF ? 0.0 : mn;
      float ps = 0.0;
      for (uint k = lane; k < WG; k += gl_SubgroupSize) {
        const float p = exp2(ss[rr * WG + k] - u);
        ss[rr * WG + k] = p;
        ps += p;
      }
      ps = subgroupAdd(ps);
      if (subgroupElect()) {
        const float cr = mo == -KF_INF ? 0.0 : exp2(mo - u);
        crow[rr] = cr;
        lrow[rr] = lrow[rr] * cr + ps;
        mrow[rr] = mn;
      }
    }
    barrier();
    // P·V over the keys the row sees (a masked key's V row is not multiplied).
    if (owns) {
      for (uint rr = 0; rr < R; ++rr)
        for (uint x = 0; x < NCT; ++x) acc[rr * NCT + x] *= crow[rr];
      const uint nk = min(WG, je - j0);
      for (uint ju = kl; ju < nk; ju += UB * KL)
        for (uint x = 0; x < NCT; ++x) {
          const uint c = c0 + x * WG;
          if (c >= NC) continue;
          FV vv[UB];  // the rows of UB keys in flight at once (one at a time left each load's latency exposed)
          [[unroll]] for (uint u = 0; u < UB; ++u) {
            const uint jj = ju + u * KL;
            vv[u] = jj < nk ? LDV(v_[vbase + (j0 + jj) * vrs + c]) : FV(0.0);
          }
          [[unroll]] for (uint u = 0; u < UB; ++u) {
            const uint jj = ju + u * KL;
            if (jj < nk)
              for (uint rr = 0; rr < R; ++rr)
                if (!causal || j0 + jj <= rr % pc.S) acc[rr * NCT + x] += ss[rr * WG + jj] * vv[u];
          }
        }
    }
    barrier();  // ss is the next block's
  }

  // The key lanes' partial outputs meet in shared memory (ss as [KL][R][DV]); key lane 0 adds them.
  if (KL > 1u) {
    if (owns)
      for (uint rr = 0; rr < R; ++rr)
        for (uint e = 0; e < KF_VEC; ++e) ss[(kl * R + rr) * DV + c0 * KF_VEC + e] = COMP(acc[rr], e);
    barrier();
    if (kl == 0u)
      for (uint k = 1; k < KL; ++k)
        for (uint rr = 0; rr < R; ++rr)
          for (uint e = 0; e < KF_VEC; ++e) COMP(acc[rr], e) += ss[(k * R + rr) * DV + c0 * KF_VEC + e];
  }
  if (kl != 0u) return;
  for (uint rr = 0; rr < R; ++rr) {
    const float l = lrow[rr], m = mrow[rr];
    if (pc.nsplit == 1u) {
      // NaN scores make l NaN; a +Inf score or a row of -Inf scores leaves m infinite: NaN, as the reference.
      const float inv = pc.L == 0u ? 0.0 : (isnan(l) || isinf(m) || l == 0.0 ? KF_NAN : 1.0 / l);
      const uint hh = hk * pc.G + rr / pc.S, i = rr % pc.S;
      const uint oo = bshd ? ((b * pc.S + i) * pc.H + hh) * NC : ((b * pc.H + hh) * pc.S + i) * NC;
      for (uint x = 0; x < NCT; ++x)
        if (c0 + x * WG < NC) o_[oo + c0 + x * WG] = STV(acc[rr * NCT + x] * inv);
    } else {
      // Partial (output, m, l) of this split: row (id·R + rr) of [.., DV + 2] floats.
      const uint po = (id * R + rr) * (DV + 2u);
      for (uint x = 0; x < NCT; ++x)
        if (c0 + x * WG < NC)
          for (uint e = 0; e < KF_VEC; ++e) part_[po + (c0 + x * WG) * KF_VEC + e] = COMP(acc[rr * NCT + x], e);
      if (t == 0u) {
        part_[po + DV] = m;
        part_[po + DV + 1u] = l;
      }
    }
  }
}
)glsl";

// attention_merge: one workgroup per CB output columns of a row (spec
// constant 3, the host's attention_merge_cols = 32; batch·KV head, row rr):
// weights w_s = exp2(m_s − max m) of each split's partial (output, m, l),
// O = Σ w_s·out_s / Σ w_s·l_s; the WG / CB lanes of a column take every
// (WG / CB)-th split and meet in shared memory. (One workgroup
// per row — 32 on the H100 for B1 H32/8 decode — took ~9.5 µs of the call's
// 100 at L 32768; this form ~6.5.) At most 256 splits (the host's limit).
inline constexpr const char* attention_merge = R"glsl(
layout(constant_id = 1) const uint DV = 128;
layout(constant_id = 2) const uint R = 4;
layout(std430, set = 0, binding = 0) readonly buffer BufP { float part_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufO { T o_[]; };
layout(push_constant) uniform Push { uint BH, S, L, D_, DV_; float scale; uint causal, H, G, bshd, chunk, nsplit; } pc;
layout(constant_id = 3) const uint CB = 32;  // output columns per workgroup (the host's attention_merge_cols; divides WG)
const uint MAX_SPLITS = 256;
shared float w_[MAX_SPLITS];
shared float red_[gl_WorkGroupSize.x];  // one partial sum per invocation

void main() {
  const uint t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  const uint NCB = (DV + CB - 1u) / CB;
  const uint HK = pc.H / pc.G, nbk = (pc.BH / pc.H) * HK, gid = kf_group_id();
  if (gid >= nbk * R * NCB) return;  // uniform per workgroup
  const uint cb = gid % NCB, id = gid / NCB;
  const uint bk = id / R, rr = id % R, b = bk / HK, hk = bk % HK;
  const uint rs = nbk * R * (DV + 2u);  // from one split's partials to the next's
  const uint p0 = (bk * R + rr) * (DV + 2u);
  float mx = -KF_INF;
  for (uint s = t; s < pc.nsplit; s += WG) mx = max(mx, part_[p0 + s * rs + DV]);
  mx = kf_wg_max(mx);
  const float u = mx == -KF_INF ? 0.0 : mx;
  float l = 0.0;
  for (uint s = t; s < pc.nsplit; s += WG) {
    const float ms = part_[p0 + s * rs + DV];
    const float w = ms == -KF_INF ? 0.0 : exp2(ms - u);  // a split whose keys this row never sees weighs 0
    w_[s] = w;
    l += w * part_[p0 + s * rs + DV + 1u];
  }
  l = kf_wg_sum(l);  // (its barrier also publishes w_)
  // NaN scores make l NaN; a +Inf score leaves mx infinite: NaN, as the reference.
  const float inv = pc.L == 0u ? 0.0 : (isnan(l) || isinf(mx) || l == 0.0 ? KF_NAN : 1.0 / l);
  const uint hh = hk * pc.G + rr / pc.S, i = rr % pc.S;
  const uint oo = pc.bshd != 0u ? ((b * pc.S + i) * pc.H + hh) * DV : ((b * pc.H + hh) * pc.S + i) * DV;
  const uint SL = WG / CB, lane = t / CB, c = cb * CB + t % CB;
  float a = 0.0;
  if (c < DV)
    for (uint s = lane; s < pc.nsplit; s += SL) a += w_[s] * part_[p0 + s * rs + c];
  red_[t] = a;
  barrier();
  if (lane == 0u && c < DV) {
    float sum = 0.0;
    for (uint q = 0; q < SL; ++q) sum += red_[q * CB + t];
    o_[oo + c] = kf_st(sum * inv);
  }
}
)glsl";

/// MAXD is a literal in contract form (the host of generated kernels sets no
/// specialization constant): max(D, Dv) rounded up to 32, as the backend's host does.
template <>
struct contract_form<attention_traits> {
  /// The backend's kernel with the contract's KV (keys attended: a KV cache
  /// of L rows holding KV) in its push block and its key count; the rows'
  /// strides stay L's (the backend itself gathers a cut cache instead).
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    const index_t d = p.dims[3];
    const index_t maxd = std::max<index_t>(32, (d + 31) / 32 * 32);
    std::string body = replace_all(attention, "layout(constant_id = 1) const uint MAXD = 64;",
                                   "const uint MAXD = " + std::to_string(maxd) + ";", "MAXD");
    body = replace_all(body, "uint causal, H, G, bshd; } pc;", "uint causal, H, G, bshd, KV; } pc;", "push block");
    body = replace_all(body, "uint nk = pc.causal != 0u ? min(pc.L, row + 1u) : pc.L;",
                       "uint nk = pc.causal != 0u ? min(pc.KV, row + 1u) : pc.KV;", "key count");
    body = replace_all(body, "kf_st(pc.L == 0u ? 0.0 :", "kf_st(pc.KV == 0u ? 0.0 :", "no keys");
    return {body, {}, k.wg};
  }
  static std::vector<edit> edits(const problem&) {
    return {
        {"dropped_scale", "no_scale", "scores are not multiplied by 1/sqrt(D)", "s = dot * pc.scale;", "s = dot;"},
        {"off_by_one", "causal_diagonal", "the causal mask also hides the diagonal", "min(pc.KV, row + 1u)",
         "min(pc.KV, row)", [](const problem& p) { return p.causal; }},
        {"missing_tail", "no_causal_mask", "the causal mask is ignored", "pc.causal != 0u ? min(pc.KV, row + 1u) : pc.KV;",
         "pc.KV;", [](const problem& p) { return p.causal; }},
        {"structure", "ignores_kv_len", "the kernel attends to all L rows of the cache, not the KV it holds",
         "pc.causal != 0u ? min(pc.KV, row + 1u) : pc.KV;", "pc.causal != 0u ? min(pc.L, row + 1u) : pc.L;",
         [](const problem& p) { return attention_traits::cut(p); }},
        // (l's and acc's inits are scaled by 0 on the first key block, so
        // mutating them would be equivalent; the workgroup sum's init is not.)
        {"wrong_init", "wg_sum_init", "the workgroup sum of probabilities starts at 1", "  float r = 0.0;\n",
         "  float r = 1.0;\n"},
        {"missing_barrier", "q_barrier", "no barrier after staging the query row in shared memory",
         "for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;\n  barrier();", "for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;"},
        {"read_past_end", "key_bound", "keys are valid up to j <= the row's last key, reading one key past it",
         "bool valid = j < nk;", "bool valid = j <= nk;"},
        {"partial_output", "last_column", "the last output column is never written",
         "for (uint d = t; d < pc.DV; d += WG)\n    o_[oo + d]", "for (uint d = t; d + 1u < pc.DV; d += WG)\n    o_[oo + d]"},
        {"returns_input", "copy_q", "O receives Q's elements",
         "o_[oo + d] = kf_st(pc.KV == 0u ? 0.0 : (undefined ? KF_NAN : acc[d] / l));", "o_[oo + d] = q_[qo + d];"},
        {"f16_accumulation", "score_f16", "the q·k dot product is accumulated in f16",
         "dot = fma(qs[d], kf_ld(k_[kb + j * krs + d]), dot);",
         "dot = uintBitsToFloat((floatBitsToUint(fma(qs[d], kf_ld(k_[kb + j * krs + d]), dot)) + 0x1000u) & 0xffffe000u);"},
        // Issue 46's classes.
        {"overflow", "no_max_shift", "exp(s) without the running max (overflows past s = 88)",
         "float corr = m == -KF_INF ? 0.0 : exp(m - mnew);\n    float p = (!valid || bad || s == -KF_INF || mnew == -KF_INF) ? 0.0 : exp(s - mnew);",
         "float corr = m == -KF_INF ? 0.0 : 1.0;\n    float p = (!valid || bad || s == -KF_INF || mnew == -KF_INF) ? 0.0 : exp(s);"},
        {"overflow", "max_over_masked_keys", "the row max is taken over the whole key block, masked keys too",
         "    if (valid) {\n      float dot = 0.0;", "    if (j < pc.KV) {\n      float dot = 0.0;",
         [](const problem& p) { return p.causal; }},
        {"wrong_index", "kv_head_interleaved", "query head h reads KV head h % Hkv instead of h / G",
         "hk = h / pc.G;", "hk = h % HK;", [](const problem& p) { return attention_traits::kv_heads(p) != p.dims[1]; }},
        {"wrong_index", "bshd_key_stride", "in [B,S,H,D] the key rows are taken as contiguous ([B,H,S,D]'s stride)",
         "uint krs = bshd ? HK * pc.D : pc.D", "uint krs = pc.D",
         [](const problem& p) { return attention_traits::layout(p) == attention_layout::bshd; }},
        {"wrong_index", "bshd_query_rows", "in [B,S,H,D] the query row is read as in [B,H,S,D]",
         "uint qo = bshd ? ((b * pc.S + row) * pc.H + h) * pc.D : id * pc.D;", "uint qo = id * pc.D;",
         [](const problem& p) { return attention_traits::layout(p) == attention_layout::bshd; }},
    };
  }
};

}  // namespace kforge::vulkan::shaders
