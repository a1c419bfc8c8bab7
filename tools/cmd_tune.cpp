// tools/cmd_tune.cpp — `kforge tune`: search a backend's space for one
// problem, validate every candidate before timing it, store the winner in the
// tuning cache and every trial in the history (include/kforge/tune/).
// With --policy vulkan, gemm and attention search the backend's knobs
// (tune/vulkan_space.hpp), and the accepted generated kernels of exactly the problem
// (kforge gen's c_ records, tune/generated_space.hpp) compete next to
// kforge's own Vulkan kernels, unless --no-generated.
//
// Exit codes: 0 a winner was stored, 1 no candidate passed validation (or
// none could be validated and timed in the budget), 2 usage, 3 environment
// (cache directory not writable, the family is not available).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <kforge/tune.hpp>
#include <kforge/tune/generated_space.hpp>  // candidates only with KFORGE_HAS_LLM and KFORGE_HAS_VULKAN
#include <kforge/tune/vulkan_space.hpp>     // empty without KFORGE_HAS_VULKAN

#include "cli.hpp"
#include "registry.hpp"
#include "tune_candidates.hpp"

namespace kforge::tool {
namespace {

/// Accepted generated kernels for exactly p (none when not wanted or without kforge::gen).
[[maybe_unused]] std::vector<tune::candidate> generated_for(const problem& p, bool wanted) {  // (unused without Vulkan)
#if defined(KFORGE_HAS_LLM) && defined(KFORGE_HAS_VULKAN)
  if (wanted) return tune::generated_candidates(p);
#endif
  (void)p, (void)wanted;
  return {};
}

}  // namespace

/// tune_candidates.hpp. --policy vulkan for an op other than gemm runs the
/// backend's own kernel the way generated ones are run.
std::vector<tune::candidate> tune_candidates(const problem& p, const std::string& family,
                                             const std::vector<policy_entry>& policies, [[maybe_unused]] bool with_generated) {
  if (family == "vulkan") {
#if defined(KFORGE_HAS_VULKAN)
    std::vector<tune::candidate> out, gen = generated_for(p, with_generated);
    if (is_family<gemm_traits>(p)) {
      out = tune::vulkan_gemm_candidates(vulkan::default_context(), p);
      if (out.empty() && gen.empty())
        throw unsupported_error("no gemm tiling of the Vulkan space runs on '" + vulkan::default_context().info().name +
                                "' for " + std::string(to_string(p.type)));
    } else if (is_family<attention_traits>(p)) {
      out = tune::vulkan_attention_candidates(vulkan::default_context(), p);
      if (out.empty() && gen.empty())
        throw unsupported_error("no attention kernel of the Vulkan space runs on '" +
                                vulkan::default_context().info().name + "' for " + std::string(to_string(p.type)));
    } else {
      // One own kernel per op: tuning is a contest with generated kernels or nothing.
      if (gen.empty())
        throw unsupported_error("the Vulkan search space covers gemm and attention, not " + p.op +
                                (with_generated ? "; other ops are tuned against accepted generated kernels of the "
                                                  "exact problem, and there are none (kforge gen --op " + p.op + " ...)"
                                                : std::string()));
#if defined(KFORGE_HAS_LLM)
      out.push_back(tune::builtin_vulkan_candidate(p));  // timed the way the generated ones are
#endif
    }
    for (auto& g : gen) out.push_back(std::move(g));
    return out;
#else
    throw unsupported_error("kforge was built without Vulkan (kforge::vulkan): no Vulkan search space");
#endif
  }
  if (family != "cpu" && family != "blocked" && family != "threaded" && family != "eigen")
    throw usage_error("unknown --policy family '" + family + "' (cpu, blocked, threaded, eigen, vulkan)");
  std::vector<tune::candidate> out;
  if (is_family<gemm_traits>(p) && family != "eigen") {
    for (auto& c : tune::cpu_gemm_candidates())
      if (family == "cpu" || tune::config_value(c.cfg, "policy") == family) out.push_back(std::move(c));
  } else {
    for (const auto& e : policies) {
      if (e.name == "vulkan" || !e.unavailable().empty()) continue;
      if (family != "cpu" && e.name != family) continue;
      tune::candidate c;
      c.name = e.name;
      c.family = e.name == "eigen" ? "eigen" : "cpu";
      c.cfg = {{"policy", e.name}};
      c.run = e.execute;
      c.device_seconds = e.device_seconds;
      c.is_default = e.name == "threaded";
      out.push_back(std::move(c));
    }
  }
  if (out.empty()) throw unsupported_error("no candidates of family '" + family + "' for " + p.op);
  return out;
}

namespace {

/// Whose tuning it is: the Vulkan device for --policy vulkan, else this CPU.
tune::device_identity identity_for(const std::string& family) {
#if defined(KFORGE_HAS_VULKAN)
  if (family == "vulkan") return tune::vulkan_identity(vulkan::default_context());
#endif
  (void)family;
  return tune::cpu_identity();
}

}  // namespace

int cmd_tune(const problem& p, const std::map<std::string, std::string>& values, const std::vector<std::string>& flags,
             const std::vector<policy_entry>& policies) {
  const bool json = std::find(flags.begin(), flags.end(), "json") != flags.end();
  try {
    if (is_family<gemm_traits>(p) && p.epilogue != "none")
      throw usage_error("tune runs the plain gemm: leave out --epilogue (the blocking found is used for every epilogue)");
    tune::tune_options o;
    if (auto it = values.find("strategy"); it != values.end()) o.strategy = it->second;
    if (o.strategy != "grid" && o.strategy != "halving" && o.strategy != "descent")
      throw usage_error("unknown --strategy '" + o.strategy + "' (grid, halving, descent)");
    // Seconds, at most a day; trials (absent: no limit) and samples, whole numbers >= 1.
    o.budget_s = number_option(values, "budget", {0, 86400, true, false}, 60);
    o.max_trials = static_cast<int>(number_option(values, "trials", {1, 1000000, false, true}, 0));
    o.samples = static_cast<int>(number_option(values, "reps", option_ranges::reps, 9));
    const std::string family = values.count("policy") ? values.at("policy") : "cpu";
    // Each candidate is validated, then timed on tensors of its own: refused before any allocation.
    require_host_memory(p, run_bytes(p), run_bytes_what);
    for (const policy_entry& e : policies)
      if (family == "vulkan" && e.name == "vulkan" && e.unavailable().empty()) require_device_memory(p, e);
    const bool with_generated = std::find(flags.begin(), flags.end(), "no-generated") == flags.end();
    const std::vector<tune::candidate> cands = tune_candidates(p, family, policies, with_generated);
    const int generated_n = static_cast<int>(
        std::count_if(cands.begin(), cands.end(), [](const tune::candidate& c) { return tune::is_generated(c.cfg); }));
    tune::tuning_cache cache;
    cache.prepare();  // an unwritable cache is an environment problem, found before tuning
    const tune::device_identity id = identity_for(family);
    const tune::cache_key key = tune::key_for(p, id);

    const bool bar = !json && ::isatty(STDOUT_FILENO);
    if (!json)
      std::cout << "tuning " << describe(p) << " (bucket " << key.bucket << ") on " << key.device << ": "
                << cands.size() << " candidates"
                << (generated_n ? " (" + std::to_string(generated_n) + " generated kernels)" : std::string())
                << ", strategy " << o.strategy << ", budget " << fmt("%g", o.budget_s)
                << " s" << (o.max_trials ? ", at most " + std::to_string(o.max_trials) + " trials" : "") << "\n"
                << std::flush;
    if (bar)
      o.on_progress = [&](int done, int planned, double elapsed) {
        const int width = 30;
        const double frac = planned > 0 ? std::min(1.0, static_cast<double>(done) / planned) : 0;
        const double tfrac = std::min(1.0, elapsed / o.budget_s);
        const int fill = static_cast<int>(std::max(frac, tfrac) * width + 0.5);
        std::printf("\r[%s%s] %d/%d trials, %.1f s", std::string(static_cast<std::size_t>(fill), '#').c_str(),
                    std::string(static_cast<std::size_t>(width - fill), '-').c_str(), done, planned, elapsed);
        std::fflush(stdout);
      };
    const tune::tune_result r = tune::tune(p, cands, o);
    if (bar) std::printf("\r%s\r", std::string(70, ' ').c_str());
    const auto entry = tune::record(cache, p, cands, r, o, id);

    int ok_n = 0, invalid_n = 0, error_n = 0;
    for (const auto& t : r.trials) {
      ok_n += t.status == "ok";
      invalid_n += t.status == "invalid" || t.status == "revalidation_failed";
      error_n += t.status == "error";
    }
    const bool compute = compute_bound(p);
    auto rate = [&](double s) { return (compute ? flops(p) : min_bytes(p)) / s / 1e9; };
    const char* unit = compute ? "GFLOP/s" : "GB/s";
    // The default's time from this run, when it was timed.
    double default_s = -1;
    std::string default_name;
    for (const auto& c : cands)
      if (c.is_default) default_name = c.name;
    for (const auto& t : r.trials)
      if (t.candidate == default_name && t.status == "ok") default_s = t.median_s;

    if (json) {
      json_writer w;
      w.begin_object().field("problem", describe(p)).field("op", p.op).field("dtype", key.dtype);
      w.field("shape", tune::dims_text(p.dims)).field("bucket", key.bucket).field("device", key.device);
      w.field("driver", key.driver).field("kforge", key.kforge).field("family", family);
      w.field("strategy", o.strategy).field("budget_s", o.budget_s).field("max_trials", o.max_trials);
      w.field("candidates", static_cast<int>(cands.size())).field("generated_candidates", generated_n);
      w.field("trials_run", static_cast<int>(r.trials.size()));
      w.field("trials_ok", ok_n).field("trials_invalid", invalid_n).field("trials_error", error_n);
      w.field("timed_runs", r.timed_runs).field("elapsed_s", r.elapsed_s).field("stopped_by", r.stopped_by);
      w.field("found", r.found);
      if (r.found) {
        w.key("best").begin_object().field("candidate", cands[r.best].name).key("config");
        tune::write_config(w, cands[r.best].cfg);
        w.field("median_s", r.best_time.median_s).field("mad_s", r.best_time.mad_s);
        w.field("samples", r.best_time.samples).field("throughput", rate(r.best_time.median_s)).field("unit", unit);
        w.field("device_time", r.best_time.device_time).end_object();
      }
      if (!default_name.empty()) {
        w.key("default").begin_object().field("candidate", default_name);
        if (default_s > 0) w.field("median_s", default_s).field("best_speedup", default_s / r.best_time.median_s);
        w.end_object();
      }
      w.key("trials").begin_array();
      for (const auto& t : r.trials) {
        w.begin_object().field("candidate", t.candidate).field("status", t.status).field("seconds", t.seconds);
        if (t.status == "ok" || t.status == "revalidation_failed") w.field("median_s", t.median_s).field("samples", t.samples);
        if (!t.note.empty()) w.field("note", t.note);
        w.end_object();
      }
      w.end_array().field("cache_file", cache.file().string()).field("history_file", cache.history_file().string());
      w.end_object();
      std::cout << w.str() << "\n";
    } else {
      if (r.found) {
        std::cout << "best: " << cands[r.best].name << "  " << tune::config_json(cands[r.best].cfg) << "\n"
                  << "  median " << fmt("%.4f", r.best_time.median_s * 1e3) << " ms (" << r.best_time.samples
                  << " samples, MAD " << fmt("%.2f", 100 * r.best_time.mad_s / r.best_time.median_s) << "%), "
                  << fmt("%.2f", rate(r.best_time.median_s)) << " " << unit
                  << (r.best_time.device_time ? " (device time)" : "") << "\n";
        if (default_s > 0)
          std::cout << "  default " << default_name << ": " << fmt("%.4f", default_s * 1e3) << " ms, best is "
                    << fmt("%.2f", default_s / r.best_time.median_s) << "x\n";
      }
      std::cout << "trials: " << r.trials.size() << " of " << cands.size() << " candidates (" << ok_n << " ok, "
                << invalid_n << " invalid, " << error_n << " errors), " << r.timed_runs << " timed runs, "
                << fmt("%.2f", r.elapsed_s) << " s" << (r.stopped_by.empty() ? "" : ", stopped by the " + r.stopped_by)
                << "\n";
      for (const auto& t : r.trials)
        if (t.status != "ok") std::cout << "  " << t.status << ": " << t.candidate << " — " << t.note << "\n";
      if (entry) std::cout << "stored in " << cache.file().string() << " (history " << cache.history_file().string() << ")\n";
    }
    if (!r.found) {
      std::cerr << "kforge: no candidate passed validation and timing"
                << (r.stopped_by.empty() ? "" : " within the " + r.stopped_by) << "\n";
      return 1;
    }
    return 0;
  } catch (const usage_error& e) {
    std::cerr << one_line(e.what());
    return 2;
  } catch (const unsupported_error& e) {
    std::cerr << one_line(e.what());
    return 3;
  } catch (const cache_error& e) {
    std::cerr << one_line(e.what());
    return 3;
  }
}

}  // namespace kforge::tool
