// tests/cpu_suite_threaded.cpp — the shared validation suite (tests/policy_suite.hpp:
// every op of the catalog, odd shapes, f32/f16/bf16, ten input cases
// including zeros, extremes, NaN and Inf) run for policy::threaded<>.
// One policy per translation unit keeps each compile light and lets -j2 build
// them side by side.
#include <doctest/doctest.h>

#include <kforge/kforge.hpp>
#include <kforge/validate.hpp>

#include "policy_suite.hpp"

using namespace kforge;

TEST_CASE("policy::threaded<> passes the validation suite in every dtype") { CHECK(test::check_policy<policy::threaded<>>() > 100); }
