// kforge/vulkan/shaders/gemm_common.hpp — the prelude of the gemm kernels
// that run gemm's own interface (gemm_tiled, gemm_coopmat): the operand
// bindings, the push constants, and the fused epilogue every one of them ends
// with. (The generic kernel of shaders/gemm.hpp keeps its own: it doubles as
// conv2d's implicit GEMM, and the generation module's templates quote it.)
//
// Defines set by the host: KF_VEC (1: A and B are read as vectors of type
// KF_VEC_T, which each kernel's host side names; 0: as scalars of T), KF_BIAS
// and KF_ACT (the epilogue).
//
// Epilogue: v = alpha·acc; if beta != 0, v += beta·C (beta == 0 never reads
// C); v += bias[n] (KF_BIAS); v = act(v) with KF_ACT = kforge::fn code.
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* gemm_common = R"glsl(
#if KF_VEC
layout(std430, set = 0, binding = 0) readonly buffer BufA { KF_VEC_T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { KF_VEC_T b_[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer BufA { T a_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufB { T b_[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer BufBias { T bias_[]; };
layout(std430, set = 0, binding = 3) buffer BufC { T c_[]; };
layout(push_constant) uniform Push { uint M, N, K; float alpha, beta, slope; } pc;

// C[gm, gn] from its accumulated dot product; the caller checks gm < M, gn < N.
void kf_gemm_store(uint gm, uint gn, float acc) {
  uint idx = gm * pc.N + gn;
  float v = acc * pc.alpha;
  if (pc.beta != 0.0) v += pc.beta * float(c_[idx]);
#if KF_BIAS
  v += float(bias_[gn]);
#endif
  c_[idx] = T(kf_apply(KF_ACT, v, pc.slope));
}
)glsl";

}  // namespace kforge::vulkan::shaders
