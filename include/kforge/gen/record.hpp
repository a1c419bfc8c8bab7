// kforge/gen/record.hpp — one JSON record per generation attempt, and the
// cache of accepted kernels they form.
//
// File names are deterministic: {c|r}_{op}_i{inputs}_o{output}_{params}_h{hash}.json
// with inputs joined by '-', params the dtype and the op's parameters, and
// hash the first 8 hex digits of FNV-1a over (source-spec hash, kernel) —
// the same kernel for the same spec always lands in the same file, different
// attempts never overwrite each other. Files are written atomically. Lookup
// finds c_ files with the problem's prefix whose spec hash matches, and
// returns the fastest.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kforge/gen/common.hpp"
#include "kforge/gen/provider.hpp"

namespace kforge::gen {

struct generation_record {
  std::string uuid, timestamp;
  std::string status = "rejected";  ///< correct or rejected
  std::string stage, reason;        ///< where and why (for correct: "accepted")
  problem prob;
  std::string source_spec, source_hash;
  std::string provider, model;
  std::string llm_request;           ///< JSON (model, temperature, max_tokens, messages); never headers
  std::string response_raw, response_content, extracted_glsl, extraction_method;
  std::string response_error;
  std::vector<std::string> attempt_log;
  token_usage usage;
  int http_requests = 0;
  double llm_seconds = 0;
  std::string spirv_hash;
  std::string validation;            ///< the gate's JSON answer (reports per shape, reflection, benchmark)
  std::string held_out_shape;
  double candidate_ms = -1, builtin_ms = -1, speedup = 0;
  int sample = 0;
  /// The kernel on shapes spread over its problem's tuning bucket
  /// (gen/bucket.hpp): bucket is the bucket's key, "" when it was not tried.
  std::string bucket, bucket_reason;
  bool bucket_proven = false;
  std::vector<std::string> bucket_shapes;
  std::string path;                  ///< where it was read from / written to

  bool correct() const { return status == "correct"; }

  std::string to_json() const {
    json_writer w;
    w.begin_object().field("uuid", uuid).field("timestamp", timestamp).field("status", status);
    w.field("stage", stage).field("reason", reason).field("operation", prob.op).key("problem").raw(problem_json(prob));
    w.field("problem_text", describe(prob)).field("held_out_shape", held_out_shape);
    w.field("source_spec", source_spec).field("source_hash", source_hash).field("sample", sample);
    w.field("provider", provider).field("model", model);
    w.key("llm_request").raw(llm_request.empty() ? "{}" : llm_request);
    w.key("llm_response").begin_object().field("raw", response_raw).field("content", response_content);
    w.field("extracted_kernel", extracted_glsl).field("extraction_method", extraction_method);
    w.field("error", response_error).field("http_requests", http_requests).field("seconds", llm_seconds);
    w.key("attempt_log").begin_array();
    for (const auto& l : attempt_log) w.value(l);
    w.end_array().end_object();
    w.key("usage").begin_object().field("prompt_tokens", usage.prompt).field("completion_tokens", usage.completion);
    w.field("total_tokens", usage.total).end_object();
    w.field("spirv_hash", spirv_hash).key("validation").raw(validation.empty() ? "null" : validation);
    w.key("benchmark").begin_object().field("candidate_ms", candidate_ms).field("builtin_ms", builtin_ms);
    w.field("speedup_vs_builtin", speedup).end_object();
    if (bucket.empty()) {
      w.key("bucket").raw("null");
    } else {
      w.key("bucket").begin_object().field("key", bucket).field("proven", bucket_proven).field("reason", bucket_reason);
      w.key("shapes").begin_array();
      for (const auto& b : bucket_shapes) w.value(b);
      w.end_array().end_object();
    }
    w.end_object();
    return w.str();
  }

