// instances/model_blocked.cpp — a host session's step and model::verify of it
// under policy::blocked<> in each dtype, compiled once for kforge's own executables
// (see kforge/validate/execute.hpp).
#include <kforge/model.hpp>

namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(, policy::blocked<>)
KFORGE_MODEL_VERIFY_INSTANCES(, policy::blocked<>)
}  // namespace kforge::model
