// kforge/gen/gate.hpp — the gate a candidate kernel must pass, run inside
// the sandbox's worker process: compile, contract check, the 10-case suite
// with a secret seed on every shape (the prompt's and at least one held out
// from it, not a multiple of any tile), degenerate references dropped as
// test cases, every case run twice and required bit-identical, then a
// benchmark against kforge's own kernel for the op and a re-validation after
// timing. The result is one JSON object (gate_result) the parent reads back.
//
// Two contexts: the suite first runs on the context given, which in the
// sandbox has robust buffer access (untrusted code cannot reach memory outside
// its buffers). Robustness also hides some faults: a write before the data's
// start or far past its end is discarded (or, with robustBufferAccess alone,
// lands elsewhere in the same pool block), such a read returns zero (which
// can pass for padding). So a kernel that passed is validated again on every
// shape on gate_options::plain_context, a context without robustness like the
// one policy::generated and the tuner run admitted kernels on, where such a
// write lands in a guard and such a read returns the guards' NaN. The
// benchmark and the re-validation run there too: they are about how the
// kernel will run. By then the kernel has passed the whole suite, and it is
// still in the worker process.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kforge/gen/common.hpp"
#include "kforge/gen/contract.hpp"
#include "kforge/gen/runner.hpp"
#include "kforge/gen/templates.hpp"
#include "kforge/validate/suite.hpp"

namespace kforge::gen {

/// Stages at which a candidate can be rejected, in order.
namespace stage {
inline constexpr const char* provider = "provider";      // no response from the model
inline constexpr const char* extraction = "extraction";  // no GLSL in the response
inline constexpr const char* compile = "compile";
inline constexpr const char* interface = "interface";
inline constexpr const char* validation = "validation";
inline constexpr const char* timeout = "timeout";        // per-dispatch timeout, device loss, or the worker killed
inline constexpr const char* crash = "crash";            // the worker died
inline constexpr const char* accepted = "accepted";
}  // namespace stage

/// A shape (other dims kept) derived from p that the prompt never shows: the
/// op's traits' held_out (by default every extent > 1 becomes an odd number
/// different from the original, so not a multiple of any power-of-two tile;
/// extents of 1 stay 1, they carry broadcasting).
inline problem held_out_problem(const problem& p) {
  problem q = family_of(p).held_out(p);
  if (q.dims == p.dims && q.dims2 == p.dims2) q.dims[0] = p.dims[0] + 2;
  (void)operands(q);  // still a valid problem
  return q;
}

struct gate_options {
  std::uint64_t seed = 0;      ///< 0: a fresh secret seed
  bool benchmark = true;
  int bench_reps = 5;
  bool revalidate = true;
  /// A context without robust buffer access for the stages after the suite
  /// (see the header comment); called at most once. Empty: everything runs
  /// on the context given to run_gate.
  std::function<vulkan::context&()> plain_context;
};

/// Summarises the first failing case of a report for feedback and records.
inline std::string failure_summary(const report& r, const std::string& label) {
  for (const auto& c : r.cases) {
    if (c.passed) continue;
    std::string s = label + ", case '" + c.name + "': ";
    if (!c.error.empty()) return s + c.error;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%lld of %lld elements wrong (max abs err %.3g); first at %lld: got %.6g, expected %.6g",
                  static_cast<long long>(c.mismatches), static_cast<long long>(c.elements), c.max_abs_err,
                  static_cast<long long>(c.first_bad), c.first_bad_out, c.first_bad_ref);
    return s + buf;
  }
  if (!r.note.empty()) return label + ": " + r.note;
  return label + ": failed";
}

