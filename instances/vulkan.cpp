// instances/vulkan.cpp — policy::vulkan<>'s instances for kforge's own
// executables (see kforge/validate/execute.hpp): kforge::execute in each
// dtype, a Vulkan session's step and model::verify of it, and
// vulkan::record_problem on device tensors. One file: all reach the backend's
// recording of every op, compiled here once.
#include <kforge/model/vulkan.hpp>
#include <kforge/validate/execute.hpp>
#include <kforge/vulkan/problem.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::detail

namespace kforge::model {
KFORGE_MODEL_VULKAN_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::model

namespace kforge::vulkan::detail {
KFORGE_VULKAN_PROBLEM_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::vulkan::detail
