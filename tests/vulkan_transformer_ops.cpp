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
