// kforge/vulkan/shaders/elementwise.hpp — unary y = f(x) and binary c = a∘b
// with broadcasting, and the test kernel that never finishes.
//
// Tiling: one element per invocation, grid-stride loop over a 2-D grid of
// workgroups (so any element count fits the 65535-group limit). Bounds: the
// loop stops at n. Binary broadcasting: the output index is decomposed over
// up to 6 output dims and re-composed with each operand's strides, which are
// 0 along broadcast dims (operands are dense row-major on the device).
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* unary = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint n; float slope; } pc;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint i = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < pc.n; i += stride)
    y_[i] = T(kf_apply(KF_FN, float(x_[i]), pc.slope));
}
)glsl";

inline constexpr const char* binary = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufA { T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { T b_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufC { T c_[]; };
layout(push_constant) uniform Push { uint n, rank; uint dims[6]; uint sa[6]; uint sb[6]; } pc;
float op(float a, float b) {
  if (KF_OP == 0) return a + b;
  if (KF_OP == 1) return a - b;
  if (KF_OP == 2) return a * b;
  if (KF_OP == 3) return a / b;
  if (KF_OP == 4) return kf_nan_max(a, b);
  return kf_nan_min(a, b);
}
void main() {
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint i = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < pc.n; i += stride) {
    uint rest = i, ia = 0, ib = 0;
    for (int d = int(pc.rank) - 1; d >= 0; --d) {
      uint idx = rest % pc.dims[d];
      rest /= pc.dims[d];
      ia += idx * pc.sa[d];
      ib += idx * pc.sb[d];
    }
    c_[i] = T(op(float(a_[ia]), float(b_[ib])));
  }
}
)glsl";

// Loops until x[1] becomes non-zero, which nothing ever does (the host
// uploads zeros). The volatile reload and the atomic side effect keep the
// compiler from proving anything about the loop or deleting it. llvmpipe ends
// every loop after 65535 iterations (its guard against hangs), so the test
// also dispatches 65535×65535 workgroups: ~2.8e14 atomic adds there.
inline constexpr const char* spin = R"glsl(
layout(std430, set = 0, binding = 0) volatile coherent buffer BufX { uint x_[]; };
layout(push_constant) uniform Push { uint unused; } pc;
void main() {
  while (x_[1] == 0u) atomicAdd(x_[0], 1u);
}
)glsl";

}  // namespace kforge::vulkan::shaders
