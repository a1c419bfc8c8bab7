// instances/model_autotune.cpp — a host session's step and model::verify of it
// under policy::autotune in each dtype, compiled once for kforge's own executables
// (see kforge/validate/execute.hpp).
#include <kforge/model.hpp>
#include <kforge/tune.hpp>

namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(, policy::autotune)
KFORGE_MODEL_VERIFY_INSTANCES(, policy::autotune)
}  // namespace kforge::model
