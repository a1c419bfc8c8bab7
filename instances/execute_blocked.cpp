// instances/execute_blocked.cpp — kforge::execute under policy::blocked<>, every op and
// dtype, compiled once for kforge's own executables (see execute.hpp).
#include <kforge/cpu/cpu.hpp>
#include <kforge/validate/execute.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::blocked<>)
}  // namespace kforge::detail
