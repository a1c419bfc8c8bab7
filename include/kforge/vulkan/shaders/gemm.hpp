// kforge/vulkan/shaders/gemm.hpp — tiled GEMM with a fused epilogue, and the
// same kernel as conv2d's implicit GEMM (KF_CONV).
//
// Tiling: a workgroup computes a BM×BN tile of C, stepping K by BK through
// shared memory (A tile stored k-major so the inner loop reads both tiles
// with unit stride); each invocation owns TM×TN outputs spread with stride
// BM/TM and BN/TN (neighbouring invocations touch neighbouring addresses).
// Workgroup size = (BM/TM)·(BN/TN), set by the host as spec constant 0.
// BM, BN, BK, TM, TN are specialization constants 1..5.
//
// Bounds: tile loads outside [M,K]/[K,N] store 0 to shared memory; stores
// outside [M,N] are skipped; so any M, N, K (including 0) is handled and no
// padding is asked of the caller.
//
// Epilogue (gemm): v = alpha·acc; if beta != 0, v += beta·C (beta == 0 never
// reads C); v += bias[n] (KF_BIAS); v = act(v) with KF_ACT = kforge::fn code.
// Conv2d: M = K/groups filters, N = images·P·Q, K = C/groups·R·S; the B tile
// is gathered from x on the fly (zero outside the padded image); group in
// gl_WorkGroupID.z; bias is per filter (row m).
#pragma once

#include "kforge/ops/conv2d_traits.hpp"
#include "kforge/ops/gemm_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm = R"glsl(
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

layout(std430, set = 0, binding = 0) readonly buffer BufA { T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { T b_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufBias { T bias_[]; };
layout(std430, set = 0, binding = 3) buffer BufC { T c_[]; };

#if KF_CONV
layout(push_constant) uniform Push {
  uint M, N, K;            // per group: filters, images*P*Q, C/G*R*S
  uint C, H, W, P, Q, R, S, KT;
  int sh, sw, ph, pw, dh, dw;
  float slope;
} pc;
float load_a(uint g, uint m, uint k) { return kf_ld(b_[(g * pc.M + m) * pc.K + k]); }  // w [KT][C/G*R*S]
float load_b(uint g, uint k, uint n) {
  uint rs = pc.R * pc.S, pq = pc.P * pc.Q;
  uint c = k / rs, r = (k % rs) / pc.S, s = k % pc.S;
  uint img = n / pq, p = (n % pq) / pc.Q, q = n % pc.Q;
  int ih = int(p) * pc.sh - pc.ph + int(r) * pc.dh;
  int iw = int(q) * pc.sw - pc.pw + int(s) * pc.dw;
  if (ih < 0 || iw < 0 || ih >= int(pc.H) || iw >= int(pc.W)) return 0.0;
  uint cg = pc.C / (pc.KT / pc.M);
  return kf_ld(a_[((img * pc.C + g * cg + c) * pc.H + uint(ih)) * pc.W + uint(iw)]);
}
#else
layout(push_constant) uniform Push {
  uint M, N, K;
  float alpha, beta, slope;
} pc;
float load_a(uint g, uint m, uint k) { return kf_ld(a_[m * pc.K + k]); }
float load_b(uint g, uint k, uint n) { return kf_ld(b_[k * pc.N + n]); }
#endif

shared float As[BK * BM];
shared float Bs[BK * BN];

void main() {
  const uint RS = BM / TM, CS = BN / TN;
  uint t = gl_LocalInvocationID.x;
  uint tr = t / CS, tc = t % CS;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, g = gl_WorkGroupID.z;
  float acc[TM * TN];
  for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;
  for (uint k0 = 0; k0 < pc.K; k0 += BK) {
    for (uint i = t; i < BM * BK; i += gl_WorkGroupSize.x) {
      uint r = i / BK, c = i % BK;
      uint gm = m0 + r, gk = k0 + c;
      As[c * BM + r] = (gm < pc.M && gk < pc.K) ? load_a(g, gm, gk) : 0.0;
    }
    for (uint i = t; i < BK * BN; i += gl_WorkGroupSize.x) {
      uint r = i / BN, c = i % BN;
      uint gk = k0 + r, gn = n0 + c;
      Bs[r * BN + c] = (gk < pc.K && gn < pc.N) ? load_b(g, gk, gn) : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float av[TM], bv[TN];
      for (uint i = 0; i < TM; ++i) av[i] = As[kk * BM + tr + i * RS];
      for (uint j = 0; j < TN; ++j) bv[j] = Bs[kk * BN + tc + j * CS];
      for (uint i = 0; i < TM; ++i)
        for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);
    }
    barrier();
  }
  for (uint i = 0; i < TM; ++i) {
    uint gm = m0 + tr + i * RS;
    if (gm >= pc.M) continue;
    for (uint j = 0; j < TN; ++j) {
      uint gn = n0 + tc + j * CS;
      if (gn >= pc.N) continue;
      float v = acc[i * TN + j];
#if KF_CONV
#if KF_BIAS
      v += kf_ld(bias_[g * pc.M + gm]);
#endif
      uint pq = pc.P * pc.Q, img = gn / pq;
      c_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq] = kf_st(kf_apply(KF_ACT, v, pc.slope));
#else
      uint idx = gm * pc.N + gn;
      v *= pc.alpha;
      if (pc.beta != 0.0) v += pc.beta * kf_ld(c_[idx]);
#if KF_BIAS
      v += kf_ld(bias_[gn]);
#endif
      c_[idx] = kf_st(kf_apply(KF_ACT, v, pc.slope));
#endif
    }
  }
}
)glsl";

