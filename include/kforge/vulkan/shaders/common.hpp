// kforge/vulkan/shaders/common.hpp — the GLSL prelude every kforge kernel
// starts with: the storage type T and its conversions (all arithmetic is
// f32), the activations of kforge/ops/functions.hpp written the same way,
// NaN-propagating max/min, and workgroup reductions built from subgroup
// operations plus one shared slot per subgroup.
//
// Defines set by the host: KF_F16 and KF_BF16 (0/1, at most one of them 1;
// either defaults to 0), KF_COOPMAT (defined: the NV cooperative-matrix
// extensions), and per kernel its own.
//
// Storage types. T is one element of a tensor buffer, T4 four of them:
//   f32   (both 0)    T float       T4 vec4
//   f16   (KF_F16)    T float16_t   T4 f16vec4   (GL_EXT_shader_16bit_storage)
//   bf16  (KF_BF16)   T uint16_t    T4 u16vec4   (GL_EXT_shader_16bit_storage;
//                     the bits of a bfloat16: glslang 12 has no bf16 type)
// Every kernel reads a T buffer element only through these, and does its
// arithmetic in f32 (a new kernel must too: float(x) of a bf16 element is
// its integer value, not the number it holds):
//   kf_ld(x)    float from one T         kf_ld4(x)   vec4 from one T4
//   kf_st(v)    T from a float           kf_st4(v)   T4 from a vec4
//   kf_unpack2(w)  vec2 from a uint holding two 16-bit elements (f16, bf16
//                  only: kernels that load 8 elements as one uvec4)
// bf16 -> f32 is exact (the bits shifted up); f32 -> bf16 rounds to nearest
// even and turns a NaN into the quiet NaN of its sign, exactly as kforge's
// host bfloat16 (Eigen's float_to_bfloat16_rtne) does. A raw copy of T
// (y_[i] = x_[i]) moves the bits unchanged. For f32 and f16 the helpers are
// the plain conversions float(x) / T(v) (macros), so those kernels compile
// to the same SPIR-V as when they were written with the conversions.
// They are macros because 16-bit storage alone allows 16-bit values only in
// buffers and in conversions, not as function parameters.
#pragma once

namespace kforge::vulkan::shaders {

inline constexpr const char* common = R"glsl(
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_control_flow_attributes : require
#if defined(KF_COOPMAT)
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifndef KF_F16
#define KF_F16 0
#endif
#ifndef KF_BF16
#define KF_BF16 0
#endif
#if KF_F16 && KF_BF16
#error "kforge: KF_F16 and KF_BF16 exclude each other"
#endif
#if KF_F16 || KF_BF16
#extension GL_EXT_shader_16bit_storage : require
#endif
#if KF_F16
#define T float16_t
#define T4 f16vec4
#elif KF_BF16
#define T uint16_t
#define T4 u16vec4
#else
#define T float
#define T4 vec4
#endif

layout(local_size_x_id = 0) in;

// Storage conversions (see the header of shaders/common.hpp in kforge).
#if KF_BF16
// f32 -> bf16 bits: round to nearest even; NaN -> 0x7fc0 / 0xffc0 (its sign).
uint kf_bf16_bits(float v) {
  uint u = floatBitsToUint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) & 0x8000u) | 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
uvec4 kf_bf16_bits4(vec4 v) {
  uvec4 u = floatBitsToUint(v);
  bvec4 nan = greaterThan(u & 0x7fffffffu, uvec4(0x7f800000u));
  return mix((u + 0x7fffu + ((u >> 16) & 1u)) >> 16, ((u >> 16) & 0x8000u) | 0x7fc0u, nan);
}
#define kf_ld(x) uintBitsToFloat(uint(x) << 16)
#define kf_ld4(x) uintBitsToFloat(uvec4(x) << 16)
#define kf_st(v) uint16_t(kf_bf16_bits(v))
#define kf_st4(v) u16vec4(kf_bf16_bits4(v))
#define kf_unpack2(w) uintBitsToFloat(uvec2((w) << 16, (w) & 0xffff0000u))
#else
#define kf_ld(x) float(x)
#define kf_ld4(x) vec4(x)
#define kf_st(v) T(v)
#define kf_st4(v) T4(v)
#if KF_F16
#define kf_unpack2(w) unpackHalf2x16(w)
#endif
#endif

