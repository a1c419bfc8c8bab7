// kforge/gen/gate.hpp — the gate a candidate kernel must pass, run inside
// the sandbox's worker process: compile, contract check, the static
// shared-memory race check (race.hpp), the 10-case suite with a secret seed
// on every shape (the prompt's, two held-out shapes drawn from the seed with
// every axis changed on its own, and one that needs the 2-D grid where the
// memory limit allows; docs/GENERATION.md "Held-out shapes"), degenerate
// references dropped as test cases, every case run twice and required
// bit-identical, then a benchmark against kforge's own kernel for the op and
// a re-validation after timing. The result is one JSON object the parent
// reads back.
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
#include <optional>
#include <string>
#include <vector>

#include "kforge/gen/common.hpp"
#include "kforge/gen/contract.hpp"
#include "kforge/gen/race.hpp"
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
inline constexpr const char* race = "race";              // the static shared-memory race check (race.hpp)
inline constexpr const char* validation = "validation";
inline constexpr const char* timeout = "timeout";        // per-dispatch timeout, device loss, or the worker killed
inline constexpr const char* crash = "crash";            // the worker died
inline constexpr const char* accepted = "accepted";
}  // namespace stage

/// How many shapes the gate draws besides the prompt's (docs/GENERATION.md,
/// "Held-out shapes"), not counting the 2-D-grid shape.
inline constexpr int held_out_draws = 2;

/// The held-out shapes for prompt problem p that the prompt never shows:
/// held_out_draws shapes from the op's traits' held_out, each drawn on its
/// own from `seed` (the gate's secret seed) knowing the kernel's tiles. Every
/// extent the family lets change is redrawn independently of the prompt's
/// and of the other draw's.
inline std::vector<problem> held_out_problems(const problem& p, std::uint64_t seed, const launch_tiles& tiles = {}) {
  std::vector<problem> out;
  for (int i = 0; i < held_out_draws; ++i) {
    held_out_draw d{seed ^ (0x68656c646f757400ull + static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull), i, tiles};
    problem q = family_of(p).held_out(p, d);
    if (q.dims == p.dims && q.dims2 == p.dims2) q.dims[0] = p.dims[0] + 2;
    (void)operands(q);  // still a valid problem
    out.push_back(std::move(q));
  }
  return out;
}

/// The operand bytes the 2-D-grid shape may take: the worker holds about five
/// host copies of each operand (inputs, reference, candidate, the rerun) and
/// two device copies, so 256 MiB of operands is about 1.5 GiB of memory.
inline constexpr double grid_shape_byte_limit = 256.0 * 1024 * 1024;

/// The shape that needs more than 65535 workgroups at the kernel's tiles (so
/// the launch folds the flat workgroup id over gl_WorkGroupID.y), or why the
/// gate has none: `p` empty and `reason` saying so.
struct grid_shape {
  std::optional<problem> p;
  std::uint64_t workgroups = 0;
  std::string reason;
};

