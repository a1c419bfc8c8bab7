// Tests of policy::eigen, the reference: every op on small hand-computed
// cases (the oracle must itself be right), in f32 and in half/bfloat16 storage.
#include "special_values.hpp"
#include <doctest/doctest.h>

#include <kforge/kforge.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace kforge;
using P = policy::eigen;
using kft::nan_f;

TEST_CASE("gemm: alpha, beta, bias, activations, column-major operands") {
  // A = [[1,2],[3,4]], B = [[5,6],[7,8]] → AB = [[19,22],[43,50]]
  Eigen::Matrix<float, 2, 2, Eigen::RowMajor> ar;
  ar << 1, 2, 3, 4;
  Eigen::MatrixXf a = ar, b(2, 2), c(2, 2);  // a is column-major with the same values
  b << 5, 6, 7, 8;
  run<P>(op::gemm<float>{}, a, b, c);
  CHECK(c(0, 0) == 19);
  CHECK(c(0, 1) == 22);
  CHECK(c(1, 0) == 43);
  CHECK(c(1, 1) == 50);
  op::gemm<float> g;
  g.alpha = 2;
  g.beta = -1;
  run<P>(g, a, b, c);  // 2·AB − AB
  CHECK(c(1, 1) == 50);
  Eigen::VectorXf bias(2);
  bias << -20, -60;
  run<P>(op::gemm<float, epilogue::bias_relu>{}, ar, b, bias, c);  // [[0,0],[23,0]]
  CHECK(c(0, 0) == 0);
  CHECK(c(0, 1) == 0);
  CHECK(c(1, 0) == 23);
  CHECK(c(1, 1) == 0);
  op::gemm<float, epilogue::bias_leaky_relu> lk;
  lk.epilogue.slope = 0.5f;
  run<P>(lk, ar, b, bias, c);
  CHECK(c(0, 1) == doctest::Approx(-19.0));
  // beta == 0 never reads C, so NaN there does not propagate.
  c.setConstant(nan_f);
  run<P>(op::gemm<float>{}, a, b, c);
  CHECK(c(0, 0) == 19);
  // gelu (erf) and gelu_tanh at a known point: gelu(1) = 0.841345, tanh form 0.841192
  Eigen::MatrixXf one = Eigen::MatrixXf::Ones(1, 1), out(1, 1);
  run<P>(op::gemm<float, epilogue::gelu>{}, one, one, out);
  CHECK(out(0, 0) == doctest::Approx(0.8413447).epsilon(1e-6));
  run<P>(op::gemm<float, epilogue::gelu_tanh>{}, one, one, out);
  CHECK(out(0, 0) == doctest::Approx(0.8411920).epsilon(1e-6));
  run<P>(op::gemm<float, epilogue::silu>{}, one, one, out);
  CHECK(out(0, 0) == doctest::Approx(0.7310586).epsilon(1e-6));
}

TEST_CASE_TEMPLATE("gemm in half and bfloat16 storage accumulates in f32", T, half, bfloat16) {
  // 256 products of 1·1 sum to 256 exactly in f32; an f16 accumulator would too,
  // so add 1/256 steps that f16 accumulation at 256 would lose.
  const int k = 512;
  std::vector<T> a(k), b(k), c(1);
  for (int i = 0; i < k; ++i) {
    a[static_cast<std::size_t>(i)] = T(i < 256 ? 1.0f : 0.0078125f);
    b[static_cast<std::size_t>(i)] = T(1.0f);
  }
  run<P>(op::gemm<T>{}, make_view(a, {1, k}), make_view(b, {k, 1}), make_view(c, {1, 1}));
  CHECK(static_cast<float>(c[0]) == doctest::Approx(258.0).epsilon(0.01));
}

TEST_CASE("unary ops and NaN propagation") {
  std::vector<float> x = {-2.0f, 0.0f, 1.5f, nan_f}, y(4);
  auto vx = make_view(x, {4});
  auto vy = make_view(y, {4});
  run<P>(op::unary<float, fn::relu>{}, vx, vy);
  CHECK(y[0] == 0);
  CHECK(y[2] == 1.5f);
  CHECK(std::isnan(y[3]));
  run<P>(op::unary<float, fn::sigmoid>{}, vx, vy);
  CHECK(y[1] == 0.5f);
  run<P>(op::unary<float, fn::neg>{}, vx, vy);
  CHECK(y[0] == 2.0f);
  run<P>(op::unary<float, fn::abs>{}, vx, vy);
  CHECK(y[0] == 2.0f);
  run<P>(op::unary<float, fn::exp>{}, vx, vy);
  CHECK(y[1] == 1.0f);
  run<P>(op::unary<float, fn::tanh>{}, vx, vy);
  CHECK(y[2] == doctest::Approx(std::tanh(1.5)));
  op::unary<float, fn::leaky_relu> lk;
  lk.slope = 0.25f;
  run<P>(lk, vx, vy);
  CHECK(y[0] == -0.5f);
}

