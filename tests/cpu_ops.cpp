// tests/cpu_ops.cpp — policy::blocked and policy::threaded element-wise,
// reduction, softmax and norm ops against the Eigen reference: odd shapes,
// every dtype, contiguous / reversed-order / strided operands, broadcasting,
// NaN and infinities.
#include "special_values.hpp"
#include "cpu_check.hpp"

#include <limits>

namespace {

using namespace cpu_test;
using kforge::bfloat16;
using kforge::fn;
using kforge::binop;
using kforge::reduce_fn;
using kforge::half;
namespace policy = kforge::policy;
namespace op = kforge::op;

using kft::nan_f;
using kft::inf_f;

template <class T>
std::string tag(const char* opname, const shape& s, layout l) {
  return std::string(opname) + "<" + std::string(kforge::to_string(kforge::dtype_of<T>())) + "> " + s.str() + " " + name(l);
}

template <class P, class T, fn F>
void check_unary(const shape& s, layout lx, layout ly) {
  auto x = make<T>(s, lx);
  auto y = make<T>(s, ly);
  auto r = make<T>(s, layout::row);
  fill(x.v, 7, -6.0f, 6.0f);
  if (x.v.numel() > 5) {  // special values at fixed positions of the buffer
    x.v.data[0] = static_cast<T>(nan_f);
    x.v.data[x.v.strides.back()] = static_cast<T>(inf_f);
    x.v.data[2 * x.v.strides.back()] = static_cast<T>(-inf_f);
    x.v.data[3 * x.v.strides.back()] = static_cast<T>(0.0f);
  }
  op::unary<T, F> o;
  o.slope = 0.2f;
  kforge::run<P>(o, x.cv(), y.v);
  kforge::run<policy::eigen>(o, x.cv(), r.v);
  compare(values(y.v), values(r.v), {}, kforge::elementwise_tolerance(kforge::dtype_of<T>()), kforge::dtype_of<T>(),
          std::string(P::name()) + " " + tag<T>(o.name.data(), s, lx));
}

template <class P, class T>
void all_unary(const shape& s, layout lx, layout ly) {
  check_unary<P, T, fn::relu>(s, lx, ly);
  check_unary<P, T, fn::leaky_relu>(s, lx, ly);
  check_unary<P, T, fn::gelu_tanh>(s, lx, ly);
  check_unary<P, T, fn::gelu_erf>(s, lx, ly);
  check_unary<P, T, fn::silu>(s, lx, ly);
  check_unary<P, T, fn::exp>(s, lx, ly);
  check_unary<P, T, fn::tanh>(s, lx, ly);
  check_unary<P, T, fn::sigmoid>(s, lx, ly);
  check_unary<P, T, fn::abs>(s, lx, ly);
  check_unary<P, T, fn::neg>(s, lx, ly);
}

template <class P, class T, binop F>
void check_binary(const shape& sa, const shape& sb, layout la, layout lb) {
  auto a = make<T>(sa, la);
  auto b = make<T>(sb, lb);
  fill(a.v, 11, -2.0f, 2.0f);
  fill(b.v, 12, -2.0f, 2.0f);
  a.v.data[0] = static_cast<T>(nan_f);
  b.v.data[0] = static_cast<T>(0.0f);
  const shape sc = kforge::broadcast_shape("test", sa, sb);
  auto c = make<T>(sc, layout::strided);
  auto r = make<T>(sc, layout::row);
  kforge::run<P>(op::binary<T, F>{}, a.cv(), b.cv(), c.v);
  kforge::run<policy::eigen>(op::binary<T, F>{}, a.cv(), b.cv(), r.v);
  compare(values(c.v), values(r.v), {}, kforge::elementwise_tolerance(kforge::dtype_of<T>()), kforge::dtype_of<T>(),
          std::string(P::name()) + " " + tag<T>(kforge::to_string(F).data(), sa, la) + " with " + sb.str() + " " + name(lb));
}

template <class P, class T>
void all_binary(const shape& sa, const shape& sb, layout la, layout lb) {
  check_binary<P, T, binop::add>(sa, sb, la, lb);
  check_binary<P, T, binop::sub>(sa, sb, la, lb);
  check_binary<P, T, binop::mul>(sa, sb, la, lb);
  check_binary<P, T, binop::div>(sa, sb, la, lb);
  check_binary<P, T, binop::max>(sa, sb, la, lb);
  check_binary<P, T, binop::min>(sa, sb, la, lb);
}

template <class P, class T, reduce_fn F>
void check_reduce(const shape& s, int axis, layout lx, bool keepdim, bool with_nan) {
  auto x = make<T>(s, lx);
  fill(x.v, 21, -1.0f, 1.0f);
  if (with_nan) x.v.data[x.v.strides[0]] = static_cast<T>(nan_f);
  const int ax = axis < 0 ? axis + s.rank() : axis;
  shape ys;
  for (int i = 0; i < s.rank(); ++i)
    if (i != ax || keepdim) ys.push_back(i == ax ? 1 : s[i]);
  auto y = make<T>(ys, layout::strided);
  auto r = make<T>(ys, layout::row);
  op::reduce<T, F> o;
  o.axis = axis;
  kforge::run<P>(o, x.cv(), y.v);
  kforge::run<policy::eigen>(o, x.cv(), r.v);
  // Error scale: the reduction of |x| (sum of magnitudes; /n for mean).
  auto ax_ = make<T>(s, layout::row);
  auto sv = make<T>(ys, layout::row);
  {
    const auto xv = values(x.v);
    for (std::size_t i = 0; i < xv.size(); ++i) ax_.buf[i] = static_cast<T>(std::fabs(xv[i]));
    op::reduce<T, F == reduce_fn::mean ? reduce_fn::mean : reduce_fn::sum> so;
    so.axis = axis;
    kforge::run<policy::eigen>(so, ax_.cv(), sv.v);
  }
  compare(values(y.v), values(r.v), values(sv.v), kforge::reduce_tolerance(kforge::dtype_of<T>(), s[ax]),
          kforge::dtype_of<T>(),
          std::string(P::name()) + " " + tag<T>(o.name.data(), s, lx) + " axis " + std::to_string(axis) +
              (keepdim ? " keepdim" : ""));
}

template <class P, class T>
void all_reduce(const shape& s, int axis, layout lx, bool keepdim) {
  check_reduce<P, T, reduce_fn::sum>(s, axis, lx, keepdim, false);
  check_reduce<P, T, reduce_fn::mean>(s, axis, lx, keepdim, false);
  check_reduce<P, T, reduce_fn::max>(s, axis, lx, keepdim, false);
  check_reduce<P, T, reduce_fn::min>(s, axis, lx, keepdim, false);
  check_reduce<P, T, reduce_fn::max>(s, axis, lx, keepdim, true);
  check_reduce<P, T, reduce_fn::min>(s, axis, lx, keepdim, true);
}

enum class row_op { softmax, layer_norm, rms_norm };

template <class P, class T>
void check_rows(row_op which, const shape& s, layout lx, layout ly, float lo, float hi) {
  auto x = make<T>(s, lx);
  auto y = make<T>(s, ly);
  auto r = make<T>(s, layout::row);
  auto gamma = make<T>(shape{s.back()}, layout::strided);
  auto beta = make<T>(shape{s.back()}, layout::row);
  fill(x.v, 31, lo, hi);
  fill(gamma.v, 32, 0.5f, 1.5f);
  fill(beta.v, 33, -1.0f, 1.0f);
  const index_t cols = s.back();
  kforge::tolerance tol;
  std::string what = P::name();
  std::vector<float> scale;
  if (which == row_op::softmax) {
    kforge::run<P>(op::softmax<T>{}, x.cv(), y.v);
    kforge::run<policy::eigen>(op::softmax<T>{}, x.cv(), r.v);
    tol = kforge::softmax_tolerance(kforge::dtype_of<T>(), cols);
    what += " softmax";
  } else if (which == row_op::layer_norm) {
    kforge::run<P>(op::layer_norm<T>{}, x.cv(), gamma.cv(), beta.cv(), y.v);
    kforge::run<policy::eigen>(op::layer_norm<T>{}, x.cv(), gamma.cv(), beta.cv(), r.v);
    tol = kforge::norm_tolerance(kforge::dtype_of<T>(), cols);
    what += " layer_norm";
  } else {
    kforge::run<P>(op::rms_norm<T>{}, x.cv(), gamma.cv(), y.v);
    kforge::run<policy::eigen>(op::rms_norm<T>{}, x.cv(), gamma.cv(), r.v);
    tol = kforge::norm_tolerance(kforge::dtype_of<T>(), cols);
    what += " rms_norm";
  }
  if (which != row_op::softmax) {  // |gamma|·|normalised x| + |beta| ≤ 1.5·|ref| + 3
    for (float v : values(r.v)) scale.push_back(1.5f * std::fabs(v) + 3.0f);
  }
  compare(values(y.v), values(r.v), scale, tol, kforge::dtype_of<T>(), what + " " + tag<T>("", s, lx));
}

template <class P, class T>
void all_rows(const shape& s, layout lx, layout ly) {
  check_rows<P, T>(row_op::softmax, s, lx, ly, -8.0f, 8.0f);
  check_rows<P, T>(row_op::layer_norm, s, lx, ly, 3.0f, 5.0f);  // offset mean: Welford's reason to exist
  check_rows<P, T>(row_op::rms_norm, s, lx, ly, -2.0f, 2.0f);
}

}  // namespace

