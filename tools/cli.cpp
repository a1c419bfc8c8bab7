// tools/cli.cpp — the command line, problems, policies and timing shared by
// the kforge tool's commands (cli.hpp).
#include "cli.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <cstdio>
#include <set>
#include <sstream>

namespace kforge::tool {
namespace {

// The tool's own options; each op family adds its own (traits' options()).
const std::vector<std::string> value_options = {
    "kernel", "provider", "model", "base-url", "replay", "samples", "temperature", "max-tokens", "timeout-ms",
    "total-timeout-ms", "export", "status", "request", "response", "op", "shape", "dtype", "policy", "reps", "seed",
    "vs", "strategy", "budget", "trials", "device", "roofline", "preset", "layers", "prefill", "decode", "verify-decode",
    "baseline", "compare", "max-slowdown", "time-floor-us", "warmup", "weights"};
const std::vector<std::string> flag_options = {"force", "json", "help", "quick", "remeasure-roofline", "no-generated",
                                               "no-verify", "no-bucket", "whole-step"};

/// Every op family's option of this name (a name may serve several families, e.g. --slope).
std::vector<const cli_option*> family_options(std::string_view name) {
  std::vector<const cli_option*> out;
  for (const family_table* f : all_families())
    for (const cli_option& o : f->options())
      if (o.name == name) out.push_back(&o);
  return out;
}

}  // namespace

const std::vector<command_options>& command_table() {
  // The problem's options (--op, --shape, --dtype and the op families') go
  // with the commands whose `problem` is set.
  static const std::vector<command_options> table = {
      {"devices", {}, {"json"}, false},
      {"run", {"policy", "reps", "seed"}, {"json"}, true},
      {"validate", {"policy", "seed", "kernel"}, {"json"}, true},
      {"bench", {"policy", "vs", "reps", "roofline"}, {"json", "remeasure-roofline"}, true},
      {"demo", {"policy"}, {"json", "quick"}, false},
      {"transformer",
       {"preset", "model", "layers", "prefill", "decode", "dtype", "policy", "reps", "verify-decode", "seed", "baseline", "compare",
        "max-slowdown", "time-floor-us", "warmup", "weights"},
       {"json", "no-verify", "remeasure-roofline", "whole-step"},
       false},
      {"inspect", {"model"}, {"json"}, false},
      {"gen",
       {"provider", "model", "base-url", "replay", "samples", "temperature", "max-tokens", "timeout-ms", "total-timeout-ms",
        "export"},
       {"json", "force", "no-bucket"},
       true},
      {"mutate", {"op", "timeout-ms"}, {"json"}, false},
      {"worker", {"request", "response"}, {}, false},
      {"tune", {"policy", "strategy", "budget", "trials", "reps"}, {"json", "no-generated"}, true},
      {"cache", {"op", "shape", "dtype", "device", "status"}, {"json"}, false},
      {"options", {}, {"json"}, false},
  };
  return table;
}

namespace {
/// The problem's options, each once: --op, --shape, --dtype, then every op
/// family's (name, whether it takes a value), for both forms of `kforge options`.
std::vector<std::pair<std::string, bool>> problem_options() {
  std::vector<std::pair<std::string, bool>> out{{"op", true}, {"shape", true}, {"dtype", true}};
  std::set<std::string> shown{"op", "shape", "dtype"};
  for (const family_table* f : all_families())
    for (const cli_option& o : f->options())
      if (shown.insert(std::string(o.name)).second) out.emplace_back(std::string(o.name), !o.placeholder.empty());
  return out;
}
}  // namespace

std::string options_text(bool json) {
  if (json) {
    json_writer w;
    w.begin_object().key("commands").begin_array();
    for (const auto& c : command_table()) {
      w.begin_object().field("name", c.name).key("values").begin_array();
      for (const auto& v : c.values) w.value(v);
      w.end_array().key("flags").begin_array();
      for (const auto& f : c.flags) w.value(f);
      w.end_array().field("problem", c.problem).end_object();
    }
    w.end_array().key("problem_options").begin_array();
    for (const auto& [name, value] : problem_options())
      w.begin_object().field("name", name).field("takes_value", value).end_object();
    w.end_array().end_object();
    return w.str() + "\n";
  }
  // One line per command ("NAME: --opt V ... --flag ... [problem]"), then
  // the problem's options on a line "problem: ...".
  std::string s;
  for (const auto& c : command_table()) {
    s += c.name + ":";
    for (const auto& v : c.values) s += " --" + v + " V";
    for (const auto& f : c.flags) s += " --" + f;
    if (c.problem) s += " [problem]";
    s += "\n";
  }
  s += "problem:";
  for (const auto& [name, value] : problem_options()) s += " --" + name + (value ? " V" : "");
  return s + "\n";
}

const command_options* find_command(const std::string& name) {
  for (const auto& c : command_table())
    if (c.name == name) return &c;
  return nullptr;
}

namespace {
/// Whether --key (a flag when `flag`) belongs to command c.
bool belongs(const command_options& c, const std::string& key, bool flag) {
  if (key == "help") return true;
  const auto& own = flag ? c.flags : c.values;
  if (std::find(own.begin(), own.end(), key) != own.end()) return true;
  if (!c.problem) return false;
  if (!flag && (key == "op" || key == "shape" || key == "dtype")) return true;
  return !family_options(key).empty();
}

/// Options that only make sense together with another one's value: refused
/// by name rather than ignored.
void check_combinations(const args& a) {
  auto refuse = [&](const std::string& opt, const std::string& why) {
    throw usage_error("--" + opt + " does not apply to kforge " + (a.command == "cache" ? std::string() : a.command + " ") + why);
  };
  if (a.command == "validate" && a.get("kernel")) {
    // The kernel goes through the generation gate on the Vulkan device.
    if (a.get("policy")) refuse("policy", "with --kernel (the kernel runs through the generation gate on the Vulkan device)");
    if (a.get("seed")) refuse("seed", "with --kernel (the gate draws its own held-out shapes and inputs)");
  }
  if (a.command == "gen") {
    const std::string provider = a.get("provider").value_or("template");
    const char* openai_only[] = {"base-url", "model", "timeout-ms", "total-timeout-ms"};
    for (const char* o : openai_only)
      if (provider != "openai" && a.get(o)) refuse(o, "with --provider " + provider + " (it is for --provider openai)");
    if (provider != "replay" && a.get("replay")) refuse("replay", "with --provider " + provider + " (it is for --provider replay)");
    if (provider == "template" && (a.get("temperature") || a.get("max-tokens")))
      refuse(a.get("temperature") ? "temperature" : "max-tokens", "with --provider template (it asks no model)");
  }
  if (a.command == "transformer" && a.get("compare")) {
    // Comparing two reports runs nothing: only --baseline and the thresholds apply.
    for (const auto& [k, v] : a.values)
      if (k != "compare" && k != "baseline" && k != "max-slowdown" && k != "time-floor-us")
        refuse(k, "with --compare (it compares two reports and runs nothing)");
    for (const auto& f : a.flags)
      if (f != "json") refuse(f, "with --compare (it compares two reports and runs nothing)");
  }
  if (a.command == "cache") {
    for (const char* o : {"op", "shape", "dtype"})
      if (a.get(o) && a.sub != "show") refuse(o, "cache " + a.sub + " (only cache show takes a problem)");
    if (a.get("status") && a.sub != "list") refuse("status", "cache " + a.sub + " (only cache list takes it)");
  }
  if (a.command == "transformer" && !a.get("compare") && a.get("verify-decode") && a.has("no-verify"))
    refuse("verify-decode", "with --no-verify");
}
}  // namespace

std::vector<std::string> policy_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) throw usage_error("--policy '" + text + "' has an empty name (give names separated by ',', e.g. threaded,vulkan)");
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw usage_error("--policy '" + text + "' names '" + item + "' twice");
    out.push_back(item);
  }
  if (out.empty() || text.back() == ',')
    throw usage_error("--policy '" + text + "' has an empty name (give names separated by ',', e.g. threaded,vulkan)");
  return out;
}

