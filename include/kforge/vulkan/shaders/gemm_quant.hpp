// kforge/vulkan/shaders/gemm_quant.hpp — Y = X · Wᵀ with W quantized
// (core/quant.hpp's formats, in vulkan/quant.hpp's device layout): the
// decode kernel (few rows of X), reading the packed bytes directly — no
// dequantized copy of W — and the prefill path's dequantizing pass
// (gemm_quant_dense, at the end). f32 arithmetic; X and Y in f32, f16 or
// bf16 storage (T).
//
// Device layout (vulkan/quant.hpp repacks a GGUF row once, at upload): W's
// rows are cut into units of 32 elements along K (fp8: K padded with zero
// codes to a multiple of 32). Binding 0 holds the units' codes, row after
// row, QV uvec4 a unit: 16 bytes of nibbles for q4_0 and mxfp4 (GGUF's
// order: byte j holds element j in its low nibble and j + 16 in its high
// one), 32 bytes for q8_0 and fp8 (element j in byte j). Binding 1 holds the
// scales as 32-bit words: one f16 per unit for q8_0 and q4_0 (unit i in half
// i % 2 of word i / 2), one E8M0 byte per unit for mxfp4 (byte i % 4 of word
// i / 4), one f32 per row for fp8.
//
// Decoding is exact and costs no table: a byte or nibble b becomes the float
// b + 2^23 by OR-ing its bits into 2^23's (8388608.0), and one subtraction
// leaves q − 8 (q4_0) or the signed byte (q8_0, stored as q + 128 by XOR
// 0x80 here); an E2M1 nibble or an FP8 byte is moved into an f16's bit
// fields (E2M1 → value·2^-14, E4M3 → value·2^-8, E5M2 → its value: E5M2 is
// f16's top byte) and unpackHalf2x16 widens a pair at once; the power of two
// is taken out before or with the unit's (or row's) scale. Their subnormal codes become
// f16 subnormals, which unpackHalf2x16 must keep (tests/vulkan_quant.cpp
// holds every code and checks them on each device it runs on).
//
// Tiling: a workgroup of WG invocations computes NR rows of W (NR adjacent
// columns of Y) for BM rows of X (grid z: the BM-row band; W is read once
// per band, so the host takes BM ≥ M where registers allow). Invocation t
// takes units t, t + WG, … of K: per unit it loads the unit's codes of all
// NR rows (NR·QV 16-byte loads in flight; neighbouring invocations read
// neighbouring units of a row, so a subgroup's loads are contiguous), their
// scales (the next unit's are loaded before this one's are used: two sets in
// registers), decodes each row's unit once (NR·32 floats in registers), then
// for each of the BM rows of X loads the unit's 32 values (8 vec4, from
// L1/L2: X is small) and accumulates NR·BM dot products. At the end
// each of them is summed over the subgroup (subgroupAdd) and then over the
// subgroups in a fixed order through shared memory: the result does not
// depend on timing. Rows of W past N are read as row N − 1 and not stored;
// rows of X past M do no work; K is bounded by the units (codes) and, when
// K % 32 != 0 (fp8 only), by guarded scalar loads of X (KF_VEC = 0).
//
// The store applies op::gemm's epilogue: y = act(alpha·v + beta·y + bias[n])
// (y read only when beta != 0; KF_BIAS, KF_ACT = kforge::fn code, as the f16
// gemm's kernels do).
//
// Defines: KF_QF (0 q8_0, 1 q4_0, 2 mxfp4, 3 fp8_e4m3, 4 fp8_e5m2), KF_VEC, KF_BIAS, KF_ACT,
// KF_QPAIRS (q8_0, q4_0: 1 decodes two codes per integer operation as the
// f16 pair 1024 + b, widened by unpackHalf2x16 — exact, fewer integer and
// more conversion instructions than 2^23 + b; which is faster is the
// device's, a knob),
// KF_QPROBE (0; the benchmark's timing probes: 1 leaves the decoding out, 2
// the loads of X — their results are wrong by design).
// Specialization constants: 0 WG, 1 NR, 2 BM, 3 MAXSG. Push constants: M, N, K, NB
// (units per row), alpha, beta, slope.
#pragma once