TEST_CASE("binary ops broadcast like NumPy and max/min propagate NaN") {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30}, c(6);
  run<P>(op::binary<float, binop::add>{}, make_view(a, {2, 3}), make_view(b, {3}), make_view(c, {2, 3}));
  CHECK(c[4] == 25);
  std::vector<float> col = {100, 200};
  run<P>(op::binary<float, binop::sub>{}, make_view(a, {2, 3}), make_view(col, {2, 1}), make_view(c, {2, 3}));
  CHECK(c[5] == -194);
  std::vector<float> n = {nan_f, 0, 9};
  run<P>(op::binary<float, binop::max>{}, make_view(n, {3}), make_view(a, {2, 3}), make_view(c, {2, 3}));
  CHECK(std::isnan(c[0]));
  CHECK(c[1] == 2);
  CHECK(c[2] == 9);
  run<P>(op::binary<float, binop::div>{}, make_view(a, {2, 3}), make_view(b, {3}), make_view(c, {2, 3}));
  CHECK(c[5] == doctest::Approx(0.2));
}

TEST_CASE("reductions over each axis, keepdim accepted") {
  std::vector<float> x(2 * 3 * 4), y(8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  op::reduce<float, reduce_fn::sum> s;
  s.axis = 1;
  run<P>(s, make_view(x, {2, 3, 4}), make_view(y, {2, 4}));
  CHECK(y[0] == 0 + 4 + 8);
  CHECK(y[7] == 15 + 19 + 23);
  run<P>(s, make_view(x, {2, 3, 4}), make_view(y, {2, 1, 4}));  // keepdim
  CHECK(y[0] == 12);
  op::reduce<float, reduce_fn::mean> m;
  m.axis = -1;
  run<P>(m, make_view(x, {2, 3, 4}), make_view(y.data(), {2, 3}));
  CHECK(y[5] == doctest::Approx(21.5));
  op::reduce<float, reduce_fn::max> mx;
  mx.axis = 0;
  x[5] = nan_f;
  std::vector<float> y12(12);
  run<P>(mx, make_view(x, {2, 3, 4}), make_view(y12, {3, 4}));
  CHECK(std::isnan(y12[5]));
  CHECK(y12[0] == 12);
  op::reduce<float, reduce_fn::min> mn;
  mn.axis = 0;
  run<P>(mn, make_view(x, {2, 3, 4}), make_view(y12, {3, 4}));
  CHECK(y12[1] == 1);
}

TEST_CASE_TEMPLATE("softmax is stable; norms match their formulas", T, float, half, bfloat16) {
  std::vector<T> x = {T(1000.0f), T(1000.0f), T(-1000.0f), T(1.0f), T(2.0f), T(3.0f)}, y(6);
  run<P>(op::softmax<T>{}, make_view(x, {2, 3}), make_view(y, {2, 3}));
  CHECK(static_cast<float>(y[0]) == doctest::Approx(0.5).epsilon(0.01));
  CHECK(static_cast<float>(y[2]) == 0.0f);
  CHECK(static_cast<float>(y[5]) == doctest::Approx(0.66524).epsilon(0.01));
  std::vector<T> g = {T(1.0f), T(2.0f), T(1.0f)}, bt = {T(0.0f), T(0.0f), T(1.0f)};
  op::layer_norm<T> ln;
  ln.epsilon = 0;
  run<P>(ln, make_view(x, {2, 3}), make_view(g, {3}), make_view(bt, {3}), make_view(y, {2, 3}));
  // row 2 = (1,2,3): mean 2, var 2/3 → (-1.2247, 0, 1.2247) · gamma + beta
  CHECK(static_cast<float>(y[3]) == doctest::Approx(-1.2247449).epsilon(0.01));
  CHECK(static_cast<float>(y[4]) == doctest::Approx(0.0));
  CHECK(static_cast<float>(y[5]) == doctest::Approx(2.2247449).epsilon(0.01));
  op::rms_norm<T> rn;
  rn.epsilon = 0;
  run<P>(rn, make_view(x, {2, 3}), make_view(g, {3}), make_view(y, {2, 3}));
  // row 2: rms = sqrt(14/3) = 2.1602 → (0.46291, 2·0.92582, 1.38873)
  CHECK(static_cast<float>(y[4]) == doctest::Approx(1.8516402).epsilon(0.01));
}

TEST_CASE("conv2d: padding, stride, dilation, groups, bias and activation") {
  // x = 1x1x3x3 of 1..9, w = 1x1x2x2 of ones → sums of 2x2 windows
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 1, 1, 1}, y(4);
  run<P>(op::conv2d<float>{}, make_view(x, {1, 1, 3, 3}), make_view(w, {1, 1, 2, 2}), make_view(y, {1, 1, 2, 2}));
  CHECK(y == std::vector<float>{12, 16, 24, 28});
  op::conv2d<float> pad;
  pad.pad_h = pad.pad_w = 1;
  pad.stride_h = pad.stride_w = 2;
  std::vector<float> y2(4);
  run<P>(pad, make_view(x, {1, 1, 3, 3}), make_view(w, {1, 1, 2, 2}), make_view(y2, {1, 1, 2, 2}));
  CHECK(y2 == std::vector<float>{1, 5, 11, 28});
  op::conv2d<float> dil;
  dil.dilation_h = dil.dilation_w = 2;
  std::vector<float> y3(1);
  run<P>(dil, make_view(x, {1, 1, 3, 3}), make_view(w, {1, 1, 2, 2}), make_view(y3, {1, 1, 1, 1}));
  CHECK(y3[0] == 1 + 3 + 7 + 9);
  // depthwise: 2 channels, 2 groups, bias −20, relu
  std::vector<float> x2(18), w2 = {1, 1, 1, 1, -1, -1, -1, -1}, bias = {-20, 0}, y4(8);
  for (int i = 0; i < 18; ++i) x2[static_cast<std::size_t>(i)] = static_cast<float>(i % 9 + 1);
  op::conv2d<float, epilogue::bias_relu> dw;
  dw.groups = 2;
  run<P>(dw, make_view(x2, {1, 2, 3, 3}), make_view(w2, {2, 1, 2, 2}), make_view(bias, {2}), make_view(y4, {1, 2, 2, 2}));
  CHECK(y4 == std::vector<float>{0, 0, 4, 8, 0, 0, 0, 0});
}

