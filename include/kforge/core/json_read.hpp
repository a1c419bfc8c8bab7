// kforge/core/json_read.hpp — a strict JSON reader for files from outside
// (a safetensors header, a checkpoint's config.json and index): RFC 8259,
// nothing more — no comments, no trailing commas, no NaN literals — into a
// small tree the caller walks with typed accessors that throw on a wrong
// kind or a missing key.
//
// It is in the core, not in simdjson's optional modules, so that
// kforge::model reads checkpoints with the core's dependencies alone. The
// input is hostile: nesting is bounded (json_max_depth), strings must be
// valid UTF-8 with escapes decoded (\uXXXX surrogate pairs included; a lone
// surrogate is an error), numbers keep their text, so that an integer is
// read exactly (as_int: no double rounding of a 2^53 + 1 offset), and
// duplicate keys are an error (a header naming one tensor twice is corrupt,
// not "the last one wins"). Errors are json_error with the byte offset.
// Callers bound the text's size before parsing (core/file.hpp's limits).
#pragma once

#include <charconv>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kforge/core/error.hpp"

namespace kforge {

/// Text that is not JSON, or JSON of another shape than the caller needs.
class json_error : public argument_error {
 public:
  using argument_error::argument_error;
};

inline constexpr int json_max_depth = 64;

class json_value {
 public:
  enum class kind : std::uint8_t { null, boolean, number, string, array, object };

  kind type() const { return kind_; }
  bool is_null() const { return kind_ == kind::null; }
  bool is_object() const { return kind_ == kind::object; }
  bool is_array() const { return kind_ == kind::array; }
  bool is_string() const { return kind_ == kind::string; }
  bool is_number() const { return kind_ == kind::number; }
  bool is_bool() const { return kind_ == kind::boolean; }

  /// what names the value in an error ("config.json: hidden_size").
  bool as_bool(std::string_view what) const {
    expect(kind::boolean, what);
    return flag_;
  }
  const std::string& as_string(std::string_view what) const {
    expect(kind::string, what);
    return text_;
  }
  /// An integer written without fraction or exponent, within int64.
  std::int64_t as_int(std::string_view what) const {
    expect(kind::number, what);
    std::int64_t v = 0;
    const char* e = text_.data() + text_.size();
    const auto r = std::from_chars(text_.data(), e, v);
    if (r.ec != std::errc{} || r.ptr != e)
      throw json_error(std::string(what) + ": " + text_ + " is not an integer within 64 bits");
    return v;
  }
  double as_double(std::string_view what) const {
    expect(kind::number, what);
    double v = 0;
    const char* e = text_.data() + text_.size();
    const auto r = std::from_chars(text_.data(), e, v);
    if (r.ec != std::errc{} || r.ptr != e) throw json_error(std::string(what) + ": " + text_ + " is out of a double's range");
    return v;
  }
  const std::vector<json_value>& items(std::string_view what) const {
    expect(kind::array, what);
    return items_;
  }
  const std::vector<std::pair<std::string, json_value>>& members(std::string_view what) const {
    expect(kind::object, what);
    return members_;
  }
  /// The member named key, or nullptr (this must be an object).
  const json_value* find(std::string_view key, std::string_view what) const {
    for (const auto& [k, v] : members(what))
      if (k == key) return &v;
    return nullptr;
  }
  const json_value& at(std::string_view key, std::string_view what) const {
    const json_value* v = find(key, what);
    if (!v) throw json_error(std::string(what) + ": no member \"" + std::string(key) + "\"");
    return *v;
  }

  static std::string_view kind_name(kind k) {
    constexpr std::string_view names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    return names[static_cast<int>(k)];
  }