/// gemm and conv2d in contract form: the generic kernel with its tile knobs
/// as literals, and the bias binding removed when the epilogue has none.
inline contract_kernel gemm_contract_kernel(const problem& p, const template_knobs& k, bool conv) {
  const bool bias = kforge::detail::epilogue_has_bias(p.epilogue);
  contract_kernel c;
  c.defines = {{"KF_CONV", conv ? "1" : "0"}, {"KF_BIAS", bias ? "1" : "0"}, {"KF_ACT", std::to_string(act_code(p.epilogue))}};
  c.body = gemm;
  const char* names[] = {"BM", "BN", "BK", "TM", "TN"};
  const std::uint32_t vals[] = {k.bm, k.bn, k.bk, k.tm, k.tn};
  const char* dflt[] = {"64", "64", "16", "4", "4"};
  for (int i = 0; i < 5; ++i)
    c.body = replace_all(c.body, "const uint " + std::string(names[i]) + " = " + dflt[i] + ";",
                         "const uint " + std::string(names[i]) + " = " + std::to_string(vals[i]) + ";", "tile knob");
  if (!bias) {
    c.body = replace_all(c.body, "layout(std430, set = 0, binding = 2) readonly buffer BufBias { T bias_[]; };\n", "",
                         "drop the bias binding");
    c.body = replace_all(c.body, "binding = 3) buffer BufC", "binding = 2) buffer BufC", "renumber C");
  }
  if (!k.tm || !k.tn || k.bm % k.tm || k.bn % k.tn) throw argument_error("kforge::gen: tile not a multiple of the thread tile");
  c.local_size = (k.bm / k.tm) * (k.bn / k.tn);
  return c;
}
inline std::vector<edit> gemm_contract_edits() {
  return {
    {"off_by_one", "store_bound", "the store bound test is `>` instead of `>=`, writing one row past C",
     "    if (gm >= pc.M) continue;", "    if (gm > pc.M) continue;"},
    {"missing_tail", "k_tail", "the A tile load drops its K bound, reading the next row for the K tail",
     "(gm < pc.M && gk < pc.K) ? load_a", "(gm < pc.M) ? load_a"},
    {"missing_barrier", "barrier_after_compute", "no barrier between using a shared tile and loading the next",
     "    barrier();\n  }\n  for (uint i = 0; i < TM; ++i) {", "  }\n  for (uint i = 0; i < TM; ++i) {"},
    {"wrong_init", "acc_init", "accumulators start at 1 instead of 0", "acc[i] = 0.0;", "acc[i] = 1.0;"},
    // Issue 46's classes: skipping zero weights turns Inf·0 into 0, not NaN.
    {"zeros_meet_specials", "skips_zero_weights", "products with a zero B element are skipped",
     "for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);",
     "for (uint j = 0; j < TN; ++j)\n          if (bv[j] != 0.0) acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);"},
    {"read_past_end", "b_bound", "the B tile load tests k <= K, reading one row past the end of B",
     "(gk < pc.K && gn < pc.N) ? load_b", "(gk <= pc.K && gn < pc.N) ? load_b"},
    {"partial_output", "skip_first_thread_column", "the store loop starts at the second column of each thread tile",
     "for (uint j = 0; j < TN; ++j) {\n      uint gn", "for (uint j = 1; j < TN; ++j) {\n      uint gn"},
    {"f16_accumulation", "acc_f16", "the accumulator is rounded to f16 after every multiply-add",
     "acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);",
     "acc[i * TN + j] = uintBitsToFloat((floatBitsToUint(fma(av[i], bv[j], acc[i * TN + j])) + 0x1000u) & 0xffffe000u);"},
};
}

template <>
struct contract_form<gemm_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) { return gemm_contract_kernel(p, k, false); }
  static std::vector<edit> edits(const problem&) {
    std::vector<edit> e = gemm_contract_edits();
    e.push_back({"dropped_scale", "alpha", "alpha is not applied", "      v *= pc.alpha;\n", "",
                 [](const problem& p) { return p.alpha != 1.0f; }});
    e.push_back({"returns_input", "copy_a", "C receives A's elements", "c_[idx] = kf_st(kf_apply(KF_ACT, v, pc.slope));",
                 "c_[idx] = a_[idx];"});
    return e;
  }
};

template <>
struct contract_form<conv2d_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) { return gemm_contract_kernel(p, k, true); }
  static std::vector<edit> edits(const problem&) {
    std::vector<edit> e = gemm_contract_edits();
    e.push_back({"off_by_one", "pad_bound", "the padding test is `>` instead of `>=` at the bottom edge",
                 "ih >= int(pc.H)", "ih > int(pc.H)",
                 [](const problem& p) { return p.pad[0] > 0; }});
    e.push_back({"dropped_scale", "bias", "the bias is not added", "      v += kf_ld(bias_[g * pc.M + gm]);\n", "",
                 [](const problem& p) { return kforge::detail::epilogue_has_bias(p.epilogue); }});
    e.push_back({"returns_input", "copy_x", "y receives x's elements",
                 "c_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq] = kf_st(kf_apply(KF_ACT, v, pc.slope));",
                 "c_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq] = a_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq];"});
    return e;
  }
};

}  // namespace kforge::vulkan::shaders
