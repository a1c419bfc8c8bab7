// instances/threaded.cpp — policy::threaded<>'s instances for kforge's own executables (see
// kforge/validate/execute.hpp): kforge::execute in each dtype, and a host
// session's step and model::verify of it. One file: both reach the policy's
// kernels for every op, compiled here once.
#include <kforge/model.hpp>
#include <kforge/validate/execute.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::threaded<>)
}  // namespace kforge::detail

namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(, policy::threaded<>)
KFORGE_MODEL_VERIFY_INSTANCES(, policy::threaded<>)
}  // namespace kforge::model
