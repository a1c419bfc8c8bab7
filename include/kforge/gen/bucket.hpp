// kforge/gen/bucket.hpp — an admitted kernel serving a whole tuning bucket.
//
// The gate admits a kernel for one problem (its prompt's shape, two held-out
// shapes and a 2-D-grid shape). To serve other shapes, kforge gen then puts
// the admitted kernel through the sandbox again on shapes spread over its
// problem's tuning bucket (the tuner's rule, tune/common.hpp: every extent
// rounded up to a power of two; a bucket holds the extents in (B/2, B]):
// both corners, each extent at the bottom of its octave where the other
// corner has it at the top, and one shape drawn uniformly, all from a fresh
// secret seed. A kernel that passes all of them (16 cases each, on a robust
// and on a plain context) is "proven for the bucket" in its record.
//
// policy::generated (and tune::resolve_vulkan_generated for policy::autotune)
// use a proven kernel for any problem of its bucket — same op, dtype and
// parameters, every extent of dims and dims2 in the same octave — but only
// after the kernel has passed the suite on that exact shape in the sandbox,
// once per (record, shape, device): the verdict is cached as
// v_<record>_<hash>.json beside the records and read back on later calls and
// in later processes. A failed verdict is cached too, and the shape is
// refused (or served by the next proven kernel of the bucket).
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/gen/prompt.hpp"  // default_source_spec
#include "kforge/gen/record.hpp"
#include "kforge/gen/sandbox.hpp"
#include "kforge/tune/common.hpp"  // bucket_dim: the tuner's bucket rule

