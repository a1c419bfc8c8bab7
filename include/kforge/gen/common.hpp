// kforge/gen/common.hpp — small pieces every part of kforge::gen shares:
// content hashes, uuids, timestamps, the cache directory, atomic file writes,
// secret redaction, and problems to and from JSON (written with
// kforge::json_writer, parsed with simdjson).
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <simdjson.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/core/file.hpp"
#include "kforge/core/json.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge::gen {

/// FNV-1a 64: content hashes of sources, specs and SPIR-V (not for security).
inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
inline std::string hex(std::uint64_t v, int digits = 16) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf + 16 - digits);
}
inline std::string hash_hex(std::string_view s, int digits = 16) { return hex(fnv1a(s), digits); }

/// A random (version 4) uuid.
inline std::string make_uuid() {
  std::random_device rd;
  std::uint64_t a = (std::uint64_t(rd()) << 32) | rd(), b = (std::uint64_t(rd()) << 32) | rd();
  a = (a & ~0xf000ull) | 0x4000ull;
  b = (b & ~(3ull << 62)) | (2ull << 62);
  const std::string h = hex(a) + hex(b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20, 12);
}

/// A seed nobody can predict: the gate's test inputs are secret per run.
inline std::uint64_t secret_seed() {
  std::random_device rd;
  const auto t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ((std::uint64_t(rd()) << 32) | rd()) ^ (t * 0x9e3779b97f4a7c15ull);
}

/// UTC time as ISO 8601 ("2024-05-01T12:00:00Z").
inline std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge (the
/// same rule as the Vulkan backend's SPIR-V cache).
inline std::filesystem::path cache_root() {
  if (const char* d = std::getenv("KFORGE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "kforge";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "kforge";
  return std::filesystem::temp_directory_path() / "kforge-cache";
}
/// Where generation records live.
inline std::filesystem::path records_dir() { return cache_root() / "generated"; }

/// Writes text to path atomically (core/file.hpp's write_file_atomically:
/// readers never see half a record; on ENOSPC and the like the temporary
/// file is removed and cache_error names the file and the errno's text).
inline void write_atomic(const std::filesystem::path& path, std::string_view text) { write_file_atomically(path, text); }

/// Checks before any work that `dir` can take a new file (creates it, then
/// writes, flushes and removes a probe file): `kforge gen` used to learn of
/// an unwritable cache only after the model had answered and the gate had
/// passed the kernel. Throws cache_error naming the directory and errno.
inline void require_writable_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw cache_error("kforge::gen: cannot create the record directory " + dir.string() + ": " + ec.message());
  remove_orphan_temp_files(dir);
  write_atomic(dir / ".write-probe", "kforge\n");
  std::filesystem::remove(dir / ".write-probe", ec);
}

/// A file of kforge::gen (a record, a verdict, a replay, the worker's
/// request and answer) under the one rule for files kforge reads
/// (core/file.hpp: a regular file within `limit`); cache_error when missing.
inline std::string read_text(const std::filesystem::path& path, std::uintmax_t limit = file_limits::record,
                             std::string_view what = "file") {
  auto text = read_regular_file_if_exists(path, limit, what);
  if (!text) throw cache_error("kforge::gen: cannot read " + path.string() + ": it does not exist");
  return std::move(*text);
}

/// The largest kernel source read_kernel_source accepts (kforge's own kernels
/// are 2-20 KiB).
inline constexpr std::uintmax_t kernel_source_limit = file_limits::kernel_source;

/// A user's kernel file: a regular file of at most kernel_source_limit bytes
/// (not a device, FIFO or directory: `--kernel /dev/zero` would read
/// forever), else file_error (an argument_error) saying which.
/// The length of the well-formed UTF-8 sequence at s[i] (1 for ASCII), or 0
/// where the bytes there are not one: a stray continuation byte, an overlong
/// form, a surrogate, past U+10FFFF, or cut off by the end.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  const std::size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f)) return 0;
  return n;
}

/// s with every byte that is not part of well-formed UTF-8 replaced by
/// U+FFFD: what a record stores of a model's answer (a JSON reader refuses
/// raw invalid bytes, and the record would vanish from `cache list`).
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// GLSL is text: a NUL byte, another control character than tab, CR, LF or
/// form feed, or a byte sequence that is not UTF-8 is refused with a
/// file_error naming the file, the byte and its offset (a binary file used to
/// reach the worker and come back as "the worker request is not valid JSON").
inline std::string read_kernel_source(const std::filesystem::path& path) {
  std::string text = read_regular_file(path, kernel_source_limit, "kernel file");
  auto refuse = [&](std::size_t at, const char* what) {
    char b[160];
    std::snprintf(b, sizeof b, " is not GLSL text: %s (byte 0x%02x at offset %zu)", what,
                  static_cast<unsigned>(static_cast<unsigned char>(text[at])), at);
    throw file_error("kforge: kernel file '" + path.string() + "'" + b);
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0) refuse(i, "a NUL byte");
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7f) refuse(i, "a control character");
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) refuse(i, "not UTF-8");
    i += n;
  }
  return text;
}

