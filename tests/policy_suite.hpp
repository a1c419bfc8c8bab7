// tests/policy_suite.hpp — the one test body every backend runs (STYLE habit
// 10): the standard catalog of problems (every op, odd shapes, every listed
// dtype) through the validation suite against the Eigen reference.
#pragma once

#include <doctest/doctest.h>

#include <kforge/validate.hpp>

#include <string>
#include <vector>

namespace kforge::test {

/// Validates every catalog problem of the given dtypes under `candidate`.
/// `small` trims sizes for slow devices. Returns the number of problems run.
inline int check_catalog(const executor& candidate, const std::vector<dtype>& types, bool small = false,
                         const suite_options& opt = {}) {
  int n = 0;
  for (dtype t : types)
    for (const problem& p : test_problems(t, small)) {
      const report r = validate(p, candidate, opt);
      INFO(r.to_json());
      CHECK_MESSAGE(r.all_passed, describe(p));
      ++n;
    }
  return n;
}

template <class Policy>
int check_policy(const std::vector<dtype>& types = {dtype::f32, dtype::f16, dtype::bf16}, bool small = false) {
  return check_catalog(executor(&execute<Policy>), types, small);
}

}  // namespace kforge::test
