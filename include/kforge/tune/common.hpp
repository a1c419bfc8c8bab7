// kforge/tune/common.hpp — what every part of the tuner shares: the cache
// directory, the identity of the host CPU, the library version, configs as
// ordered key/value lists, and the shape-bucket rule.
//
// Shape buckets (docs/TUNING.md): every dim is rounded up to the next power of
// two (0 and 1 stay as they are), so gemm 200x250x256 and 129x256x200 share
// the bucket 256x256x256. Power-of-two buckets keep a cache small (one entry
// per octave per dim) while a blocking that wins at one end of an octave is
// measured to stay within a few per cent at the other end on the machines
// kforge is tuned on; a shape that needs its own entry can still be tuned
// exactly, because the tuner always times the shape it is given.
#pragma once

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/core/json.hpp"
#include "kforge/core/tensor.hpp"

#if __has_include("kforge/cpu/thread_pool.hpp")
#include "kforge/cpu/isa.hpp"
#include "kforge/cpu/thread_pool.hpp"
#define KFORGE_TUNE_HAS_CPU_BACKEND 1
#endif

namespace kforge::tune {

/// The library version that goes into every cache key: set by the kforge::tune
/// CMake target from project(VERSION); a tuning made by another version of
/// the kernels is never reused.
#ifdef KFORGE_VERSION_STRING
inline constexpr std::string_view kforge_version = KFORGE_VERSION_STRING;
#else
inline constexpr std::string_view kforge_version = "unversioned";
#endif

/// A candidate's knobs, in a fixed order: ("policy", "threaded"), ("mr", "12"), ...
/// Values that are integers are written to JSON as numbers, the rest as strings.
using config = std::vector<std::pair<std::string, std::string>>;

inline std::string config_value(const config& c, std::string_view key) {
  for (const auto& [k, v] : c)
    if (k == key) return v;
  return "";
}

inline bool is_integer_text(std::string_view s) {
  if (s.empty() || s.size() > 18) return false;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

inline void write_config(json_writer& w, const config& c) {
  w.begin_object();
  for (const auto& [k, v] : c) {
    w.key(k);
    if (is_integer_text(v)) w.raw(v);
    else w.value(v);
  }
  w.end_object();
}

inline std::string config_json(const config& c) {
  json_writer w;
  write_config(w, c);
  return w.str();
}

// ---- shape buckets ------------------------------------------------------------

/// Next power of two ≥ v (0 and 1 map to themselves).
inline index_t bucket_dim(index_t v) {
  if (v <= 1) return v;
  index_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

/// The bucket of a shape: each dim rounded up to a power of two.
inline shape bucket_of(const shape& s) {
  shape b = s;
  for (int i = 0; i < b.rank(); ++i) b[i] = bucket_dim(s[i]);
  return b;
}

/// "256x256x256" (no brackets: the form the CLI takes).
inline std::string dims_text(const shape& s) {
  std::string t;
  for (int i = 0; i < s.rank(); ++i) {
    if (i) t += 'x';
    t += std::to_string(s[i]);
  }
  return t;
}

// ---- cache location -----------------------------------------------------------

/// KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge.
inline std::filesystem::path default_cache_dir() {
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v && *v ? v : "";
  };
  if (auto d = env("KFORGE_CACHE_DIR"); !d.empty()) return d;
  if (auto d = env("XDG_CACHE_HOME"); !d.empty()) return std::filesystem::path(d) / "kforge";
  if (auto d = env("HOME"); !d.empty()) return std::filesystem::path(d) / ".cache" / "kforge";
  throw cache_error("kforge::tune: no cache directory: set KFORGE_CACHE_DIR (neither XDG_CACHE_HOME nor HOME is set)");
}

// ---- device identity ------------------------------------------------------------

/// Who a tuning belongs to. `device` names the hardware and how kforge uses it
/// (CPU model, compiled ISA, thread count: a tuning made with 2 threads says
/// nothing about 16); `driver` is what sits between kforge and the hardware
/// (for the CPU: the compiler that built the micro-kernels and the kernel
/// release; for Vulkan: the driver name and version).
struct device_identity {
  std::string device;
  std::string driver;
};

namespace detail {
inline std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}
inline std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0)
      if (auto c = line.find(':'); c != std::string::npos) return trim(line.substr(c + 1));
  return "unknown cpu";
}
inline std::string compiled_isa() {
#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
  return cpu::isa_name();
#elif defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2+fma";
#else
  return "scalar";
#endif
}
inline int cpu_threads() {
#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
  return cpu::default_num_threads();
#else
  const unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
#endif
}
}  // namespace detail

inline const device_identity& cpu_identity() {
  static const device_identity id = [] {
    device_identity d;
    d.device = "cpu " + detail::cpu_model_name() + " " + detail::compiled_isa() + " " +
               std::to_string(detail::cpu_threads()) + "t";
    std::string compiler;
#if defined(__clang__)
    compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    compiler = "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
               std::to_string(__GNUC_PATCHLEVEL__);
#else
    compiler = "unknown compiler";
#endif
    utsname u{};
    d.driver = compiler + ", " + (uname(&u) == 0 ? std::string(u.sysname) + " " + u.release : "unknown kernel");
    return d;
  }();
  return id;
}

/// A file-name-safe form of a device name: "cpu-amd-ryzen-...".
inline std::string slug(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
    if (alnum) out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "device" : out.substr(0, 120);
}

/// UTC time as "2026-11-22T05:04:00Z".
inline std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kforge::tune