#include <string>

namespace kforge::vulkan::shaders {

// The codes, the scales and the decoding, shared by both kernels below.
inline constexpr const char* gemm_quant_decode = R"glsl(
const uint WG = gl_WorkGroupSize.x;
#if KF_QF == 1 || KF_QF == 2
const uint QV = 1u;  // uvec4 per unit: 32 nibbles
#else
const uint QV = 2u;  // 32 bytes
#endif

layout(std430, set = 0, binding = 0) readonly buffer BufQ { uvec4 q_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufS { uint s_[]; };
layout(push_constant) uniform Push { uint M, N, K, NB; float alpha, beta, slope; } pc;

// The four bytes of v as floats b + 2^23.
vec4 kq_bytes(uint v) {
  return uintBitsToFloat(uvec4(0x4B000000u) | ((uvec4(v) >> uvec4(0u, 8u, 16u, 24u)) & 255u));
}
// Bytes 0 and 2 of v (low nibble: E2M1; whole byte: FP8) in an f16 pair's bit fields.
uint e2m1_pair(uint v) { return ((v & 0x00080008u) << 12) | ((v & 0x00070007u) << 9); }
uint e4m3_pair(uint v) { return ((v & 0x007F007Fu) << 7) | ((v & 0x00800080u) << 8); }
uint e5m2_pair(uint v) { return (v & 0x00FF00FFu) << 8; }
// Bytes 0 and 2 of v (low nibbles / whole bytes) as the f16s 1024 + b (exact up to 2047).
uint kq_f16_nibbles(uint v) { return (v & 0x000F000Fu) | 0x64006400u; }
uint kq_f16_bytes(uint v) { return (v & 0x00FF00FFu) | 0x64006400u; }

// Elements 4i .. 4i+3 of word w (bytes 0..3 in order) through pair(): bytes 0, 2 then 1, 3.
#define KQ_PAIRS(pair, w) vec4(unpackHalf2x16(pair(w)), unpackHalf2x16(pair((w) >> 8))).xzyw

// One unit's 32 values (before its scale): w[j] holds elements 4j .. 4j + 3.
void unit_decode(uvec4 q0, uvec4 q1, out vec4 w[8]) {
#if KF_QPROBE == 1
  // Timing probe: the codes' bits taken as floats, no decoding (wrong by design).
  [[unroll]] for (uint j = 0; j < 4; ++j) w[j] = uintBitsToFloat(q0), w[4 + j] = uintBitsToFloat(q1);
#elif KF_QF == 0 && KF_QPAIRS
  // q8_0 through f16 pairs: bytes 0, 2 (then 1, 3) of q + 128 as the f16s 1024 + b, less 1152.
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    w[j] = KQ_PAIRS(kq_f16_bytes, q0[j] ^ 0x80808080u) - 1152.0;
    w[4 + j] = KQ_PAIRS(kq_f16_bytes, q1[j] ^ 0x80808080u) - 1152.0;
  }
#elif KF_QF == 0
  // q8_0: q + 128 by XOR, b + 2^23 + ... - (2^23 + 128) = q.
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    w[j] = kq_bytes(q0[j] ^ 0x80808080u) - 8388736.0;
    w[4 + j] = kq_bytes(q1[j] ^ 0x80808080u) - 8388736.0;
  }
#elif KF_QF == 1 && KF_QPAIRS
  // q4_0 through f16 pairs: two nibbles a mask (the f16s 1024 + q), less 1032.
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    w[j] = KQ_PAIRS(kq_f16_nibbles, q0[j]) - 1032.0;
    w[4 + j] = KQ_PAIRS(kq_f16_nibbles, q0[j] >> 4) - 1032.0;
  }
