// kforge/cpu/vmath.hpp — branch-free float functions (selects instead of
// branches, bit casts instead of ldexp), written once for a float and for a
// whole SIMD register (cpu/isa.hpp's vector types), plus loads/stores that
// convert half/bfloat16 rows.
//
// Accuracy (measured against glibc over ±[1e-6, 100], tests/cpu_ops.cpp):
// exp ≤ 2 ulp (Cephes polynomial after Cody–Waite reduction), tanh ≤ 3 ulp
// (Cephes odd polynomial below 0.625, 1 - 2/(e^{2x}+1) above), erf within
// 2e-7 absolute (the rational approximation Eigen and XLA use). Results below
// 2^-126 may be flushed to zero. NaN propagates through every function, as in
// the reference (ops/functions.hpp).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kforge/core/dtype.hpp"
#include "kforge/cpu/isa.hpp"
#include "kforge/ops/functions.hpp"

namespace kforge::cpu::detail {

/// The int32 lanes of a float type: int32 for float, the matching vector of
/// int32 for a register (cpu/isa.hpp).
template <class V>
struct int_lanes {
  using type = std::int32_t;
};
template <>
struct int_lanes<f32x8> {
  using type = i32x8;
};
template <>
struct int_lanes<f32x16> {
  using type = i32x16;
};

// Every function below is written once for V = float and V = a register:
// comparisons, ?: and arithmetic are element-wise on GCC/Clang vector types,
// and a select is what a branch-free scalar loop vectorises to anyway.

template <class V>
KFORGE_CPU_INLINE V vabs(V x) {
  using I = typename int_lanes<V>::type;
  return std::bit_cast<V>(std::bit_cast<I>(x) & 0x7fffffff);
}

/// |mag| with the sign of sgn.
template <class V>
KFORGE_CPU_INLINE V vcopysign(V mag, V sgn) {
  using I = typename int_lanes<V>::type;
  return std::bit_cast<V>((std::bit_cast<I>(mag) & 0x7fffffff) | (std::bit_cast<I>(sgn) & static_cast<std::int32_t>(0x80000000u)));
}

/// min(max(x, lo), hi), NaN kept: one max and one min on registers (the
/// x86 instructions return their second operand when either is NaN), two
/// selects on floats.
template <class V>
KFORGE_CPU_INLINE V vclamp(V x, float lo, float hi) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<V, f32x16>) return x512::min_ps(_mm512_set1_ps(hi), x512::max_ps(_mm512_set1_ps(lo), x));
#endif
#if defined(__AVX__)
  if constexpr (std::is_same_v<V, f32x8>) return _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), x));
#endif
  V y = x < lo ? lo : x;
  return y > hi ? hi : y;
}

template <class V>
KFORGE_CPU_INLINE V vexp(V x) {
  using I = typename int_lanes<V>::type;
  constexpr float hi = 88.72283f, lo = -87.33654f;
  const V xc = vclamp(x, lo, hi);
  // Round to nearest by adding and subtracting 1.5·2^23 (exact for |v| < 2^22;
  // std::floor is a libm call unless -fno-trapping-math, which blocks
  // vectorisation).
  constexpr float round_magic = 12582912.0f;
  V n = (xc * 1.44269504088896341f + round_magic) - round_magic;
  n = xc != xc ? 0.0f : n;  // NaN: any finite n, the result is NaN through p
  V r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  I ni;
  if constexpr (std::is_same_v<V, float>) ni = static_cast<std::int32_t>(n);
  else ni = __builtin_convertvector(n, I);
  V y = std::bit_cast<V>(std::bit_cast<I>(p) + (ni << 23));
  y = x < lo ? 0.0f : y;
  y = x > hi ? std::numeric_limits<float>::infinity() : y;
  return y;
}

/// exp(x) for x <= 0 or -inf, never NaN (softmax's x - max of a row whose
/// max is finite): no overflow side, no NaN lane. The same reduction and
/// polynomial as vexp; on AVX-512 the scaling by 2^n is one vscalefps, which
/// also gives exp's subnormal results below -87.3 and 0 below -103.9 as
/// std::exp does (x is first raised to -104 so that -inf gives 0, not NaN).
/// Elsewhere: vexp's integer scaling, 0 below -87.3.
template <class V>
KFORGE_CPU_INLINE V vexp_nonpositive(V x) {
  const auto poly = [](V r) {
    V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * r * r + r + 1.0f;
  };
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<V, f32x16>) {
    const V xc = x512::max_ps(_mm512_set1_ps(-104.0f), x);
    const V n = x512::roundscale_ps<_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC>(xc * 1.44269504088896341f);
    V r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    return x512::scalef_ps(poly(r), n);
  }
