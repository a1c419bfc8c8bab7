// kforge/vulkan/shaders/rows.hpp — last-axis row kernels: online softmax,
// layer_norm and rms_norm.
//
// Tiling: one workgroup per row (2-D grid of groups); invocation t handles
// columns t, t+WG, … < cols (bounds by the loop); row statistics combine with
// subgroup operations plus one shared slot per subgroup.
//
// softmax_online: one pass keeps a running (max m, sum s) per invocation,
// rescaling s when m grows; partials merge as s·exp(m - M). A second pass
// writes exp(x - M)/S. As in the reference, a NaN or +Inf anywhere, or a row
// that is all -Inf, makes the whole row NaN.
// norms: mean first, then the mean of squared deviations (two passes, as the
// reference computes it), then the output; rms_norm (KF_RMS) skips the mean.
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* softmax = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, cols; } pc;
void main() {
  uint row = kf_group_id();
  if (row >= pc.rows) return;  // uniform per workgroup
  uint base = row * pc.cols;
  float m = -KF_INF, s = 0.0;
  bool nan = false;
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {
    float v = float(x_[base + j]);
    if (isnan(v)) nan = true;
    else if (v == -KF_INF) continue;
    else if (v > m) { s = s * exp(m - v) + 1.0; m = v; }
    else s += exp(v - m);
  }
  float M = kf_wg_max(m);
  bool bad = kf_wg_any(nan) || isinf(M);
  float S = kf_wg_sum((m == -KF_INF || bad) ? 0.0 : s * exp(m - M));
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x)
    y_[base + j] = T(bad ? KF_NAN : exp(float(x_[base + j]) - M) / S);
}
)glsl";

inline constexpr const char* norm = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufG { T gamma_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufB { T beta_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, cols; float eps; } pc;
void main() {
  uint row = kf_group_id();
  if (row >= pc.rows) return;  // uniform per workgroup
  uint base = row * pc.cols;
  float n = float(pc.cols);
  float mean = 0.0;
#if !KF_RMS
  float s = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) s += float(x_[base + j]);
  mean = kf_wg_sum(s) / n;
#endif
  float q = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {
    float d = float(x_[base + j]) - mean;
    q += d * d;
  }
  float inv = 1.0 / sqrt(kf_wg_sum(q) / n + pc.eps);
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {
    float v = (float(x_[base + j]) - mean) * inv * float(gamma_[j]);
#if !KF_RMS
    v += float(beta_[j]);
#endif
    y_[base + j] = T(v);
  }
}
)glsl";

}  // namespace kforge::vulkan::shaders