 private:
  friend class json_parser;
  void expect(kind k, std::string_view what) const {
    if (kind_ != k)
      throw json_error(std::string(what) + " is " + std::string(kind_name(kind_)) + ", not " + std::string(kind_name(k)));
  }
  kind kind_ = kind::null;
  bool flag_ = false;
  std::string text_;  ///< a string's value, a number's text
  std::vector<json_value> items_;
  std::vector<std::pair<std::string, json_value>> members_;
};

class json_parser {
 public:
  json_parser(std::string_view text, std::string_view what) : s_(text), what_(what) {}

  json_value document() {
    json_value v = value(0);
    space();
    if (i_ != s_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw json_error(std::string(what_) + ": not valid JSON at byte " + std::to_string(i_) + ": " + why);
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("unknown literal");
    i_ += word.size();
  }

  json_value value(int depth) {
    if (depth >= json_max_depth) fail("nested deeper than " + std::to_string(json_max_depth) + " levels");
    space();
    if (i_ >= s_.size()) fail("unexpected end");
    json_value v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind_ = json_value::kind::object;
      if (eat('}')) return v;
      std::unordered_set<std::string> keys;  // a tokenizer's vocabulary has 10^5 members: no quadratic scan
      do {
        space();
        if (i_ >= s_.size() || s_[i_] != '"') fail("expected a member name");
        std::string key = string();
        if (!keys.insert(key).second) fail("duplicate member \"" + key + "\"");
        if (!eat(':')) fail("expected ':'");
        v.members_.emplace_back(std::move(key), value(depth + 1));
      } while (eat(','));
      if (!eat('}')) fail("expected ',' or '}'");
    } else if (c == '[') {
      ++i_;
      v.kind_ = json_value::kind::array;
      if (eat(']')) return v;
      do v.items_.push_back(value(depth + 1));
      while (eat(','));
      if (!eat(']')) fail("expected ',' or ']'");
    } else if (c == '"') {
      v.kind_ = json_value::kind::string;
      v.text_ = string();
    } else if (c == 't' || c == 'f') {
      v.kind_ = json_value::kind::boolean;
      v.flag_ = c == 't';
      literal(c == 't' ? "true" : "false");
    } else if (c == 'n') {
      literal("null");
    } else {
      v.kind_ = json_value::kind::number;
      v.text_ = number();
    }
    return v;
  }

  std::string number() {
    const std::size_t b = i_;
    auto digits = [&] {
      const std::size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - d;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') ++i_;
    else if (digits() == 0) fail("expected a value");
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) fail("expected exponent digits");
    }
    return std::string(s_.substr(b, i_ - b));
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::uint32_t hex4() {
    if (s_.size() - i_ < 4) fail("short \\u escape");
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<std::uint32_t>(h - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }
  /// One UTF-8 sequence starting at i_ (checked: shortest form, no surrogates, ≤ U+10FFFF), copied to out.
  void utf8(std::string& out) {
    const auto b0 = static_cast<unsigned char>(s_[i_]);
    const int n = b0 >= 0xF0 && b0 <= 0xF4 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC2 && b0 <= 0xDF ? 2 : 0;
    if (n == 0 || b0 > 0xF4) fail("invalid UTF-8");
    if (s_.size() - i_ < static_cast<std::size_t>(n)) fail("truncated UTF-8");
    std::uint32_t cp = b0 & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s_[i_ + static_cast<std::size_t>(k)]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      fail("invalid UTF-8");
    out.append(s_.substr(i_, static_cast<std::size_t>(n)));
    i_ += static_cast<std::size_t>(n);
  }
  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        utf8(out);
        continue;
      }
      ++i_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(i_, 2) != "\\u") fail("high surrogate without its low half");
            i_ += 2;
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
      }
    }
  }

  std::string_view s_;
  std::string_view what_;
  std::size_t i_ = 0;
};

/// Parses text (one JSON value, whitespace around it) or throws json_error
/// naming `what` and the byte offset.
inline json_value parse_json(std::string_view text, std::string_view what) { return json_parser(text, what).document(); }

}  // namespace kforge