TEST_CASE("attention: uniform keys average V; causal rows see only the past") {
  // Q = K = 0 → uniform weights; V rows 1, 2, 3 → mean 2 (non-causal)
  std::vector<float> q(3 * 2, 0.0f), v = {1, 1, 2, 2, 3, 3}, o(6);
  run<P>(op::attention<float>{}, make_view(q, {1, 1, 3, 2}), make_view(q, {1, 1, 3, 2}), make_view(v, {1, 1, 3, 2}),
         make_view(o, {1, 1, 3, 2}));
  CHECK(o[0] == doctest::Approx(2.0));
  op::attention<float> causal;
  causal.causal = true;
  run<P>(causal, make_view(q, {1, 1, 3, 2}), make_view(q, {1, 1, 3, 2}), make_view(v, {1, 1, 3, 2}),
         make_view(o, {1, 1, 3, 2}));
  CHECK(o[0] == doctest::Approx(1.0));  // row 0 sees key 0
  CHECK(o[2] == doctest::Approx(1.5));  // row 1 sees keys 0, 1
  CHECK(o[4] == doctest::Approx(2.0));
  // A large score on key 2 for query 0 picks V row 2; scale defaults to 1/sqrt(D).
  std::vector<float> q1 = {10, 10, 0, 0, 0, 0}, k1 = {0, 0, 0, 0, 10, 10};
  run<P>(op::attention<float>{}, make_view(q1, {1, 1, 3, 2}), make_view(k1, {1, 1, 3, 2}), make_view(v, {1, 1, 3, 2}),
         make_view(o, {1, 1, 3, 2}));
  CHECK(o[0] == doctest::Approx(3.0).epsilon(1e-6));
}

TEST_CASE("attention: masked keys are excluded — an Inf in a masked V row stays out") {
  // Q = K = 0: every key a row sees weighs the same. Causal: row i averages V rows 0..i.
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<float> q(4 * 2, 0.0f), v = {1, 1, 2, 2, inf, 5, 3, 3}, o(8);
  op::attention<float> c;
  c.causal = true;
  run<P>(c, make_view(q, {1, 1, 4, 2}), make_view(q, {1, 1, 4, 2}), make_view(v, {1, 1, 4, 2}), make_view(o, {1, 1, 4, 2}));
  CHECK(o[0] == doctest::Approx(1.0));  // rows 0 and 1 never use V row 2
  CHECK(o[2] == doctest::Approx(1.5));
  CHECK(o[3] == doctest::Approx(1.5));
  CHECK(std::isinf(o[4]));              // row 2 sees it
  CHECK(o[5] == doctest::Approx(8.0 / 3));
  // S > L: rows past L see every key.
  std::vector<float> k2(2 * 2, 0.0f), v2(v.begin(), v.begin() + 4), o2(4 * 2);
  run<P>(c, make_view(q, {1, 1, 4, 2}), make_view(k2, {1, 1, 2, 2}), make_view(v2, {1, 1, 2, 2}), make_view(o2, {1, 1, 4, 2}));
  CHECK(o2[0] == doctest::Approx(1.0));
  CHECK(o2[6] == doctest::Approx(1.5));
}

