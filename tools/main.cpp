// tools/main.cpp — the kforge command-line tool.
//
//   kforge devices | run | validate | bench | demo   (kforge <command> --help)
//
// Exit codes: 0 ok, 1 validation failed / kernel rejected, 2 usage error,
// 3 environment problem (e.g. no Vulkan device). Every error is one line on
// stderr; every command has --json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <kforge/core/json.hpp>
#include <kforge/validate.hpp>

#include "registry.hpp"

#if defined(KFORGE_TOOL_HAS_TUNE)
// The tuner's commands, each in its own file (cmd_tune.cpp, cmd_cache.cpp,
// cmd_roofline.cpp); they print their own one-line errors and return the exit code.
#include "cmd_roofline.hpp"
namespace kforge::tool {
int cmd_tune(const problem& p, const std::map<std::string, std::string>& values, const std::vector<std::string>& flags,
             const std::vector<policy_entry>& policies);
int cmd_cache(const std::string& sub, const std::map<std::string, std::string>& values,
              const std::vector<std::string>& flags);
}  // namespace kforge::tool
#endif

#if defined(KFORGE_TOOL_HAS_GEN)
// Kernel generation's commands (cmd_gen.cpp, cmd_mutate.cpp, cmd_worker.cpp);
// they print their own one-line errors and return the exit code.
namespace kforge::tool {
int cmd_gen(const problem& p, const std::map<std::string, std::string>& values, const std::vector<std::string>& flags);
int cmd_validate_kernel(const problem& p, const std::map<std::string, std::string>& values,
                        const std::vector<std::string>& flags);
int cmd_mutate(const std::map<std::string, std::string>& values, const std::vector<std::string>& flags);
int cmd_worker(const std::map<std::string, std::string>& values);
int gen_records_list(const std::map<std::string, std::string>& values, const std::vector<std::string>& flags);
}  // namespace kforge::tool
#endif

namespace kf = kforge;
using kf::tool::policy_entry;

namespace {

enum exit_code { ok = 0, failed = 1, usage = 2, environment = 3 };

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct environment_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* main_help = R"(kforge — fast, portable numeric kernels you can trust

usage: kforge <command> [options]

commands:
  devices    list the CPU and Vulkan devices and their features
  run        run one op once on a policy; print time, throughput and max error vs Eigen
  validate   run the 10-case validation suite for one op against the Eigen reference
  bench      time one op on several policies; medians and ratios vs a peer
  demo       the default problem set on every available policy, validated, as a table
  gen        generate GLSL kernels for one op (LLM or offline templates), admit only validated ones
  mutate     check that the validation gate rejects plausible-but-wrong kernels (mutation testing)
  tune       search a backend's knobs for one problem; store the winner in the tuning cache
  cache      list, show or clear the tuning cache (kforge cache list|show|clear)

Run `kforge <command> --help` for the options of a command.
Exit codes: 0 ok, 1 validation failed, 2 usage error, 3 environment problem.
)";

const char* op_help = R"(
problem options:
  --op OP            the op (see the list below)
  --shape SHAPE      dims separated by 'x'; the order depends on the op:
                       gemm MxNxK; softmax/layer_norm/rms_norm RxC; unary ops any dims;
                       binary ops A[,B] with NumPy broadcasting (e.g. 8x100,100);
                       reduce_* any dims with --axis; conv2d NxCxHxW,KxCxRxS (C of the
                       filter is C/groups); attention BxHxSxD[,L] (L = key length)
  --dtype T          f32 (default), f16 or bf16
  --epilogue E       gemm/conv2d: none, bias, relu, leaky_relu, gelu, gelu_tanh, silu,
                     or bias_<activation> (e.g. bias_gelu)
  --alpha A --beta B gemm scaling (C = act(alpha*A*B + beta*C + bias))
  --slope S          leaky_relu slope (default 0.01)
  --col-major-a, --col-major-b   gemm operand layouts
  --stride S[xS] --pad P[xP] --dilation D[xD] --groups G   conv2d
  --axis N           reduction axis (default -1)
  --eps E            layer_norm/rms_norm epsilon
  --causal           attention causal mask
ops: gemm, relu, leaky_relu, gelu, gelu_tanh, silu, exp, tanh, sigmoid, abs, neg,
     add, sub, mul, div, max, min, reduce_sum, reduce_mean, reduce_max, reduce_min,
     softmax, layer_norm, rms_norm, conv2d, attention
)";

