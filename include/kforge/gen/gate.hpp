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
/// as for the device's buffers (residue classes kept).
inline constexpr double cpu_held_out_case_seconds = 2.0;
/// On a GPU the device's part of a case is small and the host's (the Eigen
/// reference, the inputs' generation, the comparison, at host rates) is the
/// cost: a held-out shape's case is estimated at most this many seconds
/// there, or the prompt's where that is more. Sized by bytes alone (up to
/// 256 MiB of operands), a correct reduction's verdict took 36-41 s on the
/// H100 for some secret seeds and 2 s for others.
inline constexpr double gpu_held_out_case_seconds = 1.0;

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
namespace detail {

/// One run of the gate: its state and its steps, each a method that writes
/// its part of the answer and says whether the verdict is still open
/// (run() takes them in order; docs/GENERATION.md "The gate" numbers them).
class gate_run {
 public:
  gate_run(vulkan::context& ctx, const std::vector<problem>& shapes, const std::string& glsl, gate_options opt)
      : ctx_(ctx), cur_ctx_(&ctx), shapes_(shapes), main_(shapes.front()), glsl_(glsl), opt_(std::move(opt)) {
    if (opt_.seed == 0) opt_.seed = secret_seed();
  }

  std::string run() {
    w_.begin_object().field("robust_buffer_access", ctx_.robust_buffer_access());
    w_.field("robust_buffer_access2", ctx_.robust_buffer_access2());
    if (!compile() || !check_races() || !fill_shared()) return verdict_;
    probe_subnormals();
    plan_shapes();
    if (!validate_robust() || !validate_plain() || !benchmark() || !revalidate()) return verdict_;
    write_loop_limit();
    return finish(true, stage::accepted,
                  "passed " + std::to_string(shapes_.size() + held_.size()) + " shapes (" + std::to_string(held_.size()) +
                      " held out) x " + std::to_string(all_cases.size()) + " cases, " + std::to_string(residues_.size()) +
                      " shapes of the residue sweep" +
                      (grid_.p ? " and a 2-D grid shape of " + std::to_string(grid_.workgroups) + " workgroups" : "") +
                      ", deterministic" + loop_text());
  }

 private:
  /// A shape the suite runs: the caller's (the prompt's first), the held-out
  /// draws, the residue sweep and the 2-D-grid shape (docs/GENERATION.md,
  /// "Held-out shapes"), each fitted to the device.
  struct gate_shape {
    problem p;
    std::string role;  // prompt, given, held_out, residue, grid_2d
    std::vector<input_case> cases;
    std::string instead_of;  // judged on p instead of this shape (the device's loop limit)
  };

  /// Ends the answer with the verdict (kept in verdict_); returns false so
  /// that a step can `return reject(...)`.
  std::string finish(bool accepted, const char* st, const std::string& reason) {
    w_.field("accepted", accepted).field("stage", st).field("reason", reason).end_object();
    verdict_ = w_.str();
    return verdict_;
  }
  bool reject(const char* st, const std::string& reason) {
    finish(false, st, reason);
    return false;
  }

  // ---- 1-2: compile and the contract check (kernel_runner) ----------------
  bool compile() {
    try {
      k_ = std::make_unique<kernel_runner>(ctx_, main_, "generated_" + main_.op, glsl_);
    } catch (const vulkan::shader_error& e) {
      w_.field("compile_log", std::string(e.what()));
      return reject(stage::compile, e.what());
    } catch (const vulkan::interface_error& e) {
      return reject(stage::interface, e.what());
    } catch (const vulkan::device_lost& e) {
      return reject(stage::timeout, e.what());
    } catch (const std::exception& e) {
      // Pipeline creation refused by the driver, or f16 without 16-bit storage.
      return reject(stage::interface, e.what());
    }
    w_.key("reflection").raw(k_->reflection().to_json());
    w_.field("spirv_hash", spirv_hash(k_->spirv()));
    const kernel_reflection& refl = k_->reflection();
    tiles_ = {refl.local_size, refl.tile_m, refl.tile_n, refl.tile};
    return true;
  }

