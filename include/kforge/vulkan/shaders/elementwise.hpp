// kforge/vulkan/shaders/elementwise.hpp — unary y = f(x) and binary c = a∘b
// with broadcasting, and the test kernel that never finishes.
//
// Tiling: one element per invocation, grid-stride loop over a 2-D grid of
// workgroups (so any element count fits the 65535-group limit). Bounds: the
// loop stops at n. Vector variants (KF_VEC = 1, chosen by the host when n % 4
// == 0 and, for binary, neither operand broadcasts): each invocation moves 4
// four-element vectors (16 bytes each for f32) at stride WG, so a warp's
// accesses stay contiguous and four loads are in flight before the first use;
// n counts vectors there. Binary broadcasting: the output index is decomposed over
// up to 6 output dims and re-composed with each operand's strides, which are
// 0 along broadcast dims (operands are dense row-major on the device).
#pragma once

#include "kforge/ops/elementwise_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* unary = R"glsl(
#if KF_VEC
layout(std430, set = 0, binding = 0) readonly buffer BufX { T4 x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T4 y_[]; };
layout(push_constant) uniform Push { uint n; float slope; } pc;
void main() {
  uint WG = gl_WorkGroupSize.x, stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG * 4;
  for (uint i0 = kf_group_id() * WG * 4 + gl_LocalInvocationID.x; i0 < pc.n; i0 += stride) {
    vec4 v[4];
    [[unroll]] for (uint u = 0; u < 4; ++u) if (i0 + u * WG < pc.n) v[u] = kf_ld4(x_[i0 + u * WG]);
    [[unroll]] for (uint u = 0; u < 4; ++u)
      if (i0 + u * WG < pc.n) {
        vec4 r;
        [[unroll]] for (uint e = 0; e < 4; ++e) r[e] = kf_apply(KF_FN, v[u][e], pc.slope);
        y_[i0 + u * WG] = kf_st4(r);
      }
  }
}
#else
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint n; float slope; } pc;
void main() {
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint i = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < pc.n; i += stride)
    y_[i] = kf_st(kf_apply(KF_FN, kf_ld(x_[i]), pc.slope));
}
#endif
)glsl";

// Device copy of n 16-byte vectors, KF_U per invocation at stride WG.
inline constexpr const char* copy_vec4 = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { uvec4 x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { uvec4 y_[]; };
layout(push_constant) uniform Push { uint n; } pc;
void main() {
  uint WG = gl_WorkGroupSize.x, stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG * KF_U;
  for (uint i0 = kf_group_id() * WG * KF_U + gl_LocalInvocationID.x; i0 < pc.n; i0 += stride) {
    uvec4 v[KF_U];
    [[unroll]] for (uint u = 0; u < KF_U; ++u) if (i0 + u * WG < pc.n) v[u] = x_[i0 + u * WG];
    [[unroll]] for (uint u = 0; u < KF_U; ++u) if (i0 + u * WG < pc.n) y_[i0 + u * WG] = v[u];
  }
}
)glsl";

inline constexpr const char* binary = R"glsl(
#if KF_VEC
layout(std430, set = 0, binding = 0) readonly buffer BufA { T4 a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { T4 b_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufC { T4 c_[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer BufA { T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { T b_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufC { T c_[]; };
#endif
layout(push_constant) uniform Push { uint n, rank; uint dims[6]; uint sa[6]; uint sb[6]; } pc;
// a / b with b brought into the range where Vulkan bounds OpFDiv's error
// (2.5 ulp for |b| in [2^-126, 2^126]; past it a driver may compute
// a * rcp(b), whose rcp is subnormal there and flushed): both scaled by 1/4.
float kf_div(float a, float b) { return abs(b) > 8.50705917e37 ? (0.25 * a) / (0.25 * b) : a / b; }
float op(float a, float b) {
  if (KF_OP == 0) return a + b;
  if (KF_OP == 1) return a - b;
  if (KF_OP == 2) return a * b;
  if (KF_OP == 3) return kf_div(a, b);
  if (KF_OP == 4) return kf_nan_max(a, b);
  return kf_nan_min(a, b);
}
#if KF_VEC
void main() {  // no broadcasting: a, b, c share one dense layout
  uint WG = gl_WorkGroupSize.x, stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG * 4;
  for (uint i0 = kf_group_id() * WG * 4 + gl_LocalInvocationID.x; i0 < pc.n; i0 += stride) {
    vec4 va[4], vb[4];
    [[unroll]] for (uint u = 0; u < 4; ++u)
      if (i0 + u * WG < pc.n) va[u] = kf_ld4(a_[i0 + u * WG]), vb[u] = kf_ld4(b_[i0 + u * WG]);
    [[unroll]] for (uint u = 0; u < 4; ++u)
      if (i0 + u * WG < pc.n) {
        vec4 r;
        [[unroll]] for (uint e = 0; e < 4; ++e) r[e] = op(va[u][e], vb[u][e]);
        c_[i0 + u * WG] = kf_st4(r);
      }
  }
}
#else
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
    c_[i] = kf_st(op(kf_ld(a_[ia]), kf_ld(b_[ib])));
  }
}
#endif
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

template <>
struct contract_form<unary_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    return {unary, {{"KF_FN", std::to_string(static_cast<int>(*parse_fn(p.op)))}}, k.wg};
  }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "loop_bound", "the loop runs to i <= n, writing one element past y", "i < pc.n; i += stride)",
         "i <= pc.n; i += stride)"},
        {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are written",
         "i < pc.n; i += stride)", "i < pc.n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; i += stride)"},
        {"returns_input", "copy_x", "y = x", "y_[i] = kf_st(kf_apply(KF_FN, kf_ld(x_[i]), pc.slope));", "y_[i] = x_[i];"},
        {"dropped_scale", "slope", "leaky_relu ignores its slope", "x < 0.0 ? slope * x : x",
         "x < 0.0 ? 0.01 * x : x", [](const problem& p) { return p.op == "leaky_relu" && p.slope != 0.01f; }},
        // Issue 46's classes: a function wrong in its tail (sigmoid(-30) = 9e-14 comes out 0).
        {"tolerance", "sigmoid_via_tanh", "sigmoid as 0.5 + 0.5 tanh(x/2), which cancels to 0 below x ~ -17",
         "float kf_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }",
         "float kf_sigmoid(float x) { return 0.5 + 0.5 * kf_tanh(0.5 * x); }",
         [](const problem& p) { return p.op == "sigmoid" || p.op == "silu"; }},
    };
  }
};

template <>
struct contract_form<binary_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    return {binary, {{"KF_OP", std::to_string(static_cast<int>(*parse_binop(p.op)))}}, k.wg};
  }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "loop_bound", "the loop runs to i <= n", "i < pc.n; i += stride)", "i <= pc.n; i += stride)"},
        {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are written",
         "i < pc.n; i += stride)", "i < pc.n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; i += stride)"},
        {"read_past_end", "ignore_broadcast", "b is indexed with a's strides, reading past its end when it broadcasts",
         "ib += idx * pc.sb[d];", "ib += idx * pc.sa[d];"},
        {"returns_input", "copy_a", "c = a", "c_[i] = kf_st(op(kf_ld(a_[ia]), kf_ld(b_[ib])));", "c_[i] = a_[ia];"},
        // (a * (1 / b) is not a mutant here: lavapipe lowers a / b to a * rcp(b)
        // itself and keeps rcp's subnormal results, so on it the two are one
        // kernel; the suite's subnormal case catches it on a device that
        // flushes — tests/validate_suite.cpp emulates one.)
    };
  }
};

}  // namespace kforge::vulkan::shaders
