// kforge/vulkan/shaders/gated.hpp — the gated activation y = act(gate) · up.
//
// Tiling: one output element per invocation, grid-stride loop over a 2-D
// grid of workgroups; bounds by the loop (q < rows·F). Element q = (r, j)
// reads x[r, j] and x[r, F + j]: neighbouring invocations read neighbouring
// elements of both halves, so both loads coalesce. The kernel follows the
// generation contract as it is (bindings x, y; push constants rows, F, act),
// so its contract form adds nothing. act is a kforge::fn code, evaluated by
// the common prelude's kf_apply (the formulas of the unary ops).
//
// Vector variant (KF_VEC = 1, chosen by the host when F % 4 == 0): each
// invocation moves KF_U four-element vectors of each half at stride WG, so
// KF_U loads of each half are in flight before the first use (one 2-byte
// element per invocation left the H100 at a third of its copy bandwidth for
// llama3's 2048 × 14336: too few bytes in flight). KF_U is 4 where that
// still leaves a few waves of workgroups, else 1 (a decode row of 14336 is
// one workgroup at 4, and slower for it).
#pragma once

#include "kforge/ops/gated_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* gated = R"glsl(
#if KF_VEC
layout(std430, set = 0, binding = 0) readonly buffer BufX { T4 x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T4 y_[]; };
layout(push_constant) uniform Push { uint rows, F, act; } pc;

void main() {
  uint WG = gl_WorkGroupSize.x, F4 = pc.F / 4u, n = pc.rows * F4;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG * KF_U;
  for (uint q0 = kf_group_id() * WG * KF_U + gl_LocalInvocationID.x; q0 < n; q0 += stride) {
    vec4 a[KF_U], b[KF_U];
    [[unroll]] for (uint u = 0; u < KF_U; ++u) {
      uint q = q0 + u * WG;
      if (q < n) {
        uint r = q / F4, ia = r * 2u * F4 + (q - r * F4);
        a[u] = kf_ld4(x_[ia]);
        b[u] = kf_ld4(x_[ia + F4]);
      }
    }
    [[unroll]] for (uint u = 0; u < KF_U; ++u)
      if (q0 + u * WG < n) {
        vec4 o;
        [[unroll]] for (uint e = 0; e < 4; ++e) o[e] = kf_apply(int(pc.act), a[u][e], 0.0) * b[u][e];
        y_[q0 + u * WG] = kf_st4(o);
      }
  }
}
#else
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, F, act; } pc;

void main() {
  uint n = pc.rows * pc.F;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint q = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; q < n; q += stride) {
    uint r = q / pc.F, j = q % pc.F;
    uint ia = r * 2u * pc.F + j;
    float a = kf_ld(x_[ia]), b = kf_ld(x_[ia + pc.F]);
    y_[q] = kf_st(kf_apply(int(pc.act), a, 0.0) * b);
  }
}
#endif
)glsl";

template <>
struct contract_form<gated_traits> {
  static contract_kernel kernel(const problem&, const template_knobs& k) { return {gated, {}, k.wg}; }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "up_shift", "the up half is read one element late", "b = kf_ld(x_[ia + pc.F]);",
         "b = kf_ld(x_[ia + pc.F + 1u]);"},
        {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are written",
         "q < n; q += stride)", "q < n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; q += stride)"},
        {"read_past_end", "dense_rows", "rows are read with stride F instead of 2F", "uint ia = r * 2u * pc.F + j;",
         "uint ia = r * pc.F + j;"},
        {"dropped_scale", "no_up", "the up half is not multiplied in", "y_[q] = kf_st(kf_apply(int(pc.act), a, 0.0) * b);",
         "y_[q] = kf_st(kf_apply(int(pc.act), a, 0.0));"},
        {"wrong_init", "swapped_halves", "the activation is applied to the up half",
         "y_[q] = kf_st(kf_apply(int(pc.act), a, 0.0) * b);", "y_[q] = kf_st(kf_apply(int(pc.act), b, 0.0) * a);"},
        {"returns_input", "copy_gate", "y = gate", "y_[q] = kf_st(kf_apply(int(pc.act), a, 0.0) * b);", "y_[q] = x_[ia];"},
    };
  }
};

}  // namespace kforge::vulkan::shaders