  // ---- 3: the static race check (race.hpp) --------------------------------
  /// Before any case, and on any device: a race that changes no output here
  /// may change one on the next device. The same GLSL again with OpLine, so
  /// that the reason names source lines.
  bool check_races() {
    const race_report races = check_shared_races(compile_glsl("race_check_" + main_.op, glsl_, true));
    w_.key("race_check").raw(races.to_json());
    if (!races.race()) return true;
    std::string reason = races.findings.front().text();
    if (races.findings.size() > 1) reason += " (and " + std::to_string(races.findings.size() - 1) + " more)";
    return reject(stage::race, reason);
  }

  // ---- the variant the suite runs: shared memory filled (shared_fill.hpp) --
  /// Where the fill cannot be built or compiled (the gate's own limits, not
  /// the kernel's), the kernel as written runs instead and the answer says so.
  void make_filled(vulkan::context& c) {
    kf_.reset();
    if (fill_.glsl.empty()) return;
    try {
      kf_ = std::make_unique<kernel_runner>(c, main_, "generated_filled_" + main_.op, fill_.glsl);
    } catch (const vulkan::device_lost&) {
      throw;
    } catch (const std::exception& e) {
      fill_error_ = e.what();
      fill_.glsl.clear();
    }
  }
  bool fill_shared() {
    try {
      fill_ = fill_shared_memory(glsl_, k_->spirv());
      make_filled(ctx_);
    } catch (const vulkan::device_lost& e) {
      return reject(stage::timeout, e.what());
    } catch (const std::exception& e) {
      fill_error_ = e.what();
      fill_.glsl.clear();
    }
    w_.key("shared_fill").begin_object().key("filled").begin_array();
    for (const auto& n : fill_.filled) w_.value(n);
    w_.end_array().key("left").begin_array();
    for (const auto& n : fill_.left) w_.value(n);
    w_.end_array();
    if (!fill_error_.empty()) w_.field("error", "not filled (the kernel runs as written): " + fill_error_);
    w_.end_object();
    active_ = kf_ ? kf_.get() : k_.get();
    return true;
  }

  /// Whether this device flushes subnormal operands (vulkan::flushes_subnormals):
  /// where it keeps them, a kernel that flushes them on purpose is wrong. A
  /// probe that fails leaves the allowance on (the answer says so).
  void probe_subnormals() {
    std::string note;
    try {
      device_flushes_ = vulkan::flushes_subnormals(ctx_);
      note = device_flushes_ ? "flushed by the device: outputs on flushed inputs accepted" : "kept by the device";
    } catch (const std::exception& e) {
      note = std::string("probe failed (outputs on flushed inputs accepted): ") + e.what();
    }
    w_.field("subnormals", note);
  }

