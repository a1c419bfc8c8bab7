// tests/transformer_ops.cpp — the transformer-block ops' typed errors on the
// CPU policies (eigen, blocked,
// threaded); their numerics run through the validation suite's catalog.
#include "transformer_ops_checks.hpp"

namespace tc = transformer_checks;
namespace policy = kforge::policy;

TEST_CASE_TEMPLATE("gated: known values and typed errors", P, policy::eigen, policy::blocked<>, policy::threaded<>) {
  tc::check_gated<P>();
}
