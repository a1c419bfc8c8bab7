// kforge/gen/mutate.hpp — mutation testing of the gate: kforge's own kernel
// for each op must be accepted, and every built-in mutant of it
// (templates.hpp) must be rejected. A surviving mutant is a hole in the gate.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <functional>
#include <string>
#include <vector>

#include "kforge/gen/sandbox.hpp"
#include "kforge/gen/templates.hpp"

namespace kforge::gen {

struct mutant_outcome {
  std::string name, kind, description;
  bool original = false;  ///< the unmutated kernel
  bool rejected = false;
  std::string stage, reason;
  double seconds = 0;
};

struct mutation_report {
  std::vector<mutant_outcome> outcomes;
  int mutants = 0, killed = 0, originals = 0, originals_rejected = 0, errors = 0;
  double kill_rate() const { return mutants ? static_cast<double>(killed) / mutants : 1.0; }
  bool passed() const { return killed == mutants && originals_rejected == 0 && errors == 0 && originals > 0; }
  std::string to_json() const {
    json_writer w;
    w.begin_object().field("mutants", mutants).field("killed", killed).field("kill_rate", kill_rate());
    w.field("originals", originals).field("originals_rejected", originals_rejected).field("errors", errors);
    w.field("passed", passed());
    w.key("results").begin_array();
    for (const auto& o : outcomes)
      w.begin_object().field("name", o.name).field("kind", o.kind).field("original", o.original).field("rejected", o.rejected)
          .field("stage", o.stage).field("reason", o.reason).field("seconds", o.seconds).end_object();
    w.end_array().end_object();
    return w.str();
  }
};

/// Runs the original and every mutant of op's kernel through the sandboxed
/// gate on mutation_problem(op) and the held-out shapes it draws. `progress` (may be
/// empty) sees each outcome as it arrives.
inline mutation_report run_mutation_tests(const std::vector<std::string>& ops, sandbox_options so = {},
                                          const std::function<void(const mutant_outcome&)>& progress = {}) {
  so.benchmark = false;   // correctness only
  so.revalidate = false;  // nothing was timed
  mutation_report rep;
  for (const auto& op : ops) {
    const problem p = mutation_problem(op);
    const std::vector<problem> shapes{p};  // the gate draws the held-out shapes
    std::vector<mutant> list;
    try {
      list.push_back({op + ".original", "original", "kforge's own kernel", template_source(p)});
      for (auto& m : mutants_for(p)) list.push_back(std::move(m));
    } catch (const error& e) {
      // A pattern that no longer matches the backend's source: the mutant set
      // is stale, which is a failure of the test, not something to skip.
      mutant_outcome o{op + ".mutants", "error", "the mutant set could not be built", false, false, "error", e.what()};
      ++rep.errors;
      if (progress) progress(o);
      rep.outcomes.push_back(std::move(o));
      continue;
    }
    for (const auto& m : list) {
      mutant_outcome o{m.name, m.kind, m.description, m.kind == "original"};
      const sandbox_result r = run_sandboxed(shapes, m.source, so);
      o.rejected = !r.accepted;
      o.stage = r.stage;
      o.reason = r.reason;
      o.seconds = r.wall_s;
      if (o.original) {
        ++rep.originals;
        rep.originals_rejected += o.rejected ? 1 : 0;
      } else {
        ++rep.mutants;
        rep.killed += o.rejected ? 1 : 0;
      }
      if (progress) progress(o);
      rep.outcomes.push_back(std::move(o));
    }
  }
  return rep;
}

}  // namespace kforge::gen
