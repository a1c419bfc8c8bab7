// tests/vulkan_quant.cpp — low-precision weights on the device
// (vulkan/quant.hpp): every code of every format decoded bit for bit as
// core/quant.hpp's dequantize defines it (one-hot rows of X make Y hold W's
// values themselves), Y = X · Wᵀ against the f64 gemm of X and
// dequantize(W) for decode-sized M, odd N, K of one unit up to many (fp8:
// not a multiple of 32 too), X and Y in f32, f16 and bf16; op::gemm with a
// quantized B on policy::vulkan (host views and device tensors, alpha, beta,
// bias and activations) against its f64 meaning; non-finite codes, wrong
// shapes and bad knobs refused. Validation layer on, no message.
#include "vulkan_common.hpp"
#include "quant_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

using namespace kforge;

namespace {

/// One-hot rows: X [K, K] = I, so Y [K, N] = dequantize(W)ᵀ, each element one product.
void check_decoded_exactly(vulkan::context& ctx, const quantized_matrix& q, const vulkan::qgemv_config* cfg = nullptr) {
  const index_t n = q.rows(), k = q.cols();
  std::vector<float> x(static_cast<std::size_t>(k * k), 0.0f), y(static_cast<std::size_t>(k * n), -1.0f);
  for (index_t i = 0; i < k; ++i) x[static_cast<std::size_t>(i * k + i)] = 1.0f;
  const vulkan::quantized_tensor dw(ctx, q);
  {
    auto dx = vulkan::device_tensor<float>::from_host(ctx, tensor_view<const float>(x.data(), {k, k}));
    vulkan::device_tensor<float> dy(ctx, {k, n});
    vulkan::stream s(ctx);
    vulkan::gemm_quantized(s, dw, dx, dy, cfg);
    s.run();
    dy.download(tensor_view<float>(y.data(), {k, n}));
  }
  const std::vector<float> d = q.dequantize();
  int wrong = 0;
  for (index_t r = 0; r < n; ++r) {
    // A row whose values overflow f32 (mxfp4 under 2^127): in the dense gemm
    // of the prefill path its zeros of X meet Inf (NaN, as IEEE and the
    // reference have it); the decode kernel takes the scale out of the sum.
    const bool overflows = std::any_of(d.begin() + r * k, d.begin() + (r + 1) * k, [](float v) { return std::isinf(v); });
    if (!cfg && overflows) continue;
    for (index_t j = 0; j < k; ++j) {
      const float want = d[static_cast<std::size_t>(r * k + j)], got = y[static_cast<std::size_t>(j * n + r)];
      if (std::memcmp(&want, &got, 4) != 0 && !(want == 0 && got == 0) && wrong++ < 5)
        FAIL_CHECK(to_string(q.format()) << " W[" << r << "," << j << "]: got " << got << ", defined " << want);
    }
  }
  CHECK(wrong == 0);
}

std::vector<std::uint8_t> f16_bytes(std::uint16_t h) { return {static_cast<std::uint8_t>(h & 0xff), static_cast<std::uint8_t>(h >> 8)}; }

}  // namespace