bool args::has(const std::string& f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }
std::optional<std::string> args::get(const std::string& k) const {
  auto it = values.find(k);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

args parse_args(int argc, char** argv) {
  args a;
  if (argc < 2) throw usage_error("no command given (try kforge --help)");
  a.command = argv[1];
  if (a.command.rfind("-", 0) == 0)
    throw usage_error("no command given: '" + a.command + "' is an option; the command comes first (try kforge --help)");
  const command_options* cmd = find_command(a.command);
  if (!cmd) throw usage_error("unknown command '" + a.command + "' (try kforge --help)");
  std::set<std::string> seen;
  int first = 2;
  if (a.command == "cache" && argc >= 3 && argv[2][0] != '-') a.sub = argv[first++];  // `kforge cache SUB [options]`
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + s + "'");
    std::string key = s.substr(2), value;
    bool inline_value = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      inline_value = true;
    }
    const auto fam = family_options(key);
    const bool is_flag = std::find(flag_options.begin(), flag_options.end(), key) != flag_options.end() ||
                         (!fam.empty() && fam.front()->placeholder.empty());
    const bool is_value = std::find(value_options.begin(), value_options.end(), key) != value_options.end() ||
                          (!fam.empty() && !fam.front()->placeholder.empty());
    if (!is_flag && !is_value) throw usage_error("unknown option '--" + key + "'");
    if (!belongs(*cmd, key, is_flag))
      throw usage_error("--" + key + " does not apply to kforge " + a.command + " (kforge " + a.command + " --help lists its options)");
    if (!seen.insert(key).second) throw usage_error("--" + key + " is given twice (give each option once)");
    if (is_flag) {
      if (inline_value) throw usage_error("--" + key + " takes no value");
      a.flags.push_back(key);
    } else if (is_value) {
      if (!inline_value) {
        if (i + 1 >= argc) throw usage_error("--" + key + " needs a value");
        value = argv[++i];
      }
      if (value.empty()) throw usage_error("--" + key + " needs a value, got ''");
      for (std::size_t k = 0; k < value.size(); ++k)
        if (static_cast<unsigned char>(value[k]) < 0x20 || value[k] == 0x7f) {
          char b[8];
          std::snprintf(b, sizeof b, "0x%02x", static_cast<unsigned char>(value[k]));
          throw usage_error("--" + key + " has a control character (byte " + b + " at offset " + std::to_string(k) +
                            "); values are printable text");
        }
      a.values[key] = value;
    }
  }
  // What this build lacks, after the options' own checks (a malformed option is exit 2 in any build):
  // the commands of a module, and the options that need generation in a command that does not
  // (cache list --status lists generation records; the rest of cache is the tuner's).
  struct requirement {
    const char* command;
    const char* option;  // nullptr: the whole command
    const char* module;  // "generation" (kforge::llm and kforge::vulkan) or "tune" (kforge::tune)
  };
  static constexpr requirement requirements[] = {{"gen", nullptr, "generation"},      {"mutate", nullptr, "generation"},
                                                 {"worker", nullptr, "generation"},   {"tune", nullptr, "tune"},
                                                 {"validate", "kernel", "generation"}, {"cache", "status", "generation"}};
  auto lacks = [](const std::string& module) {
#if defined(KFORGE_TOOL_HAS_GEN)
    if (module == "generation") return false;
#endif
#if defined(KFORGE_TOOL_HAS_TUNE)
    if (module == "tune") return false;
#endif
    return !module.empty();
  };
  auto refuse = [&](const std::string& what, const std::string& module) {
    throw unsupported_error(what + (module == "tune" ? " needs the tuner" : " needs kernel generation") +
                            ", which this kforge was built without (" +
                            (module == "tune" ? "kforge::tune: configure with -DKFORGE_WITH_TUNE=ON, with simdjson installed)"
                                              : "kforge::llm and kforge::vulkan: configure with -DKFORGE_WITH_LLM=ON "
                                                "-DKFORGE_WITH_VULKAN=ON, with libcurl, simdjson and Vulkan installed)"));
  };
  for (const requirement& r : requirements)
    if (a.command == r.command && lacks(r.module) && (!r.option || a.get(r.option)))
      refuse(r.option ? a.command + " --" + r.option : "'" + a.command + "'", r.module);
  if (!a.has("help")) check_combinations(a);
  return a;
}

