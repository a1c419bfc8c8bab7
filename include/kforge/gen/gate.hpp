// kforge/gen/gate.hpp — the gate a candidate kernel must pass, run inside
// the sandbox's worker process: compile, contract check, the static
// shared-memory race check (race.hpp), the 16-case suite with a secret seed
// on every shape (the prompt's, two held-out shapes drawn from the seed with
// every axis changed on its own, 32 small shapes of the residue sweep (its
// normal case), and one that needs the 2-D grid where the device's buffers
// allow; each fitted to the device; docs/GENERATION.md "Held-out shapes"),
// degenerate references dropped as test cases, every case run twice and
// required bit-identical, a shape that fails only for a device's loop limit
// judged on one the device can run, then a benchmark against kforge's own
// kernel for the op and a re-validation after timing; time limits follow the
// work ("Time limits"). The result is one JSON object the parent reads back.
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
//
// The suite's runs (on both contexts) are of the kernel with its shared
// memory filled with +Inf, -Inf and NaN before its own code starts
// (shared_fill.hpp): a result that depends on a slot no invocation wrote is
// wrong there on every device. Where that variant fails and one filled with
// zeros instead passes the same shape and seed, the reason says it reads
// shared memory no invocation wrote (the kernel as written would not tell:
// its slots hold what the last kernel left, the fill's specials among them).
// The benchmark and the re-validation run the kernel as written.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kforge/gen/common.hpp"
#include "kforge/gen/contract.hpp"
#include "kforge/gen/race.hpp"
#include "kforge/gen/runner.hpp"
#include "kforge/gen/shared_fill.hpp"
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

/// How many full draws the gate makes besides the prompt's shape
/// (docs/GENERATION.md, "Held-out shapes"); the residue sweep and the
/// 2-D-grid shape come on top.
inline constexpr int held_out_draws = 2;
/// The residue sweep's shapes: one per class modulo 32, so every class
/// modulo 2, 4, 8, 16 and 32 of every axis kernels loop or vectorise along.
inline constexpr int residue_classes = 32;

/// The held-out shapes for prompt problem p that the prompt never shows:
/// held_out_draws full draws from the op's traits' held_out, each drawn on
/// its own from `seed` (the gate's secret seed) knowing the kernel's tiles.
/// Every extent the family lets change is redrawn independently of the
/// prompt's and of the other draw's.
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

/// The residue sweep for p: residue_classes small shapes, shape r with every
/// axis the family's traits call a row (the last axis, gemm's N and K,
/// attention's D and L, ...) congruent to r modulo 32, and the other axes
/// small, odd and the same in all of them (held_out_draw). Drawn from the
/// gate's secret seed like the full draws.
inline std::vector<problem> residue_problems(const problem& p, std::uint64_t seed, const launch_tiles& tiles = {}) {
  std::vector<problem> out;
  const std::uint64_t shared = seed ^ 0x7265736964756573ull;
  for (int r = 0; r < residue_classes; ++r) {
    held_out_draw d{seed ^ (0x72657369647565ull + static_cast<std::uint64_t>(r + 1) * 0xbf58476d1ce4e5b9ull),
                    held_out_draws + r, tiles, r, shared};
    problem q = family_of(p).held_out(p, d);
    (void)operands(q);
    out.push_back(std::move(q));
  }
  return out;
}

/// p itself, shrunk along the axes one invocation may loop over until four
/// passes over them fit `loop_limit` iterations (the traits' held_out with
/// held_out_draw::loop_limit): the shape the gate judges instead where a
/// device stops long loops (vulkan::loop_iteration_limit). p where it fits.
inline problem loop_fit_problem(const problem& p, std::uint64_t loop_limit, const launch_tiles& tiles = {}) {
  held_out_draw d;
  d.tiles = tiles;
  d.loop_limit = loop_limit;
  problem q = family_of(p).held_out(p, d);
  (void)operands(q);
  return q;
}

/// The bytes of q's operands (each at its element type) and of its largest one.
inline double operand_bytes(const problem& q) { return tensor_bytes(q); }
inline double largest_operand_bytes(const problem& q) {
  double b = 0;
  for (const operand_spec& o : operands(q))
    b = std::max(b, static_cast<double>(o.dims.numel()) * static_cast<double>(size_of(operand_type(q, o))));
  return b;
}
/// The runner allocates each operand with a guard on both sides (256
/// elements and the offset alignment), so a buffer holds a little more.
inline constexpr double buffer_slack = 4096;