namespace kforge::gen {

/// The key of p's tuning bucket, readable: "gemm f32 64x32x64" (with
/// " / <dims2 bucket>" where the op has a second shape, and the op's
/// parameters as in record names).
inline std::string bucket_key(const problem& p) {
  std::string k = p.op + " " + std::string(to_string(p.type)) + " " + tune::dims_text(tune::bucket_of(p.dims));
  if (p.dims2.rank()) k += " / " + tune::dims_text(tune::bucket_of(p.dims2));
  return k + family_of(p).record_params(p);
}

/// Whether q is in base's bucket: the same op, dtype and parameters (every
/// field but the shapes), and every extent of dims and dims2 in the same
/// power-of-two octave as base's.
inline bool in_bucket(const problem& base, const problem& q) {
  if (q.op != base.op || q.type != base.type || q.dims.rank() != base.dims.rank() || q.dims2.rank() != base.dims2.rank())
    return false;
  if (tune::bucket_of(q.dims) != tune::bucket_of(base.dims) || tune::bucket_of(q.dims2) != tune::bucket_of(base.dims2))
    return false;
  problem same = q;
  same.dims = base.dims;
  same.dims2 = base.dims2;
  return problem_json(same) == problem_json(base);
}

/// The smallest and largest extent of v's octave: (B/2, B] with B = bucket_dim(v); 0, 1 and 2 stay.
inline std::pair<index_t, index_t> octave(index_t v) {
  const index_t b = tune::bucket_dim(v);
  return {b <= 2 ? b : b / 2 + 1, b};
}

/// Shapes spread over p's bucket, each a valid problem in the bucket and
/// none p itself: draw 0 puts extent i at the bottom of its octave for even i
/// and at the top for odd i (dims, then dims2), draw 1 the other way round,
/// draw 2 draws every extent uniformly. An extent is drawn on its own; where
/// that makes no valid problem (a broadcast operand, channels shared by the
/// image and the filter), equal extents get one value. A draw that is still
/// not a valid problem of the bucket (grouped heads, a cut past the keys) is
/// left out.
inline std::vector<problem> bucket_problems(const problem& p, std::uint64_t seed) {
  std::vector<problem> out;
  held_out_draw d{seed, 0, {}};
  auto pick = [&](int draw, int i, index_t v) {
    const auto [lo, hi] = octave(v);
    if (draw == 2) return d.uniform(lo, hi);
    return (i % 2 == 0) == (draw == 0) ? lo : hi;
  };
  auto valid = [&](const problem& q) {
    if (!in_bucket(p, q) || (q.dims == p.dims && q.dims2 == p.dims2)) return false;
    for (const problem& o : out)
      if (o.dims == q.dims && o.dims2 == q.dims2) return false;
    try {
      (void)operands(q);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  for (int draw = 0; draw < 3; ++draw) {
    problem q = p;
    const int r1 = p.dims.rank();
    for (int i = 0; i < r1; ++i) q.dims[i] = pick(draw, i, p.dims[i]);
    for (int i = 0; i < p.dims2.rank(); ++i) q.dims2[i] = pick(draw, r1 + i, p.dims2[i]);
    if (!valid(q)) {
      std::map<index_t, index_t> same;  // one value per extent of p
      int i = 0;
      auto one = [&](index_t v) {
        auto it = same.find(v);
        if (it == same.end()) it = same.emplace(v, pick(draw, i, v)).first;
        ++i;
        return it->second;
      };
      for (int j = 0; j < r1; ++j) q.dims[j] = one(p.dims[j]);
      for (int j = 0; j < p.dims2.rank(); ++j) q.dims2[j] = one(p.dims2[j]);
      if (!valid(q)) continue;
    }
    out.push_back(std::move(q));
  }
  return out;
}

/// The fewest shapes of the bucket a proof needs besides the prompt's.
inline constexpr std::size_t bucket_min_shapes = 2;

/// Puts r's kernel through the sandbox on bucket_problems(r.prob) and writes
/// the outcome into r (bucket, bucket_proven, bucket_shapes, bucket_reason).
/// Not proven, with the reason: fewer than bucket_min_shapes valid shapes, a
/// shape over grid_shape_byte_limit of operands, or a failure in the sandbox.
inline void prove_bucket(generation_record& r, sandbox_options o = {}) {
  r.bucket = bucket_key(r.prob);
  r.bucket_proven = false;
  r.bucket_shapes.clear();
  const std::vector<problem> shapes = bucket_problems(r.prob, secret_seed());
  for (const problem& q : shapes) r.bucket_shapes.push_back(describe(q));
  if (shapes.size() < bucket_min_shapes) {
    r.bucket_reason = "not proven: only " + std::to_string(shapes.size()) + " shape(s) of the bucket are valid problems with " +
                      describe(r.prob) + "'s parameters (" + std::to_string(bucket_min_shapes) + " needed)";
    return;
  }
  for (const problem& q : shapes) {
    double bytes = 0;
    for (const operand_spec& s : operands(q))
      bytes += static_cast<double>(s.dims.numel()) * static_cast<double>(size_of(operand_type(q, s)));
    if (bytes > grid_shape_byte_limit) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "not proven: %s needs %.0f MiB of operands; the limit is %.0f MiB", describe(q).c_str(),
                    bytes / 1048576.0, grid_shape_byte_limit / 1048576.0);
      r.bucket_reason = buf;
      return;
    }
  }
  o.benchmark = false;
  o.revalidate = false;
  o.held_out = false;  // drawn and passed already, around the prompt's shape
  const sandbox_result sr = run_sandboxed(shapes, r.extracted_glsl, o);
  r.bucket_proven = sr.accepted;
  r.bucket_reason = sr.accepted ? "proven: passed " + std::to_string(shapes.size()) + " shapes of the bucket x 16 cases"
                                : "not proven: rejected at " + sr.stage + ": " + sr.reason;
}

/// Accepted records proven for q's bucket (whatever shape they were
/// generated for, from the op's default source spec), fastest first.
inline std::vector<generation_record> bucket_records(const problem& q, const std::filesystem::path& dir = records_dir()) {
  std::vector<generation_record> out;
  const std::string key = bucket_key(q);
  const std::string prefix = "c_" + detail::name_part(q.op) + "_i";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0 || e.path().extension() != ".json") continue;
    try {
      generation_record r = load_record(e.path());
      if (!r.correct() || !r.bucket_proven || r.bucket != key || r.extracted_glsl.empty() || !in_bucket(r.prob, q) ||
          r.source_hash != spec_hash(r.prob, default_source_spec(r.prob)))
        continue;
      out.push_back(std::move(r));
    } catch (const std::exception&) {
      // Damaged or being written: not a record.
    }
  }
  auto time = [](const generation_record& r) { return r.candidate_ms > 0 ? r.candidate_ms : 1e300; };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    return time(a) != time(b) ? time(a) < time(b) : a.path < b.path;
  });
  return out;
}