#endif
  using I = typename int_lanes<V>::type;
  constexpr float lo = -87.33654f;
  const V xc = vclamp(x, lo, 0.0f);
  constexpr float round_magic = 12582912.0f;
  const V n = (xc * 1.44269504088896341f + round_magic) - round_magic;
  V r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  I ni;
  if constexpr (std::is_same_v<V, float>) ni = static_cast<std::int32_t>(n);
  else ni = __builtin_convertvector(n, I);
  const V y = std::bit_cast<V>(std::bit_cast<I>(poly(r)) + (ni << 23));
  return x < lo ? 0.0f : y;
}

template <class V>
KFORGE_CPU_INLINE V vtanh(V x) {
  const V ax = vabs(x);
  const V z = x * x;
  V ps = z * -5.70498872745e-3f + 2.06390887954e-2f;
  ps = ps * z - 5.37397155531e-2f;
  ps = ps * z + 1.33314422036e-1f;
  ps = ps * z - 3.33332819422e-1f;
  const V small = x + x * z * ps;
  const V e = vexp(ax * 2.0f);
  const V big = vcopysign(1.0f - 2.0f / (e + 1.0f), x);
  return ax < 0.625f ? small : big;
}

template <class V>
KFORGE_CPU_INLINE V verf(V a) {
  const V x = vclamp(a, -4.0f, 4.0f);
  const V x2 = x * x;
  V p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * x;
  V q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return p / q;
}

template <class V>
KFORGE_CPU_INLINE V vsigmoid(V x) {
  return 1.0f / (1.0f + vexp(-x));
}

/// The element-wise function F with the formulas of ops/functions.hpp and
/// the vectorisable exp/tanh/erf above, on a float or a whole register.
template <fn F, class V>
KFORGE_CPU_INLINE V vapply(V x, [[maybe_unused]] float slope) {
  if constexpr (F == fn::identity) return x;
  else if constexpr (F == fn::relu) return x < 0.0f ? 0.0f : x;
  else if constexpr (F == fn::leaky_relu) return x < 0.0f ? slope * x : x;
  else if constexpr (F == fn::gelu_tanh) return 0.5f * x * (1.0f + vtanh(math::sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
  else if constexpr (F == fn::gelu_erf) return 0.5f * x * (1.0f + verf(x * math::inv_sqrt_2));
  else if constexpr (F == fn::silu) return x * vsigmoid(x);
  else if constexpr (F == fn::exp) return vexp(x);
  else if constexpr (F == fn::tanh) return vtanh(x);
  else if constexpr (F == fn::sigmoid) return vsigmoid(x);
  else if constexpr (F == fn::abs) return vabs(x);
  else return -x;
}

/// v[i] = F(v[i]) for i < n, a whole register at a time. (GCC does not
/// vectorise the scalar loop: the selects stay branches under its default
/// -ftrapping-math, "control flow in loop".)
template <fn F>
inline void apply_n(float* __restrict v, std::int64_t n, float slope) {
  using S = simd_native;
  constexpr int W = S::width;
  std::int64_t i = 0;
  for (; i + W <= n; i += W) S::store(v + i, vapply<F>(S::load(v + i), slope));
  for (; i < n; ++i) v[i] = vapply<F>(v[i], slope);
}

/// v[i] = f(v[i]) for the run-time activation f (a gemm/conv2d epilogue).
inline void apply_activation(fn f, float slope, float* v, std::int64_t n) {
  switch (f) {
    case fn::identity: return;
    case fn::relu: return apply_n<fn::relu>(v, n, slope);
    case fn::leaky_relu: return apply_n<fn::leaky_relu>(v, n, slope);
    case fn::gelu_tanh: return apply_n<fn::gelu_tanh>(v, n, slope);
    case fn::gelu_erf: return apply_n<fn::gelu_erf>(v, n, slope);
    case fn::silu: return apply_n<fn::silu>(v, n, slope);
    default: break;
  }
  for (std::int64_t i = 0; i < n; ++i) v[i] = math::apply<fn::identity>(v[i], slope);
}

// ---- conversions ------------------------------------------------------------

KFORGE_CPU_INLINE float to_f32(float v) { return v; }
KFORGE_CPU_INLINE float to_f32(bfloat16 v) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(std::bit_cast<std::uint16_t>(v)) << 16);
}
KFORGE_CPU_INLINE float to_f32(half v) { return static_cast<float>(v); }

template <class T>
KFORGE_CPU_INLINE T from_f32(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, bfloat16>) {
    // Round to nearest even, NaN stays a quiet NaN (Eigen's conversion).
    const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
    const std::uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint16_t b = v != v ? static_cast<std::uint16_t>((u >> 16) | 0x0040u) : static_cast<std::uint16_t>(r);
    return std::bit_cast<bfloat16>(b);
  } else return static_cast<T>(v);
}

/// max(a, b) lane by lane for operands that hold no NaN (one instruction on
/// AVX/AVX-512; which operand a NaN lane would give is not specified).
template <class V>
KFORGE_CPU_INLINE V vmax_no_nan(V a, V b) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<V, f32x16>) return x512::max_ps(a, b);
#endif
#if defined(__AVX__)
  if constexpr (std::is_same_v<V, f32x8>) return _mm256_max_ps(a, b);