#elif KF_QF == 1
  // q4_0: low nibbles are elements 4j.., high nibbles 16 + 4j..; q - 8.
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    w[j] = kq_bytes(q0[j] & 0x0F0F0F0Fu) - 8388616.0;
    w[4 + j] = kq_bytes((q0[j] >> 4) & 0x0F0F0F0Fu) - 8388616.0;
  }
#elif KF_QF == 2
  // E2M1 as value·2^-14 (KQ_POST takes the 2^-14 out).
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    w[j] = KQ_PAIRS(e2m1_pair, q0[j]);
    w[4 + j] = KQ_PAIRS(e2m1_pair, q0[j] >> 4);
  }
#elif KF_QF == 3
  [[unroll]] for (uint j = 0; j < 4; ++j) w[j] = KQ_PAIRS(e4m3_pair, q0[j]), w[4 + j] = KQ_PAIRS(e4m3_pair, q1[j]);
#else
  [[unroll]] for (uint j = 0; j < 4; ++j) w[j] = KQ_PAIRS(e5m2_pair, q0[j]), w[4 + j] = KQ_PAIRS(e5m2_pair, q1[j]);
#endif
}

// What a unit's raw dot product is multiplied by before its scale: mxfp4's
// decoded fields are value·2^-14, taken out before the scale (2^(e - 127) may
// be 2^127, so the two are not folded into one float).
#if KF_QF == 2 && KF_QPROBE != 1
const float KQ_POST = 16384.0;
#else
const float KQ_POST = 1.0;
#endif

// The scale of unit u of row n (fp8: 1; its row scale is applied at the end).
float unit_scale(uint n, uint u) {
  uint i = n * pc.NB + u;
#if KF_QF <= 1
  return unpackHalf2x16(s_[i >> 1])[i & 1u];
#elif KF_QF == 2
  // 2^(e - 127) (e = 0: 2^-127, a subnormal).
  uint e = (s_[i >> 2] >> (8u * (i & 3u))) & 255u;
  return e == 0u ? uintBitsToFloat(0x00400000u) : uintBitsToFloat(e << 23);
#else
  return 1.0;
#endif
}

// Unit u of row n as its 32 values (the dequantizing pass, the embedding):
// (field · post) · scale — post a power of two (mxfp4 2^14, E4M3 2^8), so
// the one rounding is the product with the scale, as core's dequantize_row has it.
void unit_values(uint n, uint u, out vec4 w[8]) {
  unit_decode(q_[(n * pc.NB + u) * QV], q_[(n * pc.NB + u) * QV + QV - 1u], w);
#if KF_QF == 3
  const float post = 256.0, s = uintBitsToFloat(s_[n]);  // E4M3 fields are value·2^-8
#elif KF_QF == 4
  const float post = 1.0, s = uintBitsToFloat(s_[n]);
#else
  const float post = KQ_POST, s = unit_scale(n, u);
#endif
  [[unroll]] for (uint j = 0; j < 8; ++j) w[j] = (w[j] * post) * s;
}

)glsl";

/// The decode kernel (the header comment): gemm_quant_decode + this.
inline constexpr const char* gemm_quant_rows = R"glsl(
layout(constant_id = 1) const uint NR = 4;
layout(constant_id = 2) const uint BM = 1;
layout(constant_id = 3) const uint MAXSG = 4;  // subgroups a workgroup can have (WG / the smallest subgroup size)
#if KF_VEC && (KF_F16 || KF_BF16)
layout(std430, set = 0, binding = 2) readonly buffer BufX { uvec4 x_[]; };  // 8 elements each
#elif KF_VEC
layout(std430, set = 0, binding = 2) readonly buffer BufX { vec4 x_[]; };
#else
layout(std430, set = 0, binding = 2) readonly buffer BufX { T x_[]; };
#endif
layout(std430, set = 0, binding = 3) buffer BufY { T y_[]; };  // read too when beta != 0
layout(std430, set = 0, binding = 4) readonly buffer BufB { T b_[]; };  // the bias (KF_BIAS)

shared float qg_red[NR * BM * MAXSG];  // [dot product][subgroup]