  // ---- the shapes and the time limits -------------------------------------
  void plan_shapes() {
    const std::vector<input_case> all(all_cases.begin(), all_cases.end());
    for (std::size_t i = 0; i < shapes_.size(); ++i) plan_.push_back({shapes_[i], i == 0 ? "prompt" : "given", all, ""});
    cpu_device_ = ctx_.info().type == "cpu";
    const double max_buffer = static_cast<double>(ctx_.info().max_storage_buffer_range);
    // Held-out shapes take at most the prompt's operand bytes or
    // grid_shape_byte_limit, whichever is more, and fit one storage buffer;
    // they are sized by their work too (cpu_ / gpu_held_out_case_seconds).
    const double held_total = std::max(grid_shape_byte_limit, operand_bytes(main_));
    const std::function<double(const problem&)> case_seconds = [&](const problem& q) {
      return 2 * dispatch_seconds(q, tiles_, cpu_device_) + host_case_seconds(q);
    };
    const double held_seconds =
        std::max(cpu_device_ ? cpu_held_out_case_seconds : gpu_held_out_case_seconds, case_seconds(main_));
    std::vector<std::string> fit_notes;
    auto fitted = [&](const std::vector<problem>& drawn) {
      std::vector<problem> out;
      for (const problem& h : drawn) {
        const std::optional<problem> f = fit_to_device(h, max_buffer, held_total, case_seconds, held_seconds);
        if (!f) {
          fit_notes.push_back("left out: " + describe(h) + " cannot be shrunk to fit the device");
          continue;
        }
        if (!(f->dims == h.dims && f->dims2 == h.dims2))
          fit_notes.push_back(describe(*f) + " instead of " + describe(h) +
                              (cpu_device_ ? ": shrunk to fit the device's buffers and the work a CPU device runs in time"
                                           : ": shrunk to fit the device's buffers and the host's work per case"));
        out.push_back(*f);
      }
      return out;
    };
    if (opt_.held_out) {
      held_ = fitted(held_out_problems(main_, opt_.seed, tiles_));
      residues_ = fitted(residue_problems(main_, opt_.seed, tiles_));
    }
    for (const auto& h : held_) plan_.push_back({h, "held_out", all, ""});
    // The sweep is about the shapes, not the values: the normal case only.
    for (const auto& h : residues_) plan_.push_back({h, "residue", {input_case::normal}, ""});
    if (opt_.held_out) grid_ = grid_problem(held_.empty() ? main_ : held_.front(), tiles_, ctx_.info().max_storage_buffer_range);
    else grid_.reason = "not drawn: the kernel passed the whole gate before; this run checks given shapes only";
    if (grid_.p) plan_.push_back({*grid_.p, "grid_2d", {input_case::normal}, ""});
    w_.key("held_out").begin_array();
    for (const auto& h : held_) w_.value(describe(h));
    w_.end_array();
    w_.key("residues").begin_array();
    for (const auto& h : residues_) w_.value(describe(h));
    w_.end_array();
    w_.key("held_out_notes").begin_array();
    for (const auto& n : fit_notes) w_.value(n);
    w_.end_array();
    w_.key("grid_2d").begin_object().field("validated", grid_.p.has_value()).field("shape", grid_.p ? describe(*grid_.p) : "");
    w_.field("workgroups", grid_.workgroups).field("rule", grid_.reason).end_object();
    floor_ = opt_.dispatch_timeout.count() > 0 ? opt_.dispatch_timeout : ctx_.timeout();
    announce_budget(0);
    w_.field("worker_budget_ms", budget_ms_);
  }

  /// Time limits follow the work (docs/GENERATION.md, "Time limits"): each
  /// shape's wait gets dispatch_timeout, and the worker's deadline is the
  /// floor (30 s + 4 x the largest per-dispatch timeout) plus three times
  /// the estimate of every run of every case on both contexts.
  std::chrono::milliseconds timeout_for(const problem& q) const { return dispatch_timeout(q, tiles_, cpu_device_, floor_); }
  /// The 2-D grid shape's point is the fold, not determinism (every other
  /// shape checks that): on a CPU device, where its 65536 workgroups take
  /// seconds, it runs once per context.
  int runs_of(const gate_shape& s) const { return cpu_device_ && s.role == "grid_2d" ? 1 : 2; }
  double shape_seconds(const gate_shape& s) const {
    return static_cast<double>(s.cases.size()) *
           (runs_of(s) * dispatch_seconds(s.p, tiles_, cpu_device_) + host_case_seconds(s.p));
  }
  void announce_budget(double extra_s) {
    double longest = static_cast<double>(floor_.count()), work = extra_s;
    for (const auto& s : plan_) {
      longest = std::max(longest, static_cast<double>(timeout_for(s.p).count()));
      work += 2 * shape_seconds(s);  // the robust and the plain context
    }
    work += opt_.benchmark ? 2.0 * (opt_.bench_reps + 1) * dispatch_seconds(main_, tiles_, cpu_device_) : 0.0;
    work += opt_.revalidate ? shape_seconds(plan_.front()) : 0.0;
    budget_ms_ = 30000 + 4 * longest + 3000 * work;
    if (opt_.on_budget) opt_.on_budget(budget_ms_);
  }

  // ---- 4-6: the suite, guards and determinism, per shape -------------------
  /// Runs the active variant on p: once, or twice on the same inputs
  /// (outputs poisoned the same) with identical bits required.
  void run_candidate(const problem& p, std::vector<host_tensor>& ts) {
    try {
      if (!twice_) {
        active_->run(p, ts);
        return;
      }
      std::vector<host_tensor> again = ts;  // same inputs and the same poisoned outputs
      active_->run(p, ts);
      active_->run(p, again);
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
      lost_ = true;
      lost_reason_ = e.what();
      throw;
    }
  }