/// Grows one axis of `base` (the one whose growth costs the fewest operand
/// bytes) until the launch at `tiles` needs more than 65535 workgroups. gemm
/// and conv2d have a 3-D grid by contract (no fold to test); a shape over
/// grid_shape_byte_limit is skipped, with the reason; so is one whose largest
/// operand would not fit one storage buffer (`max_buffer_bytes`, the device's
/// maxStorageBufferRange; 0: no such limit). lavapipe's 128 MiB is less than
/// a gated op's input needs for 65536 workgroups of 256 outputs.
inline grid_shape grid_problem(const problem& base, const launch_tiles& tiles, std::uint64_t max_buffer_bytes = 0) {
  const family_table& f = family_of(base);
  grid_shape out;
  if (f.contract(base).tile_2d) {
    out.reason = "not applicable: " + base.op +
                 " has a 3-D grid by contract (x = N tiles, y = M tiles, z = groups); no flat id is folded over y";
    return out;
  }
  auto workgroups = [&](const problem& q) -> std::uint64_t {
    const launch l = f.launch_of(q, tiles);
    return std::uint64_t(l.grid[0]) * l.grid[1] * l.grid[2];
  };
  auto folds = [&](const problem& q) { return f.launch_of(q, tiles).grid[1] > 1; };
  const std::uint64_t g0 = std::max<std::uint64_t>(1, workgroups(base));
  double best_bytes = 0;
  // The runner allocates each operand with a small guard beside it.
  constexpr double buffer_slack = 4096;
  auto largest_operand = [](const problem& q) {
    double b = 0;
    for (const operand_spec& o : operands(q))
      b = std::max(b, static_cast<double>(o.dims.numel()) * static_cast<double>(size_of(operand_type(q, o))));
    return b;
  };
  std::optional<problem> too_wide;  // the cheapest shape refused for its largest operand
  double too_wide_buffer = 0;
  const int ra = base.dims.rank(), rb = base.dims2.rank();
  for (int axis = 0; axis < ra + rb; ++axis) {
    // An axis of dims carries the aligned axis of dims2 along where they are
    // equal (a broadcast operand stays broadcast-compatible).
    const bool in2 = axis >= ra;
    const index_t e = in2 ? base.dims2[axis - ra] : base.dims[axis];
    if (e < 1) continue;
    index_t v = e * static_cast<index_t>((65536 + 64 + g0 - 1) / g0) + 1;
    // Steps of a quarter: the first guess counts whole workgroups of a small
    // shape and falls short; doubling would overshoot by up to 2x the bytes.
    for (int tries = 0; tries < 40; ++tries, v += v / 4 + 1) {
      problem q = base;
      if (in2) {
        q.dims2[axis - ra] = v;
      } else {
        q.dims[axis] = v;
        const int j = axis - (ra - rb);
        if (rb && j >= 0 && base.dims2[j] == e) q.dims2[j] = v;
      }
      try {
        (void)operands(q);
        if (!folds(q)) continue;
      } catch (const std::exception&) {
        break;  // this axis cannot grow alone
      }
      const double bytes = f.bytes(q);
      if (max_buffer_bytes && largest_operand(q) + buffer_slack > static_cast<double>(max_buffer_bytes)) {
        if (!too_wide || largest_operand(q) < too_wide_buffer) {
          too_wide = q;
          too_wide_buffer = largest_operand(q);
        }
        break;
      }
      if (!out.p || bytes < best_bytes) {
        out.p = q;
        best_bytes = bytes;
        out.workgroups = workgroups(q);
      }
      break;
    }
  }
  if (!out.p && too_wide) {
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "skipped: %s needs a buffer of %.1f MiB for more than 65535 workgroups; the device's "
                  "maxStorageBufferRange is %.1f MiB",
                  describe(*too_wide).c_str(), too_wide_buffer / 1048576.0, static_cast<double>(max_buffer_bytes) / 1048576.0);
    out.reason = buf;
    return out;
  }
  if (!out.p) {
    out.reason = "skipped: no single axis of " + describe(base) + " reaches 65536 workgroups";
    return out;
  }
  if (best_bytes > grid_shape_byte_limit) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "skipped: %s needs %.0f MiB of operands for %llu workgroups; the limit is %.0f MiB",
                  describe(*out.p).c_str(), best_bytes / 1048576.0, static_cast<unsigned long long>(out.workgroups),
                  grid_shape_byte_limit / 1048576.0);
    out.reason = buf;
    out.p.reset();
    return out;
  }
  out.reason = "validated on the suite's normal case only (its point is the grid, not the values)";
  return out;
}

