// tests/vulkan_common.hpp — shared helpers of the Vulkan test executables:
// the test context (validation layer on where installed, a private cache
// directory), the skip rule for machines without a Vulkan device, and the
// comparison against the Eigen reference with the ops' own tolerances.
#pragma once

#include <doctest/doctest.h>

// Tests name only the context_options they set (designated initialisers).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <kforge/vulkan.hpp>

#include "scratch_dir.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace kft {

using namespace kforge;

inline std::string test_cache_dir() { return ktest::scratch_dir("kforge-vk-test-").string(); }

/// The per-wait timeout of the tests' contexts: lavapipe compiles a pipeline
/// inside the first submission that uses it, and with a cold Mesa shader
/// cache on a loaded 2-core machine (ctest -j2 beside a build) a submission
/// with several new pipelines took more than the default 5 s. A wait that
/// hangs still ends, 60 s later; the timeout's own test sets its own.
inline constexpr std::chrono::milliseconds test_wait_timeout{60000};

/// The options of the tests' default context: validation on wherever the
/// layer is installed, test_wait_timeout, a private cache directory. A test
/// executable may change them before its first test (static initialisation:
/// tests/vulkan_bf16_fallback.cpp turns 16-bit storage off).
inline vulkan::context_options& test_options() {
  // The contexts kforge creates itself read their wait timeout from
  // KFORGE_VK_TIMEOUT_MS: they get test_wait_timeout too, unless it is set.
  static const bool long_waits = ::setenv("KFORGE_VK_TIMEOUT_MS", "60000", 0) == 0;
  (void)long_waits;
  static vulkan::context_options o{.validation = vulkan::validation_layer_available() ? 1 : 0,
                                   .timeout = test_wait_timeout, .cache_dir = test_cache_dir()};
  return o;
}

/// The default context for tests (test_options()), or nullptr (with a printed
/// reason) when no Vulkan device exists.
inline vulkan::context* test_context() {
  static vulkan::context* ctx = [] () -> vulkan::context* {
    try {
      if (!vulkan::validation_layer_available())
        std::printf("kforge vulkan tests: VK_LAYER_KHRONOS_validation not installed; running without it\n");
      return &vulkan::reset_default_context(test_options());
    } catch (const vulkan::no_device& e) {
      std::printf("kforge vulkan tests skipped: %s\n", e.what());
      return nullptr;
    }
  }();
  if (ctx && ctx->lost()) ctx = &vulkan::reset_default_context(test_options());
  return ctx;
}

#define KFT_NEED_DEVICE()                                          \
  auto* ctx = kft::test_context();                                 \
  if (!ctx) {                                                      \
    MESSAGE("skipped: no Vulkan device");                          \
    return;                                                        \
  }                                                                \
  [[maybe_unused]] const std::size_t kft_messages_before = ctx->validation_message_count()

/// Fails the test when validation reported anything since KFT_NEED_DEVICE.
#define KFT_NO_VALIDATION_MESSAGES()                                                              \
  do {                                                                                            \
    const auto msgs = ctx->validation_messages();                                                 \
    for (std::size_t i = kft_messages_before; i < msgs.size(); ++i) FAIL_CHECK(msgs[i]);          \
    CHECK(msgs.size() == kft_messages_before);                                                    \
  } while (0)

inline std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

template <class T>
std::vector<T> convert(const std::vector<float>& v) {
  std::vector<T> o(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) o[i] = static_cast<T>(v[i]);
  return o;
}
template <class T>
std::vector<float> widen(const std::vector<T>& v) {
  std::vector<float> o(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) o[i] = static_cast<float>(v[i]);
  return o;
}

/// Element-wise comparison with tolerance t: |out-ref| <= atol·scale + rtol·|ref| + ulps·ulp(ref).
/// `scale` has one entry per element, or one for all. NaN must meet NaN; Inf the same Inf.
template <class T>
void check_close(const std::string& what, const std::vector<T>& out_t, const std::vector<T>& ref_t,
                 const std::vector<float>& scale, tolerance t) {
  const auto out = widen(out_t), ref = widen(ref_t);
  REQUIRE(out.size() == ref.size());
  const dtype d = dtype_of<T>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = out[i], r = ref[i];
    bool ok;
    if (std::isnan(r)) ok = std::isnan(o);
    else if (std::isinf(r)) ok = o == r;
    else {
      const double sc = scale.size() == 1 ? scale[0] : scale[i];
      ok = std::fabs(o - r) <= t.atol * sc + t.rtol * std::fabs(r) + t.ulps * ulp_at(d, r);
    }
    if (!ok && bad++ < 5)
      FAIL_CHECK(what << " [" << to_string(d) << "] element " << i << ": got " << o << ", reference " << r);
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << out.size() << " elements outside tolerance");
}

}  // namespace kft
