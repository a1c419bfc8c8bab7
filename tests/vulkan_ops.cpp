// tests/vulkan_ops.cpp — every op through policy::vulkan against the Eigen
// reference, f32 and f16 (bf16 for a few: computed as f32 on the device), on
// shapes that are not multiples of any tile, with the validation layer on and
// zero messages allowed. Sizes stay small: lavapipe is slow.
#include "vulkan_common.hpp"

#include <limits>

using namespace kforge;
using kft::check_close;
using kft::convert;
using kft::random_floats;

namespace {
constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();

template <class T, class E>
void gemm_case(index_t m, index_t n, index_t k, float alpha, float beta, unsigned seed, bool col_major_a = false) {
  auto af = random_floats(static_cast<std::size_t>(m * k), seed), bf = random_floats(static_cast<std::size_t>(k * n), seed + 1),
       cf = random_floats(static_cast<std::size_t>(m * n), seed + 2), biasf = random_floats(static_cast<std::size_t>(n), seed + 3);
  auto a = convert<T>(af), b = convert<T>(bf), bias = convert<T>(biasf);
  std::vector<T> c = convert<T>(cf), ref = c;
  op::gemm<T, E> o;
  o.alpha = alpha, o.beta = beta, o.epilogue.slope = 0.1f;
  // A column-major A (Eigen's default layout) exercises strided host operands.
  const tensor_view<const T> av = col_major_a ? tensor_view<const T>(a.data(), shape{m, k}, shape{1, m})
                                              : tensor_view<const T>(a.data(), shape{m, k});
  const tensor_view<const T> bv(b.data(), shape{k, n}), biasv(bias.data(), shape{n});
  if constexpr (E::has_bias) {
    run<policy::vulkan<>>(o, av, bv, biasv, make_view(c, shape{m, n}));
    run<policy::eigen>(o, av, bv, biasv, make_view(ref, shape{m, n}));
  } else {
    run<policy::vulkan<>>(o, av, bv, make_view(c, shape{m, n}));
    run<policy::eigen>(o, av, bv, make_view(ref, shape{m, n}));
  }
  // Error scale: |alpha|·|A|·|B| + |beta·C| + |bias|, per element.
  std::vector<float> scale(static_cast<std::size_t>(m * n));
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = 0;
      for (index_t p = 0; p < k; ++p)
        s += std::fabs(static_cast<float>(col_major_a ? a[p * m + i] : a[i * k + p])) * std::fabs(static_cast<float>(b[p * n + j]));
      s = std::fabs(alpha) * s + std::fabs(beta * cf[i * n + j]) + (E::has_bias ? std::fabs(biasf[j]) : 0) + 1e-30;
      scale[i * n + j] = static_cast<float>(s);
    }
  check_close("gemm " + epilogue::epilogue_name<E>() + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                  std::to_string(k),
              c, ref, scale, gemm_tolerance(dtype_of<T>(), k));
}
}  // namespace

