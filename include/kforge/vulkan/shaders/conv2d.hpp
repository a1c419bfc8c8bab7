// kforge/vulkan/shaders/conv2d.hpp — the two passes around the gemm of
// conv2d's explicit-GEMM path (vulkan/conv2d.hpp): im2col, which gathers the
// input patches of a chunk of images into the gemm's B, and the gather of the
// gemm's f32 partial sums into y with bias and activation.
//
// im2col (one group): B [C·R·S][NP] row-major, column n = image·P·Q + p·Q + q
// of the chunk (images img0 .. img0+images-1), row k = (c·R + r)·S + s;
// B[k][n] = x[img][c][p·sh − ph + r·dh][q·sw − pw + s·dw], 0 outside the
// image and in the padding columns n ≥ images·P·Q (NP rounds the columns up
// so the gemm reads B as vectors). Tiling: an invocation owns CW adjacent
// columns (each one's image and output pixel decoded once) and KR consecutive
// rows (grid y: row blocks; grid x: column blocks of WG·CW), its loads issued
// before its stores; consecutive invocations write consecutive columns. Where
// the host makes R and S constants (FR, FS) and KR a multiple of R·S, every
// row's tap (r, s) is a constant; else (c, r, s) is stepped without division.
// CW: 1 for f32; 4 for 16-bit types, stored as one 64-bit word (the former
// two columns per 32-bit word ran the res2 f16 b32 pass at ~2 TB/s on the
// H200; four: 8 % faster there, eight: no faster). An invocation holds CW·KR
// values (at most 128 for taps of 17-32).
// Elements pass through f32 (kf_ld, then kf_st or the packing),
// which is exact for every finite and infinite f16 and bf16 value.
//
// gather: y[img0 + i][m][pq] = act(Σ_z P[z][m][n] + bias[m]) for column n =
// i·P·Q + pq < images·P·Q, summing the splits z in order 0, 1, … (the result
// does not depend on which gemm workgroup finished first). P is the gemm's
// f32 partial sums, or (KF_PART_T) its unsplit output in T: an unsplit
// f16 gemm on the tensor-core kernel stores T (half the bytes), and y is
// rounded twice (the gemm's, then after bias and activation; bf16's first
// rounding was too coarse where the bias cancels the sum: bf16 keeps f32
// sums, vulkan/conv2d.hpp). Grid x: column
// blocks; y: filters m (row M·PQ of y is contiguous, so stores coalesce).
// KF_VEC: four columns per invocation, read and stored as vectors, where P·Q
// and the column counts are multiples of 4 (one element per invocation ran
// the res2 f16 b32 pass at ~1 TB/s on the H200: 0.024 -> 0.010 ms).
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* conv2d_im2col = R"glsl(
layout(constant_id = 1) const uint KR = 8;   // rows of B per invocation
layout(constant_id = 2) const uint FR = 0;   // R and S as constants (a multiple of R·S rows
layout(constant_id = 3) const uint FS = 0;   // per invocation), or 0: read from pc, stepped
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
#if KF_F16 || KF_BF16
const uint CW = 4;  // columns per invocation: four 16-bit elements per 64-bit store
layout(std430, set = 0, binding = 1) writeonly buffer BufB { uvec2 b_[]; };
#else
const uint CW = 1;
layout(std430, set = 0, binding = 1) writeonly buffer BufB { T b_[]; };
#endif
layout(push_constant) uniform Push {
  uint C, H, W, P, Q, R, S, NP;  // NP: columns of B (a multiple of 8)
  uint img0, cols, rows;         // first image; images·P·Q; C·R·S
  int sh, sw, ph, pw, dh, dw;
} pc;