/// The sandbox's answer for one record on one exact shape and device.
struct shape_verdict {
  bool passed = false;
  bool cached = false;  ///< read back, not run now
  std::string stage, reason, file;
};

/// Where the verdict of record r on problem q and `device` is cached.
inline std::filesystem::path verdict_path(const generation_record& r, const problem& q, const std::string& device,
                                          const std::filesystem::path& dir = records_dir()) {
  const std::string stem = std::filesystem::path(r.path).stem().string();
  return dir / ("v_" + stem.substr(std::min<std::size_t>(2, stem.size())) + "_" +
                hash_hex(problem_json(q) + "\n" + device, 8) + ".json");
}

/// r's kernel on exactly q on `device` (the name the parent's context gives
/// it; the worker picks the same device by the same rule): the cached
/// verdict when one matches (record, kernel, problem and device), else the
/// sandbox's, cached atomically. A verdict file that does not parse or does
/// not match is checked again and overwritten.
inline shape_verdict verdict_for(const generation_record& r, const problem& q, const std::string& device,
                                 sandbox_options o = {}, const std::filesystem::path& dir = records_dir()) {
  shape_verdict v;
  const auto path = verdict_path(r, q, device, dir);
  v.file = path.string();
  const std::string record_file = std::filesystem::path(r.path).filename().string();
  const std::string kernel = hash_hex(r.extracted_glsl);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    try {
      const json_doc doc(read_text(path), "verdict " + path.string());
      const auto e = doc.root();
      simdjson::dom::element pe;
      if (json::str(e, "record") == record_file && json::str(e, "kernel_hash") == kernel && json::str(e, "device") == device &&
          !e["problem"].get(pe) && problem_json(problem_from_json(pe)) == problem_json(q)) {
        v.passed = json::boolean(e, "passed", false);
        v.stage = json::str(e, "stage");
        v.reason = json::str(e, "reason");
        v.cached = true;
        return v;
      }
    } catch (const std::exception&) {
      // Damaged: checked again below.
    }
  }
  o.benchmark = false;
  o.revalidate = false;
  o.held_out = false;
  const sandbox_result sr = run_sandboxed({q}, r.extracted_glsl, o);
  v.passed = sr.accepted;
  v.stage = sr.stage;
  v.reason = sr.reason;
  json_writer w;
  w.begin_object().field("record", record_file).field("kernel_hash", kernel).field("device", device);
  w.key("problem").raw(problem_json(q)).field("problem_text", describe(q)).field("bucket", bucket_key(q));
  w.field("passed", v.passed).field("stage", v.stage).field("reason", v.reason).field("checked_at", utc_timestamp());
  w.field("seconds", sr.wall_s).end_object();
  std::filesystem::create_directories(dir, ec);
  write_atomic(path, redact_env(w.str()));
  return v;
}

/// The kernel that serves q from its bucket on `device`: the fastest proven
/// record whose verdict on q passes. Without one, nullopt and `why` says
/// what was tried.
inline std::optional<generation_record> serve_from_bucket(const problem& q, const std::string& device, std::string& why,
                                                          const std::filesystem::path& dir = records_dir()) {
  const auto rs = bucket_records(q, dir);
  if (rs.empty()) {
    why = "no accepted kernel proven for its bucket (" + bucket_key(q) + ")";
    return std::nullopt;
  }
  why.clear();
  for (const auto& r : rs) {
    const shape_verdict v = verdict_for(r, q, device, {}, dir);
    if (v.passed) return r;
    why += (why.empty() ? "" : "; ") + std::filesystem::path(r.path).filename().string() + " failed on this shape (" +
           v.stage + ": " + v.reason + (v.cached ? ", cached verdict " : ", verdict ") + v.file + ")";
  }
  return std::nullopt;
}

}  // namespace kforge::gen
