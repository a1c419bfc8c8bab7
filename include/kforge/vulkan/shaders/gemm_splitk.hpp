// kforge/vulkan/shaders/gemm_splitk.hpp — the second pass of a split-K gemm:
// C = epilogue(sum of the splits' partial dot products).
//
// Layout: one invocation per element of C (kf_group_id over a 2-D grid of
// workgroups; consecutive invocations, consecutive columns). Partial sums are
// f32 [splits][M][N] (binding 0), written by a gemm kernel compiled with
// KF_SPLIT; push constant K carries the number of splits. Each element sums
// its splits in order 0, 1, … from 0.0, so the result is the same whatever
// order the first pass's workgroups ran in, then gets gemm's epilogue
// (alpha, beta·C, bias, activation; shaders/gemm_common.hpp).
//
// Bounds: invocations past M·N return; the host checks splits·M·N fits 32 bits.
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm_splitk_bindings = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufP { float p_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufBias { T bias_[]; };
layout(std430, set = 0, binding = 2) buffer BufC { T c_[]; };
)glsl";

inline constexpr const char* gemm_splitk_reduce = R"glsl(
void main() {
  const uint idx = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const uint mn = pc.M * pc.N;
  if (idx >= mn) return;
  float s = 0.0;
  for (uint z = 0; z < pc.K; ++z) s += p_[z * mn + idx];
  kf_gemm_store(idx / pc.N, idx % pc.N, s);
}
)glsl";

}  // namespace kforge::vulkan::shaders
