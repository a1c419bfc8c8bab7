// kforge/vulkan/shaders/rope.hpp — rotary position embedding.
//
// Tiling: one rotated pair per invocation, grid-stride loop over a 2-D grid
// of workgroups; bounds by the loop (pairs < rows·H·D/2). The kernel follows
// the generation contract as it is (bindings x, y; push constants rows, S,
// H, D, offset, base, interleaved), so its contract form adds nothing.
// Angles: θ_i = p · exp2(-(2i/D) · log2(base)) in f32, reduced by 2π in two
// parts (2π = 6.28125 + 1.9353e-3; k·6.28125 is exact in f32 for |k| < 2^16)
// before cos and sin, whose accuracy GPUs guarantee only near [-π, π].
#pragma once

#include "kforge/ops/rope_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* rope = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, S, H, D, offset; float base; uint interleaved; } pc;

vec2 kf_cos_sin(float t) {
  float k = round(t * 0.15915494309189535);
  float r = fma(-k, 1.9353071795864769e-3, fma(-k, 6.28125, t));
  return vec2(cos(r), sin(r));
}

void main() {
  uint half_d = pc.D / 2u, n = pc.rows * pc.H * half_d;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  float lb = log2(pc.base);
  for (uint q = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; q < n; q += stride) {
    uint i = q % half_d, rh = q / half_d, s = (rh / pc.H) % pc.S;
    float theta = float(pc.offset + s) * exp2(-2.0 * float(i) / float(pc.D) * lb);
    vec2 cs = kf_cos_sin(theta);
    uint ia = pc.interleaved != 0u ? rh * pc.D + 2u * i : rh * pc.D + i;
    uint ib = pc.interleaved != 0u ? ia + 1u : ia + half_d;
    float a = kf_ld(x_[ia]), b = kf_ld(x_[ib]);
    y_[ia] = kf_st(a * cs.x - b * cs.y);
    y_[ib] = kf_st(a * cs.y + b * cs.x);
  }
}
)glsl";

template <>
struct contract_form<rope_traits> {
  static contract_kernel kernel(const problem&, const template_knobs& k) { return {rope, {}, k.wg}; }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "position", "positions start at offset + 1", "float(pc.offset + s)", "float(pc.offset + s + 1u)"},
        {"missing_tail", "whole_groups_only", "only whole workgroups' worth of pairs are rotated",
         "q < n; q += stride)", "q < n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; q += stride)"},
        {"dropped_scale", "no_offset", "the position offset is ignored", "float(pc.offset + s)", "float(s)",
         [](const problem& p) { return rope_traits::offset(p) != 0; }},
        {"wrong_init", "sign", "the rotation goes the other way", "y_[ia] = kf_st(a * cs.x - b * cs.y);",
         "y_[ia] = kf_st(a * cs.x + b * cs.y);"},
        {"read_past_end", "pair_stride", "the second of a pair is read D/2 + 1 away",
         "ib = pc.interleaved != 0u ? ia + 1u : ia + half_d;", "ib = pc.interleaved != 0u ? ia + 1u : ia + half_d + 1u;"},
        {"returns_input", "copy_x", "y = x", "    y_[ib] = kf_st(a * cs.y + b * cs.x);", "    y_[ib] = x_[ib];"},
    };
  }
};

}  // namespace kforge::vulkan::shaders
