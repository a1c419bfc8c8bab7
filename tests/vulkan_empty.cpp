// tests/vulkan_empty.cpp — empty tensors (tests/empty_checks.hpp) on
// policy::vulkan: host views for every op, and device tensors, where nothing
// is uploaded and a call with no output element records nothing.
#include "empty_checks.hpp"
#include "vulkan_common.hpp"

using namespace kforge;

TEST_CASE("empty tensors: every op on policy::vulkan (host views)") {
  KFT_NEED_DEVICE();
  CHECK(kft_empty::check_empty_tensors<policy::vulkan<>>() > 80);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("empty tensors: device tensors of no element, and sums over nothing, on policy::vulkan") {
  KFT_NEED_DEVICE();
  using P = policy::vulkan<>;
  using dt = vulkan::device_tensor<float>;
  const std::vector<float> ones(64, 1.0f), twos(64, 2.0f);
  // An empty gemm writes nothing; one over K = 0 writes act(beta * C + bias).
  {
    dt a(*ctx, {0, 4}), b = dt::from_host(*ctx, tensor_view<const float>(ones.data(), shape{4, 5})), c(*ctx, {0, 5});
    run<P>(op::gemm<float>{}, a, b, c);
    CHECK(c.to_vector().empty());
  }
  {
    dt a(*ctx, {3, 0}), b(*ctx, {0, 5});
    dt bias = dt::from_host(*ctx, tensor_view<const float>(ones.data(), shape{5}));
    dt c = dt::from_host(*ctx, tensor_view<const float>(twos.data(), shape{3, 5}));
    run<P>(op::gemm<float, epilogue::bias_relu>{.beta = 0.5f}, a, b, bias, c);
    for (float v : c.to_vector()) CHECK(v == 2.0f);
  }
  {
    dt x(*ctx, {0, 7}), y(*ctx, {0, 7});
    run<P>(op::softmax<float>{}, x, y);
    run<P>(op::rms_norm<float>{}, x, dt(*ctx, {7}), y);
    CHECK(y.numel() == 0);
  }
  {
    dt x(*ctx, {3, 0}), y = dt::from_host(*ctx, tensor_view<const float>(twos.data(), shape{3}));
    run<P>(op::reduce<float, reduce_fn::sum>{.axis = 1}, x, y);
    for (float v : y.to_vector()) CHECK(v == 0.0f);
    run<P>(op::reduce<float, reduce_fn::mean>{.axis = 1}, x, y);
    for (float v : y.to_vector()) CHECK(std::isnan(v));
    CHECK_THROWS_AS(run<P>(op::reduce<float, reduce_fn::max>{.axis = 1}, x, y), argument_error);
  }
  if (ctx->info().storage_16bit) {
    // 16-bit outputs of an odd count: the fill writes whole words, within the tensor's padded allocation.
    vulkan::device_tensor<half> x(*ctx, {3, 0}), y(*ctx, {3}), z(*ctx, {1});
    z.upload(std::vector<half>{half(5.0f)});
    run<P>(op::reduce<half, reduce_fn::mean>{.axis = 1}, x, y);
    for (half v : y.to_vector()) CHECK(std::isnan(static_cast<float>(v)));
    CHECK(static_cast<float>(z.to_vector()[0]) == 5.0f);
  }
  KFT_NO_VALIDATION_MESSAGES();
}