TEST_CASE_TEMPLATE("cpu unary ops match the Eigen reference", T, float, half, bfloat16) {
  for (layout l : {layout::row, layout::col, layout::strided}) {
    all_unary<policy::blocked<>, T>(shape{3, 7, 257}, l, layout::row);
    all_unary<policy::threaded<>, T>(shape{33, 100}, layout::row, l);
  }
  all_unary<policy::threaded<>, T>(shape{1, 100003}, layout::row, layout::row);  // one long row over threads
  all_unary<policy::blocked<>, T>(shape{1}, layout::row, layout::row);
}

TEST_CASE_TEMPLATE("cpu binary ops broadcast like the Eigen reference", T, float, half, bfloat16) {
  all_binary<policy::blocked<>, T>(shape{33, 1000}, shape{33, 1000}, layout::row, layout::col);
  all_binary<policy::threaded<>, T>(shape{7, 1, 33}, shape{17, 1}, layout::strided, layout::row);
  all_binary<policy::threaded<>, T>(shape{3, 100, 257}, shape{257}, layout::row, layout::strided);
  all_binary<policy::blocked<>, T>(shape{1000, 3}, shape{1000, 1}, layout::col, layout::row);
  all_binary<policy::threaded<>, T>(shape{1}, shape{3, 300, 400}, layout::row, layout::row);
}

