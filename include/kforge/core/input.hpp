// kforge/core/input.hpp — numbers that come as text from outside the program
// (command-line options, KFORGE_* environment variables), checked against
// their documented range by one rule: a number outside its range, or text that
// is not a number, is an argument_error (env_var_error for a variable) whose
// one-line message names the option, the range and what came, e.g.
//   kforge: --eps must be a finite number > 0, got '-1'
// Nothing is clamped silently; the one exception is a thread count above its
// cap, which is capped with a warning (see env_threads).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "kforge/core/error.hpp"

namespace kforge {

/// The range a number must lie in. `whole` numbers are integers, read
/// exactly (up to 2^62); the others are finite doubles.
struct number_range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;  ///< lo itself is excluded (eps > 0)
  bool whole = false;
  /// Used as an f32: checked as the f32 it becomes (1e-50 is 0 there, and
  /// an f32 subnormal is refused too: a device may flush it to 0).
  bool f32 = false;

  /// "a whole number >= 1", "a finite number > 0", "a number in [0, 2]"
  /// (a bound at f32's limit, 3.4e38, or at a whole number's, 2^62, goes
  /// without saying).
  std::string text() const {
    auto num = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%.15g", v);
      return std::string(b);
    };
    const double limit = whole ? 4611686018427387904.0 : 3.4e38;
    const bool has_lo = lo > -limit, has_hi = hi < limit;
    std::string s = whole ? "a whole number" : has_lo && has_hi ? "a number" : "a finite number";
    if (has_lo && has_hi) return s + " in " + (lo_open ? "(" : "[") + num(lo) + ", " + num(hi) + "]";
    if (has_lo) return s + (lo_open ? " > " : " >= ") + num(lo);
    if (has_hi) return s + " <= " + num(hi);
    return s;
  }
  bool contains(double v) const {
    if (!std::isfinite(v)) return false;
    if (whole && v != std::floor(v)) return false;
    if (f32) {
      const float x = static_cast<float>(v);
      if (!std::isfinite(x) || (x != 0 && std::fabs(x) < std::numeric_limits<float>::min())) return false;
      v = x;
    }
    return (lo_open ? v > lo : v >= lo) && v <= hi;
  }
};

/// The ranges the tool and the library share (docs/TOOL.md, "What the tool refuses").
namespace number_ranges {
inline constexpr number_range positive{0, std::numeric_limits<double>::infinity(), true, false};   ///< eps, budgets
inline constexpr number_range non_negative{0, std::numeric_limits<double>::infinity(), false, false};
inline constexpr number_range finite{};
/// What a float parameter can hold: finite in f32 (alpha, beta, slope, scale), and > 0 (eps).
inline constexpr number_range finite_f32{-3.4e38, 3.4e38, false, false, true};
inline constexpr number_range positive_f32{0, 3.4e38, true, false, true};
inline constexpr number_range count{1, 1e9, false, true};             ///< reps, trials, layers: a whole number >= 1
inline constexpr number_range whole_non_negative{0, 4611686018427387904.0, false, true};  ///< seeds, offsets: [0, 2^62]
inline constexpr number_range any_whole{-4611686018427387904.0, 4611686018427387904.0, false, true};
/// Timeouts in milliseconds: > 0 and at most a day.
inline constexpr number_range timeout_ms{1, 86400000, false, true};
}  // namespace number_ranges

namespace detail {
/// Parses `text` as a number of range r, or nothing (not a number, trailing
/// characters, out of range). Whole numbers go through strtoll (exact).
inline bool parse_in_range(std::string_view text, const number_range& r, double& out) {
  const std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return false;
  char* end = nullptr;
  errno = 0;
  double v;
  if (r.whole) {
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (errno == ERANGE || i > (1ll << 62) || i < -(1ll << 62)) return false;
    v = static_cast<double>(i);
  } else {
    v = std::strtod(s.c_str(), &end);
  }
  if (end == s.c_str() || *end != 0 || !r.contains(v)) return false;
  out = v;
  return true;
}

/// Why `text`, refused by r, is refused: ", which is 0 or subnormal as the
/// f32 it is used as" where it lies in r as a double but not as an f32
/// (1e-50 passes "> 0" as a double and is 0 as an f32; r's f32 bounds keep
/// it from overflowing), and nothing otherwise.
inline std::string f32_note(std::string_view text, const number_range& r) {
  if (!r.f32) return "";
  number_range as_double = r;
  as_double.f32 = false;
  double v = 0;
  if (!parse_in_range(text, as_double, v)) return "";
  return ", which is 0 or subnormal as the f32 it is used as (magnitude < 1.17549e-38)";
}
}  // namespace detail

/// The number an option gives, checked against its range; argument_error
/// "kforge: --<name> must be <range>, got '<text>'" otherwise.
inline double option_number(std::string_view name, std::string_view text, const number_range& r) {
  double v = 0;
  if (!detail::parse_in_range(text, r, v))
    throw argument_error("kforge: --" + std::string(name) + " must be " + r.text() + ", got '" + std::string(text) + "'" +
                         detail::f32_note(text, r));
  return v;
}
/// option_number for a whole number that must fit a long long.
inline long long option_integer(std::string_view name, std::string_view text, number_range r) {
  r.whole = true;
  return static_cast<long long>(option_number(name, text, r));
}

/// A KFORGE_* variable outside its documented range. An argument_error, so
/// that callers treating bad input alike need not know the difference; the
/// tool turns it into exit 2.
class env_var_error : public argument_error {
 public:
  using argument_error::argument_error;
};

/// The number in environment variable `name` (unset or empty: `fallback`),
/// checked against r; env_var_error otherwise.
inline double env_number(const char* name, const number_range& r, double fallback) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  double v = 0;
  if (!detail::parse_in_range(e, r, v))
    throw env_var_error("kforge: " + std::string(name) + " must be " + r.text() + ", got '" + std::string(e) + "'" +
                        detail::f32_note(e, r));
  return v;
}
/// An on/off variable: unset, empty or 0 is off, 1 is on, anything else an env_var_error.
inline bool env_flag(const char* name) {
  return env_number(name, number_range{0, 1, false, true}, 0) == 1;
}

/// Threads from variable `name`: a whole number >= 1 (env_var_error
/// otherwise); above `cap`, `cap` with a one-line warning on stderr (once per
/// call site: callers keep the result in a static).
inline int env_threads(const char* name, int cap, int fallback) {
  const double v = env_number(name, number_range{1, 4611686018427387904.0, false, true}, fallback);
  if (v > cap) {
    std::fprintf(stderr, "kforge: warning: %s=%s is more than %d threads; using %d\n", name, std::getenv(name), cap, cap);
    return cap;
  }
  return static_cast<int>(v);
}

}  // namespace kforge
