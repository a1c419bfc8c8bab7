// tools/registry.hpp — the policies the kforge tool can run, each compiled in
// its own translation unit (backends_*.cpp) so that an edit to one backend
// rebuilds one file.
#pragma once

#include <exception>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <kforge/validate/problem.hpp>

namespace kforge::tool {

/// One Vulkan call timed the way a program that keeps its data on the GPU
/// runs it (backends_vulkan.cpp): operands uploaded once, the call recorded
/// on one stream, warmed up, then timed with GPU timestamps; the transfers a
/// host-view call adds are timed on their own, as wall time.
struct resident_timing {
  double kernel_s = -1;      ///< median over calls of the sum of one call's dispatches (GPU timestamps)
  bool gpu_timestamps = false;  ///< false: kernel_s is wall time per call of a submission (no timestamps)
  double cpu_s = -1;         ///< process CPU time per call while the timed submission ran
  double upload_s = -1;      ///< wall time of uploading the inputs (one submission, staging included)
  double download_s = -1;    ///< wall time of downloading the output
  int dispatches = 0;        ///< dispatches (and copies) one call records
  int samples = 0;
  bool within_tolerance = false;  ///< the device-resident output against the Eigen reference
  double max_rel_err = 0;
};

struct policy_entry {
  std::string name;    ///< as given to --policy
  std::string detail;  ///< e.g. the micro-kernel or device that runs it
  std::function<void(const problem&, std::vector<host_tensor>&)> execute;
  /// Empty when usable; otherwise why not (no device, …).
  std::function<std::string()> unavailable = [] { return std::string(); };
  /// Optional: time of the last execute() measured by the device itself (s); none without one.
  std::function<std::optional<double>()> device_seconds = [] { return std::optional<double>(); };
  /// Optional (Vulkan): times p on device-resident copies of ts's inputs over `reps` calls.
  std::function<resident_timing(const problem& p, const std::vector<host_tensor>& ts, int reps)> time_resident;
  /// Optional (Vulkan): the memory a call may take on the device (half of its largest device-local heap).
  std::function<memory_limit()> device_memory;
};

void register_cpu(std::vector<policy_entry>& out);
void register_vulkan(std::vector<policy_entry>& out);

/// CPU description (ISA, cores, micro-kernel) as text lines and as JSON.
std::string cpu_text();
std::string cpu_json();
/// Vulkan devices as text and JSON; empty strings when built without Vulkan.
std::string vulkan_text();
std::string vulkan_json();
/// Why Vulkan cannot be used ("" when it can).
std::string vulkan_problem();
/// Whether e is the device failing, not the input: a lost device, a wait
/// past KFORGE_VK_TIMEOUT_MS, device memory exhausted (the tool's exit 3).
bool device_failure(const std::exception& e);
/// Read every KFORGE_* variable the library reads for the CPU backend, the
/// Vulkan backend and the tuner, so that one outside its range is an
/// env_var_error before a command starts (exit 2), not a failure inside it.
void check_env_cpu();
void check_env_vulkan();
void check_env_tune();
/// CPU time of the whole process (every thread) so far, in seconds (cli.cpp).
double process_cpu_seconds();

}  // namespace kforge::tool