namespace detail {
/// The axes of q as groups that change together: an axis of dims with the
/// axis of dims2 aligned to it from the right where the two are equal (a
/// broadcast operand stays broadcast-compatible), and every other axis of
/// dims2 alone. Index i < rank(dims) names dims[i], else dims2[i - rank].
inline std::vector<std::vector<int>> axis_groups(const problem& q) {
  const int ra = q.dims.rank(), rb = q.dims2.rank();
  std::vector<std::vector<int>> g;
  std::vector<bool> tied(static_cast<std::size_t>(rb), false);
  for (int i = 0; i < ra; ++i) {
    std::vector<int> one{i};
    const int j = i - (ra - rb);
    if (rb && j >= 0 && q.dims2[j] == q.dims[i]) {
      one.push_back(ra + j);
      tied[static_cast<std::size_t>(j)] = true;
    }
    g.push_back(std::move(one));
  }
  for (int j = 0; j < rb; ++j)
    if (!tied[static_cast<std::size_t>(j)]) g.push_back({ra + j});
  return g;
}
inline index_t& axis_ref(problem& q, int i) { return i < q.dims.rank() ? q.dims[i] : q.dims2[i - q.dims.rank()]; }
inline index_t axis_of(const problem& q, int i) { return i < q.dims.rank() ? q.dims[i] : q.dims2[i - q.dims.rank()]; }
inline bool valid(const problem& q) {
  try {
    (void)operands(q);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}
/// About half of e, congruent to e modulo 32 where that leaves at least 1
/// (a shrunk held-out shape keeps its residue classes and its oddness),
/// else half of e with e's parity; e where nothing smaller exists.
inline index_t half_keeping_class(index_t e) {
  if (e <= 1) return e;
  const index_t h = e / 2, same = h - ((h - e % 32) % 32 + 32) % 32;
  if (same >= 1) return same;
  const index_t v = (e % 2) ? (h | 1) : std::max<index_t>(2, h - h % 2);
  return v < e ? v : e;
}
}  // namespace detail

/// q shrunk until its largest operand fits one storage buffer
/// (`max_buffer_bytes`, the device's maxStorageBufferRange; 0: no limit) and
/// all its operands `max_total_bytes` (0: no limit): each step halves the
/// axis group whose halving leaves the smallest excess, keeping its residue
/// classes modulo 32 where the axis is long enough (detail::half_keeping_class)
/// and the problem valid; and, where `seconds` is given, until seconds(q)
/// (an estimate of its work) is at most max_seconds. nullopt where no valid
/// shape fits.
inline std::optional<problem> fit_to_device(problem q, double max_buffer_bytes, double max_total_bytes,
                                            const std::function<double(const problem&)>& seconds = {},
                                            double max_seconds = 0) {
  auto excess = [&](const problem& x) {
    double e = 0;
    if (seconds && max_seconds > 0) e = seconds(x) / max_seconds;
    if (max_buffer_bytes > 0) e = std::max(e, (largest_operand_bytes(x) + buffer_slack) / max_buffer_bytes);
    if (max_total_bytes > 0) e = std::max(e, operand_bytes(x) / max_total_bytes);
    return e;
  };
  for (int step = 0; step < 256 && excess(q) > 1; ++step) {
    std::optional<problem> best;
    double best_e = excess(q);
    for (const auto& grp : detail::axis_groups(q)) {
      problem x = q;
      for (int i : grp) detail::axis_ref(x, i) = detail::half_keeping_class(detail::axis_of(q, i));
      if (detail::axis_of(x, grp.front()) == detail::axis_of(q, grp.front()) || !detail::valid(x)) continue;
      const double e = excess(x);
      if (e < best_e) best = x, best_e = e;
    }
    if (!best) return std::nullopt;
    q = *best;
  }
  if (excess(q) > 1) return std::nullopt;
  return q;
}

/// The operand bytes the 2-D-grid shape may take: the worker holds about five
/// host copies of each operand (inputs, reference, candidate, the rerun) and
/// two device copies, so 256 MiB of operands is about 1.5 GiB of memory. Held-out
/// draws are fitted to the larger of this and the prompt's operand bytes.
inline constexpr double grid_shape_byte_limit = 256.0 * 1024 * 1024;

/// The shape that needs more than 65535 workgroups at the kernel's tiles (so
/// the launch folds the flat workgroup id over gl_WorkGroupID.y), or why the
/// gate has none: `p` empty and `reason` saying so.
struct grid_shape {
  std::optional<problem> p;
  std::uint64_t workgroups = 0;
  std::string reason;
};

// ---- what the gate's work costs: timeouts and the worker's deadline --------

/// Rates the gate's time limits assume (docs/GENERATION.md, "Time limits"):
/// those of a slow but correct kernel on a device, per second.
struct work_rates {
  double flops;        ///< arithmetic
  double bytes;        ///< moved: the runner's uploads and downloads, and the kernel's own traffic
  double invocations;  ///< launched (on a CPU device each is a coroutine switched at every barrier)
};
/// A GPU: a naive kernel's flops, transfers through staging memory and PCIe.
inline constexpr work_rates gpu_rates{5e10, 2e9, 1e9};
/// A CPU implementation (lavapipe; device_info::type "cpu"): 100 times a
/// GPU's time per flop; memory copies at host speed; invocations measured on
/// lavapipe (Mesa 22.3, 2-core EPYC, busy): 65536 workgroups of 256 with
/// barriers took 4 s (softmax) to 12 s (attention) per dispatch, ~3e6 per
/// second, taken as 2e6.
inline constexpr work_rates cpu_rates{5e8, 5e7, 2e6};
/// The host's part of a case: the Eigen reference (flops) and the inputs'
/// generation, copies and comparison (operand bytes); measured on the same
/// machine at about 6e7 bytes per second for a 70 MB relu operand.
inline constexpr double host_flops_rate = 1e9, host_bytes_rate = 3e7;
/// A per-dispatch timeout is this many times the run's estimate.
inline constexpr double timeout_safety = 10;
/// On a CPU device a held-out shape's case (two runs and the host's part, at
/// cpu_rates) is estimated at most this many seconds, or the prompt's where
/// that is more: the rates are a slow kernel's, and a correct reduction's
/// held-out shape of 18.5 M elements (estimated 14 s a case) took 0.9 s a
/// case on lavapipe, 14 s a context for its 16 cases. The shape is shrunk
/// as for the device's buffers (residue classes kept); a GPU's held-out
/// shapes are sized by their bytes only.
inline constexpr double cpu_held_out_case_seconds = 2.0;

/// Invocations a launch of q at `tiles` starts.
inline double launched_invocations(const problem& q, const launch_tiles& tiles) {
  const launch l = family_of(q).launch_of(q, tiles);
  return static_cast<double>(l.grid[0]) * l.grid[1] * l.grid[2] * std::max<std::uint32_t>(1, tiles.local_size);
}
/// Estimated seconds of one run of the kernel on q (the runner's one wait:
/// the upload of every operand, one dispatch, the download): flops / flop
/// rate + (2 x operand bytes + the family's bytes) / byte rate + invocations
/// / invocation rate, at gpu_rates or, on a CPU device, cpu_rates.
inline double dispatch_seconds(const problem& q, const launch_tiles& tiles, bool cpu_device) {
  const family_table& f = family_of(q);
  const work_rates& r = cpu_device ? cpu_rates : gpu_rates;
  return f.flops(q) / r.flops + (2 * operand_bytes(q) + f.bytes(q)) / r.bytes + launched_invocations(q, tiles) / r.invocations;
}
/// Estimated seconds of the host's part of one case of q: the Eigen
/// reference twice (the error scale of linear ops runs it again) and the
/// operands' generation, copies and comparison.
inline double host_case_seconds(const problem& q) {
  return 2 * family_of(q).flops(q) / host_flops_rate + operand_bytes(q) / host_bytes_rate;
}
/// The per-dispatch timeout for q: `floor` (the request's, 5 s by default;
/// at least 20 s on a CPU device, which compiles the pipeline inside the
/// first wait — seconds for attention on a busy 2-core machine, and a
/// correct attention kernel was rejected at 37 s with the tests of a build
/// sharing the cores) or safety x dispatch_seconds, whichever is longer.
inline std::chrono::milliseconds dispatch_timeout(const problem& q, const launch_tiles& tiles, bool cpu_device,
                                                  std::chrono::milliseconds floor) {
  if (cpu_device) floor = std::max(floor, std::chrono::milliseconds(20000));
  // A CPU device shares the host's cores with whatever else runs (CI runs
  // two tests at once): three times the margin there.
  const double ms = (cpu_device ? 3 : 1) * timeout_safety * 1000 * dispatch_seconds(q, tiles, cpu_device);
  return std::max(floor, std::chrono::milliseconds(static_cast<long long>(std::min(ms, 3.6e6))));
}

/// Grows one axis of `base` until the launch at `tiles` needs more than
/// 65535 workgroups, with every other axis shrunk to a few (3, else 2, else
/// 1, where the problem stays valid: rows of a few columns), and keeps the
/// cheapest such shape by the host's and a CPU device's estimated time. gemm
/// and conv2d have a 3-D grid by contract (no fold to test); a shape over
/// grid_shape_byte_limit is skipped, with the reason; so is one whose
/// largest operand would not fit one storage buffer (`max_buffer_bytes`, the
/// device's maxStorageBufferRange; 0: no such limit) even then — a kernel
/// whose workgroups each take more elements than the buffer holds per 65536.
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
  auto cost = [&](const problem& q) { return dispatch_seconds(q, tiles, true) + host_case_seconds(q); };
  double best_cost = 0, best_bytes = 0;
  std::optional<problem> too_wide;  // the cheapest shape refused for its largest operand
  double too_wide_buffer = 0;
  const auto groups = detail::axis_groups(base);
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    // The others shrunk to a few (3, else 2, else 1), else halved as long as
    // the problem stays valid; twice round (one axis may bound another:
    // kv_append's pos + T <= Lmax).
    problem small = base;
    auto set_group = [](problem x, const std::vector<int>& grp, index_t v) {
      for (int i : grp) detail::axis_ref(x, i) = std::min(detail::axis_of(x, i), v);
      return x;
    };
    for (int round = 0; round < 2; ++round)
      for (std::size_t gj = 0; gj < groups.size(); ++gj) {
        if (gj == gi) continue;
        const index_t cur = detail::axis_of(small, groups[gj].front());
        bool done = cur <= 3;
        for (index_t few : {3, 2, 1}) {
          if (done) break;
          const problem x = set_group(small, groups[gj], few);
          if (detail::valid(x)) small = x, done = true;
        }
        for (index_t v = cur / 2; !done && v > 3; v /= 2) {
          const problem x = set_group(small, groups[gj], v);
          if (!detail::valid(x)) break;
          small = x;
        }
      }
    // The group grows together (tied axes were shrunk together, so they are
    // still equal); where it cannot grow alone (kv_append's T is bounded by
    // the cache's Lmax), another group grows by the same amount beside it.
    const std::vector<int>& grp = groups[gi];
    const index_t e = detail::axis_of(small, grp.front());
    if (e < 1) continue;
    std::uint64_t g0 = 1;
    try {
      g0 = std::max<std::uint64_t>(1, workgroups(small));
    } catch (const std::exception&) {
      continue;
    }
    auto grow = [&](const std::vector<int>* partner) {
      index_t v = e * static_cast<index_t>((65536 + 64 + g0 - 1) / g0) + 1;
      // Steps of a quarter: the first guess counts whole workgroups of a small
      // shape and falls short; doubling would overshoot by up to 2x the bytes.
      for (int tries = 0; tries < 40; ++tries, v += v / 4 + 1) {
        problem q = small;
        for (int i : grp) detail::axis_ref(q, i) = v;
        if (partner)
          for (int i : *partner) detail::axis_ref(q, i) += v - e;
        try {
          (void)operands(q);
          if (!folds(q)) continue;
        } catch (const std::exception&) {
          return false;  // the group cannot grow so
        }
        if (max_buffer_bytes && largest_operand_bytes(q) + buffer_slack > static_cast<double>(max_buffer_bytes)) {
          if (!too_wide || largest_operand_bytes(q) < too_wide_buffer) {
            too_wide = q;
            too_wide_buffer = largest_operand_bytes(q);
          }
          return true;
        }
        const double c = cost(q);
        if (!out.p || c < best_cost) {
          out.p = q;
          best_cost = c;
          best_bytes = operand_bytes(q);
          out.workgroups = workgroups(q);
        }
        return true;
      }
      return false;
    };
    if (!grow(nullptr))
      for (std::size_t gj = 0; gj < groups.size(); ++gj)
        if (gj != gi) grow(&groups[gj]);
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
  /// The per-dispatch timeout's floor (dispatch_timeout); 0: the context's timeout.
  std::chrono::milliseconds dispatch_timeout{0};
  /// Told the worker's wall-clock budget in ms once the plan is drawn, and
  /// again when it grows (the sandbox's parent extends its deadline to it).
  std::function<void(double)> on_budget;
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
///  "compile_log", "reflection", "spirv_hash", "race_check", "shared_fill": {"filled": [name...], "left": [...],
///  ["error"]}, "subnormals", "held_out": [shape...], "residues": [shape...],
///  "held_out_notes": [...], "grid_2d": {"validated", "shape", "workgroups", "rule"}, "worker_budget_ms",
///  "validation": [{"shape", "role", "held_out", ["instead_of", "loop_limit"], "shared_fill", "seconds", "timeout_ms",
///  "report"}...],
///  "plain_validation" (same form), "loop_limit": {"iterations", ["probe_error"], "judged_instead"} (where a failure
///  asked for the device's loop limit), "benchmark", "revalidation"}. Validation stops at the first
///  shape that fails.
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

