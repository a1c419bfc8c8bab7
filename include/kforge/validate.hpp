// kforge/validate.hpp — the validation suite: run-time problems, execute<Policy>,
// input generators, tolerances, reports and the standard test catalog.
#pragma once

#include "kforge/validate/catalog.hpp"
#include "kforge/validate/execute.hpp"
#include "kforge/validate/problem.hpp"
#include "kforge/validate/suite.hpp"
