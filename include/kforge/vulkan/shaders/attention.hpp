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

}  // namespace kforge::vulkan::shaders
