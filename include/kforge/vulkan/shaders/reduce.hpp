// kforge/vulkan/shaders/reduce.hpp — sum/mean/max/min over one axis.
//
// Tiling: the input is dense [outer, n, inner]; one workgroup per output
// element (o, i) walks j = t, t+WG, … < n (bounds by the loop), keeps a local
// partial, then combines with subgroup operations and one shared slot per
// subgroup (kf_wg_*). max/min track NaN with a separate flag, since
// subgroupMax/Min are undefined on NaN; sums let NaN/Inf propagate through
// addition as the reference does.
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* reduce = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint outer, n, inner; } pc;
void main() {
  uint id = kf_group_id();
  if (id >= pc.outer * pc.inner) return;   // uniform per workgroup
  uint o = id / pc.inner, i = id % pc.inner;
  uint base = o * pc.n * pc.inner + i;
#if KF_RED <= 1
  float s = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < pc.n; j += gl_WorkGroupSize.x) s += float(x_[base + j * pc.inner]);
  s = kf_wg_sum(s);
  if (KF_RED == 1) s /= float(pc.n);
#else
  bool nan = false;
  float s = KF_RED == 2 ? -KF_INF : KF_INF;
  for (uint j = gl_LocalInvocationID.x; j < pc.n; j += gl_WorkGroupSize.x) {
    float v = float(x_[base + j * pc.inner]);
    if (isnan(v)) nan = true;
    else s = KF_RED == 2 ? max(s, v) : min(s, v);
  }
  s = KF_RED == 2 ? kf_wg_max(s) : kf_wg_min(s);
  if (kf_wg_any(nan)) s = KF_NAN;
#endif
  if (gl_LocalInvocationID.x == 0) y_[id] = T(s);
}
)glsl";

}  // namespace kforge::vulkan::shaders
