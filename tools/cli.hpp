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
  std::map<std::string, std::string> values;
  std::vector<std::string> flags;
  bool has(const std::string& f) const;
  std::optional<std::string> get(const std::string& k) const;
};

/// argv → args; every option must be known (the tool's own, or an op family's).
args parse_args(int argc, char** argv);

int to_int(const std::string& what, const std::string& s);
float to_float(const std::string& what, const std::string& s);
std::string fmt(const char* f, double v);
std::vector<std::string> split(const std::string& s);
/// One line for stderr: the library's own "kforge: " prefix is not repeated.
std::string one_line(std::string m);

/// The problem given by --op, --shape, --dtype and the op family's options.
problem problem_from(const args& a);
/// The "problem options" block of the commands' help, from the op registry.
std::string op_help();

/// The policies this build can run (CPU always, Vulkan where built).
const std::vector<policy_entry>& policies();
const policy_entry& find_policy(const std::string& name);
std::string default_policy();
void require_available(const policy_entry& e);

struct timing {
  double median_s = 0, min_s = 0;
  int reps = 0;
  double device_median_s = -1;  ///< median of the device's own time of each run (GPU timestamps), -1 if none
};
/// Median wall time of `reps` runs after one warm-up, on fresh output buffers;
/// and the median of the device's own times where the policy reports them
/// (Vulkan: the kernels' GPU time, without the uploads and downloads).
timing time_policy(const policy_entry& e, const problem& p, std::vector<host_tensor> ts, int reps);
/// GFLOP/s (compute-bound ops) or GB/s of one call taking `seconds`.
std::string throughput(const problem& p, double seconds, double* value = nullptr, std::string* unit = nullptr);

/// Inputs from the normal distribution, and the max error against Eigen of one run.
struct single_check {
  bool passed;
  double max_abs_err, max_rel_err;
};
single_check check_once(const policy_entry& e, const problem& p, std::vector<host_tensor>& ts);

}  // namespace kforge::tool
