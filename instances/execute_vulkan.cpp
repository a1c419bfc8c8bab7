// instances/execute_vulkan.cpp — kforge::execute under policy::vulkan<>, every op and
// dtype, compiled once for kforge's own executables (see execute.hpp).
#include <kforge/vulkan.hpp>
#include <kforge/validate/execute.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::vulkan<>)
}  // namespace kforge::detail
