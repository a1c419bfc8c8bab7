// tools/autotune.cpp — `--policy autotune` for run, validate, bench and demo:
// the tuning cache decides what runs, as policy::autotune decides for host
// views (include/kforge/tune/autotune.hpp), and the tool says what it chose.
//
//   gemm       policy::autotune itself: tune::resolve_gemm (memoised per
//              process), then what tune::last_resolution() reports;
//   other ops  the same rule over the tool's CPU policies, which is what
//              `kforge tune --op OP` (family cpu) stores for them: the cached
//              winner of (this CPU, op, dtype, bucket); on a miss with
//              KFORGE_AUTOTUNE=1 a tuning run (KFORGE_AUTOTUNE_STRATEGY,
//              KFORGE_AUTOTUNE_BUDGET) stored like `kforge tune` stores it;
//              otherwise the tool's default policy.
// Host views run on the CPU, so the CPU's entries are the ones used; a
// Vulkan entry (`kforge tune --policy vulkan`) is what policy::autotune uses
// for vulkan::device_tensor operands, not here.
//
// A cache file that does not parse stops the command (exit 3) before
// anything reads it through tune::tuning_cache, which would set it aside and
// salvage it: a user who asked for the tuned result is told, not given the
// default silently, and the file stays where it is for `kforge cache list`
// (which sets it aside and salvages its entries) or for the user to inspect.
#include "cli.hpp"

#if defined(KFORGE_TOOL_HAS_TUNE)
#include <fstream>
#include <iterator>

#include <kforge/core/json.hpp>
#include <kforge/tune.hpp>
#include <kforge/validate/execute.hpp>

#include "tune_candidates.hpp"
#endif

namespace kforge::tool {

std::string autotune_choice::text() const {
  std::string s = "autotune: " + policy + " " + knobs + " on " + device + ", bucket " + bucket + ", " +
                  (from_cache ? "from the tuning cache" : source == "tuned" ? "tuned now (KFORGE_AUTOTUNE=1) and stored"
                                                                            : "not from the cache: " + source);
  if (source == "default")
    s += " (no entry for this bucket in " + cache_file + "; run `kforge tune` for this problem, or set KFORGE_AUTOTUNE=1)";
  return s;
}

#if defined(KFORGE_TOOL_HAS_TUNE)
std::string autotune_choice::json() const {
  json_writer w;
  w.begin_object().field("policy", policy).key("knobs").raw(knobs).field("device", device).field("bucket", bucket);
  w.field("source", source).field("from_cache", from_cache).field("cache_file", cache_file).end_object();
  return w.str();
}

namespace {

/// Throws environment_error when the cache file exists and is not a kforge
/// tuning cache as a whole (the test tune::tuning_cache applies before it
/// salvages), without touching the file.
void require_parsable(const tune::tuning_cache& cache) {
  bool exists = false;
  const std::string text = tune::detail::read_file(cache.file(), exists);
  if (!exists) return;  // no cache yet: every lookup misses
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array entries;
  std::string_view format;
  if (parser.parse(simdjson::padded_string(text)).get(doc) || doc["entries"].get_array().get(entries) ||
      doc["format"].get_string().get(format) || format != "kforge-tuning-cache")
    throw environment_error("--policy autotune: the tuning cache " + cache.file().string() +
                            " is corrupt or truncated, so what was tuned cannot be known; it is left as it is "
                            "(`kforge cache list` sets it aside and salvages its complete entries, or remove it "
                            "and tune again)");
}

chosen_policy gemm_autotune(const problem& p, autotune_choice c) {
  const int i = tune::resolve_gemm(p.type, p.dims[0], p.dims[1], p.dims[2]);
  const tune::resolution r = tune::last_resolution();
  c.policy = r.candidate;
  c.bucket = r.bucket;
  c.source = r.source;
  c.knobs = "{}";
  const auto cands = tune::cpu_gemm_candidates();
  if (i >= 0 && static_cast<std::size_t>(i) < cands.size()) c.knobs = tune::config_json(cands[static_cast<std::size_t>(i)].cfg);
  policy_entry e;
  e.name = "autotune";
  e.detail = "policy::autotune -> " + c.policy;
  e.execute = &execute<policy::autotune>;
  return {std::move(e), std::move(c)};
}

chosen_policy other_autotune(const problem& p, autotune_choice c, tune::tuning_cache& cache) {
  const tune::cache_key key = tune::key_for(p);
  c.bucket = key.bucket;
  c.policy = default_policy();
  c.source = "default";
  auto usable = [](const std::string& name) {
    for (const auto& e : policies())
      if (e.name == name && e.name != "vulkan" && e.unavailable().empty()) return true;
    return false;
  };
  if (auto hit = cache.find(key)) {
    const std::string name = tune::config_value(hit->cfg, "policy");
    if (usable(name)) {
      c.policy = name;
      c.source = "cache";
    } else {
      c.source = "default: cached candidate '" + hit->candidate + "' is not a CPU policy of this build";
    }
  } else if (tune::autotune_settings().tune_on_miss) {
    tune::tune_options o;
    o.strategy = tune::autotune_settings().strategy;
    o.budget_s = tune::autotune_settings().budget_s;
    o.samples = 5;
    auto [res, entry] = tune::tune_and_record(cache, p, tune_candidates(p, "cpu", policies(), false), o);
    if (entry && usable(tune::config_value(entry->cfg, "policy"))) {
      c.policy = tune::config_value(entry->cfg, "policy");
      c.source = "tuned";
    } else {
      c.source = "default: tuning found no valid candidate";
    }
  }
  c.knobs = "{}";
  policy_entry e = find_policy(c.policy);
  e.detail = "autotune -> " + e.name + " (" + e.detail + ")";
  e.name = "autotune";
  return {std::move(e), std::move(c)};
}

}  // namespace

chosen_policy resolve_autotune(const problem& p) {
  try {
    tune::tuning_cache cache;
    require_parsable(cache);
    autotune_choice c;
    c.device = tune::cpu_identity().device;
    c.cache_file = cache.file().string();
    chosen_policy out = is_family<gemm_traits>(p) ? gemm_autotune(p, c) : other_autotune(p, c, cache);
    out.autotune->from_cache = out.autotune->source.rfind("cache", 0) == 0;
    return out;
  } catch (const cache_error& e) {
    throw environment_error(e.what());
  }
}
void check_env_tune() { (void)tune::autotune_settings(); }
#else
std::string autotune_choice::json() const { return "{}"; }
void check_env_tune() {}

chosen_policy resolve_autotune(const problem&) {
  throw usage_error("--policy autotune needs kforge::tune (simdjson), and this kforge was built without it");
}
#endif

}  // namespace kforge::tool