double number_option(const std::map<std::string, std::string>& values, const std::string& name, const number_range& r,
                     double fallback) {
  const auto it = values.find(name);
  if (it == values.end()) return fallback;
  try {
    return option_number(name, it->second, r);
  } catch (const argument_error& e) {
    throw usage_error(e.what());
  }
}
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string one_line(std::string m) {
  if (m.rfind("kforge: ", 0) == 0) m = m.substr(8);
  // One line, and no control character reaches the terminal (input echoed
  // in a message may hold escape sequences): \n becomes a space, the rest \xNN.
  std::string clean;
  for (char c : m) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t') clean += ' ';
    else if (u < 0x20 || u == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", u);
      clean += b;
    } else clean += c;
  }
  m = std::move(clean);
  return "kforge: " + m + "\n";
}

void require_host_memory(const problem& p, double bytes, const std::string& what) {
  require_memory(p, bytes, what, host_memory_limit());
}
void require_device_memory(const problem& p, const policy_entry& e) {
  if (e.device_memory) require_memory(p, tensor_bytes(p), "its tensors on the device", e.device_memory());
}

problem problem_from(const args& a) {
  problem p;
  const auto op = a.get("op");
  const auto shp = a.get("shape");
  if (!op) throw usage_error("--op is required");
  if (!shp) throw usage_error("--shape is required");
  p.op = *op;
  try {
    const family_table& fam = *find_op(p.op).family;
    set_shape(p, *shp);
    if (auto d = a.get("dtype")) p.type = parse_dtype(*d);
    if (p.type == dtype::f64) throw usage_error("--dtype must be f32, f16 or bf16");
    // Options of other families are refused by name; the op's own are applied.
    auto apply = [&](const std::string& name, const std::string& value) {
      const auto all = family_options(name);
      if (all.empty()) return;
      for (const cli_option& o : fam.options())
        if (o.name == name) return o.apply(p, value);
      std::set<std::string> owners;
      for (const family_table* f : all_families())
        for (const cli_option& o : f->options())
          if (o.name == name)
            for (const op_name& n : f->ops()) owners.insert(std::string(n.name));
      std::string list;
      for (const auto& n : owners) list += (list.empty() ? "" : ", ") + n;
      throw usage_error("--" + name + " does not apply to " + p.op + " (it applies to " + list + ")");
    };
    for (const auto& [k, v] : a.values) apply(k, v);
    for (const auto& f : a.flags) apply(f, "");
    (void)operands(p);  // shape consistency (conv fit, broadcast, axis)
  } catch (const kforge::error& e) {
    throw usage_error(e.what());
  }
  return p;
}

