// The shared test body (tests/policy_suite.hpp) for policy::vulkan: the whole
// standard catalog — every op, odd shapes, f32/f16/bf16 — through the 10-case
// validation suite against Eigen, on whatever Vulkan device exists (lavapipe
// in CI; sizes trimmed), with the validation layer on and zero messages.
#include "policy_suite.hpp"
#include "vulkan_common.hpp"

TEST_CASE("policy::vulkan passes the validation suite on the standard catalog") {
  KFT_NEED_DEVICE();
  const int n = kforge::test::check_policy<kforge::policy::vulkan<>>(
      {kforge::dtype::f32, kforge::dtype::f16, kforge::dtype::bf16}, /*small=*/true);
  CHECK(n > 150);
  KFT_NO_VALIDATION_MESSAGES();
}
