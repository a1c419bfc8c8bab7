// kforge/vulkan/shaders/conv2d.hpp — the two passes around the gemm of
// conv2d's explicit-GEMM path (vulkan/conv2d.hpp): im2col, which gathers the
// input patches of a chunk of images into the gemm's B, and the gather of the
// gemm's f32 partial sums into y with bias and activation.
//
// im2col (one group): B [C·R·S][NP] row-major, column n = image·P·Q + p·Q + q
// of the chunk (images img0 .. img0+images-1), row k = (c·R + r)·S + s;
// B[k][n] = x[img][c][p·sh − ph + r·dh][q·sw − pw + s·dw], 0 outside the
// image and in the padding columns n ≥ images·P·Q (NP rounds the columns up
// so the gemm reads B as vectors). Tiling: an invocation owns one column
// (its image and output pixel decoded once) and KR consecutive rows (grid y:
// row blocks; grid x: column blocks of WG), stepping (c, r, s) without
// division; consecutive invocations write consecutive columns. Elements are
// moved as their bits (a raw copy of T), so 16-bit data is exact.
//
// gather: y[img0 + i][m][pq] = act(Σ_z P[z][m][n] + bias[m]) for column n =
// i·P·Q + pq < images·P·Q, summing the splits z in order 0, 1, … (the result
// does not depend on which gemm workgroup finished first). Grid x: column
// blocks; y: filters m (row M·PQ of y is contiguous, so stores coalesce).
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* conv2d_im2col = R"glsl(
layout(constant_id = 1) const uint KR = 8;  // rows of B per invocation
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufB { T b_[]; };
layout(push_constant) uniform Push {
  uint C, H, W, P, Q, R, S, NP;  // NP: columns of B
  uint img0, cols, rows;         // first image; images·P·Q; C·R·S
  int sh, sw, ph, pw, dh, dw;
} pc;

void main() {
  const uint n = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (n >= pc.NP) return;
  const uint k0 = gl_WorkGroupID.y * KR, k1 = min(pc.rows, k0 + KR);
  if (n >= pc.cols) {
    for (uint k = k0; k < k1; ++k) b_[k * pc.NP + n] = kf_st(0.0);
    return;
  }
  const uint pq = pc.P * pc.Q, i = n / pq, p = (n % pq) / pc.Q, q = n % pc.Q;
  const int h0 = int(p) * pc.sh - pc.ph, w0 = int(q) * pc.sw - pc.pw;
  const uint rs = pc.R * pc.S;
  uint c = k0 / rs, r = (k0 % rs) / pc.S, s = k0 % pc.S;
  const uint img = (pc.img0 + i) * pc.C;
  for (uint k = k0; k < k1; ++k) {
    const int ih = h0 + int(r) * pc.dh, iw = w0 + int(s) * pc.dw;
    if (ih >= 0 && iw >= 0 && ih < int(pc.H) && iw < int(pc.W))
      b_[k * pc.NP + n] = x_[((img + c) * pc.H + uint(ih)) * pc.W + uint(iw)];
    else
      b_[k * pc.NP + n] = kf_st(0.0);
    if (++s == pc.S) {
      s = 0u;
      if (++r == pc.R) { r = 0u; ++c; }
    }
  }
}
)glsl";

inline constexpr const char* conv2d_gather = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufP { float p_[]; };  // [splits][M][NP]
layout(std430, set = 0, binding = 1) readonly buffer BufBias { T bias_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push {
  uint M, NP, PQ, cols, splits, img0;  // filters; columns of P; P·Q; images·P·Q; K splits; first image
  float slope;
} pc;

void main() {
  const uint n = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x, m = gl_WorkGroupID.y;
  if (n >= pc.cols) return;
  const uint mn = pc.M * pc.NP;
  float v = 0.0;
  for (uint z = 0; z < pc.splits; ++z) v += p_[z * mn + m * pc.NP + n];
#if KF_BIAS
  v += kf_ld(bias_[m]);
#endif
  const uint i = n / pc.PQ;
  y_[((pc.img0 + i) * pc.M + m) * pc.PQ + n % pc.PQ] = kf_st(kf_apply(KF_ACT, v, pc.slope));
}
)glsl";

}  // namespace kforge::vulkan::shaders