// X[m, 32u .. 32u + 31] as 8 vec4 (zero past K).
void load_x(uint m, uint u, inout vec4 xv[8]) {
#if KF_VEC && (KF_F16 || KF_BF16)
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    uvec4 w = x_[(m * pc.K + 32u * u) / 8u + j];
    xv[2 * j] = vec4(kf_unpack2(w.x), kf_unpack2(w.y));
    xv[2 * j + 1] = vec4(kf_unpack2(w.z), kf_unpack2(w.w));
  }
#elif KF_VEC
  [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = x_[(m * pc.K + 32u * u) / 4u + j];
#else
  [[unroll]] for (uint j = 0; j < 8; ++j)
    [[unroll]] for (uint e = 0; e < 4; ++e) {
      uint k = 32u * u + 4u * j + e;
      xv[j][e] = k < pc.K ? kf_ld(x_[m * pc.K + k]) : 0.0;
    }
#endif
}

// Unit u's codes and scales of the NR rows from n0 into qw, sc (rows past N
// read as row N - 1). A macro: glslang rejects some calls with arrays sized by
// specialization constants as arguments.
#define KQ_LOAD_W(n0, u, qw, sc)                                                       \
  [[unroll]] for (uint r = 0; r < NR; ++r) {                                         \
    const uint n = min((n0) + r, pc.N - 1u);                                         \
    [[unroll]] for (uint v = 0; v < QV; ++v) qw[r * QV + v] = q_[(n * pc.NB + (u)) * QV + v]; \
    sc[r] = unit_scale(n, (u));                                                      \
  }

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint n0 = kf_group_id() * NR, m0 = gl_WorkGroupID.z * BM;
  if (n0 >= pc.N) return;  // the 2-D grid's spare workgroups (uniform)
  float acc[NR * BM];
  [[unroll]] for (uint i = 0; i < NR * BM; ++i) acc[i] = 0.0;

  // Software pipelined: the next unit's codes are in flight while this one's are used.
  uvec4 qw[NR * QV];
  float sc[NR];
  if (t < pc.NB) KQ_LOAD_W(n0, t, qw, sc);
  for (uint u = t; u < pc.NB; u += WG) {
    uvec4 cw[NR * QV];
    float cs[NR];
    [[unroll]] for (uint i = 0; i < NR * QV; ++i) cw[i] = qw[i];
    [[unroll]] for (uint r = 0; r < NR; ++r) cs[r] = sc[r];
    if (u + WG < pc.NB) KQ_LOAD_W(n0, u + WG, qw, sc);
    // Each row's unit decoded once, then used by every row of X.
    vec4 wd[NR * 8];
    [[unroll]] for (uint r = 0; r < NR; ++r) {
      vec4 w8[8];
      unit_decode(cw[r * QV], cw[r * QV + QV - 1u], w8);
      [[unroll]] for (uint j = 0; j < 8; ++j) wd[r * 8 + j] = w8[j];
    }
    [[unroll]] for (uint m = 0; m < BM; ++m) {
      if (m0 + m >= pc.M) break;  // uniform
      vec4 xv[8];
#if KF_QPROBE == 2
      [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = vec4(float(m + j));
#else
      load_x(m0 + m, u, xv);
#endif
      [[unroll]] for (uint r = 0; r < NR; ++r) {
        float d = 0.0;
        [[unroll]] for (uint j = 0; j < 8; ++j) d += dot(wd[r * 8 + j], xv[j]);
        acc[r * BM + m] = fma(cs[r], d * KQ_POST, acc[r * BM + m]);
      }
    }
  }

  [[unroll]] for (uint i = 0; i < NR * BM; ++i) {
    float v = subgroupAdd(acc[i]);
    if (subgroupElect()) qg_red[i * MAXSG + gl_SubgroupID] = v;
  }
  barrier();
  for (uint i = t; i < NR * BM; i += WG) {
    const uint r = i / BM, m = i - r * BM, n = n0 + r;
    if (n >= pc.N || m0 + m >= pc.M) continue;
    float v = 0.0;
    for (uint g = 0; g < gl_NumSubgroups; ++g) v += qg_red[i * MAXSG + g];
#if KF_QF == 3
    v = v * 256.0 * uintBitsToFloat(s_[n]);
#elif KF_QF == 4
    v = v * uintBitsToFloat(s_[n]);
#endif
    // op::gemm's epilogue: act(alpha·v + beta·Y + bias[n]).
    const uint idx = (m0 + m) * pc.N + n;
    v *= pc.alpha;
    if (pc.beta != 0.0) v += pc.beta * kf_ld(y_[idx]);
#if KF_BIAS
    v += kf_ld(b_[n]);
#endif
    y_[idx] = kf_st(kf_apply(KF_ACT, v, pc.slope));
  }
}
)glsl";