  /// The suite on one shape (seed + its index), written to the answer's array.
  report run_shape(const gate_shape& s, std::size_t i, std::uint64_t seed) {
    suite_options so;
    so.seed = seed + 0x9e3779b97f4a7c15ull * i;
    so.skip_degenerate = true;
    so.contract = true;                          // contract kernels: embedding's bad ids too
    so.stop_at_first_failure = true;             // a wrong kernel's verdict costs one failing case
    so.allow_flushed_inputs = device_flushes_;   // flushed subnormal inputs only where the device flushes them
    so.cases = s.cases;
    cur_ctx_->set_timeout(timeout_for(s.p));
    twice_ = runs_of(s) == 2;
    const auto t0 = std::chrono::steady_clock::now();
    const executor candidate = [this](const problem& p, std::vector<host_tensor>& ts) { run_candidate(p, ts); };
    report r = lost_ ? report{} : validate(s.p, candidate, so);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // A derived shape's only case may have a degenerate reference (tiny
    // shapes): no evidence either way, not a failure.
    if (!lost_ && r.num_total == 0 && (s.role == "residue" || s.role == "grid_2d")) r.all_passed = true;
    w_.begin_object().field("shape", describe(s.p)).field("role", s.role).field("held_out", s.role != "prompt" && s.role != "given");
    if (!s.instead_of.empty()) w_.field("instead_of", s.instead_of).field("loop_limit", loop_limit_);
    w_.field("shared_fill", active_ == kf_.get() ? "specials" : active_ == k_.get() ? "none" : "zeros").field("seconds", secs);
    w_.field("timeout_ms", static_cast<double>(cur_ctx_->timeout().count()));
    w_.key("report").raw(r.to_json()).end_object();
    return r;
  }

  std::string label_of(const gate_shape& s) const {
    if (s.role == "held_out") return " (held-out shape)";
    if (s.role == "residue") return " (held-out shape of the residue sweep)";
    if (s.role == "grid_2d") return " (held-out 2-D grid shape, " + std::to_string(grid_.workgroups) + " workgroups)";
    return "";
  }

  /// The device's loop limit, probed once (0: none known).
  std::uint64_t device_loop_limit() {
    if (!probed_) {
      probed_ = true;
      try {
        loop_limit_ = vulkan::loop_iteration_limit(ctx_);
      } catch (const std::exception& e) {
        loop_limit_ = 0;  // no limit known: the failure stands
        probe_error_ = e.what();
      }
    }
    return loop_limit_;
  }

  /// Where the filled variant failed: the kernel with zeros in its shared
  /// memory on the same shape and seed. Where that passes, the failure is
  /// what the kernel read before anything wrote it: the reason, else "".
  std::string unwritten_read(const gate_shape& s, std::size_t i, std::uint64_t seed, const std::string& failure) {
    if (active_ != kf_.get() || !kf_) return "";
    std::unique_ptr<kernel_runner> zeros;
    try {
      zeros = std::make_unique<kernel_runner>(*cur_ctx_, main_, "generated_zero_filled_" + main_.op,
                                              fill_shared_memory(glsl_, k_->spirv(), fill_value::zeros).glsl);
    } catch (const vulkan::device_lost& e) {
      lost_ = true;
      lost_reason_ = e.what();
      return "";
    } catch (const std::exception&) {
      return "";  // no verdict on the cause; the failure stands as it is
    }
    kernel_runner* filled = active_;
    active_ = zeros.get();
    const report zero_filled = run_shape(s, i, seed);
    active_ = filled;
    if (lost_ || !zero_filled.all_passed) return "";
    return "reads shared memory no invocation wrote: " + failure +
           " with its shared memory filled with +Inf, -Inf and NaN before it runs (filled with zeros, as the devices "
           "tried leave it, it passes)";
  }

