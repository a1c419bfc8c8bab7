// tests/vulkan_bf16_fallback.cpp — bf16 on a device without 16-bit storage.
// This executable's default context is made with
// context_options::use_16bit_storage = false, so any device plays one: host
// bf16 data given to policy::vulkan<> is widened to f32, computed by the f32
// kernels and rounded back (the bf16 catalog passes the validation suite
// that way; embedding and topk give bf16 bits back, beside int32 ids and
// indices), while bf16 and f16 device tensors are refused with an
// unsupported_error that names the device. Validation layer on, zero messages.
#include "policy_suite.hpp"
#include "transformer_ops_checks.hpp"
#include "vulkan_common.hpp"

#include <kforge/vulkan/tuning.hpp>

using namespace kforge;

static const bool without_16bit_storage = [] {
  kft::test_options().use_16bit_storage = false;
  return true;
}();

TEST_CASE("vulkan without 16-bit storage: bf16 and f16 device tensors are refused, bf16 host data is f32 on the device") {
  KFT_NEED_DEVICE();
  REQUIRE(!ctx->info().storage_16bit);
  CHECK(vulkan::device_dtype(ctx->info(), dtype::bf16) == dtype::f32);
  CHECK(!vulkan::coopmat2_available(ctx->info(), dtype::bf16));
  using transformer_checks::message_of;
  const std::string bf16_msg = message_of<unsupported_error>([&] { vulkan::device_tensor<bfloat16> t(*ctx, {4}); });
  const std::string f16_msg = message_of<unsupported_error>([&] { vulkan::device_tensor<half> t(*ctx, {4}); });
  for (const std::string& msg : {bf16_msg, f16_msg}) {
    CHECK(msg.find(ctx->info().name) != std::string::npos);
    CHECK(msg.find("storageBuffer16BitAccess") != std::string::npos);
  }
  CHECK(bf16_msg.find("bf16 tensors") != std::string::npos);
  CHECK(f16_msg.find("f16 tensors") != std::string::npos);
  // A host call's buffers are f32, and the result is the f32 result rounded to bf16.
  std::vector<bfloat16> x{bfloat16(1.5f), bfloat16(-2.0f), bfloat16(3.0f)}, y(3);
  const tensor_view<const bfloat16> xv(x.data(), shape{3});
  vulkan::detail::call<bfloat16> c({&xv}, make_view(y, {3}));
  CHECK(c.dt == dtype::f32);
  vulkan::record_unary(c.s(), c.dt, 64, fn::neg, 0.0f, 3, c.in(0), c.out());
  c.finish();
  CHECK(static_cast<float>(y[0]) == -1.5f);
  CHECK(static_cast<float>(y[1]) == 2.0f);
  CHECK(static_cast<float>(y[2]) == -3.0f);
  // The tuner's bf16 space is the f32 one.
  CHECK(vulkan::valid_configs(*ctx, dtype::bf16).size() == vulkan::valid_configs(*ctx, dtype::f32).size());
  CHECK(vulkan::valid_configs(*ctx, dtype::f16).empty());
  KFT_NO_VALIDATION_MESSAGES();
}

// embedding and topk take bf16 data and int32 ids or indices in one call: the
// bf16 operands are widened, the int32 ones copied as they are.
TEST_CASE("vulkan without 16-bit storage: embedding and topk of bf16 host data give the bf16 bits back") {
  KFT_NEED_DEVICE();
  REQUIRE(!ctx->info().storage_16bit);
  namespace tc = transformer_checks;
  vulkan::detail::call<bfloat16> c(vulkan::detail::call<bfloat16>::by_operand);
  CHECK(c.dt == dtype::f32);
  tc::check_embedding_values<policy::vulkan<>, bfloat16>();
  tc::check_embedding_errors<policy::vulkan<>>();
  tc::check_topk_order<policy::vulkan<>, bfloat16>();
  tc::check_argmax_rows<policy::vulkan<>, bfloat16>();
  tc::check_bf16_moved<policy::vulkan<>>(/*nan_payloads=*/false);  // f32 keeps a NaN a NaN, not its payload
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan without 16-bit storage: the bf16 catalog passes the validation suite as f32") {
  KFT_NEED_DEVICE();
  REQUIRE(!ctx->info().storage_16bit);
  const int n = kforge::test::check_policy<policy::vulkan<>>({dtype::bf16}, /*small=*/true);
  CHECK(n > 50);
  KFT_NO_VALIDATION_MESSAGES();
}