TEST_CASE_TEMPLATE("cpu reductions over every axis match the Eigen reference", T, float, half, bfloat16) {
  all_reduce<policy::blocked<>, T>(shape{7, 257, 3}, 1, layout::row, false);
  all_reduce<policy::threaded<>, T>(shape{100, 257}, -1, layout::row, true);
  all_reduce<policy::threaded<>, T>(shape{33, 7}, 0, layout::col, false);
  all_reduce<policy::blocked<>, T>(shape{17, 33, 5}, 2, layout::strided, true);
  all_reduce<policy::threaded<>, T>(shape{3, 3000, 100}, 1, layout::row, false);
  all_reduce<policy::blocked<>, T>(shape{1, 1}, 0, layout::row, false);
}

TEST_CASE_TEMPLATE("cpu softmax, layer_norm and rms_norm match the Eigen reference", T, float, half, bfloat16) {
  all_rows<policy::blocked<>, T>(shape{1, 3}, layout::row, layout::row);
  all_rows<policy::blocked<>, T>(shape{100, 257}, layout::row, layout::strided);
  all_rows<policy::threaded<>, T>(shape{3, 1000}, layout::col, layout::row);
  all_rows<policy::threaded<>, T>(shape{2, 3, 4100}, layout::strided, layout::col);
  all_rows<policy::threaded<>, T>(shape{1000, 17}, layout::row, layout::row);
}

