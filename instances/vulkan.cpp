// instances/vulkan.cpp — policy::vulkan<>'s instances for kforge's own
// executables (see kforge/validate/execute.hpp): kforge::execute in each
// dtype, and a Vulkan session's step and model::verify of it. One file: both
// reach the backend's recording of every op, compiled here once.
#include <kforge/model/vulkan.hpp>
#include <kforge/validate/execute.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::detail

namespace kforge::model {
KFORGE_MODEL_VULKAN_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::model