std::map<std::string, std::string> command_help = {
    {"gen", std::string("usage: kforge gen --op OP --shape SHAPE [--dtype T] [--provider template|replay|openai]\n"
                        "                  [--model M] [--base-url URL] [--replay FILE.jsonl] [--samples N] [--force]\n"
                        "                  [--temperature T] [--max-tokens N] [--timeout-ms MS] [--export DIR] [--json]\n\n"
                        "Asks the provider for N kernels (default 4), feeding each rejection back into the next\n"
                        "prompt; compiles each with glslang, checks it against docs/KERNEL_CONTRACT.md, validates it in\n"
                        "a sandboxed child process (10 cases with a secret seed, on SHAPE and a held-out shape,\n"
                        "guard regions, determinism), benchmarks accepted ones against kforge's own kernel, and\n"
                        "writes one record per attempt (c_/r_ *.json) under the cache dir's generated/ folder.\n"
                        "A cached accepted kernel is returned without asking the provider unless --force.\n"
                        "Providers: template (default; offline variants of kforge's kernels, some deliberately\n"
                        "wrong), replay (--replay FILE.jsonl), openai (any OpenAI-compatible server: --base-url,\n"
                        "--model, key from KFORGE_LLM_API_KEY or OPENAI_API_KEY). --export DIR writes the best\n"
                        "kernel as GLSL, SPIR-V, HLSL and MSL. Exit 0 if a kernel was accepted, 1 if none.\n"
                        "`kforge cache list --status c|r` lists the accepted (c) or rejected (r) records.\n") + op_help},
    {"mutate", "usage: kforge mutate [--op OP] [--json]\n\nRuns kforge's own kernel for each op (or one op) and its built-in mutants (off-by-one\nbounds, missing tail, missing barrier, dropped scale, wrong init, reading past the end,\npartial output, returning an input, f16 accumulation) through the generation gate. Exit 0\nwhen every mutant is rejected and every original accepted.\n"},
    {"devices", "usage: kforge devices [--json]\n\nLists the CPU (features, compiled micro-kernel, threads) and every Vulkan device\nwith the features kforge uses.\n"},
    {"run", std::string("usage: kforge run --op OP --shape SHAPE [--dtype T] [--policy NAME] [--epilogue E] [--reps N] [--json]\n\n"
                        "Runs the op on the policy (default: threaded if present, else eigen), prints the median\n"
                        "time of N runs (default 5), throughput, and the max error against the Eigen reference.\n"
                        "Exit 1 if the result is outside the op's tolerance.\n") + op_help},
    {"validate", std::string("usage: kforge validate --op OP --shape SHAPE [--dtype T] [--policy NAME] [--seed N] [--kernel FILE.comp] [--json]\n\n"
                             "Runs the 10-case suite (uniform, normal, sparse, large/small magnitude, zeros, ones,\n"
                             "alternating signs, extremes, NaN/Inf) against the Eigen reference. Exit 1 on any failure.\n"
                             "With --kernel FILE.comp the kernel (following docs/KERNEL_CONTRACT.md) goes through the\n"
                             "sandboxed generation gate instead; exit 0 accepted, 1 rejected with the reason.\n") + op_help},
    {"bench", std::string("usage: kforge bench --op OP --shape SHAPE [--policy P[,P...]] [--vs eigen] [--reps N] [--roofline FILE.svg] [--json]\n\n"
                          "Times each policy (median of N runs, default 10, after a warm-up) and prints GFLOP/s or\n"
                          "GB/s and the ratio to the peer given by --vs (default eigen). Results are validated once.\n"
                          "Each case also gets its arithmetic intensity, the roofline bound from its device's bandwidth\n"
                          "and peak measured by kforge's probes (once per device, cached in the cache dir: the CPU for\n"
                          "CPU policies, the Vulkan device for vulkan) and the fraction reached. A vulkan row's median\n"
                          "is wall time with uploads and downloads; its fraction uses the kernels' GPU time (timestamps,\n"
                          "gpu_median_ms in --json). --roofline FILE.svg writes one chart with each device's roof and its\n"
                          "points; --remeasure-roofline probes again (do it on an idle machine: the probes use every\n"
                          "core, or the whole GPU).\n") + op_help},
    {"tune", std::string("usage: kforge tune --op OP --shape SHAPE [--dtype T] [--policy FAMILY] [--strategy grid|halving|descent]\n"
                         "                   [--budget SECONDS] [--trials N] [--reps N] [--no-generated] [--json]\n\n"
                         "Validates every candidate of the family's search space with the 10-case suite, times the\n"
                         "valid ones (warm-up, N samples, median; default 9), re-validates the winner and stores it in\n"
                         "the tuning cache (KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge) for\n"
                         "the problem's shape bucket (each dim rounded up to a power of two); every trial goes to\n"
                         "history.csv. FAMILY: cpu (default: blocked and threaded), blocked, threaded, eigen, vulkan.\n"
                         "vulkan: kforge's Vulkan gemm configs (gemm) or its own Vulkan kernel (other ops), and the\n"
                         "accepted generated kernels of exactly this problem (kforge gen's c_ records), each named\n"
                         "generated:<record file>; --no-generated leaves those out. Other ops need at least one.\n"
                         "Strategies: halving (default; successive halving), grid (every candidate), descent\n"
                         "(coordinate descent from the default). --budget (default 60) and --trials bound the search.\n"
                         "Exit 1 if no candidate passed validation.\n") + op_help},
    {"cache", "usage: kforge cache list|show|clear [--op OP --shape SHAPE [--dtype T]] [--device TEXT] [--json]\n\n"
              "list: one line per tuned (device, op, dtype, bucket), CPU and Vulkan alike. show: every field,\n"
              "or with --op/--shape the entries this machine uses for that problem, one per device (the CPU,\n"
              "and the Vulkan device where there is one; exit 1 if none). --device TEXT keeps the entries\n"
              "whose device contains TEXT (e.g. --device vulkan). clear: remove every entry, or those whose\n"
              "device contains --device. See docs/TUNING.md for the format.\n"},
    {"demo", "usage: kforge demo [--json] [--quick]\n\nRuns gemm, conv2d, softmax, layer_norm and attention on every available policy,\nvalidates each with the 10-case suite, and prints policy, time, throughput, speed-up vs\nEigen and max error. --quick uses smaller shapes.\n"},
};

