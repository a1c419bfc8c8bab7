// instances/execute_eigen.cpp — kforge::execute under policy::eigen, every op and
// dtype, compiled once for kforge's own executables (see execute.hpp).
#include <kforge/eigen/eigen.hpp>
#include <kforge/validate/execute.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::eigen)
}  // namespace kforge::detail
