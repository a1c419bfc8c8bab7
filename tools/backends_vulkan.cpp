// tools/backends_vulkan.cpp — the Vulkan policy for the kforge tool, or
// nothing when kforge was built without kforge::vulkan.
#include "registry.hpp"

#if defined(KFORGE_HAS_VULKAN)
#include <kforge/validate/execute.hpp>
#include <kforge/vulkan.hpp>
#endif

namespace kforge::tool {

#if defined(KFORGE_HAS_VULKAN)
std::string vulkan_problem() {
  try {
    (void)vulkan::default_context();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}
void register_vulkan(std::vector<policy_entry>& out) {
  policy_entry e{"vulkan", "", &execute<policy::vulkan<>>};
  e.unavailable = [] { return vulkan_problem(); };
  e.device_seconds = [] { return vulkan::last_call_seconds(); };  // the kernels' GPU time, no transfers
  try {
    e.detail = vulkan::default_context().info().name;
  } catch (const std::exception&) {
    e.detail = "no device";
  }
  out.push_back(std::move(e));
}
std::string vulkan_text() { return vulkan::devices_text(); }
std::string vulkan_json() { return vulkan::devices_json(); }
#else
std::string vulkan_problem() { return "kforge was built without Vulkan (kforge::vulkan)"; }
void register_vulkan(std::vector<policy_entry>&) {}
std::string vulkan_text() { return ""; }
std::string vulkan_json() { return ""; }
#endif

}  // namespace kforge::tool
