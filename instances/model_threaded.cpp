// instances/model_threaded.cpp — a host session's step and model::verify of it
// under policy::threaded<> in each dtype, compiled once for kforge's own executables
// (see kforge/validate/execute.hpp).
#include <kforge/model.hpp>

namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(, policy::threaded<>)
KFORGE_MODEL_VERIFY_INSTANCES(, policy::threaded<>)
}  // namespace kforge::model
