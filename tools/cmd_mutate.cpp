// tools/cmd_mutate.cpp — `kforge mutate [--op OP] [--json]`: mutation testing
// of the generation gate (include/kforge/gen/mutate.hpp). Exit 0 when every
// mutant is killed and no original kernel is rejected, 1 otherwise.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <kforge/gen.hpp>

#include "cli.hpp"

namespace kforge::tool {

int cmd_mutate(const std::map<std::string, std::string>& values, const std::vector<std::string>& flags) {
  const bool json = std::find(flags.begin(), flags.end(), "json") != flags.end();
  std::vector<std::string> ops;
  if (auto it = values.find("op"); it != values.end()) {
    try {
      find_op(it->second);
    } catch (const std::exception& e) {
      std::cerr << one_line(e.what());
      return 2;
    }
    ops.push_back(it->second);
  } else {
    for (const auto& o : all_ops()) ops.emplace_back(o.name);
  }
  for (const auto& [k, v] : values)
    if (k != "op" && k != "timeout-ms") {
      std::cerr << "kforge: --" << k << " does not apply to kforge mutate\n";
      return 2;
    }
  gen::sandbox_options so;
  so.dispatch_timeout_ms = static_cast<int>(number_option(values, "timeout-ms", number_ranges::timeout_ms, so.dispatch_timeout_ms));
  const bool tty = !json && isatty(1);
  try {
    const gen::mutation_report rep = gen::run_mutation_tests(ops, so, [&](const gen::mutant_outcome& o) {
      if (json) return;
      const bool bad = o.kind == "error" || (o.original ? o.rejected : !o.rejected);
      std::printf("%s %-44s %-9s %s%s\n", bad ? "!!" : "ok", o.name.c_str(),
                  o.kind == "error" ? "ERROR" : o.original ? (o.rejected ? "REJECTED" : "accepted") : (o.rejected ? "killed" : "SURVIVED"),
                  (o.rejected || o.kind == "error") ? ("[" + o.stage + "] ").c_str() : "",
                  (o.rejected || o.kind == "error") ? o.reason.substr(0, 110).c_str() : "");
      if (tty) std::fflush(stdout);
    });
    if (json) {
      std::cout << rep.to_json() << "\n";
    } else {
      std::printf("\n%d/%d mutants killed (%.0f%%), %d of %d original kernels rejected%s\n", rep.killed, rep.mutants,
                  100.0 * rep.kill_rate(), rep.originals_rejected, rep.originals,
                  rep.errors ? (", " + std::to_string(rep.errors) + " ops whose mutants could not be built").c_str() : "");
    }
    return rep.passed() ? 0 : 1;
  } catch (const unsupported_error& e) {
    std::cerr << one_line(e.what());
    return 3;
  }
}

}  // namespace kforge::tool