TEST_CASE_TEMPLATE("vulkan gemm matches eigen on odd shapes", T, float, half) {
  KFT_NEED_DEVICE();
  const index_t shapes[][3] = {{1, 1, 1}, {3, 7, 17}, {17, 33, 7}, {100, 3, 33}, {1, 100, 65}, {65, 1, 3}, {33, 17, 0}};
  unsigned seed = 1;
  for (const auto& s : shapes) gemm_case<T, epilogue::none>(s[0], s[1], s[2], 1.0f, 0.0f, seed++);
  gemm_case<T, epilogue::none>(17, 33, 7, 0.5f, -2.0f, seed++);
  gemm_case<T, epilogue::none>(33, 7, 17, 1.0f, 0.0f, seed++, true);
  gemm_case<T, epilogue::bias>(7, 17, 33, 1.0f, 0.0f, seed++);
  gemm_case<T, epilogue::bias_relu>(33, 17, 7, 1.0f, 1.0f, seed++);
  gemm_case<T, epilogue::leaky_relu>(17, 3, 33, 1.0f, 0.0f, seed++);
  gemm_case<T, epilogue::bias_gelu_tanh>(3, 33, 17, 1.0f, 0.0f, seed++);
  gemm_case<T, epilogue::bias_gelu>(17, 17, 17, 1.0f, 0.0f, seed++);
  gemm_case<T, epilogue::silu>(7, 65, 3, 2.0f, 0.0f, seed++);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan gemm: beta == 0 does not read C, knobs change the tiling") {
  KFT_NEED_DEVICE();
  std::vector<float> a = random_floats(17 * 9, 5), b = random_floats(9 * 13, 6), c(17 * 13, nan_f), ref(17 * 13, nan_f);
  run<policy::vulkan<policy::tile<32, 16, 8>, policy::thread_tile<2, 2>>>(op::gemm<float>{}, make_view(a, {17, 9}),
                                                                          make_view(b, {9, 13}), make_view(c, {17, 13}));
  run<policy::eigen>(op::gemm<float>{}, make_view(a, {17, 9}), make_view(b, {9, 13}), make_view(ref, {17, 13}));
  check_close("gemm tile<32,16,8>", c, ref, {9.0f}, gemm_tolerance(dtype::f32, 9));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan gemm on Eigen matrices and bf16 host data") {
  KFT_NEED_DEVICE();
  Eigen::MatrixXf A = Eigen::MatrixXf::Random(33, 17), B = Eigen::MatrixXf::Random(17, 7), C(33, 7), R(33, 7);
  run<policy::vulkan<>>(op::gemm<float>{}, A, B, C);
  run<policy::eigen>(op::gemm<float>{}, A, B, R);
  CHECK((C - R).cwiseAbs().maxCoeff() < 1e-5f);
  auto a = convert<bfloat16>(random_floats(7 * 5, 9)), b = convert<bfloat16>(random_floats(5 * 3, 10));
  std::vector<bfloat16> c(21), ref(21);
  run<policy::vulkan<>>(op::gemm<bfloat16>{}, make_view(a, {7, 5}), make_view(b, {5, 3}), make_view(c, {7, 3}));
  run<policy::eigen>(op::gemm<bfloat16>{}, make_view(a, {7, 5}), make_view(b, {5, 3}), make_view(ref, {7, 3}));
  check_close("gemm bf16", c, ref, {5.0f}, gemm_tolerance(dtype::bf16, 5));
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {
template <class T, fn F>
void unary_case(const std::vector<float>& xf, shape s) {
  auto x = convert<T>(xf);
  std::vector<T> y(x.size()), ref(x.size());
  op::unary<T, F> o;
  o.slope = 0.2f;
  run<policy::vulkan<>>(o, make_view(x, s), make_view(y, s));
  run<policy::eigen>(o, make_view(x, s), make_view(ref, s));
  std::vector<float> scale(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) scale[i] = std::max(1.0f, std::fabs(xf[i]));
  check_close(std::string(to_string(F)), y, ref, scale, elementwise_tolerance(dtype_of<T>()));
}
}  // namespace

TEST_CASE_TEMPLATE("vulkan unary ops match eigen, NaN propagates", T, float, half) {
  KFT_NEED_DEVICE();
  auto x = random_floats(3 * 7 * 17, 11, -4, 4);
  x[0] = nan_f, x[1] = inf_f, x[2] = -inf_f, x[3] = 0.0f, x[4] = 1e-3f, x[5] = -9.0f, x[6] = 30.0f;
  const shape s{3, 7, 17};
  unary_case<T, fn::relu>(x, s);
  unary_case<T, fn::leaky_relu>(x, s);
  unary_case<T, fn::gelu_tanh>(x, s);
  unary_case<T, fn::gelu_erf>(x, s);
  unary_case<T, fn::silu>(x, s);
  unary_case<T, fn::exp>(x, s);
  unary_case<T, fn::tanh>(x, s);
  unary_case<T, fn::sigmoid>(x, s);
  unary_case<T, fn::abs>(x, s);
  unary_case<T, fn::neg>(x, s);
  unary_case<T, fn::relu>(random_floats(1, 3), shape{1});
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {
template <class T, binop F>
void binary_case(shape sa, shape sb, unsigned seed) {
  auto af = random_floats(static_cast<std::size_t>(sa.numel()), seed, -2, 2);
  auto bf = random_floats(static_cast<std::size_t>(sb.numel()), seed + 1, 0.5f, 2);
  if (af.size() > 2) af[1] = nan_f;
  auto a = convert<T>(af), b = convert<T>(bf);
  const shape out = broadcast_shape("test", sa, sb);
  std::vector<T> c(static_cast<std::size_t>(out.numel())), ref(c.size());
  run<policy::vulkan<>>(op::binary<T, F>{}, make_view(a, sa), make_view(b, sb), make_view(c, out));
  run<policy::eigen>(op::binary<T, F>{}, make_view(a, sa), make_view(b, sb), make_view(ref, out));
  check_close(std::string(to_string(F)) + " " + sa.str() + "∘" + sb.str(), c, ref, {1.0f},
              elementwise_tolerance(dtype_of<T>()));
}
}  // namespace

TEST_CASE_TEMPLATE("vulkan binary ops with broadcasting match eigen", T, float, half) {
  KFT_NEED_DEVICE();
  binary_case<T, binop::add>({7, 17}, {7, 17}, 1);
  binary_case<T, binop::sub>({3, 1, 17}, {7, 1}, 2);
  binary_case<T, binop::mul>({17}, {3, 7, 17}, 3);
  binary_case<T, binop::div>({3, 7, 1}, {1, 1, 33}, 4);
  binary_case<T, binop::max>({33, 3}, {1, 3}, 5);
  binary_case<T, binop::min>({1}, {2, 3, 1, 5}, 6);
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {
template <class T, reduce_fn F>
void reduce_case(shape s, int axis, unsigned seed, bool with_nan) {
  auto xf = random_floats(static_cast<std::size_t>(s.numel()), seed, -3, 3);
  if (with_nan) xf[xf.size() / 2] = nan_f;
  auto x = convert<T>(xf);
  shape out;
  const int ax = axis < 0 ? axis + s.rank() : axis;
  for (int i = 0; i < s.rank(); ++i)
    if (i != ax) out.push_back(s[i]);
  std::vector<T> y(static_cast<std::size_t>(out.numel())), ref(y.size());
  op::reduce<T, F> o;
  o.axis = axis;
  run<policy::vulkan<>>(o, make_view(x, s), make_view(y, out));
  run<policy::eigen>(o, make_view(x, s), make_view(ref, out));
  check_close("reduce_" + std::string(to_string(F)) + " " + s.str() + " axis " + std::to_string(axis), y, ref,
              {static_cast<float>(3 * s[ax])}, reduce_tolerance(dtype_of<T>(), s[ax]));
}
}  // namespace

TEST_CASE_TEMPLATE("vulkan reductions match eigen, max/min propagate NaN", T, float, half) {
  KFT_NEED_DEVICE();
  reduce_case<T, reduce_fn::sum>({7, 100}, -1, 1, false);
  reduce_case<T, reduce_fn::mean>({3, 33, 7}, 1, 2, false);
  reduce_case<T, reduce_fn::max>({17, 33}, 0, 3, false);
  reduce_case<T, reduce_fn::min>({1, 1000}, 1, 4, false);
  reduce_case<T, reduce_fn::max>({3, 17}, 1, 5, true);
  reduce_case<T, reduce_fn::min>({17, 3}, 0, 6, true);
  reduce_case<T, reduce_fn::sum>({1}, 0, 7, false);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE_TEMPLATE("vulkan softmax, layer_norm, rms_norm match eigen", T, float, half) {
  KFT_NEED_DEVICE();
  for (auto s : {shape{1, 1}, shape{7, 3}, shape{3, 17, 33}, shape{2, 1000}, shape{100, 7}}) {
    auto xf = random_floats(static_cast<std::size_t>(s.numel()), 7, -5, 5);
    const index_t cols = s.back();
    auto gf = random_floats(static_cast<std::size_t>(cols), 8, 0.5f, 1.5f), bf = random_floats(static_cast<std::size_t>(cols), 9);
    auto x = convert<T>(xf), g = convert<T>(gf), b = convert<T>(bf);
    std::vector<T> y(x.size()), ref(x.size());
    run<policy::vulkan<>>(op::softmax<T>{}, make_view(x, s), make_view(y, s));
    run<policy::eigen>(op::softmax<T>{}, make_view(x, s), make_view(ref, s));
    check_close("softmax " + s.str(), y, ref, {1.0f}, softmax_tolerance(dtype_of<T>(), cols));
    run<policy::vulkan<>>(op::layer_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(b, {cols}), make_view(y, s));
    run<policy::eigen>(op::layer_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(b, {cols}), make_view(ref, s));
    std::vector<float> scale(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) scale[i] = 2.0f + std::fabs(static_cast<float>(ref[i]));
    check_close("layer_norm " + s.str(), y, ref, scale, norm_tolerance(dtype_of<T>(), cols));
    run<policy::vulkan<>>(op::rms_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(y, s));
    run<policy::eigen>(op::rms_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(ref, s));
    for (std::size_t i = 0; i < ref.size(); ++i) scale[i] = 2.0f + std::fabs(static_cast<float>(ref[i]));
    check_close("rms_norm " + s.str(), y, ref, scale, norm_tolerance(dtype_of<T>(), cols));
  }
  // Softmax edge rows: NaN, +Inf and all -Inf give NaN rows; -Inf entries give 0.
  std::vector<float> xf = {1, nan_f, 2, 3, inf_f, 1, -inf_f, -inf_f, -inf_f, 0, -inf_f, 1};
  auto x = convert<T>(xf);
  std::vector<T> y(12), ref(12);
  run<policy::vulkan<>>(op::softmax<T>{}, make_view(x, {4, 3}), make_view(y, {4, 3}));
  run<policy::eigen>(op::softmax<T>{}, make_view(x, {4, 3}), make_view(ref, {4, 3}));
  check_close("softmax edge rows", y, ref, {1.0f}, softmax_tolerance(dtype_of<T>(), 3));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE_TEMPLATE("vulkan conv2d (implicit GEMM) matches eigen", T, float, half) {
  KFT_NEED_DEVICE();
  struct cfg {
    index_t n, c, h, w, k, r, s;
    int sh, sw, ph, pw, dh, dw, groups;
  };
  const cfg cases[] = {{1, 3, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                       {2, 4, 9, 5, 6, 3, 1, 2, 1, 0, 1, 1, 1, 2},
                       {1, 1, 17, 3, 3, 2, 2, 1, 1, 0, 0, 2, 1, 1},
                       {3, 6, 5, 5, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3}};
  unsigned seed = 20;
  for (const auto& c : cases) {
    op::conv2d<T, epilogue::bias_relu> o;
    o.stride_h = c.sh, o.stride_w = c.sw, o.pad_h = c.ph, o.pad_w = c.pw, o.dilation_h = c.dh, o.dilation_w = c.dw,
    o.groups = c.groups;
    const auto d = make_conv2d_dims(c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.groups, shape{c.n, c.c, c.h, c.w},
                                    shape{c.k, c.c / c.groups, c.r, c.s});
    auto x = convert<T>(random_floats(static_cast<std::size_t>(c.n * c.c * c.h * c.w), seed++));
    auto w = convert<T>(random_floats(static_cast<std::size_t>(c.k * c.c / c.groups * c.r * c.s), seed++));
    auto b = convert<T>(random_floats(static_cast<std::size_t>(c.k), seed++));
    const shape ys{c.n, c.k, d.p, d.q};
    std::vector<T> y(static_cast<std::size_t>(ys.numel())), ref(y.size());
    run<policy::vulkan<>>(o, make_view(x, {c.n, c.c, c.h, c.w}), make_view(w, {c.k, c.c / c.groups, c.r, c.s}),
                          make_view(b, {c.k}), make_view(y, ys));
    run<policy::eigen>(o, make_view(x, {c.n, c.c, c.h, c.w}), make_view(w, {c.k, c.c / c.groups, c.r, c.s}),
                       make_view(b, {c.k}), make_view(ref, ys));
    const index_t red = c.c / c.groups * c.r * c.s;
    check_close("conv2d " + ys.str(), y, ref, {static_cast<float>(red + 1)}, conv2d_tolerance(dtype_of<T>(), red));
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE_TEMPLATE("vulkan flash attention matches eigen", T, float, half) {
  KFT_NEED_DEVICE();
  struct cfg {
    index_t b, h, s, l, d, dv;
    bool causal;
  };
  const cfg cases[] = {{1, 1, 1, 1, 1, 1, false}, {1, 2, 7, 17, 8, 5, true}, {2, 1, 33, 33, 16, 16, true},
                       {1, 3, 3, 300, 7, 9, false}, {1, 1, 5, 3, 4, 4, true},
                       // head dims of the cooperative-matrix kernel (f16 where the device has it):
                       // S past one 64-row block, L not a multiple of the 32-key block
                       {1, 2, 70, 100, 64, 64, false}, {2, 1, 65, 33, 32, 16, true}, {1, 1, 130, 129, 48, 64, true},
                       {1, 2, 40, 50, 16, 48, false}};
  unsigned seed = 40;
  for (const auto& c : cases) {
    auto q = convert<T>(random_floats(static_cast<std::size_t>(c.b * c.h * c.s * c.d), seed++));
    auto k = convert<T>(random_floats(static_cast<std::size_t>(c.b * c.h * c.l * c.d), seed++));
    auto v = convert<T>(random_floats(static_cast<std::size_t>(c.b * c.h * c.l * c.dv), seed++));
    const shape os{c.b, c.h, c.s, c.dv};
    std::vector<T> o(static_cast<std::size_t>(os.numel())), ref(o.size());
    op::attention<T> a;
    a.causal = c.causal;
    run<policy::vulkan<>>(a, make_view(q, {c.b, c.h, c.s, c.d}), make_view(k, {c.b, c.h, c.l, c.d}),
                          make_view(v, {c.b, c.h, c.l, c.dv}), make_view(o, os));
    run<policy::eigen>(a, make_view(q, {c.b, c.h, c.s, c.d}), make_view(k, {c.b, c.h, c.l, c.d}),
                       make_view(v, {c.b, c.h, c.l, c.dv}), make_view(ref, os));
    check_close("attention " + os.str() + (c.causal ? " causal" : ""), o, ref, {1.0f},
                attention_tolerance(dtype_of<T>(), c.d, c.l));
    // Where the device has cooperative matrices, f16 heads of these dims take that kernel.
    if (dtype_of<T>() == dtype::f16 && vulkan::coopmat_f16_available(ctx->info()))
      CHECK(vulkan::attention_coopmat_applies(ctx->info(), dtype::f16, c.d, c.dv) ==
            (c.d % 16 == 0 && c.dv % 16 == 0 && c.d <= 64 && c.dv <= 64));
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention: the coopmat knob picks the kernel; an infinite V value is not finite in the output") {
  KFT_NEED_DEVICE();
  if (!ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const index_t b = 1, h = 2, s = 40, l = 50, d = 32;
  auto q = convert<half>(random_floats(static_cast<std::size_t>(b * h * s * d), 90));
  auto k = convert<half>(random_floats(static_cast<std::size_t>(b * h * l * d), 91));
  auto v = convert<half>(random_floats(static_cast<std::size_t>(b * h * l * d), 92));
  const shape qs{b, h, s, d}, ks{b, h, l, d};
  std::vector<half> o(static_cast<std::size_t>(qs.numel())), ref(o.size());
  op::attention<half> a;
  run<policy::eigen>(a, make_view(q, qs), make_view(k, ks), make_view(v, ks), make_view(ref, qs));
  // coopmat<false>: the scalar kernel, on every device.
  run<policy::vulkan<policy::coopmat<false>>>(a, make_view(q, qs), make_view(k, ks), make_view(v, ks), make_view(o, qs));
  check_close("attention coopmat<false>", o, ref, {1.0f}, attention_tolerance(dtype::f16, d, l));
  // coopmat<true>: required; refused where the head dims or the device do not allow it.
  std::vector<half> q17(static_cast<std::size_t>(b * h * s * 17)), k17(static_cast<std::size_t>(b * h * l * 17));
  std::vector<half> o17(static_cast<std::size_t>(qs.numel()));
  CHECK_THROWS_AS(run<policy::vulkan<policy::coopmat<true>>>(a, make_view(q17, {b, h, s, 17}),
                                                              make_view(k17, {b, h, l, 17}), make_view(v, ks),
                                                              make_view(o17, qs)),
                  unsupported_error);
  if (vulkan::coopmat_f16_available(ctx->info())) {
    run<policy::vulkan<policy::coopmat<true>>>(a, make_view(q, qs), make_view(k, ks), make_view(v, ks), make_view(o, qs));
    check_close("attention coopmat<true>", o, ref, {1.0f}, attention_tolerance(dtype::f16, d, l));
  } else {
    CHECK_THROWS_AS(run<policy::vulkan<policy::coopmat<true>>>(a, make_view(q, qs), make_view(k, ks), make_view(v, ks),
                                                                make_view(o, qs)),
                    unsupported_error);
  }
  // Scores that grow by about 13 per 32-key block (k rows 0.1·j, q rows of ones): the running max
  // moves in every block, which the coopmat kernel's lazy rescaling handles by a rescale each time.
  {
    const index_t lg = 100;
    std::vector<half> qg(static_cast<std::size_t>(s * d), half(1.0f)), kg(static_cast<std::size_t>(lg * d));
    std::vector<half> vg = convert<half>(random_floats(static_cast<std::size_t>(lg * d), 93));
    for (index_t j = 0; j < lg; ++j)
      for (index_t e = 0; e < d; ++e) kg[static_cast<std::size_t>(j * d + e)] = half(0.1f * static_cast<float>(j) * (e % 2 ? 1.0f : 0.6f));
    std::vector<half> og(static_cast<std::size_t>(s * d)), rg(og.size());
    for (const bool causal : {false, true}) {
      op::attention<half> ag;
      ag.causal = causal;
      run<policy::vulkan<>>(ag, make_view(qg, {1, 1, s, d}), make_view(kg, {1, 1, lg, d}), make_view(vg, {1, 1, lg, d}),
                            make_view(og, {1, 1, s, d}));
      run<policy::eigen>(ag, make_view(qg, {1, 1, s, d}), make_view(kg, {1, 1, lg, d}), make_view(vg, {1, 1, lg, d}),
                         make_view(rg, {1, 1, s, d}));
      check_close(std::string("attention growing scores") + (causal ? " causal" : ""), og, rg, {1.0f},
                  attention_tolerance(dtype::f16, d, lg));
    }
  }
  // +Inf in V: every output in that column of every row of that head is NaN or ±Inf, whichever kernel runs.
  v[static_cast<std::size_t>(7 * d + 3)] = half(std::numeric_limits<float>::infinity());
  run<policy::vulkan<>>(a, make_view(q, qs), make_view(k, ks), make_view(v, ks), make_view(o, qs));
  for (index_t row = 0; row < s; ++row) CHECK(!std::isfinite(static_cast<float>(o[static_cast<std::size_t>(row * d + 3)])));
  KFT_NO_VALIDATION_MESSAGES();
}
