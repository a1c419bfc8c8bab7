// tools/registry.hpp — the policies the kforge tool can run, each compiled in
// its own translation unit (backends_*.cpp) so that an edit to one backend
// rebuilds one file.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <kforge/validate/problem.hpp>

namespace kforge::tool {

struct policy_entry {
  std::string name;    ///< as given to --policy
  std::string detail;  ///< e.g. the micro-kernel or device that runs it
  std::function<void(const problem&, std::vector<host_tensor>&)> execute;
  /// Empty when usable; otherwise why not (no device, …).
  std::function<std::string()> unavailable = [] { return std::string(); };
  /// Optional: time of the last execute() measured by the device itself (s), or < 0.
  std::function<double()> device_seconds = [] { return -1.0; };
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

}  // namespace kforge::tool
