// kforge/ops/tolerance.hpp — how close a kernel must come to the reference.
//
// An output element passes when
//     |out - ref| <= atol * scale + rtol * |ref| + ulps * ulp_T(ref)
// where `scale` is the op's error scale for that element (for linear ops the
// reference applied to |inputs|, i.e. the sum of magnitudes that rounding
// errors are proportional to; for bounded ops the magnitude of the output's
// natural range), and ulp_T is the spacing of the storage type at ref (it
// covers the final rounding of f16/bf16 outputs). NaN must meet NaN and ±Inf
// the same infinity. Each op states its own numbers next to its descriptor.
#pragma once

#include <cmath>

#include "kforge/core/dtype.hpp"

namespace kforge {

struct tolerance {
  double atol = 0;  ///< multiple of the per-element error scale
  double rtol = 0;  ///< multiple of |ref|
  double ulps = 0;  ///< units in the last place of the storage type
};

/// Machine epsilon of the storage type.
constexpr double epsilon_of(dtype d) {
  switch (d) {
    case dtype::f32: return 1.1920928955078125e-07;
    case dtype::f16: return 9.765625e-04;
    case dtype::bf16: return 7.8125e-03;
    case dtype::f64: return 2.220446049250313e-16;
    case dtype::i32: return 0;  // integers compare exactly
  }
  return 0;
}

/// Largest finite value of storage type d (f32's for f32 and bf16).
inline double max_finite(dtype d) { return d == dtype::f16 ? 65504.0 : 3.3895313892515355e38; }

/// Spacing of storage type d at magnitude |v| (normal range; the smallest
/// normal's spacing below it).
inline double ulp_at(dtype d, double v) {
  const double a = std::fabs(v);
  const double min_normal = d == dtype::f16 ? 6.103515625e-05 : d == dtype::f64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
  const double x = a < min_normal ? min_normal : a;
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  return std::ldexp(epsilon_of(d), e - 1);
}

/// Typical relative error of an f32-accumulated dot product of length n,
/// with a safety factor: rounding errors grow like sqrt(n) for random data.
inline double dot_error(index_t n) { return 4.0 * epsilon_of(dtype::f32) * (2.0 + std::sqrt(static_cast<double>(n))); }

}  // namespace kforge
