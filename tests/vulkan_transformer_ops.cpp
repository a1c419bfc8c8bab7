// tests/vulkan_transformer_ops.cpp — the transformer-block ops' typed errors
// on policy::vulkan (validation layer on); their numerics run through vulkan_suite.
#include "transformer_ops_checks.hpp"
#include "vulkan_common.hpp"

namespace tc = transformer_checks;
using namespace kforge;

TEST_CASE("vulkan gated: known values and typed errors") {
  KFT_NEED_DEVICE();
  tc::check_gated<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}