/// Runs the whole gate in this process and returns the result as JSON:
/// {"accepted", "stage", "reason", "robust_buffer_access", "robust_buffer_access2",
///  "compile_log", "reflection", "spirv_hash", "validation": [{"shape", "held_out", "report"}...],
///  "plain_validation" (same form), "benchmark", "revalidation"}.
inline std::string run_gate(vulkan::context& ctx, const std::vector<problem>& shapes, const std::string& glsl,
                            gate_options opt = {}) {
  if (shapes.empty()) throw argument_error("kforge::gen::run_gate: no shapes");
  if (opt.seed == 0) opt.seed = secret_seed();
  const problem& main = shapes.front();
  json_writer w;
  w.begin_object().field("robust_buffer_access", ctx.robust_buffer_access());
  w.field("robust_buffer_access2", ctx.robust_buffer_access2());
  auto finish = [&](bool accepted, const char* st, const std::string& reason) {
    w.field("accepted", accepted).field("stage", st).field("reason", reason).end_object();
    return w.str();
  };
  std::unique_ptr<kernel_runner> k;
  try {
    k = std::make_unique<kernel_runner>(ctx, main, "generated_" + main.op, glsl);
  } catch (const vulkan::shader_error& e) {
    w.field("compile_log", std::string(e.what()));
    return finish(false, stage::compile, e.what());
  } catch (const vulkan::interface_error& e) {
    return finish(false, stage::interface, e.what());
  } catch (const vulkan::device_lost& e) {
    return finish(false, stage::timeout, e.what());
  } catch (const std::exception& e) {
    // Pipeline creation refused by the driver, or f16 without 16-bit storage.
    return finish(false, stage::interface, e.what());
  }
  w.key("reflection").raw(k->reflection().to_json());
  w.field("spirv_hash", spirv_hash(k->spirv()));

  bool lost = false;
  std::string lost_reason;
  const executor candidate = [&](const problem& p, std::vector<host_tensor>& ts) {
    try {
      std::vector<host_tensor> again = ts;  // same inputs and the same poisoned outputs
      k->run(p, ts);
      k->run(p, again);
      const auto specs = operands(p);
      for (std::size_t i = 0; i < specs.size(); ++i) {
        if (!specs[i].is_output) continue;
        const auto& a = ts[i].storage;
        const auto& b = again[i].storage;
        if (a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size()) != 0) {
          std::size_t first = 0;
          while (first < a.size() && a[first] == b[first]) ++first;
          throw nondeterminism_error("kforge::gen: two runs on the same inputs differ (output " + specs[i].name +
                                     ", first at byte " + std::to_string(first) + "); the kernel must be deterministic");
        }
      }
    } catch (const vulkan::device_lost& e) {
      lost = true;
      lost_reason = e.what();
      throw;
    }
  };
  auto validate_shapes = [&](std::uint64_t seed, const std::vector<problem>& ps, std::string* reason) {
    bool ok = true;
    w.begin_array();
    for (std::size_t i = 0; i < ps.size(); ++i) {
      suite_options so;
      so.seed = seed + 0x9e3779b97f4a7c15ull * i;
      so.skip_degenerate = true;
      const report r = lost ? report{} : validate(ps[i], candidate, so);
      w.begin_object().field("shape", describe(ps[i])).field("held_out", i > 0).key("report").raw(r.to_json()).end_object();
      if (!r.all_passed && ok) {
        ok = false;
        *reason = failure_summary(r, describe(ps[i]) + (i > 0 ? " (held-out shape)" : ""));
      }
      if (lost) break;
    }
    w.end_array();
    return ok;
  };
  std::string reason;
  w.key("validation");
  const bool valid = validate_shapes(opt.seed, shapes, &reason);
  if (lost) return finish(false, stage::timeout, lost_reason);
  if (!valid) return finish(false, stage::validation, reason);

  vulkan::context* run_ctx = &ctx;
  if (ctx.robust_buffer_access() && opt.plain_context) {
    try {
      run_ctx = &opt.plain_context();
      k = std::make_unique<kernel_runner>(*run_ctx, main, "generated_" + main.op, glsl);
    } catch (const vulkan::device_lost& e) {
      return finish(false, stage::timeout, e.what());
    } catch (const std::exception& e) {
      return finish(false, stage::interface, std::string("without robust buffer access: ") + e.what());
    }
    w.key("plain_validation");
    if (!validate_shapes(opt.seed ^ 0x2545f4914f6cdd1dull, shapes, &reason)) {
      if (lost) return finish(false, stage::timeout, lost_reason);
      return finish(false, stage::validation, "without robust buffer access: " + reason);
    }
  }

  if (opt.benchmark) {
    try {
      std::vector<host_tensor> ts = allocate(main);
      generate_inputs(main, input_case::normal, opt.seed, ts);
      const double cand = k->time_ms(main, ts, opt.bench_reps);
      kernel_runner builtin(*run_ctx, main, "kforge_" + main.op, template_source(main));
      const double own = builtin.time_ms(main, ts, opt.bench_reps);
      w.key("benchmark").begin_object().field("candidate_ms", cand).field("builtin_ms", own);
      w.field("speedup_vs_builtin", cand > 0 ? own / cand : 0.0).field("reps", opt.bench_reps);
      w.field("timer", run_ctx->info().timestamps ? "gpu timestamps" : "wall clock").field("device", run_ctx->info().name);
      w.field("robust_buffer_access", run_ctx->robust_buffer_access()).end_object();
    } catch (const vulkan::device_lost& e) {
      return finish(false, stage::timeout, e.what());
    }
  }
  if (opt.revalidate) {
    // After timing: a kernel whose results change once it has run many times
    // (state kept in buffers, races that need a warm cache) fails here.
    w.key("revalidation");
    const std::vector<problem> first{main};
    if (!validate_shapes(opt.seed ^ 0x5bd1e995u, first, &reason)) {
      if (lost) return finish(false, stage::timeout, lost_reason);
      return finish(false, stage::validation, "after timing: " + reason);
    }
  }
  return finish(true, stage::accepted, "passed " + std::to_string(shapes.size()) + " shapes x 10 cases, deterministic");
}

}  // namespace kforge::gen