// ---- argument parsing ------------------------------------------------------

struct args {
  std::string command;
  std::map<std::string, std::string> values;
  std::vector<std::string> flags;
  bool has(const std::string& f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }
  std::optional<std::string> get(const std::string& k) const {
    auto it = values.find(k);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
};

const std::vector<std::string> value_options = {"kernel", "provider", "model", "base-url", "replay", "samples",
                                                "temperature", "max-tokens", "timeout-ms", "export", "status",
                                                "request", "response", "op", "shape", "dtype", "policy", "epilogue", "alpha", "beta", "slope",
                                                "stride", "pad", "dilation", "groups", "axis", "eps", "reps", "seed", "vs",
                                                "strategy", "budget", "trials", "device", "roofline"};
const std::vector<std::string> flag_options = {"force", "json", "causal", "col-major-a", "col-major-b", "help", "quick", "remeasure-roofline",
                                               "no-generated"};

args parse_args(int argc, char** argv) {
  args a;
  if (argc < 2) throw usage_error("no command given (try kforge --help)");
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + s + "'");
    std::string key = s.substr(2), value;
    bool inline_value = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      inline_value = true;
    }
    if (std::find(flag_options.begin(), flag_options.end(), key) != flag_options.end()) {
      if (inline_value) throw usage_error("--" + key + " takes no value");
      a.flags.push_back(key);
    } else if (std::find(value_options.begin(), value_options.end(), key) != value_options.end()) {
      if (!inline_value) {
        if (i + 1 >= argc) throw usage_error("--" + key + " needs a value");
        value = argv[++i];
      }
      a.values[key] = value;
    } else {
      throw usage_error("unknown option '--" + key + "'");
    }
  }
  return a;
}