TEST_CASE_TEMPLATE("cpu softmax special values", P, policy::blocked<>, policy::threaded<>) {
  // Row 0: one NaN → all NaN. Row 1: all -inf → NaN. Row 2: -inf mixed with
  // finite values (masking) → finite. Row 3: +inf → NaN (inf - inf). Row 4:
  // finite values near FLT_MAX whose sums overflow (the max's detector trips,
  // the exact path answers). Row 5: a NaN in the tail past the vector body.
  // 37 columns run partly in the scalar tails, 300 through the vector bodies.
  // (A NaN the row max missed would still make these rows NaN through exp;
  // argmax's tests in transformer_ops check the max's NaN detection itself.)
  for (index_t n : {37, 300}) {
    CAPTURE(n);
    auto x = make<float>(shape{6, n}, layout::row);
    auto y = make<float>(shape{6, n}, layout::row);
    auto r = make<float>(shape{6, n}, layout::row);
    fill(x.v, 41);
    x.v(0, 20) = nan_f;
    for (index_t j = 0; j < n; ++j) x.v(1, j) = -inf_f;
    for (index_t j = 0; j < n; j += 2) x.v(2, j) = -inf_f;
    x.v(3, 35) = inf_f;
    for (index_t j = 0; j < n; ++j) x.v(4, j) = 3.0e38f - static_cast<float>(j % 7) * 1.0e31f;
    x.v(5, n - 1) = nan_f;
    kforge::run<P>(op::softmax<float>{}, x.cv(), y.v);
    kforge::run<policy::eigen>(op::softmax<float>{}, x.cv(), r.v);
    compare(values(y.v), values(r.v), {}, kforge::softmax_tolerance(kforge::dtype::f32, n), kforge::dtype::f32,
            "softmax special values");
    CHECK(std::isfinite(y.v(2, 1)));
    CHECK(std::isfinite(y.v(4, 0)));
    CHECK(std::isnan(y.v(0, n - 1)));
    CHECK(std::isnan(y.v(3, 0)));
    CHECK(std::isnan(y.v(5, 0)));
  }
}

TEST_CASE("vexp_nonpositive (softmax's exp) against std::exp on x <= 0, -inf and the subnormal range") {
  namespace cd = kforge::cpu::detail;
  using S = cd::simd_native;
  constexpr int W = S::width;
  std::vector<float> xs{-inf_f, -0.0f, 0.0f, -1e-30f, -87.33f, -87.34f, -90.0f, -103.9f, -104.5f, -1e30f};
  for (float x = -110.0f; x <= 0.0f; x += 0.0137f) xs.push_back(x);
  while (xs.size() % W != 0) xs.push_back(-1.0f);
  for (std::size_t i = 0; i < xs.size(); i += W) {
    alignas(64) float out[W];
    S::store(out, cd::vexp_nonpositive(S::load(xs.data() + i)));
    for (int l = 0; l < W; ++l) {
      const float x = xs[i + static_cast<std::size_t>(l)], want = std::exp(x);
      for (const float got : {out[l], cd::vexp_nonpositive(x)}) {
        INFO("x = " << x << ", got " << got << ", std::exp " << want);
        CHECK(got >= 0.0f);
        if (x >= -87.33f)
          CHECK(std::abs(got - want) <= 4e-7f * want);  // a few ulp where exp is a normal float
        else
          CHECK(got <= 1.2e-38f);  // about the smallest normal float, a subnormal, or 0
        if (x < -104.0f) CHECK(got == 0.0f);
      }
    }
  }
}
