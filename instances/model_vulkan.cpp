// instances/model_vulkan.cpp — a Vulkan session's step and model::verify of
// it under policy::vulkan<> in each dtype, compiled once for kforge's own
// executables (see kforge/validate/execute.hpp).
#include <kforge/model/vulkan.hpp>

namespace kforge::model {
KFORGE_MODEL_VULKAN_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::model
