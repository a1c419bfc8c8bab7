// tests/cpu_check.hpp — helpers of the CPU backend tests (tests/cpu_*.cpp):
// operands of any layout filled deterministically, and the comparison of an
// output with the Eigen reference under an op's tolerance
// (ops/tolerance.hpp: |out - ref| <= atol·scale + rtol·|ref| + ulps·ulp(ref)).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kforge/kforge.hpp"

namespace cpu_test {

using kforge::index_t;
using kforge::shape;
using kforge::tensor_view;

enum class layout { row, col, strided };
inline const char* name(layout l) { return l == layout::row ? "row" : l == layout::col ? "col" : "strided"; }

/// An owned tensor seen through a view with the requested layout. For rank 2
/// `col` is column-major and `strided` has non-unit strides on both axes and
/// an offset (a sub-block of a larger buffer); for rank > 2 `col` reverses
/// the dimension order in memory and `strided` doubles every stride.
template <class T>
struct owned {
  std::vector<T> buf;
  tensor_view<T> v;
  tensor_view<const T> cv() const { return v; }
};

template <class T>
owned<T> make(const shape& dims, layout l) {
  owned<T> o;
  const int r = dims.rank();
  shape st = dims;
  index_t offset = 0, total = 1;
  if (l == layout::col) {
    index_t acc = 1;
    for (int i = 0; i < r; ++i) {
      st[i] = acc;
      acc *= dims[i];
    }
    total = acc;
  } else {
    const index_t mult = l == layout::strided ? 2 : 1;
    index_t acc = 1;
    for (int i = r - 1; i >= 0; --i) {
      st[i] = acc * mult;
      acc = acc * mult * dims[i] + (l == layout::strided ? 3 : 0);
    }
    offset = l == layout::strided ? 5 : 0;
    total = acc + offset;
  }
  o.buf.assign(static_cast<std::size_t>(total + 1), T(0.0f));
  o.v = tensor_view<T>(o.buf.data() + offset, dims, st);
  return o;
}

/// Fills every element of v with uniform values in [lo, hi).
template <class T>
void fill(const tensor_view<T>& v, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  kforge::eigen::for_each_offset(v.dims, v.strides, [&](index_t, index_t off) { v.data[off] = static_cast<T>(d(rng)); });
}

template <class T>
std::vector<float> values(const tensor_view<T>& v) {
  std::vector<float> out(static_cast<std::size_t>(v.numel()));
  kforge::eigen::for_each_offset(v.dims, v.strides,
                                 [&](index_t e, index_t off) { out[static_cast<std::size_t>(e)] = static_cast<float>(v.data[off]); });
  return out;
}

/// Checks out against ref element by element. scale[i] is the error scale of
/// element i (empty: 1 everywhere). Reports the first failures with context.
inline void compare(const std::vector<float>& out, const std::vector<float>& ref, const std::vector<float>& scale,
                    kforge::tolerance tol, kforge::dtype d, const std::string& what) {
  REQUIRE(out.size() == ref.size());
  int bad = 0;
  std::ostringstream msg;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = out[i], r = ref[i];
    bool ok;
    if (std::isnan(r)) ok = std::isnan(o);
    else if (std::isinf(r)) ok = o == r;
    else {
      const double s = scale.empty() ? 1.0 : scale[i];
      ok = std::fabs(o - r) <= tol.atol * s + tol.rtol * std::fabs(r) + tol.ulps * kforge::ulp_at(d, r);
    }
    if (!ok && bad++ < 5) msg << "  [" << i << "] got " << o << " want " << r << "\n";
  }
  INFO(what << ": " << bad << " of " << out.size() << " elements outside tolerance\n" << msg.str());
  CHECK(bad == 0);
}

}  // namespace cpu_test
