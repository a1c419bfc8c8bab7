// tests/cpu_empty.cpp — empty tensors (tests/empty_checks.hpp) on the Eigen
// reference, policy::blocked and policy::threaded.
#include "empty_checks.hpp"

using namespace kforge;

TEST_CASE("empty tensors: every op on the Eigen reference, blocked and threaded") {
  const int ran = kft_empty::check_empty_tensors<policy::eigen>();
  CHECK(ran > 80);
  CHECK(kft_empty::check_empty_tensors<policy::blocked<>>() == ran);
  CHECK(kft_empty::check_empty_tensors<policy::threaded<>>() == ran);
}