/// The API key from KFORGE_LLM_API_KEY, else OPENAI_API_KEY ("" when unset).
inline std::string api_key_from_env() {
  for (const char* n : {"KFORGE_LLM_API_KEY", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(n); v && *v) return v;
  return "";
}

/// Replaces every occurrence of each secret (length >= 4) with [REDACTED].
/// Applied to everything that reaches a record, a log line or an exception.
inline std::string redact(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.size() < 4) continue;
    for (std::size_t at = text.find(s); at != std::string::npos; at = text.find(s, at + 10))
      text.replace(at, s.size(), "[REDACTED]");
  }
  return text;
}
/// redact() with the keys from the environment.
inline std::string redact_env(std::string text) {
  std::vector<std::string> keys;
  for (const char* n : {"KFORGE_LLM_API_KEY", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(n); v && *v) keys.emplace_back(v);
  return redact(std::move(text), keys);
}

// ---- JSON ------------------------------------------------------------------

/// A parsed JSON document (simdjson DOM) that owns its parser.
class json_doc {
 public:
  explicit json_doc(std::string_view text, std::string_view what = "JSON") : buf_(text) {
    if (parser_.parse(buf_).get(root_))
      throw cache_error("kforge::gen: " + std::string(what) + " is not valid JSON");
  }
  json_doc(const json_doc&) = delete;
  json_doc& operator=(const json_doc&) = delete;
  simdjson::dom::element root() const { return root_; }

 private:
  simdjson::padded_string buf_;
  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
};

namespace json {
inline std::string str(simdjson::dom::element e, std::string_view key, std::string dflt = "") {
  std::string_view v;
  if (e[key].get_string().get(v)) return dflt;
  return std::string(v);
}
inline double num(simdjson::dom::element e, std::string_view key, double dflt = 0) {
  simdjson::dom::element x;
  if (e[key].get(x)) return dflt;
  double d;
  if (!x.get_double().get(d)) return d;
  std::int64_t i;
  if (!x.get_int64().get(i)) return static_cast<double>(i);
  std::uint64_t u;
  if (!x.get_uint64().get(u)) return static_cast<double>(u);
  return dflt;
}
inline bool boolean(simdjson::dom::element e, std::string_view key, bool dflt = false) {
  bool b;
  if (e[key].get_bool().get(b)) return dflt;
  return b;
}
inline bool has(simdjson::dom::element e, std::string_view key) {
  simdjson::dom::element x;
  return !e[key].get(x);
}
/// Re-serialises an element (to keep nested reports verbatim in records).
inline std::string dump(simdjson::dom::element e) { return simdjson::minify(e); }
}  // namespace json

inline void write_shape(json_writer& w, std::string_view key, const shape& s) {
  w.key(key).begin_array();
  for (index_t d : s) w.value(d);
  w.end_array();
}
inline shape read_shape(simdjson::dom::element e, std::string_view key) {
  shape s;
  simdjson::dom::array a;
  if (e[key].get_array().get(a)) return s;
  for (auto v : a) {
    std::int64_t d = 0;
    if (v.get_int64().get(d)) throw cache_error("kforge::gen: shape '" + std::string(key) + "' holds a non-integer");
    s.push_back(d);
  }
  return s;
}

/// A problem as a JSON object (every field, so that it round-trips).
inline std::string problem_json(const problem& p) {
  json_writer w;
  w.begin_object().field("op", p.op).field("dtype", std::string(to_string(p.type)));
  write_shape(w, "dims", p.dims);
  write_shape(w, "dims2", p.dims2);
  w.field("epilogue", p.epilogue).field("alpha", p.alpha).field("beta", p.beta).field("slope", p.slope);
  w.field("epsilon", p.epsilon).field("scale", p.scale).field("axis", p.axis).field("causal", p.causal);
  w.key("stride").begin_array().value(p.stride[0]).value(p.stride[1]).end_array();
  w.key("pad").begin_array().value(p.pad[0]).value(p.pad[1]).end_array();
  w.key("dilation").begin_array().value(p.dilation[0]).value(p.dilation[1]).end_array();
  w.field("groups", p.groups).field("a_col_major", p.a_col_major).field("b_col_major", p.b_col_major);
  w.key("attrs").begin_object();
  for (const auto& [k, v] : p.attrs) w.field(k, v);
  w.end_object().end_object();
  return w.str();
}
inline problem problem_from_json(simdjson::dom::element e) {
  problem p;
  p.op = json::str(e, "op", "gemm");
  find_op(p.op);
  p.type = parse_dtype(json::str(e, "dtype", "f32"));
  p.dims = read_shape(e, "dims");
  p.dims2 = read_shape(e, "dims2");
  p.epilogue = json::str(e, "epilogue", "none");
  p.alpha = static_cast<float>(json::num(e, "alpha", 1));
  p.beta = static_cast<float>(json::num(e, "beta", 0));
  p.slope = static_cast<float>(json::num(e, "slope", 0.01));
  p.epsilon = static_cast<float>(json::num(e, "epsilon", -1));
  p.scale = static_cast<float>(json::num(e, "scale", 0));
  p.axis = static_cast<int>(json::num(e, "axis", -1));
  p.causal = json::boolean(e, "causal");
  auto pair = [&](const char* k, int (&out)[2]) {
    const shape s = read_shape(e, k);
    if (s.rank() == 2) out[0] = static_cast<int>(s[0]), out[1] = static_cast<int>(s[1]);
  };
  pair("stride", p.stride);
  pair("pad", p.pad);
  pair("dilation", p.dilation);
  p.groups = static_cast<int>(json::num(e, "groups", 1));
  p.a_col_major = json::boolean(e, "a_col_major");
  p.b_col_major = json::boolean(e, "b_col_major");
  simdjson::dom::object attrs;
  if (!e["attrs"].get_object().get(attrs))
    for (auto [k, v] : attrs) {
      double d = 0;
      std::int64_t i = 0;
      if (!v.get_double().get(d)) p.attrs[std::string(k)] = d;
      else if (!v.get_int64().get(i)) p.attrs[std::string(k)] = static_cast<double>(i);
      else throw cache_error("kforge::gen: attribute '" + std::string(k) + "' is not a number");
    }
  return p;
}

}  // namespace kforge::gen
