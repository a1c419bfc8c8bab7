// tools/cli.hpp — what every command of the kforge tool shares: the parsed
// command line, the exit codes and their exceptions, number options, the
// problem a command line describes (its op's own options come from the op's
// traits, ops/*_traits.hpp), the policies, and timing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kforge/validate.hpp>

#include "registry.hpp"

namespace kforge::tool {

enum exit_code { ok = 0, failed = 1, usage = 2, environment = 3 };

/// A bad command line: exit 2 with a one-line message.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Something outside the command line is missing or broken: exit 3.
struct environment_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct args {
  std::string command;
  std::string sub;  ///< cache's subcommand (list, show, clear)
  std::map<std::string, std::string> values;
  std::vector<std::string> flags;
  bool has(const std::string& f) const;
  std::optional<std::string> get(const std::string& k) const;
};

/// The options one command takes (besides --help): values, flags, and
/// whether it takes a problem (--op, --shape, --dtype and the op families').
struct command_options {
  std::string name;
  std::vector<std::string> values, flags;
  bool problem = false;
};
/// Every command's options: parse_args refuses any other (`kforge options`
/// prints the table; the fuzz test draws its cases from it).
const std::vector<command_options>& command_table();
const command_options* find_command(const std::string& name);
/// `kforge options [--json]`: the table, one line per command (or JSON, with
/// the op families' options and whether each takes a value).
std::string options_text(bool json);
/// --policy's list "a,b,...": an empty name or a name given twice is a usage_error.
std::vector<std::string> policy_list(const std::string& text);

/// argv → args; every option must be known (the tool's own, or an op family's).
args parse_args(int argc, char** argv);

/// The number of option --name in range r, or `fallback` when the option is
/// absent; a usage_error "--name must be <range>, got '<text>'" otherwise.
/// Every numeric option of the tool goes through it (core/input.hpp's rule;
/// README "Input limits" lists the ranges).
double number_option(const std::map<std::string, std::string>& values, const std::string& name, const number_range& r,
                     double fallback);
/// The ranges of the tool's own options.
namespace option_ranges {
inline constexpr number_range reps{1, 1000000, false, true};
inline constexpr number_range seed = number_ranges::whole_non_negative;
}  // namespace option_ranges
std::string fmt(const char* f, double v);
/// One line for stderr: the library's own "kforge: " prefix is not repeated.
std::string one_line(std::string m);

/// Refuses p before anything is allocated (memory_error: exit 3, one line
/// with the bytes and the limit) when a command would hold `bytes` of host
/// memory for it, more than host_memory_limit(); `what` says what those are.
void require_host_memory(const problem& p, double bytes, const std::string& what);
/// What run and bench hold on the host: their own tensors and one validation case.
inline double run_bytes(const problem& p) { return tensor_bytes(p) + validation_bytes(p); }
inline const char* run_bytes_what = "its tensors and one validation case: reference, candidate, inputs, error scales";
inline const char* validation_bytes_what = "validation holds reference, candidate and inputs, and the error scales";
/// The same for a policy's device (e.device_memory): one copy of p's tensors there.
void require_device_memory(const problem& p, const policy_entry& e);

/// The problem given by --op, --shape, --dtype and the op family's options.
problem problem_from(const args& a);
/// The "problem options" block of the commands' help, from the op registry.
std::string op_help();

/// The policies this build can run (CPU always, Vulkan where built).
const std::vector<policy_entry>& policies();
const policy_entry& find_policy(const std::string& name);
std::string default_policy();
void require_available(const policy_entry& e);

/// What `--policy autotune` resolved to for one problem (autotune.cpp).
struct autotune_choice {
  std::string policy;   ///< what runs: a CPU gemm space name (gemm) or a policy of the tool
  std::string knobs;    ///< its knobs as JSON ({} where it has none)
  std::string device;   ///< the cache's device identity (the CPU: --policy autotune runs on host views)
  std::string bucket;   ///< the problem's shape bucket
  std::string source;   ///< cache, tuned, default, or "default: <why>"
  bool from_cache = false;
  std::string cache_file;
  std::string text() const;        ///< one line for the text output
  std::string json() const;        ///< an object for --json
};
/// A policy named on the command line, for problem p: a registered policy,
/// or "autotune" resolved for p as policy::autotune resolves it (the tuning
/// cache; tuning on a miss with KFORGE_AUTOTUNE=1; the default otherwise).
/// A tuning cache that does not parse is an environment_error (exit 3) and is
/// left untouched. Unavailable policies throw environment_error too.
struct chosen_policy {
  policy_entry entry;
  std::optional<autotune_choice> autotune;
};
chosen_policy choose_policy(const std::string& name, const problem& p);
/// The policy names of a --policy list ("autotune" included where built).
std::string known_policies();

struct timing {
  double median_s = 0, min_s = 0;
  int reps = 0;
  double cpu_median_s = 0;  ///< median process CPU time of a run (every thread of the process)
};
/// Median wall and CPU time of `reps` runs after one warm-up, on fresh output
/// buffers (a Vulkan row's kernel time comes from gpu_times, below).
timing time_policy(const policy_entry& e, const problem& p, std::vector<host_tensor> ts, int reps);
/// A Vulkan row's times, in one place for bench and demo: the kernels on
/// device-resident tensors (resident_timing) and the host-view call as a whole.
struct gpu_times {
  resident_timing resident;
  timing host_view;
};
/// The Vulkan row of p (e.time_resident set): host-view timing with
/// time_policy, then the device-resident timing on the same inputs.
gpu_times time_gpu(const policy_entry& e, const problem& p, const std::vector<host_tensor>& ts, int reps);
/// "kernels 0.81 ms (GPU timestamps, device-resident) · upload 0.52 ms · download 0.30 ms · host-view call 2.35 ms"
std::string transfer_text(const gpu_times& g);

/// GFLOP/s (compute-bound ops) or GB/s of one call taking `seconds`.
std::string throughput(const problem& p, double seconds, double* value = nullptr, std::string* unit = nullptr);

/// Inputs from the normal distribution, and the max error against Eigen of one run.
/// validate(), except that a device failure (device_failure: lost, timed
/// out, out of memory) inside a case is rethrown as itself once the suite
/// returns, rather than recorded as a failing case: it is the machine's
/// problem (exit 3), not the kernel's (exit 1).
report validate_on_device(const problem& p, const executor& candidate, const suite_options& o = {});
struct single_check {
  bool passed;
  double max_abs_err, max_rel_err;
};
single_check check_once(const policy_entry& e, const problem& p, std::vector<host_tensor>& ts);

}  // namespace kforge::tool