#endif
  return a > b ? a : b;
}

/// The NaN-propagating max of x[0, n) (-Inf for n = 0), in two registers of
/// lanes: a lane that has seen a NaN keeps it. (row_nan_max's exact path.)
inline float row_nan_max_exact(const float* __restrict x, std::int64_t n) {
  using S = simd_native;
  using V = S::reg;
  constexpr int W = S::width;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  V m0 = S::set1(ninf), m1 = m0;
  std::int64_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {
    const V a = S::load(x + j), b = S::load(x + j + W);
    m0 = ((a > m0) | (a != a)) ? a : m0;
    m1 = ((b > m1) | (b != b)) ? b : m1;
  }
  alignas(64) float lanes[2 * W];
  S::store(lanes, m0);
  S::store(lanes + W, m1);
  float mx = ninf;
  for (int l = 0; l < 2 * W; ++l) mx = math::nan_max(mx, lanes[l]);
  for (; j < n; ++j) mx = math::nan_max(mx, x[j]);
  return mx;
}

/// Bit set where a lane of a or of b is NaN (nonzero: a NaN was seen).
#if defined(__AVX512F__)
KFORGE_CPU_INLINE unsigned nan_lanes(f32x16 a, f32x16 b) { return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
#endif
#if defined(__AVX__)
KFORGE_CPU_INLINE unsigned nan_lanes(f32x8 a, f32x8 b) {
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q)));
}
#endif
KFORGE_CPU_INLINE unsigned nan_lanes(float a, float b) { return static_cast<unsigned>((a != a) | (b != b)); }

/// The NaN-propagating max of x[0, n) (-Inf for n = 0). The vector body runs
/// four registers of plain max (no compare-and-select chain: the max pass
/// took a quarter of softmax's time in L1 on the 2-core Zen 5, now about a
/// seventh) beside an unordered compare that notes any NaN; a row where one
/// is seen is redone by the exact path. ±Inf (masked rows) needs no second
/// pass: plain max handles it. The tail runs the exact scalar step.
inline float row_nan_max(const float* __restrict x, std::int64_t n) {
  using S = simd_native;
  using V = S::reg;
  constexpr int W = S::width;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  V m0 = S::set1(ninf), m1 = m0, m2 = m0, m3 = m0;
  unsigned nan = 0;
  std::int64_t j = 0;
  for (; j + 4 * W <= n; j += 4 * W) {
    const V a = S::load(x + j), b = S::load(x + j + W), c = S::load(x + j + 2 * W), d = S::load(x + j + 3 * W);
    m0 = vmax_no_nan(m0, a);
    m1 = vmax_no_nan(m1, b);
    m2 = vmax_no_nan(m2, c);
    m3 = vmax_no_nan(m3, d);
    nan |= nan_lanes(a, b) | nan_lanes(c, d);
  }
  if (nan != 0) return row_nan_max_exact(x, n);
  alignas(64) float lanes[W];
  S::store(lanes, vmax_no_nan(vmax_no_nan(m0, m1), vmax_no_nan(m2, m3)));
  float mx = ninf;
  for (int l = 0; l < W; ++l) mx = std::max(mx, lanes[l]);
  for (; j < n; ++j) mx = math::nan_max(mx, x[j]);
  return mx;
}

/// dst[i] = float(src[i * stride]) for i < n.
template <class T>
inline void load_row(const T* __restrict src, std::int64_t stride, std::int64_t n, float* __restrict dst) {
  if (stride == 1) {
    if constexpr (std::is_same_v<T, float>) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
    } else {
      std::int64_t i = 0;
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<T, half>)
        for (; i + 16 <= n; i += 16)
          _mm512_storeu_ps(dst + i, x512::cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#endif
      for (; i < n; ++i) dst[i] = to_f32(src[i]);
    }
  } else if (stride == 0) {
    const float v = n > 0 ? to_f32(src[0]) : 0.0f;
    for (std::int64_t i = 0; i < n; ++i) dst[i] = v;
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = to_f32(src[i * stride]);
  }
}

/// dst[i * stride] = T(src[i]) for i < n.
template <class T>
inline void store_row(const float* __restrict src, std::int64_t n, T* __restrict dst, std::int64_t stride) {
  if (stride == 1) {
    if constexpr (std::is_same_v<T, float>) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
    } else {
      std::int64_t i = 0;
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<T, half>)
        for (; i + 16 <= n; i += 16)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                              x512::cvtps_ph<_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC>(_mm512_loadu_ps(src + i)));
#endif
      for (; i < n; ++i) dst[i] = from_f32<T>(src[i]);
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i * stride] = from_f32<T>(src[i]);
  }
}

}  // namespace kforge::cpu::detail
