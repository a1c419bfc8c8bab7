// kforge/core/json.hpp — a small JSON writer for reports and tool output
// (parsing, where needed, is simdjson's job in the optional modules).
#pragma once

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

/// Appends JSON text; the caller keeps structure (objects/arrays) balanced.
class json_writer {
 public:
  json_writer& begin_object() { return open('{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array() { return open('['); }
  json_writer& end_array() { return close(']'); }
  json_writer& key(std::string_view k) {
    comma();
    string_value(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  json_writer& value(std::string_view s) {
    comma();
    string_value(s);
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(const std::string& s) { return value(std::string_view(s)); }
  json_writer& value(bool b) {
    comma();
    out_ += b ? "true" : "false";
    return *this;
  }
  json_writer& value(double d) {
    comma();
    if (!std::isfinite(d)) {
      out_ += std::isnan(d) ? "\"nan\"" : (d > 0 ? "\"inf\"" : "\"-inf\"");
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", d);
      out_ += buf;
    }
    return *this;
  }
  json_writer& value(float d) { return value(static_cast<double>(d)); }
  /// A measurement that may be missing: null when it is.
  json_writer& value(const std::optional<double>& d) {
    if (d) return value(*d);
    comma();
    out_ += "null";
    return *this;
  }
  template <class I>
    requires std::is_integral_v<I>
  json_writer& value(I i) {
    comma();
    out_ += std::to_string(i);
    return *this;
  }
  /// Inserts already-serialised JSON as a value.
  json_writer& raw(std::string_view json) {
    comma();
    out_ += json;
    return *this;
  }
  template <class V>
  json_writer& field(std::string_view k, const V& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

  static std::string escape(std::string_view s) {
    json_writer w;
    w.string_value(s);
    return w.out_;
  }

 private:
  json_writer& open(char c) {
    comma();
    out_ += c;
    first_ = true;
    return *this;
  }
  json_writer& close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_ && !out_.empty()) out_ += ',';
    first_ = false;
  }
  void string_value(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const unsigned char c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += ch;
          }
      }
    }
    out_ += '"';
  }
  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace kforge