  // The variant with its shared memory filled, which the suite runs. Where
  // the fill cannot be built or compiled (the gate's own limits, not the
  // kernel's), the kernel as written runs instead and the verdict says so.
  shared_fill fill;
  std::string fill_error;
  std::unique_ptr<kernel_runner> kf;
  auto make_filled = [&](vulkan::context& c) {
    if (fill.glsl.empty()) return;
    try {
      kf = std::make_unique<kernel_runner>(c, main, "generated_filled_" + main.op, fill.glsl);
    } catch (const vulkan::device_lost&) {
      throw;
    } catch (const std::exception& e) {
      fill_error = e.what();
      fill.glsl.clear();
      kf.reset();
    }
  };
  try {
    fill = fill_shared_memory(glsl, k->spirv());
    make_filled(ctx);
  } catch (const vulkan::device_lost& e) {
    return finish(false, stage::timeout, e.what());
  } catch (const std::exception& e) {
    fill_error = e.what();
    fill.glsl.clear();
  }
  w.key("shared_fill").begin_object().key("filled").begin_array();
  for (const auto& n : fill.filled) w.value(n);
  w.end_array().key("left").begin_array();
  for (const auto& n : fill.left) w.value(n);
  w.end_array();
  if (!fill_error.empty()) w.field("error", "not filled (the kernel runs as written): " + fill_error);
  w.end_object();
  kernel_runner* active = kf ? kf.get() : k.get();