  static generation_record from_json(const std::string& text, const std::string& path = "") {
    const json_doc doc(text, "record " + path);
    const auto e = doc.root();
    generation_record r;
    r.path = path;
    r.uuid = json::str(e, "uuid");
    r.timestamp = json::str(e, "timestamp");
    r.status = json::str(e, "status");
    r.stage = json::str(e, "stage");
    r.reason = json::str(e, "reason");
    simdjson::dom::element pe;
    if (e["problem"].get(pe)) throw cache_error("kforge::gen: record " + path + " has no problem");
    r.prob = problem_from_json(pe);
    r.held_out_shape = json::str(e, "held_out_shape");
    r.source_spec = json::str(e, "source_spec");
    r.source_hash = json::str(e, "source_hash");
    r.sample = static_cast<int>(json::num(e, "sample"));
    r.provider = json::str(e, "provider");
    r.model = json::str(e, "model");
    simdjson::dom::element x;
    if (!e["llm_request"].get(x)) r.llm_request = json::dump(x);
    if (!e["llm_response"].get(x)) {
      r.response_raw = json::str(x, "raw");
      r.response_content = json::str(x, "content");
      r.extracted_glsl = json::str(x, "extracted_kernel");
      r.extraction_method = json::str(x, "extraction_method");
      r.response_error = json::str(x, "error");
      r.http_requests = static_cast<int>(json::num(x, "http_requests"));
      r.llm_seconds = json::num(x, "seconds");
    }
    if (!e["usage"].get(x)) {
      r.usage.prompt = static_cast<std::int64_t>(json::num(x, "prompt_tokens"));
      r.usage.completion = static_cast<std::int64_t>(json::num(x, "completion_tokens"));
      r.usage.total = static_cast<std::int64_t>(json::num(x, "total_tokens"));
    }
    r.spirv_hash = json::str(e, "spirv_hash");
    if (!e["validation"].get(x) && !x.is_null()) r.validation = json::dump(x);
    if (!e["benchmark"].get(x)) {
      r.candidate_ms = json::num(x, "candidate_ms", -1);
      r.builtin_ms = json::num(x, "builtin_ms", -1);
      r.speedup = json::num(x, "speedup_vs_builtin");
    }
    if (!e["bucket"].get(x) && x.is_object()) {
      r.bucket = json::str(x, "key");
      r.bucket_proven = json::boolean(x, "proven", false);
      r.bucket_reason = json::str(x, "reason");
      simdjson::dom::array shapes;
      if (!x["shapes"].get_array().get(shapes))
        for (auto v : shapes) {
          std::string_view t;
          if (!v.get_string().get(t)) r.bucket_shapes.emplace_back(t);
        }
    }
    return r;
  }
};

/// The spec a record's hash and cache lookup are keyed by: the problem (every
/// field) and its source text.
inline std::string spec_hash(const problem& p, const std::string& source_spec) {
  return hash_hex(problem_json(p) + "\n" + source_spec);
}

namespace detail {
inline std::string name_part(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = c == ',' ? '-' : '_';
  return s;
}
inline std::string dims_part(const shape& s) {
  std::string o;
  for (int i = 0; i < s.rank(); ++i) {
    if (i) o += 'x';
    o += std::to_string(s[i]);
  }
  return o.empty() ? "1" : o;
}
}  // namespace detail

/// "c_gemm_i64x40-40x48_o64x48_f32" — the name without the hash.
inline std::string record_prefix(bool correct, const problem& p) {
  const auto ops = operands(p);
  std::string in, out;
  for (const auto& o : ops) {
    std::string& part = o.is_output ? out : in;
    if (!part.empty()) part += '-';
    part += detail::dims_part(o.dims);
  }
  std::string params = std::string(to_string(p.type));
  params += family_of(p).record_params(p);
  return std::string(correct ? "c" : "r") + "_" + detail::name_part(p.op) + "_i" + in + "_o" + out + "_" +
         detail::name_part(params);
}

/// The record's file name (see the header comment).
inline std::string record_file_name(const generation_record& r) {
  const std::string content = r.extracted_glsl.empty() ? r.response_raw + r.response_error : r.extracted_glsl;
  return record_prefix(r.correct(), r.prob) + "_h" + hash_hex(r.source_hash + "\n" + content, 8) + ".json";
}

/// Writes the record atomically into dir; returns the path.
inline std::filesystem::path write_record(generation_record& r, const std::filesystem::path& dir = records_dir()) {
  const auto path = dir / record_file_name(r);
  r.path = path.string();
  write_atomic(path, valid_utf8(redact_env(r.to_json())));  // a model's raw bytes must not make the record unreadable
  return path;
}

inline generation_record load_record(const std::filesystem::path& path) {
  return generation_record::from_json(read_text(path), path.string());
}

/// Every record in dir ('c', 'r' or 0 for both), newest first. A file named
/// like a record that cannot be read as one (being written, damaged) is left
/// out; `skipped`, where given, receives "NAME: why" for each.
inline std::vector<generation_record> list_records(char status = 0, const std::filesystem::path& dir = records_dir(),
                                                   std::vector<std::string>* skipped = nullptr) {
  std::vector<generation_record> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (e.path().extension() != ".json" || n.size() < 3 || n[1] != '_' || (n[0] != 'c' && n[0] != 'r')) continue;
    if (status && n[0] != status) continue;
    try {
      out.push_back(load_record(e.path()));
    } catch (const std::exception& x) {
      // A file being written by another process or damaged: not a record.
      if (skipped) skipped->push_back(n + ": " + x.what());
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.timestamp > b.timestamp; });
  return out;
}

/// The fastest accepted kernel for (problem, source spec), if any.
inline std::optional<generation_record> lookup(const problem& p, const std::string& source_spec,
                                               const std::filesystem::path& dir = records_dir()) {
  const std::string prefix = record_prefix(true, p) + "_h";
  const std::string sh = spec_hash(p, source_spec);
  std::optional<generation_record> best;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return best;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    try {
      generation_record r = load_record(e.path());
      if (!r.correct() || r.source_hash != sh || r.extracted_glsl.empty()) continue;
      const double t = r.candidate_ms > 0 ? r.candidate_ms : 1e300;
      if (!best || t < (best->candidate_ms > 0 ? best->candidate_ms : 1e300)) best = std::move(r);
    } catch (const std::exception&) {
    }
  }
  return best;
}

/// One line per record, for `kforge cache list --status c|r`.
inline std::string records_text(const std::vector<generation_record>& rs) {
  std::string s;
  for (const auto& r : rs) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s %-10s %-34s %-9s %-12s %s\n", r.correct() ? "c" : "r", r.prob.op.c_str(),
                  describe(r.prob).c_str(), r.provider.c_str(), r.stage.c_str(),
                  std::filesystem::path(r.path).filename().string().c_str());
    s += buf;
  }
  return s;
}
inline std::string records_json(const std::vector<generation_record>& rs) {
  json_writer w;
  w.begin_array();
  for (const auto& r : rs)
    w.begin_object().field("file", r.path).field("status", r.status).field("stage", r.stage).field("problem", describe(r.prob))
        .field("provider", r.provider).field("model", r.model).field("timestamp", r.timestamp)
        .field("candidate_ms", r.candidate_ms).field("speedup_vs_builtin", r.speedup).end_object();
  w.end_array();
  return w.str();
}

}  // namespace kforge::gen