TEST_CASE("vulkan quantized weights: every code of every format decodes as core's dequantize defines it") {
  KFT_NEED_DEVICE();
  // q8_0: 8 blocks a row cover the 256 codes, under scales from an f16 subnormal to a large one.
  {
    const std::uint16_t scales[] = {0x0001, 0x03ff, 0x1400, 0x3c00, 0x3555, 0x5a00, 0x7bff, 0xb800};
    std::vector<std::uint8_t> bytes;
    for (std::uint16_t s : scales)
      for (int b = 0; b < 8; ++b) {
        auto d = f16_bytes(s);
        bytes.insert(bytes.end(), d.begin(), d.end());
        for (int j = 0; j < 32; ++j) bytes.push_back(static_cast<std::uint8_t>(b * 32 + j));
      }
    const quantized_matrix q(qformat::q8_0, 8, 256, bytes);
    const vulkan::qgemv_config plain{128, 4, 16, 0}, pairs{128, 4, 16, 1};
    check_decoded_exactly(*ctx, q);  // M = K rows: the prefill path (dequantized in f32, the f32 gemm)
    check_decoded_exactly(*ctx, q, &plain);  // the decode kernel
    check_decoded_exactly(*ctx, q, &pairs);
  }
  // q4_0 and mxfp4: each block holds the 16 codes twice (low and high nibbles differ).
  for (qformat f : {qformat::q4_0, qformat::mxfp4}) {
    std::vector<std::uint8_t> bytes;
    const std::uint16_t q4_scales[] = {0x0001, 0x3c00, 0xc4e0, 0x7bff, 0x2e66};
    const std::uint8_t mx_scales[] = {2, 3, 100, 127, 200, 254};  // e = 1 would make 0.5·2^-126 subnormal
    const int rows = f == qformat::q4_0 ? 5 : 6;
    for (int r = 0; r < rows; ++r)
      for (int b = 0; b < 2; ++b) {
        if (f == qformat::q4_0) {
          auto d = f16_bytes(q4_scales[r]);
          bytes.insert(bytes.end(), d.begin(), d.end());
        } else {
          bytes.push_back(mx_scales[r]);
        }
        for (int j = 0; j < 16; ++j) bytes.push_back(static_cast<std::uint8_t>(((j + b) & 15) | (((j * 7 + r) & 15) << 4)));
      }
    const quantized_matrix q(f, rows, 64, bytes);
    const vulkan::qgemv_config plain{128, 4, 16, 0}, pairs{128, 4, 16, 1};
    check_decoded_exactly(*ctx, q);
    check_decoded_exactly(*ctx, q, &plain);
    if (f == qformat::q4_0) check_decoded_exactly(*ctx, q, &pairs);
  }
  // fp8: every finite code in each row, under three row scales.
  for (qformat f : {qformat::fp8_e4m3, qformat::fp8_e5m2}) {
    std::vector<std::uint8_t> bytes;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 256; ++c) {
        const bool nonfinite = f == qformat::fp8_e4m3 ? (c & 0x7f) == 0x7f : (c & 0x7c) == 0x7c;
        bytes.push_back(nonfinite ? static_cast<std::uint8_t>(r) : static_cast<std::uint8_t>(c));
      }
    const quantized_matrix q(f, 3, 256, bytes, {1.0f, 3.5f, 1e-30f});
    const vulkan::qgemv_config plain{128, 4, 16, 0};
    check_decoded_exactly(*ctx, q);
    check_decoded_exactly(*ctx, q, &plain);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan gemm_quantized is the gemm of X and dequantize(W): every format, M, odd N, K, X in f32/f16/bf16") {
  KFT_NEED_DEVICE();
  std::mt19937 rng(481);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto run_case = [&]<class T>(T, qformat f, index_t m, index_t n, index_t k, const vulkan::qgemv_config* cfg) {
    CAPTURE(to_string(f));
    CAPTURE(to_string(dtype_of<T>()));
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    std::vector<float> w(static_cast<std::size_t>(n * k));
    for (auto& v : w) v = nd(rng) * 0.05f;
    w[5] = 0.8f;  // an outlier, as trained weights have
    const quantized_matrix q = quantize(f, w.data(), n, k);
    const std::vector<float> d = q.dequantize();
    std::vector<T> x(static_cast<std::size_t>(m * k));
    for (auto& v : x) v = static_cast<T>(nd(rng));
    const vulkan::quantized_tensor dw(*ctx, q);
    auto dx = vulkan::device_tensor<T>::from_host(*ctx, tensor_view<const T>(x.data(), {m, k}));
    vulkan::device_tensor<T> dy(*ctx, {m, n});
    {
      vulkan::stream s(*ctx);
      vulkan::gemm_quantized(s, dw, dx, dy, cfg);
      s.run();
    }
    const std::vector<T> y = dy.to_vector();
    const double out_ulp = std::is_same_v<T, float> ? 0x1p-24 : std::is_same_v<T, half> ? 0x1p-11 : 0x1p-8;
    // The prefill path (no knobs, M ≥ quant_dense_rows) rounds each weight once to T (gemm_quantized_tolerance).
    const double w_round = !cfg && m >= vulkan::quant_dense_rows && !std::is_same_v<T, float> ? out_ulp / 2 : 0.0;
    int wrong = 0;
    for (index_t i = 0; i < m; ++i)
      for (index_t c = 0; c < n; ++c) {
        double ref = 0, mag = 0;
        for (index_t j = 0; j < k; ++j) {
          const double p = static_cast<double>(static_cast<float>(x[static_cast<std::size_t>(i * k + j)])) *
                           d[static_cast<std::size_t>(c * k + j)];
          ref += p;
          mag += std::fabs(p);
        }
        const double got = static_cast<float>(y[static_cast<std::size_t>(i * n + c)]);
        if (!(std::fabs(got - ref) <= (2.0 * static_cast<double>(k) * 0x1p-24 + w_round) * mag + out_ulp * std::fabs(ref) + 1e-30) &&
            wrong++ < 3)
          FAIL_CHECK("Y[" << i << "," << c << "] = " << got << ", reference " << ref);
      }
    CHECK(wrong == 0);
  };
  for (qformat f : all_qformats) {
    for (index_t k : {32, 1024, 45}) {
      if (k % 32 != 0 && info_of(f).block == 32) continue;  // fp8 only: rows of any length
      for (index_t m : {1, 2, 3, 5, 9, 21}) run_case(0.0f, f, m, 37, k, nullptr);  // 21: the prefill path
    }
    if (ctx->info().storage_16bit) {
      run_case(half(0), f, 4, 29, 256, nullptr);
      run_case(bfloat16(0), f, 1, 29, 256, nullptr);
      run_case(half(0), f, 18, 29, 256, nullptr);
      run_case(bfloat16(0), f, 33, 29, 256, nullptr);
    }
  }
  // Knobs other than the defaults: many units per invocation, one row of W, bands of X rows.
  const vulkan::qgemv_config small{32, 1, 1}, wide{64, 8, 2}, pairs{128, 4, 4, 1};
  run_case(0.0f, qformat::q4_0, 3, 17, 2048, &small);
  run_case(0.0f, qformat::q8_0, 5, 41, 512, &wide);
  // The f16-pair decoding of q8_0 and q4_0.
  run_case(0.0f, qformat::q4_0, 4, 37, 1024, &pairs);
  run_case(0.0f, qformat::q8_0, 3, 37, 1024, &pairs);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("op::gemm with a quantized B on policy::vulkan: host views and device tensors, every epilogue and dtype") {
  KFT_NEED_DEVICE();
  using cpu_test::layout;
  const quant_test::run_policy<policy::vulkan<>> host;
  // Device tensors: W uploaded once as a quantized_tensor, A, bias and C as device tensors.
  auto device = [&]<class Op, class T>(const Op& op, tensor_view<const T> a, const quantized_matrix& q,
                                       tensor_view<const T> bias, tensor_view<T> c) {
    const vulkan::quantized_tensor w(*ctx, q);
    auto da = vulkan::device_tensor<T>::from_host(*ctx, a);
    auto dc = vulkan::device_tensor<T>::from_host(*ctx, tensor_view<const T>(c));
    if constexpr (Op::epilogue_type::has_bias) {
      auto db = vulkan::device_tensor<T>::from_host(*ctx, bias);
      run<policy::vulkan<>>(op, da, w, db, dc);
    } else {
      run<policy::vulkan<>>(op, da, w, dc);
    }
    dc.download(c);
  };
  for (qformat f : all_qformats) {
    const index_t k = info_of(f).block == 32 ? 96 : 45;  // fp8: any K
    for (index_t m : {1, 6, 24}) {  // 24: the prefill path (dequantized weights, the dense gemm)
      quant_test::check_gemm<float, epilogue::none>(host, f, m, k, 37, layout::row, 1.0f, 0.0f, "vulkan host");
      quant_test::check_gemm<half, epilogue::bias_gelu>(host, f, m, k, 37, layout::col, 0.5f, 0.25f, "vulkan host");
      quant_test::check_gemm<bfloat16, epilogue::silu>(host, f, m, 64, 19, layout::strided, -1.5f, 1.0f, "vulkan host");
      quant_test::check_gemm<half, epilogue::bias_leaky_relu>(device, f, m, 64, 19, layout::row, 1.0f, 0.0f, "vulkan device");
      quant_test::check_gemm<float, epilogue::gelu_tanh>(device, f, m, k, 37, layout::row, 2.0f, -0.5f, "vulkan device");
    }
  }
  // Shapes that do not fit: a typed error before anything runs.
  const quantized_matrix q = quant_test::weights(qformat::q4_0, 8, 64, 1);
  const vulkan::quantized_tensor w(*ctx, q);
  vulkan::device_tensor<float> a(*ctx, {2, 32}), c(*ctx, {2, 8});
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::gemm<float>{}, a, w, c), shape_error);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan quantized gemm, prefill path: one scratch shared by the calls of a stream; f16 past its range takes the decode kernel") {
  KFT_NEED_DEVICE();
  std::mt19937 rng(77);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto weights = [&](index_t n, index_t k, float s) {
    std::vector<float> w(static_cast<std::size_t>(n * k));
    for (auto& v : w) v = nd(rng) * s;
    return quantize(qformat::q4_0, w.data(), n, k);
  };
  // Three gemms in one recording, the second needing a larger scratch, the
  // third reusing it after the second's gemm has read it; each against the
  // decode kernel's result (f32: both exact but for the order of the sums).
  const quantized_matrix q1 = weights(37, 64, 0.1f), q2 = weights(50, 96, 0.1f);
  const vulkan::quantized_tensor w1(*ctx, q1), w2(*ctx, q2);
  std::vector<float> hx(static_cast<std::size_t>(20 * 96));
  for (auto& v : hx) v = nd(rng);
  auto x64 = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(hx.data(), {20, 64}));
  auto x96 = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(hx.data(), {20, 96}));
  vulkan::device_tensor<float> y1(*ctx, {20, 37}), y2(*ctx, {20, 50}), y3(*ctx, {20, 37}), r1(*ctx, {20, 37}), r2(*ctx, {20, 50});
  const vulkan::qgemv_config rows{128, 2, 16};
  {
    vulkan::stream s(*ctx);
    vulkan::gemm_quantized(s, w1, x64, y1);
    vulkan::gemm_quantized(s, w2, x96, y2);
    vulkan::gemm_quantized(s, w1, x64, y3);
    vulkan::gemm_quantized(s, w1, x64, r1, &rows);
    vulkan::gemm_quantized(s, w2, x96, r2, &rows);
    s.run();
  }
  auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    int bad = 0;
    for (std::size_t i = 0; i < a.size(); ++i) bad += !(std::fabs(a[i] - b[i]) <= 1e-4f * (1.0f + std::fabs(b[i])));
    return bad;
  };
  CHECK(close(y1.to_vector(), r1.to_vector()) == 0);
  CHECK(close(y2.to_vector(), r2.to_vector()) == 0);
  CHECK(y3.to_vector() == y1.to_vector());
  // Weights past f16's largest value: no f16 copy of them; the decode kernel (f32 inside) gives the finite result.
  const quantized_matrix big = weights(5, 64, 3e4f);
  const vulkan::quantized_tensor wb(*ctx, big);
  CHECK(wb.max_abs() > 65504.0f);
  CHECK_FALSE(vulkan::quant_dense_fits(wb, dtype::f16, ctx->info()));
  CHECK(vulkan::quant_dense_fits(wb, dtype::f32, ctx->info()));
  CHECK(vulkan::quant_dense_fits(w1, dtype::f16, ctx->info()));
  if (ctx->info().storage_16bit) {
    std::vector<half> xh(static_cast<std::size_t>(20 * 64), half(0.0009765625f));  // 2^-10
    auto dx = vulkan::device_tensor<half>::from_host(*ctx, tensor_view<const half>(xh.data(), {20, 64}));
    vulkan::device_tensor<half> dy(*ctx, {20, 5});
    {
      vulkan::stream s(*ctx);
      vulkan::gemm_quantized(s, wb, dx, dy);
      s.run();
    }
    const std::vector<float> d = big.dequantize();
    const std::vector<half> y = dy.to_vector();
    for (index_t i = 0; i < 20; ++i)
      for (index_t c = 0; c < 5; ++c) {
        double ref = 0, mag = 0;
        for (index_t j = 0; j < 64; ++j) ref += d[static_cast<std::size_t>(c * 64 + j)] * 0x1p-10, mag += std::fabs(d[static_cast<std::size_t>(c * 64 + j)]) * 0x1p-10;
        const double got = static_cast<float>(y[static_cast<std::size_t>(i * 5 + c)]);
        CHECK(std::fabs(got - ref) <= 1e-5 * mag + 0x1p-10 * std::fabs(ref));
      }
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("op::embedding from a quantized table on policy::vulkan: host views and device tensors, bad ids reported") {
  KFT_NEED_DEVICE();
  const quant_test::run_embedding<policy::vulkan<>> host;
  // Device tensors: the table uploaded once as a quantized_tensor.
  auto device = [&]<class T>(const op::embedding<T>& op, const quantized_matrix& q, tensor_view<const std::int32_t> ids,
                             tensor_view<T> out) {
    kforge::detail::check_host_ids(ids, q.rows());  // what the host-view entry checks first (the device reports it too: below)
    const vulkan::quantized_tensor t(*ctx, q);
    auto di = vulkan::device_tensor<std::int32_t>::from_host(*ctx, ids);
    vulkan::device_tensor<T> dout(*ctx, out.dims);
    run<policy::vulkan<>>(op, t, di, dout);
    dout.download(out);
  };
  for (qformat f : all_qformats) {
    const index_t d = info_of(f).block == 32 ? 96 : 45;
    quant_test::check_embedding<float>(host, f, 9, d, "vulkan host");
    quant_test::check_embedding<float>(device, f, 9, d, "vulkan device");
    if (ctx->info().storage_16bit) {
      quant_test::check_embedding<half>(device, f, 5, 64, "vulkan device");
      quant_test::check_embedding<bfloat16>(host, f, 5, 64, "vulkan host");
    }
  }
  // An id out of range in a device tensor: found on the device, argument_error after the run, its row zeros.
  const quantized_matrix q = quant_test::weights(qformat::q4_0, 6, 64, 3);
  const vulkan::quantized_tensor t(*ctx, q);
  const std::vector<std::int32_t> ids{1, -3, 6, 2};
  auto di = vulkan::device_tensor<std::int32_t>::from_host(*ctx, tensor_view<const std::int32_t>(ids.data(), {4}));
  vulkan::device_tensor<float> out(*ctx, {4, 64});
  CHECK_THROWS_WITH_AS(run<policy::vulkan<>>(op::embedding<float>{}, t, di, out), doctest::Contains("id -3 at position 1"),
                       argument_error);
  const std::vector<float> got = out.to_vector();
  CHECK(std::all_of(got.begin() + 64, got.begin() + 192, [](float x) { return x == 0.0f; }));
  std::vector<float> row(64);
  q.dequantize_row(2, row.data());
  CHECK(std::equal(row.begin(), row.end(), got.begin() + 192));
  vulkan::device_tensor<float> wrong(*ctx, {4, 63});
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::embedding<float>{}, t, di, wrong), shape_error);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan quantized weights refuse non-finite codes, shapes that do not fit and bad knobs") {
  KFT_NEED_DEVICE();
  {  // core refuses the weights before any upload (tests/core_quant.cpp has the rule)
    std::vector<std::uint8_t> b(64, 0x10);
    b[37] = 0x7f;  // E4M3 NaN
    CHECK_THROWS_AS(vulkan::quantized_tensor(*ctx, quantized_matrix(qformat::fp8_e4m3, 2, 32, b, {1.0f, 1.0f})),
                    argument_error);
    b[37] = 0x7c;  // E5M2 +Inf
    CHECK_THROWS_AS(vulkan::quantized_tensor(*ctx, quantized_matrix(qformat::fp8_e5m2, 2, 32, b, {1.0f, 1.0f})),
                    argument_error);
    std::vector<std::uint8_t> mx(17, 0x11);
    mx[0] = 0xff;  // E8M0 NaN
    CHECK_THROWS_AS(vulkan::quantized_tensor(*ctx, quantized_matrix(qformat::mxfp4, 1, 32, mx)), argument_error);
    std::vector<std::uint8_t> q4(18, 0x11);
    q4[1] = 0x7c;  // f16 scale +Inf
    CHECK_THROWS_AS(vulkan::quantized_tensor(*ctx, quantized_matrix(qformat::q4_0, 1, 32, q4)), argument_error);
  }
  std::vector<float> w(64 * 3, 0.25f);
  const vulkan::quantized_tensor dw(*ctx, quantize(qformat::q8_0, w.data(), 3, 64));
  {  // the host-view overload: uploads, runs, downloads
    std::vector<float> hx(2 * 64, 1.0f), hy(2 * 3, 0.0f);
    vulkan::gemm_quantized<float>(dw, tensor_view<const float>(hx.data(), {2, 64}), tensor_view<float>(hy.data(), {2, 3}));
    for (float v : hy) CHECK(v == doctest::Approx(16.0f).epsilon(1e-3));
  }
  vulkan::device_tensor<float> x(*ctx, {2, 64}), y(*ctx, {2, 3}), bad_x(*ctx, {2, 63}), bad_y(*ctx, {2, 4});
  vulkan::stream s(*ctx);
  CHECK_THROWS_AS(vulkan::gemm_quantized(s, dw, bad_x, y), shape_error);
  CHECK_THROWS_AS(vulkan::gemm_quantized(s, dw, x, bad_y), shape_error);
  const vulkan::qgemv_config zero_rows{128, 0, 1}, too_many{128, 16, 8}, huge_wg{1u << 20, 4, 1};
  CHECK_THROWS_AS(vulkan::gemm_quantized(s, dw, x, y, &zero_rows), argument_error);
  CHECK_THROWS_AS(vulkan::gemm_quantized(s, dw, x, y, &too_many), argument_error);
  CHECK_THROWS_AS(vulkan::gemm_quantized(s, dw, x, y, &huge_wg), unsupported_error);
  CHECK_THROWS_AS(vulkan::gemm_quantized(s, vulkan::quantized_tensor{}, x, y), argument_error);  // no weights
  KFT_NO_VALIDATION_MESSAGES();
}
