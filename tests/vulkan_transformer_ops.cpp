// tests/vulkan_transformer_ops.cpp — the transformer-block ops' typed errors
// and kv_append's in-place property on policy::vulkan, host views and device
// tensors (validation layer on); their numerics run through vulkan_suite.
#include "transformer_ops_checks.hpp"
#include "vulkan_common.hpp"

namespace tc = transformer_checks;
using namespace kforge;

TEST_CASE("vulkan gated: known values and typed errors") {
  KFT_NEED_DEVICE();
  tc::check_gated<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan kv_append: host views write rows [pos, pos + T) and nothing else; typed errors") {
  KFT_NEED_DEVICE();
  tc::check_kv_append_in_place<policy::vulkan<>, float>();
  tc::check_kv_append_in_place<policy::vulkan<>, half>();
  tc::check_kv_append_in_place<policy::vulkan<>, bfloat16>();
  tc::check_kv_append_errors<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan kv_append on device tensors: decode steps fill the cache in place") {
  KFT_NEED_DEVICE();
  const index_t b = 2, h = 3, d = 7, lmax = 6;
  std::vector<float> cache(static_cast<std::size_t>(b * lmax * h * d), -5.0f);
  auto dc = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(cache.data(), shape{b, lmax, h, d}));
  for (index_t step = 0; step < 4; ++step) {  // rows 0..3 written one token at a time; rows 4, 5 keep -5
    std::vector<float> x(static_cast<std::size_t>(b * h * d), static_cast<float>(step));
    auto dx = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(x.data(), shape{b, 1, h, d}));
    run<policy::vulkan<>>(op::kv_append<float>{step}, dx, dc);
  }
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::kv_append<float>{lmax}, vulkan::device_tensor<float>(*ctx, shape{b, 1, h, d}), dc),
                  argument_error);
  dc.download(tensor_view<float>(cache.data(), shape{b, lmax, h, d}));
  int bad = 0;
  for (index_t i = 0; i < b * lmax * h * d; ++i) {
    const index_t row = (i / (h * d)) % lmax;
    bad += cache[static_cast<std::size_t>(i)] != (row < 4 ? static_cast<float>(row) : -5.0f);
  }
  CHECK(bad == 0);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention kv_len on host views: keys [0, kv_len) of a longer cache; typed errors") {
  KFT_NEED_DEVICE();
  tc::check_attention_kv_len<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention kv_len on device tensors: one sequence reads a prefix of the cache, two gather their rows") {
  KFT_NEED_DEVICE();
  for (const index_t b : {index_t{1}, index_t{2}}) {
    const index_t s = 2, h = 4, hkv = 2, d = 16, lmax = 11;
    std::vector<float> q(static_cast<std::size_t>(b * s * h * d)), cache(static_cast<std::size_t>(b * lmax * hkv * d));
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.3f * static_cast<float>(i));
    for (std::size_t i = 0; i < cache.size(); ++i) cache[i] = std::cos(0.05f * static_cast<float>(i));
    auto dq = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(q.data(), shape{b, s, h, d}));
    auto dk = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(cache.data(), shape{b, lmax, hkv, d}));
    vulkan::device_tensor<float> dv(*ctx, shape{b, lmax, hkv, d}), dout(*ctx, shape{b, s, h, d});
    std::vector<float> vhost(cache.size(), std::numeric_limits<float>::infinity());  // rows past kv_len: Inf
    for (index_t kv_len : {index_t{1}, index_t{6}, lmax}) {
      for (index_t bi = 0; bi < b; ++bi)
        for (index_t l = 0; l < kv_len; ++l)
          for (index_t e = 0; e < hkv * d; ++e) {
            const std::size_t i = static_cast<std::size_t>((bi * lmax + l) * hkv * d + e);
            vhost[i] = std::sin(0.02f * static_cast<float>(i));
          }
      dv.upload(tensor_view<const float>(vhost.data(), shape{b, lmax, hkv, d}));
      const op::attention<float> a{.layout = attention_layout::bshd, .kv_len = kv_len};
      vulkan::stream st(*ctx);
      vulkan::record(st, a, dq, dk, dv, dout);
      st.run();
      CHECK(st.copy_count() == (b == 1 || kv_len == lmax ? 0u : 4u));  // K and V of two sequences
      std::vector<float> got(q.size()), ref(q.size());
      dout.download(tensor_view<float>(got.data(), shape{b, s, h, d}));
      run<policy::eigen>(a, tensor_view<const float>(q.data(), shape{b, s, h, d}),
                         tensor_view<const float>(cache.data(), shape{b, lmax, hkv, d}),
                         tensor_view<const float>(vhost.data(), shape{b, lmax, hkv, d}), tensor_view<float>(ref.data(), shape{b, s, h, d}));
      double err = 0;
      for (std::size_t i = 0; i < got.size(); ++i) err = std::isfinite(got[i]) ? std::max(err, std::fabs(double(got[i]) - ref[i])) : 1e30;
      CHECK_MESSAGE(err < 1e-5, "B " << b << ", kv_len " << kv_len << ": max error " << err);
    }
  }
  KFT_NO_VALIDATION_MESSAGES();
}
