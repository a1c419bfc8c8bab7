// tools/cmd_basic.cpp — `kforge devices`, `kforge run` and `kforge validate`
// (the suite on a policy; `validate --kernel` is cmd_gen.cpp's).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <kforge/core/json.hpp>

#include "cli.hpp"

namespace kforge::tool {

int cmd_devices(const args& a) {
  if (a.has("json")) {
    json_writer w;
    w.begin_object().key("cpu").raw(tool::cpu_json());
    const std::string vk = tool::vulkan_json();
    w.key("vulkan").raw(vk.empty() ? "[]" : vk);
    const std::string why = tool::vulkan_problem();
    if (!why.empty()) w.field("vulkan_unavailable", why);
    w.end_object();
    std::cout << w.str() << "\n";
  } else {
    std::cout << tool::cpu_text();
    const std::string vk = tool::vulkan_text();
    const std::string why = tool::vulkan_problem();
    std::cout << (vk.empty() ? "Vulkan: none\n" : vk);
    if (!why.empty()) std::cout << "Vulkan unavailable: " << why << "\n";
  }
  return ok;
}

int cmd_run(const args& a) {
  const problem p = problem_from(a);
  const int reps = static_cast<int>(number_option(a.values, "reps", option_ranges::reps, 5));
  require_host_memory(p, run_bytes(p), run_bytes_what);
  const chosen_policy chosen = choose_policy(a.get("policy").value_or(default_policy()), p);
  const policy_entry& e = chosen.entry;
  require_device_memory(p, e);
  std::vector<host_tensor> ts = allocate(p);
  const single_check c = check_once(e, p, ts);
  const timing t = time_policy(e, p, ts, reps);
  double tp = 0;
  std::string unit;
  const std::string tps = throughput(p, t.median_s, &tp, &unit);
  if (a.has("json")) {
    json_writer w;
    w.begin_object().field("problem", describe(p)).field("policy", e.name).field("detail", e.detail);
    w.field("median_ms", t.median_s * 1e3).field("min_ms", t.min_s * 1e3).field("reps", t.reps);
    w.field("throughput", tp).field("unit", unit).field("max_abs_err", c.max_abs_err).field("max_rel_err", c.max_rel_err);
    w.field("within_tolerance", c.passed);
    if (chosen.autotune) w.key("autotune").raw(chosen.autotune->json());
    w.end_object();
    std::cout << w.str() << "\n";
  } else {
    if (chosen.autotune) std::cout << chosen.autotune->text() << "\n";
    std::cout << describe(p) << " on " << e.name << " (" << e.detail << ")\n"
              << "  time " << fmt("%.4f", t.median_s * 1e3) << " ms (median of " << reps << "), " << tps << "\n"
              << "  max error vs eigen: abs " << fmt("%.3g", c.max_abs_err) << ", rel " << fmt("%.3g", c.max_rel_err)
              << (c.passed ? " (within tolerance)" : " (OUTSIDE TOLERANCE)") << "\n";
  }
  return c.passed ? ok : failed;
}

int cmd_validate(const args& a) {
  const problem p = problem_from(a);
  suite_options o;
  // Only a given seed goes through number_option: the default's 64 bits do not fit a double.
  if (a.get("seed")) o.seed = static_cast<std::uint64_t>(number_option(a.values, "seed", option_ranges::seed, 0));
  require_host_memory(p, validation_bytes(p), validation_bytes_what);
  const chosen_policy chosen = choose_policy(a.get("policy").value_or(default_policy()), p);
  const policy_entry& e = chosen.entry;
  require_device_memory(p, e);
  const report r = validate_on_device(p, e.execute, o);
  if (a.has("json")) {
    std::string j = r.to_json();
    if (chosen.autotune) j.insert(1, "\"autotune\":" + chosen.autotune->json() + ",");  // the report's own object, one key more
    std::cout << j << "\n";
  } else {
    if (chosen.autotune) std::cout << chosen.autotune->text() << "\n";
    std::cout << r.problem << " on " << e.name << ": " << r.num_passed << "/" << r.num_total << " cases passed\n";
    for (const auto& c : r.cases) {
      std::cout << "  " << (c.passed ? "pass " : "FAIL ") << c.name << (c.degenerate ? " (degenerate reference)" : "")
                << "  max abs err " << fmt("%.3g", c.max_abs_err) << ", rel " << fmt("%.3g", c.max_rel_err);
      if (!c.passed && c.first_bad >= 0)
        std::cout << ", " << c.mismatches << " of " << c.elements << " wrong, first at " << c.first_bad << ": got "
                  << c.first_bad_out << " expected " << c.first_bad_ref;
      if (!c.error.empty()) std::cout << ", error: " << c.error;
      std::cout << "\n";
    }
    if (!r.note.empty()) std::cout << "  note: " << r.note << "\n";
    std::cout << (r.all_passed ? "PASSED" : "FAILED") << "\n";
  }
  return r.all_passed ? ok : failed;
}

}  // namespace kforge::tool