  // Whether this device flushes subnormal operands (vulkan::flushes_subnormals):
  // where it keeps them, a kernel that flushes them on purpose is wrong. A
  // probe that fails leaves the allowance on (the verdict says so).
  bool device_flushes = true;
  std::string subnormal_note;
  try {
    device_flushes = vulkan::flushes_subnormals(ctx);
    subnormal_note = device_flushes ? "flushed by the device: outputs on flushed inputs accepted" : "kept by the device";
  } catch (const std::exception& e) {
    subnormal_note = std::string("probe failed (outputs on flushed inputs accepted): ") + e.what();
  }
  w.field("subnormals", subnormal_note);

  bool lost = false;
  std::string lost_reason;
  bool twice = true;  // each case runs twice (determinism); the 2-D grid shape once on a CPU device
  const executor candidate = [&](const problem& p, std::vector<host_tensor>& ts) {
    try {
      if (!twice) {
        active->run(p, ts);
        return;
      }
      std::vector<host_tensor> again = ts;  // same inputs and the same poisoned outputs
      active->run(p, ts);
      active->run(p, again);
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
  // The shapes: the caller's (the prompt's first), the held-out draws, the
  // residue sweep and the 2-D-grid shape where there is one
  // (docs/GENERATION.md, "Held-out shapes"), each fitted to the device.
  struct gate_shape {
    problem p;
    std::string role;  // prompt, given, held_out, residue, grid_2d
    std::vector<input_case> cases;
    std::string instead_of;  // judged on p instead of this shape (the device's loop limit)
  };
  const std::vector<input_case> all(all_cases.begin(), all_cases.end());
  std::vector<gate_shape> plan;
  for (std::size_t i = 0; i < shapes.size(); ++i) plan.push_back({shapes[i], i == 0 ? "prompt" : "given", all, ""});
  const kernel_reflection& refl = k->reflection();
  const launch_tiles tiles{refl.local_size, refl.tile_m, refl.tile_n, refl.tile};
  const bool cpu_device = ctx.info().type == "cpu";
  const double max_buffer = static_cast<double>(ctx.info().max_storage_buffer_range);
  // Held-out shapes take at most the prompt's operand bytes or
  // grid_shape_byte_limit, whichever is more, and fit one storage buffer.
  const double held_total = std::max(grid_shape_byte_limit, operand_bytes(main));
  // On a CPU device, by their work too (cpu_held_out_case_seconds).
  const std::function<double(const problem&)> case_seconds = [&](const problem& q) {
    return 2 * dispatch_seconds(q, tiles, true) + host_case_seconds(q);
  };
  const double held_seconds = cpu_device ? std::max(cpu_held_out_case_seconds, case_seconds(main)) : 0;
  std::vector<std::string> fit_notes;
  auto fitted = [&](const std::vector<problem>& drawn) {
    std::vector<problem> out;
    for (const problem& h : drawn) {
      const std::optional<problem> f =
          cpu_device ? fit_to_device(h, max_buffer, held_total, case_seconds, held_seconds) : fit_to_device(h, max_buffer, held_total);
      if (!f) {
        fit_notes.push_back("left out: " + describe(h) + " cannot be shrunk to fit the device");
        continue;
      }
      if (!(f->dims == h.dims && f->dims2 == h.dims2))
        fit_notes.push_back(describe(*f) + " instead of " + describe(h) +
                            (cpu_device ? ": shrunk to fit the device's buffers and the work a CPU device runs in time"
                                        : ": shrunk to fit the device's buffers"));
      out.push_back(*f);
    }
    return out;
  };
  const std::vector<problem> held = opt.held_out ? fitted(held_out_problems(main, opt.seed, tiles)) : std::vector<problem>{};
  const std::vector<problem> residues = opt.held_out ? fitted(residue_problems(main, opt.seed, tiles)) : std::vector<problem>{};
  for (const auto& h : held) plan.push_back({h, "held_out", all, ""});
  // The sweep is about the shapes, not the values: the normal case only.
  for (const auto& h : residues) plan.push_back({h, "residue", {input_case::normal}, ""});
  grid_shape grid;
  if (opt.held_out) grid = grid_problem(held.empty() ? main : held.front(), tiles, ctx.info().max_storage_buffer_range);
  else grid.reason = "not drawn: the kernel passed the whole gate before; this run checks given shapes only";
  if (grid.p) plan.push_back({*grid.p, "grid_2d", {input_case::normal}, ""});
  w.key("held_out").begin_array();
  for (const auto& h : held) w.value(describe(h));
  w.end_array();
  w.key("residues").begin_array();
  for (const auto& h : residues) w.value(describe(h));
  w.end_array();
  w.key("held_out_notes").begin_array();
  for (const auto& n : fit_notes) w.value(n);
  w.end_array();
  w.key("grid_2d").begin_object().field("validated", grid.p.has_value()).field("shape", grid.p ? describe(*grid.p) : "");
  w.field("workgroups", grid.workgroups).field("rule", grid.reason).end_object();

  // Time limits follow the work (docs/GENERATION.md, "Time limits"): each
  // shape's wait gets dispatch_timeout, and the worker's deadline is the
  // floor (30 s + 4 x the largest per-dispatch timeout) plus three times the
  // estimate of every run of every case on both contexts.
  const std::chrono::milliseconds floor = opt.dispatch_timeout.count() > 0 ? opt.dispatch_timeout : ctx.timeout();
  auto timeout_for = [&](const problem& q) { return dispatch_timeout(q, tiles, cpu_device, floor); };
  // The 2-D grid shape's point is the fold, not determinism (every other
  // shape checks that): on a CPU device, where its 65536 workgroups take
  // seconds, it runs once per context.
  auto runs_of = [&](const gate_shape& s) { return cpu_device && s.role == "grid_2d" ? 1 : 2; };
  auto shape_seconds = [&](const gate_shape& s) {
    return static_cast<double>(s.cases.size()) *
           (runs_of(s) * dispatch_seconds(s.p, tiles, cpu_device) + host_case_seconds(s.p));
  };
  double budget_ms = 0;
  auto announce_budget = [&](double extra_s) {
    double longest = static_cast<double>(floor.count()), work = extra_s;
    for (const auto& s : plan) {
      longest = std::max(longest, static_cast<double>(timeout_for(s.p).count()));
      work += 2 * shape_seconds(s);  // the robust and the plain context
    }
    work += opt.benchmark ? 2.0 * (opt.bench_reps + 1) * dispatch_seconds(main, tiles, cpu_device) : 0.0;
    work += opt.revalidate ? shape_seconds(plan.front()) : 0.0;
    budget_ms = 30000 + 4 * longest + 3000 * work;
    if (opt.on_budget) opt.on_budget(budget_ms);
  };
  announce_budget(0);
  w.field("worker_budget_ms", budget_ms);

  // A device that stops an invocation's loops (lavapipe: 65535 iterations in
  // all) fails a correct kernel whose invocations loop over a long row. Where
  // a shape fails on such a device and four passes over its long axes could
  // pass the limit, the shape is judged on loop_fit_problem instead (the same
  // shape, shrunk along them): a kernel wrong there is still rejected. Only
  // where the gate admits a kernel (held_out): a check of given shapes
  // (gen/bucket.hpp's verdicts) asks whether the kernel runs them here.
  bool probed = false;
  std::uint64_t loop_limit = 0;
  std::string probe_error;
  std::vector<std::string> loop_notes;
  auto device_loop_limit = [&]() {
    if (!probed) {
      probed = true;
      try {
        loop_limit = vulkan::loop_iteration_limit(ctx);
      } catch (const std::exception& e) {
        loop_limit = 0;  // no limit known: the failure stands
        probe_error = e.what();
      }
    }
    return loop_limit;
  };
  vulkan::context* cur_ctx = &ctx;
  auto label_of = [&](const gate_shape& s) -> std::string {
    if (s.role == "held_out") return " (held-out shape)";
    if (s.role == "residue") return " (held-out shape of the residue sweep)";
    if (s.role == "grid_2d") return " (held-out 2-D grid shape, " + std::to_string(grid.workgroups) + " workgroups)";
    return "";
  };
  auto validate_shapes = [&](std::uint64_t seed, std::vector<gate_shape>& ps, std::string* reason) {
    bool ok = true;
    w.begin_array();
    auto run_one = [&](const gate_shape& s, std::size_t i) {
      suite_options so;
      so.seed = seed + 0x9e3779b97f4a7c15ull * i;
      so.skip_degenerate = true;
      so.contract = true;  // contract kernels: embedding's bad ids too
      so.stop_at_first_failure = true;  // a wrong kernel's verdict costs one failing case
      so.allow_flushed_inputs = device_flushes;  // flushed subnormal inputs only where the device flushes them
      so.cases = s.cases;
      cur_ctx->set_timeout(timeout_for(s.p));
      twice = runs_of(s) == 2;
      const auto t0 = std::chrono::steady_clock::now();
      report r = lost ? report{} : validate(s.p, candidate, so);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // A derived shape's only case may have a degenerate reference (tiny
      // shapes): no evidence either way, not a failure.
      if (!lost && r.num_total == 0 && (s.role == "residue" || s.role == "grid_2d")) r.all_passed = true;
      w.begin_object().field("shape", describe(s.p)).field("role", s.role).field("held_out", s.role != "prompt" && s.role != "given");
      if (!s.instead_of.empty()) w.field("instead_of", s.instead_of).field("loop_limit", loop_limit);
      w.field("shared_fill", active == kf.get() ? "specials" : active == k.get() ? "none" : "zeros").field("seconds", secs);
      w.field("timeout_ms", static_cast<double>(cur_ctx->timeout().count()));
      w.key("report").raw(r.to_json()).end_object();
      return r;
    };
    for (std::size_t i = 0; i < ps.size() && ok; ++i) {
      const report r = run_one(ps[i], i);
      if (lost) break;
      if (r.all_passed) continue;
      std::string failure = failure_summary(r, describe(ps[i].p) + label_of(ps[i]));
      if (active != k.get()) {
        // The kernel with zeros in its shared memory on the same shape and
        // seed: where it passes, the failure is what the kernel read before
        // anything wrote it.
        std::unique_ptr<kernel_runner> zeros;
        try {
          zeros = std::make_unique<kernel_runner>(*cur_ctx, main, "generated_zero_filled_" + main.op,
                                                  fill_shared_memory(glsl, k->spirv(), fill_value::zeros).glsl);
        } catch (const vulkan::device_lost& e) {
          lost = true;
          lost_reason = e.what();
          break;
        } catch (const std::exception&) {
          // no verdict on the cause; the failure stands as it is
        }
        if (zeros) {
          kernel_runner* filled = active;
          active = zeros.get();
          const report zero_filled = run_one(ps[i], i);
          active = filled;
          if (lost) break;
          if (zero_filled.all_passed) {
            ok = false;
            *reason = "reads shared memory no invocation wrote: " + failure +
                      " with its shared memory filled with +Inf, -Inf and NaN before it runs (filled with zeros, as the "
                      "devices tried leave it, it passes)";
            break;
          }
        }
      }
      if (opt.held_out && ps[i].instead_of.empty() && device_loop_limit() > 0) {
        const problem fit = loop_fit_problem(ps[i].p, loop_limit, tiles);
        // The 2-D grid shape is there for its workgroups past 65535 along x:
        // shrunk until its grid folds no more, it would test nothing of that
        // (a kernel that ignores gl_WorkGroupID.y would pass), so there the
        // failure stands.
        const bool grid_lost = ps[i].role == "grid_2d" && family_of(fit).launch_of(fit, tiles).grid[1] <= 1;
        if (grid_lost)
          failure += " (not judged on a shape shrunk to the loop limit of " + std::to_string(loop_limit) + " iterations of " +
                     ctx.info().name + ": " + describe(fit) + " would need no 2-D grid)";
        if (!grid_lost && !(fit.dims == ps[i].p.dims && fit.dims2 == ps[i].p.dims2 && fit.attrs == ps[i].p.attrs)) {
          const std::string note = "judged on " + describe(fit) + " instead of " + describe(ps[i].p) +
                                   ": the loop limit of " + std::to_string(loop_limit) +
                                   " iterations per invocation of " + ctx.info().name;
          gate_shape s = ps[i];
          s.instead_of = describe(ps[i].p);
          s.p = fit;
          announce_budget(2 * shape_seconds(s));
          const report r2 = run_one(s, i);
          if (lost) break;
          if (r2.all_passed) {
            ps[i] = std::move(s);  // later passes (the plain context, the re-validation) judge it there too
            if (std::find(loop_notes.begin(), loop_notes.end(), note) == loop_notes.end()) loop_notes.push_back(note);
            continue;
          }
          failure = failure_summary(r2, describe(fit) + label_of(ps[i])) + " (" + note + ")";
        }
      }
      ok = false;
      *reason = failure;
    }
    w.end_array();
    return ok;
  };
  auto loop_text = [&]() {
    std::string s;
    for (const auto& n : loop_notes) s += "; " + n;
    return s;
  };
  auto write_loop_limit = [&]() {
    if (!probed) return;
    w.key("loop_limit").begin_object().field("iterations", loop_limit);
    if (!probe_error.empty()) w.field("probe_error", probe_error);
    w.key("judged_instead").begin_array();
    for (const auto& n : loop_notes) w.value(n);
    w.end_array().end_object();
  };
  std::string reason;
  w.key("validation");
  const bool valid = validate_shapes(opt.seed, plan, &reason);
  if (lost) return finish(false, stage::timeout, lost_reason);
  if (!valid) {
    write_loop_limit();
    return finish(false, stage::validation, reason);
  }

  vulkan::context* run_ctx = &ctx;
  if (ctx.robust_buffer_access() && opt.plain_context) {
    try {
      run_ctx = &opt.plain_context();
      cur_ctx = run_ctx;
      k = std::make_unique<kernel_runner>(*run_ctx, main, "generated_" + main.op, glsl);
      kf.reset();
      make_filled(*run_ctx);
      active = kf ? kf.get() : k.get();
    } catch (const vulkan::device_lost& e) {
      return finish(false, stage::timeout, e.what());
    } catch (const std::exception& e) {
      return finish(false, stage::interface, std::string("without robust buffer access: ") + e.what());
    }
    w.key("plain_validation");
    if (!validate_shapes(opt.seed ^ 0x2545f4914f6cdd1dull, plan, &reason)) {
      if (lost) return finish(false, stage::timeout, lost_reason);
      write_loop_limit();
      return finish(false, stage::validation, "without robust buffer access: " + reason);
    }
  }

  active = k.get();  // the benchmark and the re-validation: the kernel as written
  if (opt.benchmark) {
    try {
      std::vector<host_tensor> ts = allocate(main);
      generate_inputs(main, input_case::normal, opt.seed, ts);
      run_ctx->set_timeout(timeout_for(main) * (opt.bench_reps + 1));
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
    std::vector<gate_shape> first{plan.front()};
    if (!validate_shapes(opt.seed ^ 0x5bd1e995u, first, &reason)) {
      if (lost) return finish(false, stage::timeout, lost_reason);
      write_loop_limit();
      return finish(false, stage::validation, "after timing: " + reason);
    }
  }
  write_loop_limit();
  return finish(true, stage::accepted,
                "passed " + std::to_string(shapes.size() + held.size()) + " shapes (" + std::to_string(held.size()) +
                    " held out) x " + std::to_string(all.size()) + " cases, " + std::to_string(residues.size()) +
                    " shapes of the residue sweep" +
                    (grid.p ? " and a 2-D grid shape of " + std::to_string(grid.workgroups) + " workgroups" : "") +
                    ", deterministic" + loop_text());
}

}  // namespace kforge::gen
