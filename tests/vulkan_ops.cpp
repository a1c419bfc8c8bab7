// tests/vulkan_ops.cpp — every op through policy::vulkan against the Eigen
// reference, f32, f16 and bf16 (bf16 storage on the device where it has
// 16-bit storage, else computed as f32), on shapes that are not multiples of
// any tile, with the validation layer on and zero messages allowed. Sizes
// stay small: lavapipe is slow.
#include "special_values.hpp"
#include "vulkan_common.hpp"

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <functional>
#include <limits>
#include <map>
#include <unordered_map>

using namespace kforge;
using kft::check_close;
using kft::convert;
using kft::random_floats;

namespace {
using kft::nan_f;
using kft::inf_f;

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

TEST_CASE_TEMPLATE("vulkan gemm matches eigen on odd shapes", T, float, half, bfloat16) {
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

TEST_CASE_TEMPLATE("vulkan unary ops match eigen, NaN propagates", T, float, half, bfloat16) {
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

TEST_CASE_TEMPLATE("vulkan binary ops with broadcasting match eigen", T, float, half, bfloat16) {
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

TEST_CASE_TEMPLATE("vulkan reductions match eigen, max/min propagate NaN", T, float, half, bfloat16) {
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

TEST_CASE_TEMPLATE("vulkan softmax, layer_norm, rms_norm match eigen", T, float, half, bfloat16) {
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

TEST_CASE_TEMPLATE("vulkan conv2d (implicit GEMM) matches eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  struct cfg {
    index_t n, c, h, w, k, r, s;
    int sh, sw, ph, pw, dh, dw, groups;
  };
  // groups == 1 takes the tiled kernel's implicit GEMM where the gemm's config is the tiled kernel's
  // (more than 8 filters, the last two cases: checked below), else the explicit GEMM (im2col, the decode
  // kernel or the tensor cores, sum); groups > 1 the generic kernel's implicit GEMM.
  const cfg cases[] = {{1, 3, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                       {2, 4, 9, 5, 6, 3, 1, 2, 1, 0, 1, 1, 1, 2},
                       {1, 1, 17, 3, 3, 2, 2, 1, 1, 0, 0, 2, 1, 1},
                       {3, 6, 5, 5, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3},
                       {3, 5, 11, 9, 7, 3, 2, 2, 1, 1, 0, 1, 2, 1},
                       {2, 5, 11, 9, 16, 3, 3, 1, 2, 1, 0, 2, 1, 1},
                       {1, 8, 6, 6, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1}};
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
    const dtype dt = dtype_of<T>();
    const bool tensor_cores = (dt == dtype::f16 && vulkan::coopmat_f16_available(ctx->info())) ||
                              vulkan::coopmat2_available(ctx->info(), dt);
    if (c.k > 8 && c.groups == 1 && !tensor_cores) {  // the default took the implicit GEMM on the tiled kernel
      const auto cfg = vulkan::knobs<>::gemm(ctx->info(), dt, static_cast<std::uint64_t>(c.k),
                                             static_cast<std::uint64_t>(c.n * d.p * d.q), static_cast<std::uint64_t>(red));
      CHECK(cfg.kernel == vulkan::gemm_kernel::tiled);
      CHECK(vulkan::conv2d_implicit_check(ctx->info(), dt, cfg, static_cast<std::uint64_t>(c.k),
                                          static_cast<std::uint64_t>(c.n * d.p * d.q), static_cast<std::uint64_t>(red)) == "");
    }
  }
  KFT_NO_VALIDATION_MESSAGES();
}

// The explicit-GEMM conv2d with the gemm configs a user (or the tuner) may
// give it: K splits (the sum pass adds them), the decode kernel for few
// filters, and im2col scratch small enough to cut the batch into chunks of
// one and of two images; y is poisoned with NaN so an unwritten element fails.
TEST_CASE_TEMPLATE("vulkan conv2d explicit GEMM: chunks, splits and kernels match eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  if (sizeof(T) == 2 && !ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const dtype dt = dtype_of<T>();
  // 3x3 taps (whole channels per im2col invocation), then 7x5 (35 taps: (c, r, s) stepped).
  struct geom {
    index_t n, c, h, w, kt, r, s;
    int sh, sw, ph, pw, dh, dw;
  };
  for (const geom& g : {geom{5, 6, 9, 7, 7, 3, 3, 2, 1, 1, 2, 1, 2}, geom{3, 2, 12, 9, 5, 7, 5, 1, 2, 3, 1, 1, 1}}) {
    const index_t n = g.n, c = g.c, h = g.h, w = g.w, kt = g.kt, r = g.r, s_ = g.s;
    const int sh = g.sh, sw = g.sw, ph = g.ph, pw = g.pw, dh = g.dh, dw = g.dw;
    const auto d = make_conv2d_dims(sh, sw, ph, pw, dh, dw, 1, shape{n, c, h, w}, shape{kt, c, r, s_});
    auto x = convert<T>(random_floats(static_cast<std::size_t>(n * c * h * w), 70));
    auto wt = convert<T>(random_floats(static_cast<std::size_t>(kt * c * r * s_), 71));
    auto b = convert<T>(random_floats(static_cast<std::size_t>(kt), 72));
    const shape ys{n, kt, d.p, d.q};
    std::vector<T> ref(static_cast<std::size_t>(ys.numel()));
    op::conv2d<T, epilogue::bias_relu> o;
    o.stride_h = sh, o.stride_w = sw, o.pad_h = ph, o.pad_w = pw, o.dilation_h = dh, o.dilation_w = dw;
    run<policy::eigen>(o, make_view(x, {n, c, h, w}), make_view(wt, {kt, c, r, s_}), make_view(b, {kt}), make_view(ref, ys));
    vulkan::device_tensor<T> dx(*ctx, {n, c, h, w}), dwt(*ctx, {kt, c, r, s_}), db(*ctx, {kt}), dy(*ctx, ys);
    dx.upload(make_view(x, {n, c, h, w}));
    dwt.upload(make_view(wt, {kt, c, r, s_}));
    db.upload(make_view(b, {kt}));
    const index_t crs = c * r * s_, pq = d.p * d.q;
    const std::uint64_t one_image = static_cast<std::uint64_t>((pq + 7) / 8 * 8 * crs) * sizeof(T);
    CHECK(vulkan::plan_conv2d_gemm(n, pq, crs, sizeof(T), one_image).images == 1);
    CHECK(vulkan::plan_conv2d_gemm(n, pq, crs, sizeof(T), 2 * one_image + 64).images == 2);
    CHECK(vulkan::plan_conv2d_gemm(n, pq, crs, sizeof(T)).images == n);
    std::vector<vulkan::gemm_config> cfgs{vulkan::gemm_default_config(ctx->info(), dt, kt, n * pq, crs),
                                          {vulkan::gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 4},
                                          vulkan::gemv_default_config(dt, kt, n * pq, crs)};
    cfgs.back().splits = 2;
    for (const auto& cfg : cfgs) {
      if (!vulkan::gemm_config_check(ctx->info(), dt, cfg).empty()) continue;
      for (const std::uint64_t cap : {one_image, 2 * one_image + 64, vulkan::conv2d_im2col_max_bytes}) {
        std::vector<T> y(ref.size(), static_cast<T>(nan_f));
        dy.upload(make_view(y, ys));
        vulkan::stream st(*ctx);
        const vulkan::buffer_ref br = db.ref();
        vulkan::record_conv2d_gemm(
            st, dt, [&](std::uint64_t, std::uint64_t, std::uint64_t) { return cfg; }, n, c, h, w, kt, r, s_, d.p, d.q,
            sh, sw, ph, pw, dh, dw, fn::relu, 0.0f, dx.ref(), dwt.ref(), &br, dy.ref(), cap);
        st.run();
        dy.download(make_view(y, ys));
        check_close("conv2d " + std::to_string(r) + "x" + std::to_string(s_) + " " + cfg.str() + " scratch " +
                        std::to_string(cap),
                    y, ref, {static_cast<float>(crs + 1)}, conv2d_tolerance(dt, crs));
      }
    }
  }
  KFT_NO_VALIDATION_MESSAGES();
}

// conv2d's implicit GEMM on the tiled kernel (B gathered from x as the
// kernel fetches it, y stored as NKPQ by its epilogue, or split along K and
// summed by the sum pass): tilings with one and several row and column tiles,
// filters read as vectors (C·R·S a multiple of 4) and as scalars, strides,
// padding and dilation; y is poisoned with NaN so an unwritten element fails.
TEST_CASE_TEMPLATE("vulkan conv2d implicit GEMM on the tiled kernel matches eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  if (sizeof(T) == 2 && !ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const dtype dt = dtype_of<T>();
  const auto& info = ctx->info();
  struct geom {
    index_t n, c, h, w, kt, r, s;
    int sh, sw, ph, pw, dh, dw;
  };
  const geom geoms[] = {{5, 8, 9, 7, 7, 3, 3, 2, 1, 1, 2, 1, 2},     // C·R·S = 72: vector filter loads
                        {3, 3, 12, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1},   // 27: scalar; 70 filters over row tiles
                        {2, 16, 6, 11, 33, 1, 1, 1, 2, 0, 0, 1, 1},  // 1x1, stride 2 along W
                        {2, 2, 13, 12, 5, 7, 5, 2, 1, 3, 2, 1, 1}};  // 7x5 taps, C·R·S = 70
  const vulkan::gemm_config cfgs[] = {{vulkan::gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 1},
                                      {vulkan::gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 0, 1},
                                      {vulkan::gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8, 1},
                                      {vulkan::gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 3},
                                      {vulkan::gemm_kernel::tiled, 64, 64, 16, 4, 4, 8, 2, 8, 8},
                                      // 128 invocations, 4 vectors of B each per K tile
                                      {vulkan::gemm_kernel::tiled, 64, 128, 16, 8, 8, 8, 2, 8, 1}};
  unsigned seed = 80;
  for (const geom& g : geoms) {
    const auto d = make_conv2d_dims(g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, 1, shape{g.n, g.c, g.h, g.w},
                                    shape{g.kt, g.c, g.r, g.s});
    const shape xs{g.n, g.c, g.h, g.w}, ws{g.kt, g.c, g.r, g.s}, ys{g.n, g.kt, d.p, d.q};
    auto x = convert<T>(random_floats(static_cast<std::size_t>(xs.numel()), seed++));
    auto wt = convert<T>(random_floats(static_cast<std::size_t>(ws.numel()), seed++));
    auto b = convert<T>(random_floats(static_cast<std::size_t>(g.kt), seed++));
    std::vector<T> ref(static_cast<std::size_t>(ys.numel())), plain_ref(ref.size());
    op::conv2d<T, epilogue::bias_relu> o;
    o.stride_h = g.sh, o.stride_w = g.sw, o.pad_h = g.ph, o.pad_w = g.pw, o.dilation_h = g.dh, o.dilation_w = g.dw;
    op::conv2d<T> plain;
    plain.stride_h = g.sh, plain.stride_w = g.sw, plain.pad_h = g.ph, plain.pad_w = g.pw, plain.dilation_h = g.dh,
    plain.dilation_w = g.dw;
    run<policy::eigen>(o, make_view(x, xs), make_view(wt, ws), make_view(b, {g.kt}), make_view(ref, ys));
    run<policy::eigen>(plain, make_view(x, xs), make_view(wt, ws), make_view(plain_ref, ys));
    vulkan::device_tensor<T> dx(*ctx, xs), dwt(*ctx, ws), db(*ctx, {g.kt}), dy(*ctx, ys);
    dx.upload(make_view(x, xs));
    dwt.upload(make_view(wt, ws));
    db.upload(make_view(b, {g.kt}));
    const index_t crs = g.c * g.r * g.s, npq = g.n * d.p * d.q;
    for (const auto& cfg : cfgs) {
      REQUIRE(vulkan::conv2d_implicit_check(info, dt, cfg, g.kt, npq, crs) == "");
      for (const bool with_bias : {true, false}) {
        std::vector<T> y(ref.size(), static_cast<T>(nan_f));
        dy.upload(make_view(y, ys));
        vulkan::stream st(*ctx);
        const vulkan::buffer_ref br = db.ref();
        vulkan::record_conv2d_implicit(st, dt, cfg, g.n, g.c, g.h, g.w, g.kt, g.r, g.s, d.p, d.q, g.sh, g.sw, g.ph,
                                       g.pw, g.dh, g.dw, with_bias ? fn::relu : fn::identity, 0.0f, dx.ref(),
                                       dwt.ref(), with_bias ? &br : nullptr, dy.ref());
        st.run();
        dy.download(make_view(y, ys));
        check_close("conv2d implicit " + ys.str() + " " + std::to_string(g.r) + "x" + std::to_string(g.s) + " " +
                        cfg.str() + (with_bias ? " bias relu" : ""),
                    y, with_bias ? ref : plain_ref, {static_cast<float>(crs + 1)}, conv2d_tolerance(dt, crs));
      }
    }
  }
  // What the implicit GEMM refuses.
  CHECK(vulkan::conv2d_implicit_check(info, dt, vulkan::gemv_default_config(dt, 4, 4096, 4096), 4, 4096, 4096) ==
        "the implicit GEMM runs the tiled kernel, not gemv");
  CHECK(vulkan::conv2d_implicit_check(info, dt, {vulkan::gemm_kernel::tiled, 8, 256, 8, 8, 8, 8, 2, 8, 1}, 64, 4096, 64)
            .find("not a multiple of the tile's 64 column vectors") != std::string::npos);
  CHECK(vulkan::conv2d_implicit_check(info, dt, {vulkan::gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 8, 1}, 64,
                                      64ull * 70000, 64) == "a grid of more than 65535 workgroups per axis");
  CHECK(vulkan::conv2d_implicit_check(info, dt, {vulkan::gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 8, 2}, 70000, 64,
                                      64) == "a grid of more than 65535 workgroups per axis");  // the sum pass's filters
  // No im2col B: C·R·S × N·P·Q past 2^32 is fine (the explicit GEMM's B could not be built in one piece).
  CHECK(vulkan::conv2d_implicit_check(info, dt, {vulkan::gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8, 1}, 512,
                                      1048576, 4608) == "");
  CHECK_THROWS_AS(
      [&] {
        vulkan::device_tensor<T> t(*ctx, {1, 1, 3, 3});
        vulkan::stream st(*ctx);
        vulkan::record_conv2d_implicit(st, dt, vulkan::gemv_default_config(dt, 1, 9, 9), 1, 1, 3, 3, 1, 1, 1, 3, 3, 1,
                                       1, 0, 0, 1, 1, fn::identity, 0.0f, t.ref(), t.ref(), nullptr, t.ref());
      }(),
      unsupported_error);
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {
// One attention call: B, H query heads over Hkv KV heads, S queries, L keys, head dims D, Dv.
struct attn_case {
  index_t b, h, hkv, s, l, d, dv;
  bool causal = false, bshd = false;
  shape dims(index_t heads, index_t rows, index_t dim) const {
    return bshd ? shape{b, rows, heads, dim} : shape{b, heads, rows, dim};
  }
  vulkan::attention_dims vk() const { return {b, h, hkv, s, l, d, dv, causal, bshd}; }
  std::string str() const {
    return "attention B" + std::to_string(b) + " H" + std::to_string(h) + " Hkv" + std::to_string(hkv) + " S" +
           std::to_string(s) + " L" + std::to_string(l) + " D" + std::to_string(d) + " Dv" + std::to_string(dv) +
           (causal ? " causal" : "") + (bshd ? " bshd" : "");
  }
};

/// Runs c on policy P and on Eigen with random inputs (v_edit may change V
/// first) and compares; returns the output.
template <class T, class P = policy::vulkan<>>
std::vector<T> attention_case(const attn_case& c, unsigned seed, const std::function<void(std::vector<T>&)>& v_edit = {}) {
  const shape qs = c.dims(c.h, c.s, c.d), ks = c.dims(c.hkv, c.l, c.d), vs = c.dims(c.hkv, c.l, c.dv), os = c.dims(c.h, c.s, c.dv);
  auto q = convert<T>(random_floats(static_cast<std::size_t>(qs.numel()), seed));
  auto k = convert<T>(random_floats(static_cast<std::size_t>(ks.numel()), seed + 1));
  auto v = convert<T>(random_floats(static_cast<std::size_t>(vs.numel()), seed + 2));
  if (v_edit) v_edit(v);
  std::vector<T> o(static_cast<std::size_t>(os.numel())), ref(o.size());
  op::attention<T> a;
  a.causal = c.causal;
  a.layout = c.bshd ? attention_layout::bshd : attention_layout::bhsd;
  run<P>(a, make_view(q, qs), make_view(k, ks), make_view(v, vs), make_view(o, os));
  run<policy::eigen>(a, make_view(q, qs), make_view(k, ks), make_view(v, vs), make_view(ref, os));
  check_close(c.str(), o, ref, {1.0f}, attention_tolerance(dtype_of<T>(), c.d, c.l));
  return o;
}
}  // namespace

TEST_CASE_TEMPLATE("vulkan attention matches eigen: head dims, GQA, layouts, causal S < L and S > L, decode", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  const auto& info = ctx->info();
  const bool coop = dtype_of<T>() != dtype::f32 && vulkan::coopmat_f16_available(info);
  const attn_case cases[] = {
      {1, 1, 1, 1, 1, 1, 1}, {1, 2, 2, 7, 17, 8, 5, true}, {2, 1, 1, 33, 33, 16, 16, true}, {1, 3, 3, 3, 300, 7, 9},
      {1, 1, 1, 5, 3, 4, 4, true},
      // The tensor-core head dims (f16 where the device has cooperative matrices; the scalar kernel
      // elsewhere), on query and key counts just below and above the kernels' 64- and 128-row blocks
      // and 32- and 64-key blocks.
      {1, 2, 2, 63, 65, 64, 64, true}, {1, 2, 1, 129, 127, 64, 64}, {1, 1, 1, 65, 33, 80, 80, true},
      {1, 2, 2, 70, 100, 96, 96, false, true}, {1, 2, 1, 127, 129, 128, 128, true}, {1, 1, 1, 65, 64, 256, 256, true},
      {2, 4, 2, 40, 31, 32, 16}, {1, 1, 1, 130, 129, 48, 64, true},
      // Grouped KV heads in both layouts; causal with S > L (the last queries see every key).
      {2, 8, 2, 33, 17, 64, 64, true, true}, {1, 6, 3, 100, 50, 16, 16, true},
      // Decode: a few queries per KV head against long keys (the split kernel and its merge).
      {1, 8, 2, 1, 1000, 64, 64}, {2, 4, 1, 1, 1500, 128, 128, false, true}, {1, 4, 4, 3, 1100, 32, 32, true},
      {1, 16, 1, 1, 300, 80, 80}, {1, 2, 1, 8, 513, 17, 9, true},
      // Dv = 130 with scalar loads: 130 output columns over 128 invocations (two per invocation).
      {1, 4, 1, 1, 300, 130, 130}};
  unsigned seed = 40;
  int split = 0, coopmat = 0, scalar = 0;
  for (const auto& c : cases) {
    attention_case<T>(c, seed += 3);
    const auto kind = vulkan::attention_kernel_for(info, dtype_of<T>(), c.vk());
    // Few rows per KV head take the split kernel (where its shared memory fits the device), the rest
    // the coopmat kernel where it applies.
    const bool few = c.h / c.hkv * c.s <= vulkan::attention_split_max_rows &&
                     vulkan::attention_split_shared_bytes(c.vk()) <= info.max_shared_memory;
    CHECK_MESSAGE(kind == (few ? vulkan::attention_kernel::split
                           : coop && c.d % 16 == 0 && c.dv % 16 == 0 ? vulkan::attention_kernel::coopmat
                                                                       : vulkan::attention_kernel::scalar),
                  c.str());
    split += kind == vulkan::attention_kernel::split;
    coopmat += kind == vulkan::attention_kernel::coopmat;
    scalar += kind == vulkan::attention_kernel::scalar;
  }
  CHECK(split >= 5);
  CHECK(scalar + coopmat >= 10);
  if (coop) CHECK(coopmat >= 8);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE_TEMPLATE("vulkan attention: an Inf in a masked V row does not reach the output, on every kernel", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  // Causal: V row 40 (of its KV head) is Inf in column 3; rows before 40 must be finite and match Eigen.
  const attn_case cases[] = {{1, 2, 1, 70, 90, 64, 64, true},          // scalar (f32), coopmat (f16 with tensor cores)
                             {1, 4, 2, 70, 90, 32, 32, true, true},    // the same in [B,S,H,D]
                             {1, 2, 1, 3, 90, 16, 16, true},           // split: keys >= S are never read
                             {1, 2, 1, 8, 90, 16, 16, true}};          // split: row i < 7 masks key 7
  for (const auto& c : cases) {
    const index_t bad_key = std::min<index_t>(40, c.s - 1), dv = c.dv;
    const auto o = attention_case<T>(c, 70, [&](std::vector<T>& v) {
      for (index_t hk = 0; hk < c.hkv; ++hk) {
        const index_t at = c.bshd ? (bad_key * c.hkv + hk) * dv + 3 : (hk * c.l + bad_key) * dv + 3;
        v[static_cast<std::size_t>(at)] = T(std::numeric_limits<float>::infinity());
      }
    });
    for (index_t h = 0; h < c.h; ++h)
      for (index_t i = 0; i < c.s; ++i)
        for (index_t e = 0; e < dv; ++e) {
          const index_t at = c.bshd ? (i * c.h + h) * dv + e : (h * c.s + i) * dv + e;
          const float x = static_cast<float>(o[static_cast<std::size_t>(at)]);
          if (i < bad_key || e != 3) CHECK_MESSAGE(std::isfinite(x), c.str() << " row " << i << " column " << e);
          else CHECK_MESSAGE(std::isinf(x), c.str() << " row " << i << " sees the Inf");
        }
  }
  KFT_NO_VALIDATION_MESSAGES();
}

// The split (flash-decoding) kernel with each number of loads in flight a
// device may get or a user may ask for (1: CPU devices' default, 8: GPUs',
// 3: batches that end past a row's vectors and a block's keys), one key per
// invocation and 8 invocations per key (D = 20 and 16: lanes with one vector
// of the row or none; D = 9 and 130: a lane with one more than the others),
// and every other lane count the device takes for one shape; cuts of one
// chunk and of several (merged): every form matches Eigen, and a plan asking
// for more loads or other lane counts than the kernel takes is refused.
TEST_CASE_TEMPLATE("vulkan attention split: loads in flight and key cuts match eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  if (sizeof(T) == 2 && !ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const attn_case cases[] = {{1, 8, 2, 1, 1000, 64, 64}, {1, 4, 1, 3, 700, 20, 12, false, true}, {1, 2, 1, 2, 300, 9, 7},
                             {1, 2, 1, 4, 513, 16, 16, true}, {1, 4, 1, 1, 300, 130, 130}};  // the last: two columns per invocation
  unsigned seed = 200;
  int ran = 0;
  for (const auto& c : cases) {
    const auto a = c.vk();
    if (vulkan::attention_split_shared_bytes(a) > ctx->info().max_shared_memory) continue;  // not the split kernel here
    REQUIRE(vulkan::attention_kernel_for(ctx->info(), dtype_of<T>(), a) == vulkan::attention_kernel::split);
    ++ran;
    const shape qs = c.dims(c.h, c.s, c.d), ks = c.dims(c.hkv, c.l, c.d), vs = c.dims(c.hkv, c.l, c.dv), os = c.dims(c.h, c.s, c.dv);
    auto q = convert<T>(random_floats(static_cast<std::size_t>(qs.numel()), seed++));
    auto k = convert<T>(random_floats(static_cast<std::size_t>(ks.numel()), seed++));
    auto v = convert<T>(random_floats(static_cast<std::size_t>(vs.numel()), seed++));
    std::vector<T> ref(static_cast<std::size_t>(os.numel()));
    op::attention<T> at;
    at.causal = c.causal;
    at.layout = c.bshd ? attention_layout::bshd : attention_layout::bhsd;
    run<policy::eigen>(at, make_view(q, qs), make_view(k, ks), make_view(v, vs), make_view(ref, os));
    vulkan::device_tensor<T> dq(*ctx, qs), dk(*ctx, ks), dv(*ctx, vs), dout(*ctx, os);
    dq.upload(make_view(q, qs));
    dk.upload(make_view(k, ks));
    dv.upload(make_view(v, vs));
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
    auto check_plan = [&](const vulkan::attention_split_plan& plan, const std::string& what) {
      std::vector<T> o(ref.size(), static_cast<T>(std::numeric_limits<float>::quiet_NaN()));
      dout.upload(make_view(o, os));
      vulkan::stream st(*ctx);
      vulkan::record_attention(st, dtype_of<T>(), a, scale, dq.ref(), dk.ref(), dv.ref(), dout.ref(), -1, 128, nullptr, &plan);
      st.run();
      dout.download(make_view(o, os));
      check_close(c.str() + what + " splits " + std::to_string(plan.nsplit), o, ref, {1.0f},
                  attention_tolerance(dtype_of<T>(), c.d, c.l));
    };
    // (loads, lanes): CPU devices' default (1, 1), GPUs' (8, 8) (or as many lanes as the subgroups
    // allow), 8 and 3 loads of one key per lane, and w lanes with batches that end past a row's
    // vectors (3) and with one load at a time. (16-bit types: the two defaults only; llvmpipe takes
    // seconds to build each form.) Then, for the first shape, every other power of two up to the
    // device's limit.
    const std::uint32_t w = std::min<std::uint32_t>(8, vulkan::attention_split_max_lanes(ctx->info()));
    const std::pair<std::uint32_t, std::uint32_t> forms[] = {{1, 1}, {8, w}, {8, 1}, {3, 1}, {1, w}, {3, w}};
    for (std::size_t f = 0; f < (sizeof(T) == 2 ? 2 : w == 1 ? 4 : 6); ++f)
      for (const std::uint64_t groups : {1ull, 512ull}) {
        vulkan::attention_split_plan plan = vulkan::attention_split_plan_for(a, groups);
        plan.loads = forms[f].first;
        plan.lanes = forms[f].second;
        check_plan(plan, " loads " + std::to_string(plan.loads) + " lanes " + std::to_string(plan.lanes));
      }
    if (ran == 1 && sizeof(T) == 4)
      for (std::uint32_t lanes = 2; lanes <= vulkan::attention_split_max_lanes(ctx->info()); lanes *= 2) {
        if (lanes == w) continue;
        vulkan::attention_split_plan plan = vulkan::attention_split_plan_for(a, 512);
        plan.lanes = lanes;
        check_plan(plan, " lanes " + std::to_string(lanes));
      }
  }
  CHECK(ran >= 3);
  vulkan::attention_split_plan bad = vulkan::attention_split_plan_for(cases[0].vk());
  bad.loads = vulkan::attention_split_max_loads + 1;
  vulkan::device_tensor<T> x(*ctx, {1});
  vulkan::stream st(*ctx);
  CHECK_THROWS_AS(vulkan::record_attention(st, dtype_of<T>(), cases[0].vk(), 1.0f, x.ref(), x.ref(), x.ref(), x.ref(), -1, 128,
                                           nullptr, &bad),
                  argument_error);
  // Not a power of two; past the device's limit; past any subgroup.
  for (const std::uint32_t lanes : {3u, 2 * vulkan::attention_split_max_lanes(ctx->info()), 64u}) {
    bad = vulkan::attention_split_plan_for(cases[0].vk());
    bad.lanes = lanes;
    CHECK_THROWS_AS(vulkan::record_attention(st, dtype_of<T>(), cases[0].vk(), 1.0f, x.ref(), x.ref(), x.ref(), x.ref(), -1,
                                             128, nullptr, &bad),
                    argument_error);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

// bf16 reaches the coopmat kernel staged as f16 with a power-of-two scale per
// tile: values far outside f16's range (Q·2^-30 and K·2^30: plain f16 would
// make Q zero and K infinite) and V blocks of very different sizes (2^40,
// 2^-60: the scaled P·V products) must match the reference as unscaled
// data does. On devices without cooperative matrices the scalar kernel runs
// the same cases.
TEST_CASE("vulkan attention bf16: values outside f16's range, on every kernel") {
  KFT_NEED_DEVICE();
  struct wide {
    attn_case c;
    int qe, ke, ve, ve_tiny;  // Q, K, V times 2^qe, 2^ke, 2^ve; V rows 64..127 times 2^ve_tiny instead
  };
  const wide cases[] = {{{1, 2, 1, 130, 200, 64, 64, true}, -30, 30, 40, -60},
                        {{1, 4, 2, 70, 150, 128, 128, false, true}, 24, -24, -40, 30},
                        {{1, 2, 2, 40, 90, 32, 32, true}, 0, 0, 0, -70}};
  unsigned seed = 120;
  for (const auto& [c, qe, ke, ve, ve_tiny] : cases) {
    const shape qs = c.dims(c.h, c.s, c.d), ks = c.dims(c.hkv, c.l, c.d), vs = c.dims(c.hkv, c.l, c.dv), os = c.dims(c.h, c.s, c.dv);
    auto scaled = [](std::vector<float> x, int e) {
      for (auto& v : x) v = std::ldexp(v, e);
      return x;
    };
    auto q = convert<bfloat16>(scaled(random_floats(static_cast<std::size_t>(qs.numel()), seed++), qe));
    auto k = convert<bfloat16>(scaled(random_floats(static_cast<std::size_t>(ks.numel()), seed++), ke));
    std::vector<float> vf = random_floats(static_cast<std::size_t>(vs.numel()), seed++);
    for (index_t hk = 0; hk < c.hkv; ++hk)
      for (index_t j = 0; j < c.l; ++j)
        for (index_t e = 0; e < c.dv; ++e) {
          const index_t at = c.bshd ? (j * c.hkv + hk) * c.dv + e : (hk * c.l + j) * c.dv + e;
          auto& x = vf[static_cast<std::size_t>(at)];
          x = std::ldexp(x, j >= 64 && j < 128 ? ve_tiny : ve);
        }
    auto v = convert<bfloat16>(vf);
    std::vector<bfloat16> o(static_cast<std::size_t>(os.numel())), ref(o.size());
    op::attention<bfloat16> a;
    a.causal = c.causal;
    a.layout = c.bshd ? attention_layout::bshd : attention_layout::bhsd;
    run<policy::vulkan<>>(a, make_view(q, qs), make_view(k, ks), make_view(v, vs), make_view(o, os));
    run<policy::eigen>(a, make_view(q, qs), make_view(k, ks), make_view(v, vs), make_view(ref, os));
    // The output is a weighted mean of V rows: its scale is V's largest.
    check_close(c.str() + " (scaled 2^" + std::to_string(qe) + ", 2^" + std::to_string(ke) + ", 2^" + std::to_string(ve) + ")",
                o, ref, {std::ldexp(1.0f, std::max(ve, ve_tiny))}, attention_tolerance(dtype::bf16, c.d, c.l));
    int finite = 0;
    for (const auto& x : o) finite += std::isfinite(static_cast<float>(x));
    CHECK(finite == static_cast<int>(o.size()));
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention: the coopmat knob picks the kernel; an infinite V value is not finite in the output") {
  KFT_NEED_DEVICE();
  if (!ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const auto& info = ctx->info();
  const attn_case c{1, 2, 2, 40, 50, 32, 32};
  // coopmat<false>: never the tensor-core kernel; prefill takes the scalar one.
  attention_case<half, policy::vulkan<policy::coopmat<false>>>(c, 90);
  CHECK(vulkan::attention_kernel_for(info, dtype::f16, c.vk(), 0) == vulkan::attention_kernel::scalar);
  CHECK(vulkan::attention_kernel_for(info, dtype::f32, c.vk(), -1) == vulkan::attention_kernel::scalar);
  // coopmat<true>: required; refused where the head dims or the device do not allow it.
  using coop_on = policy::vulkan<policy::coopmat<true>>;
  const auto required = [](const attn_case& x, unsigned seed) { attention_case<half, coop_on>(x, seed); };
  attn_case c17 = c;
  c17.d = 17;
  CHECK_THROWS_AS(required(c17, 91), unsupported_error);
  if (vulkan::coopmat_f16_available(info)) {
    required(c, 92);
    // coopmat<true> also takes decode shapes (the split kernel is not a tensor-core kernel).
    required({1, 8, 2, 1, 300, 64, 64}, 93);
    CHECK(vulkan::attention_kernel_for(info, dtype::f16, c.vk()) == vulkan::attention_kernel::coopmat);
  } else {
    CHECK_THROWS_AS(required(c, 92), unsupported_error);
  }
  // Scores that grow by about 13 per 32-key block (k rows 0.1·j, q rows of ones): the running max
  // moves in every block, which the coopmat kernel's lazy rescaling handles by a rescale each time.
  {
    const index_t s = 40, d = 32, lg = 100;
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
  // +Inf in a V row every query sees (no mask): that column of every row is NaN or ±Inf, whichever kernel runs.
  for (const attn_case& ci : {c, attn_case{1, 4, 2, 1, 300, 32, 32}}) {
    const auto o = attention_case<half>(ci, 94, [&](std::vector<half>& v) {
      v[static_cast<std::size_t>(7 * ci.dv + 3)] = half(std::numeric_limits<float>::infinity());
    });
    for (index_t h = 0; h < ci.h / ci.hkv; ++h)  // the query heads of KV head 0
      for (index_t row = 0; row < ci.s; ++row)
        CHECK(!std::isfinite(static_cast<float>(o[static_cast<std::size_t>((h * ci.s + row) * ci.dv + 3)])));
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention: shape errors name both head counts") {
  KFT_NEED_DEVICE();
  std::vector<float> q(4 * 3 * 8), k(3 * 5 * 8), o(q.size());
  op::attention<float> a;
  try {
    run<policy::vulkan<>>(a, make_view(q, {1, 4, 3, 8}), make_view(k, {1, 3, 5, 8}), make_view(k, {1, 3, 5, 8}),
                          make_view(o, {1, 4, 3, 8}));
    FAIL("no shape_error");
  } catch (const shape_error& e) {
    const std::string m = e.what();
    CHECK(m.find("4 heads") != std::string::npos);
    CHECK(m.find("K 3") != std::string::npos);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {
/// A module with its specialization constants frozen at `spec` (id → value), validated.
std::vector<std::uint32_t> specialise(const std::vector<std::uint32_t>& spv, const std::vector<std::uint32_t>& spec) {
  std::unordered_map<std::uint32_t, std::string> values;
  for (std::size_t i = 0; i < spec.size(); ++i) values[static_cast<std::uint32_t>(i)] = std::to_string(spec[i]);
  spvtools::Optimizer opt(SPV_ENV_VULKAN_1_1);
  opt.RegisterPass(spvtools::CreateSetSpecConstantDefaultValuePass(values))
      .RegisterPass(spvtools::CreateFreezeSpecConstantValuePass())
      .RegisterPass(spvtools::CreateFoldSpecConstantOpAndCompositePass());
  std::vector<std::uint32_t> out;
  REQUIRE(opt.Run(spv.data(), spv.size(), &out));
  std::string log;
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* m) { log += m; });
  CHECK_MESSAGE(tools.Validate(out), log);
  return out;
}
/// Bytes of the Workgroup (shared) variables of a specialised module.
std::uint64_t shared_bytes(const std::vector<std::uint32_t>& spv) {
  std::map<std::uint32_t, std::uint64_t> size, constant;
  std::map<std::uint32_t, std::uint32_t> pointee;
  std::uint64_t total = 0;
  for (std::size_t i = 5; i < spv.size();) {
    const std::uint32_t op = spv[i] & 0xffffu, wc = spv[i] >> 16;
    if (!wc) break;
    if (op == 21 || op == 22) size[spv[i + 1]] = spv[i + 2] / 8;                                       // OpTypeInt/Float
    if (op == 23) size[spv[i + 1]] = size[spv[i + 2]] * spv[i + 3];                                    // OpTypeVector
    if (op == 43) constant[spv[i + 2]] = spv[i + 3];                                                   // OpConstant
    if (op == 28) size[spv[i + 1]] = size[spv[i + 2]] * constant[spv[i + 3]];                          // OpTypeArray
    if (op == 32) pointee[spv[i + 1]] = spv[i + 3];                                                    // OpTypePointer
    if (op == 59 && spv[i + 3] == 4) total += size[pointee[spv[i + 1]]];                               // OpVariable Workgroup
    i += wc;
  }
  return total;
}
}  // namespace

// No device needed: glslang compiles the attention kernels, the interface
// matches what the host binds, and each cooperative-matrix tiling the host
// picks, specialised for every head dim, is valid SPIR-V whose shared
// memory is what the host budgets (at most the H100's 48 KiB).
TEST_CASE("vulkan attention kernels compile and match their interfaces; coopmat for every head dim, f16 and bf16") {
  vulkan::device_info h100;  // what the kernel choice reads of an H100
  h100.name = "H100";
  h100.nv_coopmat_f16_16x16x16 = h100.storage_16bit = h100.fp16_arithmetic = true;
  h100.subgroup_size = 32, h100.max_shared_memory = 49152, h100.max_workgroup_invocations = 1024;
  for (const dtype dt : {dtype::f16, dtype::bf16}) {
    CAPTURE(to_string(dt));
    const auto v = vulkan::detail::make_variant("attention_coopmat", vulkan::shaders::attention_coopmat, dt,
                                                {{"KF_COOPMAT", "1"}});
    std::vector<std::uint32_t> spv;
    REQUIRE_NOTHROW(spv = vulkan::shader_compiler::compile(v));
    CHECK_NOTHROW(vulkan::check_interface(v.name, spv, {4, 40, {0, 1, 2, 3, 4, 5}}));
    const std::pair<index_t, index_t> dims[] = {{16, 16}, {32, 32}, {48, 64}, {64, 64}, {80, 80},
                                                {96, 96}, {128, 128}, {64, 128}, {256, 256}};
    for (const auto& [d, dv] : dims) {
      CAPTURE(d);
      CAPTURE(dv);
      REQUIRE(vulkan::attention_coopmat_applies(h100, dt, d, dv));
      std::vector<vulkan::attention_coopmat_config> tilings = {vulkan::attention_coopmat_default(d, dv)};
      for (std::uint32_t w : {4u, 8u})
        for (std::uint32_t rf : {1u, 2u})
          for (std::uint32_t bkv : {32u, 64u}) tilings.push_back({w, rf, bkv});
      for (const auto& c : tilings) {
        if (!vulkan::attention_coopmat_check(h100, dt, d, dv, c).empty()) continue;
        CAPTURE(c.str());
        const auto s = specialise(spv, {32 * c.warps, static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(dv), c.bkv, c.rf});
        CHECK(shared_bytes(s) == vulkan::attention_coopmat_shared_bytes(c, d, dv, dt));
        CHECK(shared_bytes(s) <= 49152);
      }
    }
  }
  CHECK(!vulkan::attention_coopmat_applies(h100, dtype::f16, 272, 272));
  CHECK(!vulkan::attention_coopmat_applies(h100, dtype::f16, 72, 72));
  CHECK(!vulkan::attention_coopmat_applies(h100, dtype::f32, 64, 64));
  // The split kernel and its merge, both dtypes and load widths; their shared memory as budgeted.
  for (const dtype dt : {dtype::f32, dtype::f16})
    for (const char* vec : {"1", "4"}) {
      const char* shuffle = vec[0] == '4' ? "1" : "0";
      const auto sv = vulkan::detail::make_variant("attention_split", vulkan::shaders::attention_split, dt,
                                                   {{"KF_VEC", vec}, {"KF_SHUFFLE", shuffle}});
      std::vector<std::uint32_t> sspv;
      REQUIRE_NOTHROW(sspv = vulkan::shader_compiler::compile(sv));
      CHECK_NOTHROW(vulkan::check_interface(sv.name, sspv, {5, 48, {0, 1, 2, 3, 4, 5}}));
      for (const vulkan::attention_dims a : {vulkan::attention_dims{1, 32, 8, 1, 4096, 128, 128},
                                            vulkan::attention_dims{1, 16, 1, 1, 100, 256, 256},
                                            vulkan::attention_dims{2, 8, 2, 2, 100, 64, 64},
                                            vulkan::attention_dims{1, 4, 1, 1, 100, 63, 63}})
        if ((vec[0] == '4') == (a.d % 4 == 0)) {
          const auto s = specialise(sspv, {vulkan::attention_split_wg, static_cast<std::uint32_t>(a.d),
                                           static_cast<std::uint32_t>(a.dv), static_cast<std::uint32_t>(a.group() * a.s), 8,
                                           shuffle[0] == '1' ? 8u : 1u});
          CHECK(shared_bytes(s) == vulkan::attention_split_shared_bytes(a));
        }
    }
  const auto mv = vulkan::detail::make_variant("attention_merge", vulkan::shaders::attention_merge, dtype::f16, {});
  std::vector<std::uint32_t> mspv;
  REQUIRE_NOTHROW(mspv = vulkan::shader_compiler::compile(mv));
  CHECK_NOTHROW(vulkan::check_interface(mv.name, mspv, {2, 48, {0, 1, 2, 3}}));
}