namespace {
std::vector<float> ramp(std::size_t n, float step) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(step * static_cast<float>(i + 1));
  return x;
}
}  // namespace

TEST_CASE("attention: grouped KV heads read head h / (H / Hkv); [B,S,H,D] is the same op transposed") {
  // H = 4 query heads over Hkv = 2: the result equals multi-head attention with each KV head repeated
  // for its two query heads ([k0, k0, k1, k1], not [k0, k1, k0, k1]).
  const index_t b = 2, h = 4, hk = 2, s = 3, l = 5, d = 4;
  const auto q = ramp(static_cast<std::size_t>(b * h * s * d), 0.37f), k = ramp(static_cast<std::size_t>(b * hk * l * d), 0.71f),
             v = ramp(static_cast<std::size_t>(b * hk * l * d), 1.13f);
  std::vector<float> kx(static_cast<std::size_t>(b * h * l * d)), vx(kx.size());
  for (index_t bi = 0; bi < b; ++bi)
    for (index_t hi = 0; hi < h; ++hi)
      for (index_t e = 0; e < l * d; ++e) {
        kx[static_cast<std::size_t>((bi * h + hi) * l * d + e)] = k[static_cast<std::size_t>((bi * hk + hi / 2) * l * d + e)];
        vx[static_cast<std::size_t>((bi * h + hi) * l * d + e)] = v[static_cast<std::size_t>((bi * hk + hi / 2) * l * d + e)];
      }
  for (const bool causal : {false, true}) {
    op::attention<float> a;
    a.causal = causal;
    std::vector<float> o(q.size()), ox(q.size());
    run<P>(a, make_view(q, {b, h, s, d}), make_view(k, {b, hk, l, d}), make_view(v, {b, hk, l, d}), make_view(o, {b, h, s, d}));
    run<P>(a, make_view(q, {b, h, s, d}), make_view(kx, {b, h, l, d}), make_view(vx, {b, h, l, d}), make_view(ox, {b, h, s, d}));
    for (std::size_t i = 0; i < o.size(); ++i) CHECK(o[i] == doctest::Approx(ox[i]).epsilon(1e-6));
    // [B,S,H,D]: the same tensors transposed (dims 1 and 2) give the transposed output.
    auto t = [&](const std::vector<float>& x, index_t heads, index_t rows) {
      std::vector<float> y(x.size());
      for (index_t bi = 0; bi < b; ++bi)
        for (index_t hi = 0; hi < heads; ++hi)
          for (index_t r = 0; r < rows; ++r)
            for (index_t e = 0; e < d; ++e)
              y[static_cast<std::size_t>(((bi * rows + r) * heads + hi) * d + e)] =
                  x[static_cast<std::size_t>(((bi * heads + hi) * rows + r) * d + e)];
      return y;
    };
    const auto qt = t(q, h, s), kt = t(k, hk, l), vt = t(v, hk, l), want = t(o, h, s);
    std::vector<float> ot(q.size());
    a.layout = attention_layout::bshd;
    run<P>(a, make_view(qt, {b, s, h, d}), make_view(kt, {b, l, hk, d}), make_view(vt, {b, l, hk, d}), make_view(ot, {b, s, h, d}));
    for (std::size_t i = 0; i < ot.size(); ++i) CHECK(ot[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

TEST_CASE("attention: head counts that do not divide, and shapes of the wrong layout, are shape errors") {
  std::vector<float> q(1 * 4 * 3 * 8), k(1 * 3 * 5 * 8), o(q.size());
  op::attention<float> a;
  try {
    run<P>(a, make_view(q, {1, 4, 3, 8}), make_view(k, {1, 3, 5, 8}), make_view(k, {1, 3, 5, 8}), make_view(o, {1, 4, 3, 8}));
    FAIL("no shape_error");
  } catch (const shape_error& e) {
    const std::string m = e.what();
    CHECK(m.find("Q has 4 heads and K 3") != std::string::npos);
  }
  // [B,S,H,D] K given as [B,Hkv,L,D]: its heads and positions are read from the other axes.
  std::vector<float> k2(1 * 2 * 5 * 8);
  a.layout = attention_layout::bshd;
  CHECK_THROWS_AS(run<P>(a, make_view(q, {1, 3, 4, 8}), make_view(k2, {1, 2, 5, 8}), make_view(k2, {1, 5, 3, 8}),
                         make_view(o, {1, 3, 4, 8})),
                  shape_error);
}