int to_int(const std::string& what, const std::string& s) {
  try {
    std::size_t pos = 0;
    const long v = std::stol(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return static_cast<int>(v);
  } catch (const std::exception&) {
    throw usage_error("--" + what + " expects an integer, got '" + s + "'");
  }
}
float to_float(const std::string& what, const std::string& s) {
  try {
    std::size_t pos = 0;
    const float v = std::stof(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw usage_error("--" + what + " expects a number, got '" + s + "'");
  }
}
void pair_option(const args& a, const std::string& key, int (&out)[2]) {
  if (auto v = a.get(key)) {
    const auto x = v->find('x');
    out[0] = to_int(key, v->substr(0, x));
    out[1] = x == std::string::npos ? out[0] : to_int(key, v->substr(x + 1));
  }
}

kf::problem problem_from(const args& a) {
  kf::problem p;
  const auto op = a.get("op");
  const auto shp = a.get("shape");
  if (!op) throw usage_error("--op is required");
  if (!shp) throw usage_error("--shape is required");
  p.op = *op;
  try {
    kf::find_op(p.op);
    kf::set_shape(p, *shp);
    if (auto d = a.get("dtype")) p.type = kf::parse_dtype(*d);
    if (p.type == kf::dtype::f64) throw usage_error("--dtype must be f32, f16 or bf16");
  } catch (const kf::error& e) {
    throw usage_error(e.what());
  }
  if (auto e = a.get("epilogue")) {
    const auto fam = kf::find_op(p.op).family;
    if (fam != kf::op_family::gemm && fam != kf::op_family::conv2d) throw usage_error("--epilogue applies to gemm and conv2d only");
    p.epilogue = *e;
    try {
      kf::detail::with_epilogue(*e, [](auto) {});
    } catch (const kf::error& x) {
      throw usage_error(x.what());
    }
  }
  if (auto v = a.get("alpha")) p.alpha = to_float("alpha", *v);
  if (auto v = a.get("beta")) p.beta = to_float("beta", *v);
  if (auto v = a.get("slope")) p.slope = to_float("slope", *v);
  if (auto v = a.get("eps")) p.epsilon = to_float("eps", *v);
  if (auto v = a.get("axis")) p.axis = to_int("axis", *v);
  if (auto v = a.get("groups")) p.groups = to_int("groups", *v);
  pair_option(a, "stride", p.stride);
  pair_option(a, "pad", p.pad);
  pair_option(a, "dilation", p.dilation);
  p.causal = a.has("causal");
  p.a_col_major = a.has("col-major-a");
  p.b_col_major = a.has("col-major-b");
  try {
    (void)kf::operands(p);  // shape consistency (conv fit, broadcast, axis)
  } catch (const kf::error& e) {
    throw usage_error(e.what());
  }
  return p;
}

// ---- policies --------------------------------------------------------------

std::vector<policy_entry>& policies() {
  static std::vector<policy_entry> all = [] {
    std::vector<policy_entry> v;
    kf::tool::register_cpu(v);
    kf::tool::register_vulkan(v);
    return v;
  }();
  return all;
}

const policy_entry& find_policy(const std::string& name) {
  for (const auto& p : policies())
    if (p.name == name) return p;
  std::string known;
  for (const auto& p : policies()) known += (known.empty() ? "" : ", ") + p.name;
  if (name == "vulkan") throw environment_error(kf::tool::vulkan_problem());
  throw usage_error("unknown policy '" + name + "' (available: " + known + ")");
}

std::string default_policy() {
  for (const char* n : {"threaded", "blocked"})
    for (const auto& p : policies())
      if (p.name == n) return n;
  return "eigen";
}

void require_available(const policy_entry& e) {
  if (const std::string why = e.unavailable(); !why.empty())
    throw environment_error("policy " + e.name + " is unavailable: " + why);
}

// ---- measurement -----------------------------------------------------------

struct timing {
  double median_s = 0, min_s = 0;
  int reps = 0;
  double device_median_s = -1;  ///< median of the device's own time of each run (GPU timestamps), -1 if none
};

/// Median wall time of `reps` runs after one warm-up, on fresh output buffers;
/// and the median of the device's own times where the policy reports them
/// (Vulkan: the kernels' GPU time, without the uploads and downloads).
timing time_policy(const policy_entry& e, const kf::problem& p, std::vector<kf::host_tensor> ts, int reps) {
  e.execute(p, ts);  // warm-up: compiles shaders, fills caches, wakes threads
  std::vector<double> t, dev;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    e.execute(p, ts);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (const double d = e.device_seconds(); d >= 0) dev.push_back(d);
  }
  std::sort(t.begin(), t.end());
  std::sort(dev.begin(), dev.end());
  return {t[t.size() / 2], t.front(), reps, dev.size() == t.size() ? dev[dev.size() / 2] : -1.0};
}

std::string throughput(const kf::problem& p, double seconds, double* value = nullptr, std::string* unit = nullptr) {
  const bool compute = kf::compute_bound(p);
  const double v = (compute ? kf::flops(p) : kf::min_bytes(p)) / seconds / 1e9;
  if (value) *value = v;
  if (unit) *unit = compute ? "GFLOP/s" : "GB/s";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, compute ? "GFLOP/s" : "GB/s");
  return buf;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Inputs from the normal distribution, and the max error against Eigen of one run.
struct single_check {
  bool passed;
  double max_abs_err, max_rel_err;
};
single_check check_once(const policy_entry& e, const kf::problem& p, std::vector<kf::host_tensor>& ts) {
  kf::suite_options o;
  o.cases = {kf::input_case::normal};
  const kf::report r = kf::validate(p, e.execute, o);
  if (!r.cases.empty() && !r.cases[0].error.empty()) throw kf::error(r.cases[0].error);
  kf::generate_inputs(p, kf::input_case::normal, o.seed, ts);
  return {r.all_passed, r.max_abs_err, r.max_rel_err};
}

// ---- commands --------------------------------------------------------------

int cmd_devices(const args& a) {
  if (a.has("json")) {
    kf::json_writer w;
    w.begin_object().key("cpu").raw(kf::tool::cpu_json());
    const std::string vk = kf::tool::vulkan_json();
    w.key("vulkan").raw(vk.empty() ? "[]" : vk);
    const std::string why = kf::tool::vulkan_problem();
    if (!why.empty()) w.field("vulkan_unavailable", why);
    w.end_object();
    std::cout << w.str() << "\n";
  } else {
    std::cout << kf::tool::cpu_text();
    const std::string vk = kf::tool::vulkan_text();
    const std::string why = kf::tool::vulkan_problem();
    std::cout << (vk.empty() ? "Vulkan: none\n" : vk);
    if (!why.empty()) std::cout << "Vulkan unavailable: " << why << "\n";
  }
  return ok;
}

int cmd_run(const args& a) {
  const kf::problem p = problem_from(a);
  const policy_entry& e = find_policy(a.get("policy").value_or(default_policy()));
  require_available(e);
  const int reps = a.get("reps") ? std::max(1, to_int("reps", *a.get("reps"))) : 5;
  std::vector<kf::host_tensor> ts = kf::allocate(p);
  const single_check c = check_once(e, p, ts);
  const timing t = time_policy(e, p, ts, reps);
  double tp = 0;
  std::string unit;
  const std::string tps = throughput(p, t.median_s, &tp, &unit);
  if (a.has("json")) {
    kf::json_writer w;
    w.begin_object().field("problem", kf::describe(p)).field("policy", e.name).field("detail", e.detail);
    w.field("median_ms", t.median_s * 1e3).field("min_ms", t.min_s * 1e3).field("reps", t.reps);
    w.field("throughput", tp).field("unit", unit).field("max_abs_err", c.max_abs_err).field("max_rel_err", c.max_rel_err);
    w.field("within_tolerance", c.passed).end_object();
    std::cout << w.str() << "\n";
  } else {
    std::cout << kf::describe(p) << " on " << e.name << " (" << e.detail << ")\n"
              << "  time " << fmt("%.4f", t.median_s * 1e3) << " ms (median of " << reps << "), " << tps << "\n"
              << "  max error vs eigen: abs " << fmt("%.3g", c.max_abs_err) << ", rel " << fmt("%.3g", c.max_rel_err)
              << (c.passed ? " (within tolerance)" : " (OUTSIDE TOLERANCE)") << "\n";
  }
  return c.passed ? ok : failed;
}

int cmd_validate(const args& a) {
  const kf::problem p = problem_from(a);
  const policy_entry& e = find_policy(a.get("policy").value_or(default_policy()));
  require_available(e);
  kf::suite_options o;
  if (auto s = a.get("seed")) o.seed = static_cast<std::uint64_t>(to_int("seed", *s));
  const kf::report r = kf::validate(p, e.execute, o);
  if (a.has("json")) {
    std::cout << r.to_json() << "\n";
  } else {
    std::cout << r.problem << " on " << e.name << ": " << r.num_passed << "/" << r.num_total << " cases passed\n";
    for (const auto& c : r.cases) {
      std::cout << "  " << (c.passed ? "pass " : "FAIL ") << c.name << (c.degenerate ? " (degenerate reference)" : "")
                << "  max abs err " << fmt("%.3g", c.max_abs_err) << ", rel " << fmt("%.3g", c.max_rel_err);
      if (!c.passed && c.first_bad >= 0)
        std::cout << ", " << c.mismatches << " of " << c.elements << " wrong, first at " << c.first_bad << ": got "
                  << c.first_bad_out << " expected " << c.first_bad_ref;
      if (!c.error.empty()) std::cout << ", error: " << c.error;
      std::cout << "\n";
    }
    if (!r.note.empty()) std::cout << "  note: " << r.note << "\n";
    std::cout << (r.all_passed ? "PASSED" : "FAILED") << "\n";
  }
  return r.all_passed ? ok : failed;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int cmd_bench(const args& a) {
  const kf::problem p = problem_from(a);
  const std::string vs = a.get("vs").value_or("eigen");
  std::vector<std::string> names = split(a.get("policy").value_or(default_policy()));
  if (std::find(names.begin(), names.end(), vs) == names.end()) names.insert(names.begin(), vs);
  const int reps = a.get("reps") ? std::max(1, to_int("reps", *a.get("reps"))) : 10;
  struct row {
    std::string name, detail;
    timing t;
    double tp;
    std::string unit;
    single_check c;
  };
  std::vector<row> rows;
  for (const auto& n : names) {
    const policy_entry& e = find_policy(n);
    require_available(e);
    std::vector<kf::host_tensor> ts = kf::allocate(p);
    row r{e.name, e.detail, {}, 0, "", check_once(e, p, ts)};
    r.t = time_policy(e, p, ts, reps);
    throughput(p, r.t.median_s, &r.tp, &r.unit);
    rows.push_back(r);
  }
  const double peer = rows.front().t.median_s;
  bool all_ok = true;
#if defined(KFORGE_TOOL_HAS_TUNE)
  // The roofline of each device the policies ran on (probed once, cached):
  // intensity, bound, fraction. A Vulkan row's fraction uses the kernels' GPU
  // time where the device has timestamps (its median_ms is wall time and
  // includes the uploads and downloads), else the wall time.
  std::vector<kf::tool::roofline_report> roofs;
  roofs.reserve(2);  // one per target: references into it stay valid
  auto roof_of = [&](const std::string& policy) -> const kf::tool::roofline_report& {
    const std::string target = kf::tool::roofline_target(policy);
    for (const auto& r : roofs)
      if (r.target == target) return r;
    roofs.push_back(kf::tool::roofline_for(p, target, a.has("remeasure-roofline")));
    return roofs.back();
  };
  for (const auto& r : rows) (void)roof_of(r.name);
  auto roof_seconds = [](const row& r) { return r.t.device_median_s >= 0 ? r.t.device_median_s : r.t.median_s; };
#endif
  kf::json_writer w;
  w.begin_object().field("problem", kf::describe(p)).field("vs", vs).field("reps", reps).key("results").begin_array();
  if (!a.has("json")) std::printf("%s, median of %d runs\n%-10s %12s %16s %10s %12s\n", kf::describe(p).c_str(), reps, "policy", "median ms", "throughput", "vs " , "max rel err");
  for (const auto& r : rows) {
    all_ok = all_ok && r.c.passed;
    const double ratio = peer / r.t.median_s;
    w.begin_object().field("policy", r.name).field("detail", r.detail).field("median_ms", r.t.median_s * 1e3);
    if (r.t.device_median_s >= 0) w.field("gpu_median_ms", r.t.device_median_s * 1e3);
    w.field("throughput", r.tp).field("unit", r.unit).field("ratio_vs_peer", ratio).field("max_rel_err", r.c.max_rel_err);
    w.field("within_tolerance", r.c.passed);
#if defined(KFORGE_TOOL_HAS_TUNE)
    const auto& roof = roof_of(r.name);
    if (const double f = kf::tool::roofline_fraction(roof, p, roof_seconds(r)); f >= 0)
      w.field("roofline_device", roof.device).field("arithmetic_intensity", roof.intensity)
          .field("attainable_gflops", roof.bound_flops / 1e9).field("fraction_of_roofline", f)
          .field("roofline_time", r.t.device_median_s >= 0 ? "gpu" : "wall");
#endif
    w.end_object();
    if (!a.has("json"))
      std::printf("%-10s %12.4f %11.2f %-7s %8.2fx %12.3g%s\n", r.name.c_str(), r.t.median_s * 1e3, r.tp, r.unit.c_str(), ratio,
                  r.c.max_rel_err, r.c.passed ? "" : "  OUTSIDE TOLERANCE");
  }
  w.end_array();
#if defined(KFORGE_TOOL_HAS_TUNE)
  w.key("rooflines").begin_array();
  for (const auto& roof : roofs) {
    if (!roof.available) {
      w.begin_object().field("target", roof.target).field("unavailable", roof.why).end_object();
      if (!a.has("json")) std::printf("roofline %s: unavailable (%s)\n", roof.target.c_str(), roof.why.c_str());
      continue;
    }
    w.begin_object().field("target", roof.target).field("device", roof.device).field("bandwidth_gbs", roof.bandwidth / 1e9);
    w.field("peak_gflops", roof.peak / 1e9);
    if (roof.peak_f16 > 0) w.field("peak_f16_gflops", roof.peak_f16 / 1e9);
    w.field("measured_at", roof.measured_at).field("method", roof.method).field("arithmetic_intensity", roof.intensity);
    w.field("attainable_gflops", roof.bound_flops / 1e9).field("f16_roof", roof.f16_roof).end_object();
    if (a.has("json")) continue;
    std::printf("roofline %s: %.1f GB/s, %.1f GFLOP/s", roof.device.c_str(), roof.bandwidth / 1e9, roof.peak / 1e9);
    if (roof.peak_f16 > 0) std::printf(" (f16 %.1f)", roof.peak_f16 / 1e9);
    std::printf(" (kforge probes, %s); intensity %.3g flop/B, attainable %.2f GFLOP/s%s\n", roof.measured_at.c_str(),
                roof.intensity, roof.bound_flops / 1e9, roof.f16_roof ? " (f16 roof)" : "");
    for (const auto& r : rows) {
      if (kf::tool::roofline_target(r.name) != roof.target) continue;
      const double f = kf::tool::roofline_fraction(roof, p, roof_seconds(r));
      if (f < 0) continue;
      if (r.t.device_median_s >= 0)
        std::printf("  %-10s %6.1f%% of attainable (GPU time of the kernels, %.4f ms median; wall %.4f ms includes transfers)\n",
                    r.name.c_str(), 100 * f, r.t.device_median_s * 1e3, r.t.median_s * 1e3);
      else
        std::printf("  %-10s %6.1f%% of attainable (%s time)\n", r.name.c_str(), 100 * f,
                    roof.target == "cpu" ? "wall" : "wall, with transfers: no GPU timestamps");
    }
  }
  w.end_array();
  if (auto svg = a.get("roofline")) {
    std::vector<kf::tool::roofline_case> cases;
    for (const auto& r : rows) cases.push_back({r.name, roof_seconds(r)});
    try {
      kf::tool::write_roofline_svg(roofs, p, cases, *svg);
    } catch (const kf::error& e) {
      throw environment_error(e.what());
    }
    if (!a.has("json")) std::printf("roofline chart: %s\n", svg->c_str());
  }
#endif
  w.end_object();
  if (a.has("json")) std::cout << w.str() << "\n";
  return all_ok ? ok : failed;
}

std::vector<kf::problem> demo_problems(bool quick) {
  std::vector<kf::problem> ps;
  auto add = [&](const char* op, const char* shp, auto&& tweak) {
    kf::problem p;
    p.op = op;
    kf::set_shape(p, shp);
    tweak(p);
    ps.push_back(p);
  };
  auto none = [](kf::problem&) {};
  add("gemm", quick ? "128x128x128" : "512x512x512", none);
  add("gemm", quick ? "100x96x130" : "257x1000x300", [](kf::problem& p) { p.epilogue = "bias_gelu"; });
  add("conv2d", quick ? "1x16x14x14,16x16x3x3" : "1x64x28x28,64x64x3x3", [](kf::problem& p) { p.pad[0] = p.pad[1] = 1; });
  add("softmax", quick ? "64x1000" : "512x4096", none);
  add("layer_norm", quick ? "64x1000" : "512x4096", none);
  add("attention", quick ? "1x2x64x32" : "1x8x256x64", [](kf::problem& p) { p.causal = true; });
  return ps;
}

int cmd_demo(const args& a) {
  const bool quick = a.has("quick");
  kf::json_writer w;
  w.begin_object().key("rows").begin_array();
  bool all_ok = true;
  if (!a.has("json")) {
    std::cout << "kforge demo: every op on every available policy, validated against Eigen (10 cases each)\n\n";
    std::printf("%-34s %-9s %10s %18s %9s %10s %8s\n", "problem", "policy", "time ms", "throughput", "vs eigen", "max rel err", "valid");
  }
  for (const kf::problem& p : demo_problems(quick)) {
    double eigen_s = 0;
    for (const policy_entry& e : policies()) {
      const std::string why = e.unavailable();
      if (!why.empty()) {
        if (!a.has("json")) std::printf("%-34s %-9s   skipped: %s\n", kf::describe(p).c_str(), e.name.c_str(), why.c_str());
        w.begin_object().field("problem", kf::describe(p)).field("policy", e.name).field("skipped", why).end_object();
        continue;
      }
      try {  // a policy need not implement every (op, dtype): say so instead of failing
        std::vector<kf::host_tensor> probe = kf::allocate(p);
        e.execute(p, probe);
      } catch (const kf::unsupported_error& x) {
        if (!a.has("json")) std::printf("%-34s %-9s   not implemented: %s\n", kf::describe(p).c_str(), e.name.c_str(), x.what());
        w.begin_object().field("problem", kf::describe(p)).field("policy", e.name).field("skipped", x.what()).end_object();
        continue;
      }
      const kf::report r = kf::validate(p, e.execute);
      const timing t = time_policy(e, p, kf::allocate(p), quick ? 2 : 5);
      if (e.name == "eigen") eigen_s = t.median_s;
      double tp = 0;
      std::string unit;
      throughput(p, t.median_s, &tp, &unit);
      all_ok = all_ok && r.all_passed;
      const double speedup = eigen_s > 0 ? eigen_s / t.median_s : 0;
      if (!a.has("json"))
        std::printf("%-34s %-9s %10.3f %11.2f %-7s %8.2fx %10.2g %5d/%d%s\n", kf::describe(p).c_str(), e.name.c_str(),
                    t.median_s * 1e3, tp, unit.c_str(), speedup, r.max_rel_err, r.num_passed, r.num_total,
                    r.all_passed ? "" : "  FAILED");
      w.begin_object().field("problem", kf::describe(p)).field("policy", e.name).field("detail", e.detail);
      w.field("median_ms", t.median_s * 1e3).field("throughput", tp).field("unit", unit).field("speedup_vs_eigen", speedup);
      w.field("max_rel_err", r.max_rel_err).field("cases_passed", r.num_passed).field("cases_total", r.num_total);
      w.field("validated", r.all_passed).end_object();
    }
  }
  w.end_array().field("all_validated", all_ok).end_object();
  if (a.has("json")) std::cout << w.str() << "\n";
  else std::cout << "\n" << (all_ok ? "all results validated against Eigen" : "SOME RESULTS FAILED VALIDATION") << "\n";
  return all_ok ? ok : failed;
}

/// One line for stderr: the library's own "kforge: " prefix is not repeated.
std::string one_line(std::string m) {
  if (m.rfind("kforge: ", 0) == 0) m = m.substr(8);
  for (char& c : m)
    if (c == '\n') c = ' ';
  return "kforge: " + m + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" || std::string(argv[1]) == "help")) {
      std::cout << main_help;
      return ok;
    }
    // `kforge cache SUB [options]`: the subcommand is the one positional argument.
    std::vector<char*> av(argv, argv + argc);
    std::string cache_sub;
    if (argc >= 3 && std::string(argv[1]) == "cache" && argv[2][0] != '-') {
      cache_sub = argv[2];
      av.erase(av.begin() + 2);
    }
    const args a = parse_args(static_cast<int>(av.size()), av.data());
    if (a.has("help")) {
      auto it = command_help.find(a.command);
      if (it == command_help.end()) throw usage_error("unknown command '" + a.command + "' (try kforge --help)");
      std::cout << it->second;
      return ok;
    }
#if defined(KFORGE_TOOL_HAS_GEN)
    if (a.command == "gen") return kf::tool::cmd_gen(problem_from(a), a.values, a.flags);
    if (a.command == "validate" && a.get("kernel")) return kf::tool::cmd_validate_kernel(problem_from(a), a.values, a.flags);
    if (a.command == "mutate") return kf::tool::cmd_mutate(a.values, a.flags);
    if (a.command == "worker") return kf::tool::cmd_worker(a.values);
    // `kforge cache list --status c|r` lists generation records; the rest of `cache` is the tuner's.
    if (a.command == "cache" && cache_sub == "list" && a.get("status")) return kf::tool::gen_records_list(a.values, a.flags);
#endif
    if (a.command == "devices") return cmd_devices(a);
    if (a.command == "run") return cmd_run(a);
    if (a.command == "validate") return cmd_validate(a);
    if (a.command == "bench") return cmd_bench(a);
    if (a.command == "demo") return cmd_demo(a);
#if defined(KFORGE_TOOL_HAS_TUNE)
    if (a.command == "tune") return kf::tool::cmd_tune(problem_from(a), a.values, a.flags, policies());
    if (a.command == "cache") return kf::tool::cmd_cache(cache_sub, a.values, a.flags);
#endif
    throw usage_error("unknown command '" + a.command + "' (try kforge --help)");
  } catch (const usage_error& e) {
    std::cerr << one_line(e.what());
    return usage;
  } catch (const environment_error& e) {
    std::cerr << one_line(e.what());
    return environment;
  } catch (const kf::unsupported_error& e) {
    std::cerr << one_line(e.what());
    return environment;
  } catch (const kf::error& e) {
    std::cerr << one_line(e.what());
    return failed;
  } catch (const std::exception& e) {
    std::cerr << one_line(e.what());
    return environment;
  }
}