/// The prefill path's first pass: B [K, N] row-major in T with B[k][n] =
/// W[n][k] as the format defines it (the code's value times its scale in
/// f32, as core/quant.hpp's dequantize_row computes it), then rounded once to
/// T; the f16/bf16 gemm's tensor-core kernels take it from there
/// (vulkan/quant.hpp, record_gemm_quantized). Invocation x of workgroup
/// (gx, u) decodes unit u of row gx·WG + x: neighbouring invocations write
/// neighbouring columns of B (the 32 stores of a unit each contiguous across
/// the subgroup) and read the same unit of neighbouring rows.
inline constexpr const char* gemm_quant_dense = R"glsl(
layout(std430, set = 0, binding = 2) writeonly buffer BufD { T d_[]; };

void main() {
  const uint n = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x, u = gl_WorkGroupID.y;
  if (n >= pc.N) return;
  vec4 w[8];
  unit_values(n, u, w);
  [[unroll]] for (uint j = 0; j < 8; ++j)
    [[unroll]] for (uint e = 0; e < 4; ++e) {
      const uint k = 32u * u + 4u * j + e;
      if (k < pc.K) d_[k * pc.N + n] = kf_st(w[j][e]);
    }
}
)glsl";

/// op::embedding from a quantized table (vulkan/embedding.hpp): out[i, :] =
/// the row ids[i] of W dequantized (the value times its scale in f32, as the
/// dequantizing pass above), rounded once to T; an id outside [0, V) writes
/// zeros (embedding's rule: the host reports it). Invocation g = i·NB + u of
/// a 2-D grid decodes unit u of position i. Push: M = positions, N = V, K = D.
inline constexpr const char* gemm_quant_embedding = R"glsl(
layout(std430, set = 0, binding = 2) readonly buffer BufIds { int ids_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufOut { T out_[]; };

void main() {
  const uint g = kf_group_id() * WG + gl_LocalInvocationID.x;
  if (g >= pc.M * pc.NB) return;
  const uint i = g / pc.NB, u = g - i * pc.NB;
  const int id = ids_[i];
  const bool ok = id >= 0 && uint(id) < pc.N;
  const uint n = ok ? uint(id) : 0u;
  vec4 w[8];
  unit_values(n, u, w);
  [[unroll]] for (uint j = 0; j < 8; ++j)
    [[unroll]] for (uint e = 0; e < 4; ++e) {
      const uint k = 32u * u + 4u * j + e;
      if (k < pc.K) out_[i * pc.K + k] = kf_st(ok ? w[j][e] : 0.0);
    }
}
)glsl";

/// The three kernels' sources, built once (each recorded dispatch names its source).
inline const std::string& gemm_quant() {
  static const std::string s = std::string(gemm_quant_decode) + gemm_quant_rows;
  return s;
}
inline const std::string& gemm_quant_to_dense() {
  static const std::string s = std::string(gemm_quant_decode) + gemm_quant_dense;
  return s;
}
inline const std::string& quant_embedding() {
  static const std::string s = std::string(gemm_quant_decode) + gemm_quant_embedding;
  return s;
}

}  // namespace kforge::vulkan::shaders