std::string op_help() {
  std::string s = "\nproblem options:\n  --op OP            the op (see the list below)\n"
                  "  --shape SHAPE      dims separated by 'x'; the order depends on the op (below)\n"
                  "  --dtype T          f32 (default), f16 or bf16\n";
  std::set<std::string> shown;
  for (const family_table* f : all_families())
    for (const cli_option& o : f->options()) {
      if (!shown.insert(std::string(o.name)).second) continue;
      std::string left = "  --";
      left += o.name;
      if (!o.placeholder.empty()) {
        left += ' ';
        left += o.placeholder;
      }
      left.resize(std::max<std::size_t>(left.size() + 1, 21), ' ');
      s += left + std::string(o.help) + "\n";
    }
  s += "ops and their SHAPE:\n";
  for (const family_table* f : all_families()) {
    std::string names;
    for (const op_name& n : f->ops()) {
      if (!names.empty()) names += '/';
      names += n.name;
    }
    s += "  " + names + " " + std::string(f->ops().front().shape_help) + "\n";
  }
  return s;
}

const std::vector<policy_entry>& policies() {
  static const std::vector<policy_entry> all = [] {
    std::vector<policy_entry> v;
    register_cpu(v);
    register_vulkan(v);
    return v;
  }();
  return all;
}

std::string known_policies() {
  std::string known;
  for (const auto& p : policies()) known += (known.empty() ? "" : ", ") + p.name;
#if defined(KFORGE_TOOL_HAS_GEN)
  known += ", generated";
#endif
#if defined(KFORGE_TOOL_HAS_TUNE)
  known += ", autotune";
#endif
  return known;
}