  /// A device that stops an invocation's loops (lavapipe: 65535 iterations
  /// in all) fails a correct kernel whose invocations loop over a long row.
  /// Where a shape fails on such a device and four passes over its long axes
  /// could pass the limit, the shape is judged on loop_fit_problem instead
  /// (the same shape, shrunk along them): a kernel wrong there is still
  /// rejected. Only where the gate admits a kernel (held_out): a check of
  /// given shapes (gen/bucket.hpp's verdicts) asks whether the kernel runs
  /// them here. Returns whether the shape passed there; `failure` becomes
  /// the reason where it did not.
  bool judged_at_loop_limit(std::vector<gate_shape>& ps, std::size_t i, std::uint64_t seed, std::string& failure) {
    if (!opt_.held_out || !ps[i].instead_of.empty() || device_loop_limit() == 0) return false;
    const problem fit = loop_fit_problem(ps[i].p, loop_limit_, tiles_);
    // The 2-D grid shape is there for its workgroups past 65535 along x:
    // shrunk until its grid folds no more, it would test nothing of that
    // (a kernel that ignores gl_WorkGroupID.y would pass), so there the
    // failure stands.
    if (ps[i].role == "grid_2d" && family_of(fit).launch_of(fit, tiles_).grid[1] <= 1) {
      failure += " (not judged on a shape shrunk to the loop limit of " + std::to_string(loop_limit_) + " iterations of " +
                 ctx_.info().name + ": " + describe(fit) + " would need no 2-D grid)";
      return false;
    }
    if (fit.dims == ps[i].p.dims && fit.dims2 == ps[i].p.dims2 && fit.attrs == ps[i].p.attrs) return false;
    const std::string note = "judged on " + describe(fit) + " instead of " + describe(ps[i].p) + ": the loop limit of " +
                             std::to_string(loop_limit_) + " iterations per invocation of " + ctx_.info().name;
    gate_shape s = ps[i];
    s.instead_of = describe(ps[i].p);
    s.p = fit;
    announce_budget(2 * shape_seconds(s));
    const report r2 = run_shape(s, i, seed);
    if (lost_) return false;
    if (r2.all_passed) {
      ps[i] = std::move(s);  // later passes (the plain context, the re-validation) judge it there too
      if (std::find(loop_notes_.begin(), loop_notes_.end(), note) == loop_notes_.end()) loop_notes_.push_back(note);
      return true;
    }
    failure = failure_summary(r2, describe(fit) + label_of(ps[i])) + " (" + note + ")";
    return false;
  }

  /// The suite on every shape of ps in order, stopping at the first that
  /// fails: true where all passed, else `reason` says why (lost_ set where
  /// the device was lost).
  bool validate_shapes(std::uint64_t seed, std::vector<gate_shape>& ps, std::string& reason) {
    bool ok = true;
    w_.begin_array();
    for (std::size_t i = 0; i < ps.size() && ok && !lost_; ++i) {
      const report r = run_shape(ps[i], i, seed);
      if (lost_ || r.all_passed) continue;
      std::string failure = failure_summary(r, describe(ps[i].p) + label_of(ps[i]));
      const std::string unwritten = unwritten_read(ps[i], i, seed, failure);
      if (lost_) break;
      if (!unwritten.empty()) {
        reason = unwritten;
        ok = false;
        break;
      }
      if (judged_at_loop_limit(ps, i, seed, failure)) continue;
      if (lost_) break;
      ok = false;
      reason = failure;
    }
    w_.end_array();
    return ok && !lost_;
  }

  /// The verdict of a validation pass that failed: a timeout where the device was lost.
  bool failed_validation(const std::string& prefix, const std::string& reason) {
    if (lost_) return reject(stage::timeout, lost_reason_);
    write_loop_limit();
    return reject(stage::validation, prefix + reason);
  }

  /// The suite on the context given (robust buffer access in the sandbox).
  bool validate_robust() {
    std::string reason;
    w_.key("validation");
    return validate_shapes(opt_.seed, plan_, reason) || failed_validation("", reason);
  }

  /// Again on a context without robust buffer access (gate.hpp's header).
  bool validate_plain() {
    if (!ctx_.robust_buffer_access() || !opt_.plain_context) return true;
    try {
      run_ctx_ = &opt_.plain_context();
      cur_ctx_ = run_ctx_;
      k_ = std::make_unique<kernel_runner>(*run_ctx_, main_, "generated_" + main_.op, glsl_);
      make_filled(*run_ctx_);
      active_ = kf_ ? kf_.get() : k_.get();
    } catch (const vulkan::device_lost& e) {
      return reject(stage::timeout, e.what());
    } catch (const std::exception& e) {
      return reject(stage::interface, std::string("without robust buffer access: ") + e.what());
    }
    std::string reason;
    w_.key("plain_validation");
    return validate_shapes(opt_.seed ^ 0x2545f4914f6cdd1dull, plan_, reason) ||
           failed_validation("without robust buffer access: ", reason);
  }

