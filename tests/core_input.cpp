// Numbers from outside (core/input.hpp: one range rule for options and
// KFORGE_* variables) and a problem's memory, refused before allocation
// (validate/problem.hpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <kforge/core/input.hpp>
#include <kforge/validate/problem.hpp>

using namespace kforge;

namespace {
std::string message_of(auto&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("option_number: in range, or an argument_error naming the option, the range and the text") {
  CHECK(option_number("eps", "1e-5", number_ranges::positive_f32) == doctest::Approx(1e-5));
  CHECK(option_number("reps", "3", number_ranges::count) == 3);
  CHECK(message_of([] { option_number("eps", "-1", number_ranges::positive_f32); }) ==
        "kforge: --eps must be a finite number > 0, got '-1'");
  // > 0 as a double, 0 as the f32 it is used as: refused, and the message says why.
  CHECK(message_of([] { option_number("eps", "1e-50", number_ranges::positive_f32); }) ==
        "kforge: --eps must be a finite number > 0, got '1e-50', which is 0 or subnormal as the f32 it is used as "
        "(magnitude < 1.17549e-38)");
  for (const char* bad : {"nan", "inf", "-inf", "0", "1e39", "abc", "", " 1", "1 ", "1e", "0x"})
    CHECK_THROWS_AS(option_number("eps", bad, number_ranges::positive_f32), argument_error);
  // Whole numbers are read exactly and refuse fractions and overflow.
  CHECK(option_integer("seed", "4611686018427387904", number_ranges::whole_non_negative) == (1ll << 62));
  for (const char* bad : {"1.5", "1e3", "-1", "4611686018427387905", "99999999999999999999"})
    CHECK_THROWS_AS(option_integer("seed", bad, number_ranges::whole_non_negative), argument_error);
  CHECK(message_of([] { option_number("temperature", "2.5", {0, 2, false, false}); }) ==
        "kforge: --temperature must be a number in [0, 2], got '2.5'");
  CHECK(message_of([] { option_number("reps", "0", {1, 1000000, false, true}); }) ==
        "kforge: --reps must be a whole number in [1, 1000000], got '0'");
}

TEST_CASE("env_number / env_flag / env_threads: unset is the default, anything outside the range an env_var_error") {
  ::unsetenv("KFORGE_TEST_NUMBER");
  CHECK(env_number("KFORGE_TEST_NUMBER", number_ranges::timeout_ms, 5000) == 5000);
  ::setenv("KFORGE_TEST_NUMBER", "", 1);
  CHECK(env_number("KFORGE_TEST_NUMBER", number_ranges::timeout_ms, 5000) == 5000);
  ::setenv("KFORGE_TEST_NUMBER", "250", 1);
  CHECK(env_number("KFORGE_TEST_NUMBER", number_ranges::timeout_ms, 5000) == 250);
  for (const char* bad : {"0", "-3", "abc", "1.5", "86400001"}) {
    ::setenv("KFORGE_TEST_NUMBER", bad, 1);
    CHECK_THROWS_AS(env_number("KFORGE_TEST_NUMBER", number_ranges::timeout_ms, 5000), env_var_error);
  }
  ::setenv("KFORGE_TEST_NUMBER", "abc", 1);
  CHECK(message_of([] { env_number("KFORGE_TEST_NUMBER", number_ranges::timeout_ms, 5000); }) ==
        "kforge: KFORGE_TEST_NUMBER must be a whole number in [1, 86400000], got 'abc'");
  ::setenv("KFORGE_TEST_NUMBER", "1", 1);
  CHECK(env_flag("KFORGE_TEST_NUMBER"));
  ::setenv("KFORGE_TEST_NUMBER", "yes", 1);
  CHECK_THROWS_AS(env_flag("KFORGE_TEST_NUMBER"), env_var_error);
  ::setenv("KFORGE_TEST_NUMBER", "100000", 1);
  CHECK(env_threads("KFORGE_TEST_NUMBER", 64, 2) == 64);  // capped (with a warning on stderr)
  ::setenv("KFORGE_TEST_NUMBER", "-3", 1);
  CHECK_THROWS_AS(env_threads("KFORGE_TEST_NUMBER", 64, 2), env_var_error);
  ::unsetenv("KFORGE_TEST_NUMBER");
  CHECK(env_threads("KFORGE_TEST_NUMBER", 64, 2) == 2);
}

TEST_CASE("tensor_bytes and validation_bytes count what allocate() and the suite hold") {
  problem p;
  p.op = "gemm";
  set_shape(p, "200000x200000x10");
  // A [M,K], B [K,N], C [M,N] in f32.
  const double t = 4.0 * (200000.0 * 10 + 10 * 200000.0 + 200000.0 * 200000.0);
  CHECK(tensor_bytes(p) == t);
  CHECK(validation_bytes(p) == 4 * t + 16 * 200000.0 * 200000.0);
  p.type = dtype::f16;
  CHECK(tensor_bytes(p) == t / 2);
  CHECK(tensor_bytes(p, dtype::f32) == t);
  problem small;
  small.op = "relu";
  set_shape(small, "3x5");
  double sum = 0;
  for (const host_tensor& h : allocate(small)) sum += static_cast<double>(h.storage.size());
  CHECK(tensor_bytes(small) == sum);
}

TEST_CASE("require_memory refuses with the bytes and the limit, before anything is allocated") {
  problem p;
  p.op = "gemm";
  set_shape(p, "200000x200000x10");
  const std::string m = message_of([&] { require_memory(p, validation_bytes(p), "validation", {1e9, "a test limit"}); });
  CHECK(m.find("gemm [200000x200000x10] f32 needs 1280.1 GB (validation; its tensors are 160.0 GB), more than the 1.0 GB "
               "limit (a test limit)") != std::string::npos);
  CHECK_THROWS_AS(require_memory(p, validation_bytes(p), "validation", host_memory_limit()), memory_error);
  problem small;
  small.op = "relu";
  set_shape(small, "3x5");
  CHECK_NOTHROW(require_memory(small, validation_bytes(small), "validation", host_memory_limit()));
  CHECK(host_memory_limit().bytes > 0);
  // A shape past 2^53 elements is refused by the parser (no product of its dims can overflow).
  CHECK_THROWS_AS(parse_dims("99999999999x99999999999"), argument_error);
}