#if defined(KFORGE_TOOL_HAS_GEN)
// cmd_gen.cpp: policy::generated (accepted kernels of the problem or proven for its bucket),
// and the kernel it would run for p (throws unsupported_error: exit 3, when there is none).
const policy_entry& generated_policy();
void require_generated(const problem& p);
#endif

const policy_entry& find_policy(const std::string& name) {
  for (const auto& p : policies())
    if (p.name == name) return p;
#if defined(KFORGE_TOOL_HAS_GEN)
  // Named only: `demo` and default lists leave it out (most problems have no accepted kernel).
  if (name == "generated") return generated_policy();
#endif
  if (name == "vulkan") throw environment_error(vulkan_problem());
  throw usage_error("unknown policy '" + name + "' (available: " + known_policies() + ")");
}

// autotune.cpp: resolves --policy autotune for p.
chosen_policy resolve_autotune(const problem& p);

chosen_policy choose_policy(const std::string& name, const problem& p) {
  if (name == "autotune" || name == "auto") return resolve_autotune(p);
  const policy_entry& e = find_policy(name);
  require_available(e);
#if defined(KFORGE_TOOL_HAS_GEN)
  if (name == "generated") require_generated(p);  // before any case runs: none is exit 3, not ten failures
#endif
  return {e, std::nullopt};
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

double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

timing time_policy(const policy_entry& e, const problem& p, std::vector<host_tensor> ts, int reps) {
  e.execute(p, ts);  // warm-up: compiles shaders, fills caches, wakes threads
  std::vector<double> t, cpu;
  for (int i = 0; i < reps; ++i) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    e.execute(p, ts);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(process_cpu_seconds() - c0);
  }
  std::sort(t.begin(), t.end());
  std::sort(cpu.begin(), cpu.end());
  return {t[t.size() / 2], t.front(), reps, cpu[cpu.size() / 2]};
}

gpu_times time_gpu(const policy_entry& e, const problem& p, const std::vector<host_tensor>& ts, int reps) {
  gpu_times g;
  g.host_view = time_policy(e, p, ts, reps);
  g.resident = e.time_resident(p, ts, reps);
  return g;
}

std::string transfer_text(const gpu_times& g) {
  const resident_timing& r = g.resident;
  return "kernels " + fmt("%.4f", r.kernel_s * 1e3) + " ms (" +
         (r.gpu_timestamps ? "GPU timestamps" : "wall per call: no GPU timestamps") +
         ", device-resident, median of " + std::to_string(r.samples) + ") | transfers: upload " +
         fmt("%.4f", r.upload_s * 1e3) + " ms, download " + fmt("%.4f", r.download_s * 1e3) +
         " ms | host-view call " + fmt("%.4f", g.host_view.median_s * 1e3) + " ms (upload + kernels + download, wall)";
}

std::string throughput(const problem& p, double seconds, double* value, std::string* unit) {
  const bool compute = compute_bound(p);
  const double v = (compute ? flops(p) : min_bytes(p)) / seconds / 1e9;
  if (value) *value = v;
  if (unit) *unit = compute ? "GFLOP/s" : "GB/s";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, compute ? "GFLOP/s" : "GB/s");
  return buf;
}

report validate_on_device(const problem& p, const executor& candidate, const suite_options& o) {
  std::exception_ptr device;
  const executor watched = [&](const problem& q, std::vector<host_tensor>& ts) {
    try {
      candidate(q, ts);
    } catch (const std::exception& e) {
      if (device_failure(e) && !device) device = std::current_exception();
      throw;
    }
  };
  report r = validate(p, watched, o);
  if (device) std::rethrow_exception(device);  // the device failed, not the kernel: exit 3 (main)
  return r;
}

single_check check_once(const policy_entry& e, const problem& p, std::vector<host_tensor>& ts) {
  suite_options o;
  o.cases = {input_case::normal};
  const report r = validate_on_device(p, e.execute, o);
  if (!r.cases.empty() && !r.cases[0].error.empty()) throw kforge::error(r.cases[0].error);
  generate_inputs(p, input_case::normal, o.seed, ts);
  return {r.all_passed, r.max_abs_err, r.max_rel_err};
}

}  // namespace kforge::tool