void main() {
  const uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * CW;
  if (n0 >= pc.NP) return;
  const uint k0 = gl_WorkGroupID.y * KR, rs = pc.R * pc.S, pq = pc.P * pc.Q;
  // All loads first (unrolled, independent), then the stores: a loop that
  // stored each element before loading the next kept one load in flight
  // per invocation.
  float v[CW][KR];
  [[unroll]] for (uint e = 0; e < CW; ++e) {
    const uint n = n0 + e, i = n / pq, p = (n % pq) / pc.Q, q = n % pc.Q;
    const int h0 = int(p) * pc.sh - pc.ph, w0 = int(q) * pc.sw - pc.pw;
    const uint img = (pc.img0 + i) * pc.C;
    if (FR > 0u) {
      // Whole channels per invocation: tap (r, s) of row j is a constant.
      const uint c0 = k0 / (FR * FS);
      [[unroll]] for (uint j = 0; j < KR; ++j) {
        const uint c = c0 + j / (FR * FS), r = (j % (FR * FS)) / FS, s = j % FS;
        const int ih = h0 + int(r) * pc.dh, iw = w0 + int(s) * pc.dw;
        v[e][j] = 0.0;
        if (n < pc.cols && k0 + j < pc.rows && ih >= 0 && iw >= 0 && ih < int(pc.H) && iw < int(pc.W))
          v[e][j] = kf_ld(x_[((img + c) * pc.H + uint(ih)) * pc.W + uint(iw)]);
      }
    } else {
      uint c = k0 / rs, r = (k0 % rs) / pc.S, s = k0 % pc.S;
      [[unroll]] for (uint j = 0; j < KR; ++j) {
        const int ih = h0 + int(r) * pc.dh, iw = w0 + int(s) * pc.dw;
        v[e][j] = 0.0;
        if (n < pc.cols && k0 + j < pc.rows && ih >= 0 && iw >= 0 && ih < int(pc.H) && iw < int(pc.W))
          v[e][j] = kf_ld(x_[((img + c) * pc.H + uint(ih)) * pc.W + uint(iw)]);
        if (++s == pc.S) {
          s = 0u;
          if (++r == pc.R) { r = 0u; ++c; }
        }
      }
    }
  }
  [[unroll]] for (uint j = 0; j < KR; ++j) {
    if (k0 + j >= pc.rows) break;
#if KF_F16
    b_[((k0 + j) * pc.NP + n0) / 4u] = uvec2(packHalf2x16(vec2(v[0][j], v[1][j])), packHalf2x16(vec2(v[2][j], v[3][j])));
#elif KF_BF16
    b_[((k0 + j) * pc.NP + n0) / 4u] = uvec2(kf_bf16_bits(v[0][j]) | (kf_bf16_bits(v[1][j]) << 16),
                                             kf_bf16_bits(v[2][j]) | (kf_bf16_bits(v[3][j]) << 16));
#else
    b_[(k0 + j) * pc.NP + n0] = kf_st(v[0][j]);
#endif
  }
}
)glsl";

inline constexpr const char* conv2d_gather = R"glsl(
// KF_VEC 1: four adjacent columns per invocation (P·Q, NP and cols multiples
// of 4, so that the four lie in one image and every index is a vector's).
#if KF_VEC
#if KF_PART_T
layout(std430, set = 0, binding = 0) readonly buffer BufP { T4 p_[]; };  // [1][M][NP], the gemm's own rounding
#define KF_LDP(x) kf_ld4(x)
#else
layout(std430, set = 0, binding = 0) readonly buffer BufP { vec4 p_[]; };  // [splits][M][NP]
#define KF_LDP(x) (x)
#endif
layout(std430, set = 0, binding = 2) writeonly buffer BufY { T4 y_[]; };
const uint VEC = 4;
#else
#if KF_PART_T
layout(std430, set = 0, binding = 0) readonly buffer BufP { T p_[]; };  // [1][M][NP], the gemm's own rounding
#define KF_LDP(x) kf_ld(x)
#else
layout(std430, set = 0, binding = 0) readonly buffer BufP { float p_[]; };  // [splits][M][NP]
#define KF_LDP(x) (x)
#endif
layout(std430, set = 0, binding = 2) writeonly buffer BufY { T y_[]; };
const uint VEC = 1;
#endif
layout(std430, set = 0, binding = 1) readonly buffer BufBias { T bias_[]; };
layout(push_constant) uniform Push {
  uint M, NP, PQ, cols, splits, img0;  // filters; columns of P; P·Q; images·P·Q; K splits; first image
  float slope;
} pc;

void main() {
  const uint n = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * VEC, m = gl_WorkGroupID.y;
  if (n >= pc.cols) return;
  const uint mn = pc.M * pc.NP;
#if KF_VEC
  vec4 v = vec4(0.0);
  for (uint z = 0; z < pc.splits; ++z) v += KF_LDP(p_[(z * mn + m * pc.NP + n) / 4u]);
#if KF_BIAS
  v += kf_ld(bias_[m]);
#endif
  [[unroll]] for (int e = 0; e < 4; ++e) v[e] = kf_apply(KF_ACT, v[e], pc.slope);
  const uint i = n / pc.PQ;
  y_[(((pc.img0 + i) * pc.M + m) * pc.PQ + n % pc.PQ) / 4u] = kf_st4(v);
#else
  float v = 0.0;
  for (uint z = 0; z < pc.splits; ++z) v += KF_LDP(p_[z * mn + m * pc.NP + n]);
#if KF_BIAS
  v += kf_ld(bias_[m]);
#endif
  const uint i = n / pc.PQ;
  y_[((pc.img0 + i) * pc.M + m) * pc.PQ + n % pc.PQ] = kf_st(kf_apply(KF_ACT, v, pc.slope));
#endif
}
)glsl";

}  // namespace kforge::vulkan::shaders