  // ---- 7: the benchmark against kforge's own kernel, as written ------------
  bool benchmark() {
    active_ = k_.get();  // the benchmark and the re-validation: the kernel as written
    if (!opt_.benchmark) return true;
    try {
      std::vector<host_tensor> ts = allocate(main_);
      generate_inputs(main_, input_case::normal, opt_.seed, ts);
      run_ctx_->set_timeout(timeout_for(main_) * (opt_.bench_reps + 1));
      const double cand = k_->time_ms(main_, ts, opt_.bench_reps);
      kernel_runner builtin(*run_ctx_, main_, "kforge_" + main_.op, template_source(main_));
      const double own = builtin.time_ms(main_, ts, opt_.bench_reps);
      w_.key("benchmark").begin_object().field("candidate_ms", cand).field("builtin_ms", own);
      w_.field("speedup_vs_builtin", cand > 0 ? own / cand : 0.0).field("reps", opt_.bench_reps);
      w_.field("timer", run_ctx_->info().timestamps ? "gpu timestamps" : "wall clock").field("device", run_ctx_->info().name);
      w_.field("robust_buffer_access", run_ctx_->robust_buffer_access()).end_object();
    } catch (const vulkan::device_lost& e) {
      return reject(stage::timeout, e.what());
    }
    return true;
  }

  // ---- 8: the re-validation after timing ----------------------------------
  /// A kernel whose results change once it has run many times (state kept
  /// in buffers, races that need a warm cache) fails here.
  bool revalidate() {
    if (!opt_.revalidate) return true;
    std::string reason;
    w_.key("revalidation");
    std::vector<gate_shape> first{plan_.front()};
    return validate_shapes(opt_.seed ^ 0x5bd1e995u, first, reason) || failed_validation("after timing: ", reason);
  }

  std::string loop_text() const {
    std::string s;
    for (const auto& n : loop_notes_) s += "; " + n;
    return s;
  }
  void write_loop_limit() {
    if (!probed_) return;
    w_.key("loop_limit").begin_object().field("iterations", loop_limit_);
    if (!probe_error_.empty()) w_.field("probe_error", probe_error_);
    w_.key("judged_instead").begin_array();
    for (const auto& n : loop_notes_) w_.value(n);
    w_.end_array().end_object();
  }

  vulkan::context& ctx_;
  vulkan::context* cur_ctx_;            // where the suite runs now
  vulkan::context* run_ctx_ = &ctx_;    // where the benchmark and the re-validation run
  const std::vector<problem>& shapes_;
  const problem& main_;
  const std::string& glsl_;
  gate_options opt_;
  json_writer w_;
  std::string verdict_;
  std::unique_ptr<kernel_runner> k_, kf_;  // the kernel as written; with its shared memory filled
  kernel_runner* active_ = nullptr;        // the one the suite runs
  shared_fill fill_;
  std::string fill_error_;
  launch_tiles tiles_{};
  bool cpu_device_ = false, device_flushes_ = true, twice_ = true;
  std::vector<gate_shape> plan_;
  std::vector<problem> held_, residues_;
  grid_shape grid_;
  std::chrono::milliseconds floor_{0};
  double budget_ms_ = 0;
  bool lost_ = false;
  std::string lost_reason_;
  bool probed_ = false;
  std::uint64_t loop_limit_ = 0;
  std::string probe_error_;
  std::vector<std::string> loop_notes_;
};

}  // namespace detail

inline std::string run_gate(vulkan::context& ctx, const std::vector<problem>& shapes, const std::string& glsl,
                            gate_options opt = {}) {
  if (shapes.empty()) throw argument_error("kforge::gen::run_gate: no shapes");
  return detail::gate_run(ctx, shapes, glsl, std::move(opt)).run();
}

}  // namespace kforge::gen
