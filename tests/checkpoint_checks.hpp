// tests/checkpoint_checks.hpp — what the checkpoint-file tests share: the
// checked-in data's directory and the message of the checkpoint_error a
// call throws.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "kforge/model/safetensors.hpp"

namespace ktest {

/// tests/data/<sub> (ctest passes tests/data as KFORGE_TEST_DATA).
inline std::filesystem::path test_data(const std::string& sub) {
  const char* root = std::getenv("KFORGE_TEST_DATA");
  REQUIRE_MESSAGE(root != nullptr, "KFORGE_TEST_DATA names tests/data (ctest sets it)");
  return std::filesystem::path(root) / sub;
}

/// The message of the checkpoint_error f throws (fails the case if none).
template <class F>
std::string checkpoint_error_of(F&& f) {
  try {
    f();
  } catch (const kforge::model::checkpoint_error& e) {
    return e.what();
  }
  FAIL("no checkpoint_error thrown");
  return {};
}

}  // namespace ktest
