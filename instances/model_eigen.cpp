// instances/model_eigen.cpp — a host session's step and model::verify of it
// under policy::eigen in each dtype, compiled once for kforge's own executables
// (see kforge/validate/execute.hpp).
#include <kforge/model.hpp>

namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(, policy::eigen)
KFORGE_MODEL_VERIFY_INSTANCES(, policy::eigen)
}  // namespace kforge::model