struct gate_options {
  std::uint64_t seed = 0;      ///< 0: a fresh secret seed
  bool benchmark = true;
  int bench_reps = 5;
  bool revalidate = true;
  /// Draw the held-out shapes and the 2-D-grid shape. Off only where the
  /// kernel has passed the whole gate already and is checked on shapes of its
  /// bucket (gen/bucket.hpp).
  bool held_out = true;
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
///  "compile_log", "reflection", "spirv_hash", "held_out": [shape...], "grid_2d": {"validated", "shape",
///  "workgroups", "rule"}, "validation": [{"shape", "role", "held_out", "report"}...],
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
  // Before any case, and on any device: a race that changes no output here
  // may change one on the next device. The same GLSL again with OpLine, so
  // that the reason names source lines.
  const race_report races = check_shared_races(compile_glsl("race_check_" + main.op, glsl, true));
  w.key("race_check").raw(races.to_json());
  if (races.race()) {
    std::string reason = races.findings.front().text();
    if (races.findings.size() > 1) reason += " (and " + std::to_string(races.findings.size() - 1) + " more)";
    return finish(false, stage::race, reason);
  }

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
  // The shapes: the caller's (the prompt's first), the held-out draws, and
  // the 2-D-grid shape where there is one (docs/GENERATION.md, "Held-out shapes").
  struct gate_shape {
    problem p;
    std::string role;  // prompt, given, held_out, grid_2d
    std::vector<input_case> cases;
  };
  const std::vector<input_case> all(all_cases.begin(), all_cases.end());
  std::vector<gate_shape> plan;
  for (std::size_t i = 0; i < shapes.size(); ++i) plan.push_back({shapes[i], i == 0 ? "prompt" : "given", all});
  const kernel_reflection& refl = k->reflection();
  const launch_tiles tiles{refl.local_size, refl.tile_m, refl.tile_n, refl.tile};
  const std::vector<problem> held = opt.held_out ? held_out_problems(main, opt.seed, tiles) : std::vector<problem>{};
  for (const auto& h : held) plan.push_back({h, "held_out", all});
  grid_shape grid;
  if (opt.held_out) grid = grid_problem(held.front(), tiles, ctx.info().max_storage_buffer_range);
  else grid.reason = "not drawn: the kernel passed the whole gate before; this run checks given shapes only";
  if (grid.p && ctx.info().type == "cpu" && races.barriers > 0) {
    // Measured on lavapipe (2-core EPYC): 65536 workgroups of kforge's
    // attention (256 invocations, two workgroup reductions per key block)
    // outlast the 5 s per-dispatch timeout; a CPU device switches every
    // invocation at every barrier. Barrier-free kernels (relu: 65536 x 256
    // invocations) take well under a second there.
    grid.reason = "skipped on a CPU device (" + ctx.info().name + "): the kernel has " + std::to_string(races.barriers) +
                  " workgroup barriers, and " + std::to_string(grid.workgroups) +
                  " workgroups of it outlast the per-dispatch timeout there; GPUs validate it";
    grid.p.reset();
  }
  if (grid.p) plan.push_back({*grid.p, "grid_2d", {input_case::normal}});
  w.key("held_out").begin_array();
  for (const auto& h : held) w.value(describe(h));
  w.end_array();
  w.key("grid_2d").begin_object().field("validated", grid.p.has_value()).field("shape", grid.p ? describe(*grid.p) : "");
  w.field("workgroups", grid.workgroups).field("rule", grid.reason).end_object();

  auto validate_shapes = [&](std::uint64_t seed, const std::vector<gate_shape>& ps, std::string* reason) {
    bool ok = true;
    w.begin_array();
    for (std::size_t i = 0; i < ps.size(); ++i) {
      suite_options so;
      so.seed = seed + 0x9e3779b97f4a7c15ull * i;
      so.skip_degenerate = true;
      so.cases = ps[i].cases;
      const report r = lost ? report{} : validate(ps[i].p, candidate, so);
      w.begin_object().field("shape", describe(ps[i].p)).field("role", ps[i].role).field("held_out", ps[i].role == "held_out" || ps[i].role == "grid_2d");
      w.key("report").raw(r.to_json()).end_object();
      if (!r.all_passed && ok) {
        ok = false;
        const std::string label = ps[i].role == "held_out" ? " (held-out shape)"
                                  : ps[i].role == "grid_2d" ? " (held-out 2-D grid shape, " + std::to_string(grid.workgroups) + " workgroups)"
                                                            : "";
        *reason = failure_summary(r, describe(ps[i].p) + label);
      }
      if (lost) break;
    }
    w.end_array();
    return ok;
  };
  std::string reason;
  w.key("validation");
  const bool valid = validate_shapes(opt.seed, plan, &reason);
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
    if (!validate_shapes(opt.seed ^ 0x2545f4914f6cdd1dull, plan, &reason)) {
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
    const std::vector<gate_shape> first{plan.front()};
    if (!validate_shapes(opt.seed ^ 0x5bd1e995u, first, &reason)) {
      if (lost) return finish(false, stage::timeout, lost_reason);
      return finish(false, stage::validation, "after timing: " + reason);
    }
  }
  return finish(true, stage::accepted,
                "passed " + std::to_string(shapes.size() + held.size()) + " shapes (" + std::to_string(held.size()) +
                    " held out) x 10 cases" + (grid.p ? " and a 2-D grid shape of " + std::to_string(grid.workgroups) + " workgroups" : "") +
                    ", deterministic");
}

}  // namespace kforge::gen