const float KF_INF = 1.0 / 0.0;
const float KF_NAN = 0.0 / 0.0;

// Flat workgroup index over a 2-D grid (x is capped at 65535 groups).
uint kf_group_id() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Output tile (row, col) of a gemm workgroup. group_m == 0: row-major over the
// grid. group_m > 0: grouped order (column-major inside bands of group_m tile
// rows), so the workgroups in flight share A rows and B columns in L2.
uvec2 kf_tile_of_group(uint group_m) {
  uint nx = gl_NumWorkGroups.x, ny = gl_NumWorkGroups.y;
  uint id = gl_WorkGroupID.y * nx + gl_WorkGroupID.x;
  if (group_m == 0u) return uvec2(gl_WorkGroupID.y, gl_WorkGroupID.x);
  uint width = group_m * nx, band = id / width, first = band * group_m;
  uint rows = min(ny - first, group_m), r = id % width;
  return uvec2(first + r % rows, r / rows);
}

// tanh as in Cephes tanhf: a polynomial near 0 (no cancellation), and
// 1 - 2/(exp(2|x|)+1) elsewhere (finite for any |x|, NaN passes through).
float kf_tanh(float x) {
  float a = abs(x);
  if (a < 0.625) {
    float z = x * x;
    return ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
            3.33332819422e-1) * z * x + x;
  }
  float r = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
  return x < 0.0 ? -r : r;
}
// erfc(|x|) with fractional error < 1.2e-7 (Numerical Recipes' Chebyshev fit);
// erf(x) is then rounded to f32 like std::erf before 1 + erf(x) is formed.
float kf_erf(float x) {
  float z = abs(x);
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  float e = 1.0 - r;
  return x < 0.0 ? -e : e;
}
float kf_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
float kf_nan_max(float a, float b) { return (isnan(a) || isnan(b)) ? KF_NAN : (a > b ? a : b); }
float kf_nan_min(float a, float b) { return (isnan(a) || isnan(b)) ? KF_NAN : (a < b ? a : b); }

// Function codes: kforge::fn's enumerator values.
float kf_apply(int f, float x, float slope) {
  if (f == 0) return x;
  // relu decides on the bits: NVIDIA's compiler turns x < 0 ? 0 : x into
  // max(x, 0) (NaN -> 0, -0 -> +0) and compares NaN < 0 as true even inside a
  // bit mask (all seen on the H100); relu keeps NaN and -0 like the host.
  if (f == 1) {
    uint u = floatBitsToUint(x), a = u & 0x7fffffffu;
    return uintBitsToFloat((u >> 31) != 0u && a != 0u && a <= 0x7f800000u ? 0u : u);
  }
  if (f == 2) return isnan(x) ? x : (x < 0.0 ? slope * x : x);
  if (f == 3) return 0.5 * x * (1.0 + kf_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  if (f == 4) return 0.5 * x * (1.0 + kf_erf(x * 0.7071067811865476));
  if (f == 5) return x * kf_sigmoid(x);                 // silu
  if (f == 6) return exp(x);
  if (f == 7) return kf_tanh(x);
  if (f == 8) return kf_sigmoid(x);
  if (f == 9) return abs(x);
  return -x;                                            // neg
}

// Workgroup-wide reductions; every invocation must call them (uniform flow).
shared float kf_red[gl_WorkGroupSize.x];
float kf_wg_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) kf_red[gl_SubgroupID] = v;
  barrier();
  float r = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) r += kf_red[i];
  barrier();
  return r;
}
// Max of values that contain no NaN (callers track NaN separately: SPIR-V's
// FMax is undefined for NaN operands).
float kf_wg_max(float v) {
  v = subgroupMax(v);
  if (subgroupElect()) kf_red[gl_SubgroupID] = v;
  barrier();
  float r = -KF_INF;
  for (uint i = 0; i < gl_NumSubgroups; ++i) r = max(r, kf_red[i]);
  barrier();
  return r;
}
float kf_wg_min(float v) { return -kf_wg_max(-v); }
bool kf_wg_any(bool b) { return kf_wg_max(subgroupAny(b) ? 1.0 : 0.0) > 0.5; }
)glsl";

}  // namespace kforge::vulkan::shaders
