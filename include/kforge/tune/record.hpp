// kforge/tune/record.hpp — tune a problem and persist the outcome: every
// trial to the CSV history, the winner to the cache (and the per-device
// best-config export). Used by `kforge tune`, by policy::autotune when it
// tunes on a miss, and by code that pre-tunes a set of shapes.
//
// A generated kernel that wins (tune/generated_space.hpp) is stored with
// family "generated", candidate "generated:<record file>" and config
// {"policy": "generated", "record": <file>, "fallback": <best own
// candidate>, "fallback.<key>": <its config>...}.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kforge/tune/cache.hpp"
#include "kforge/tune/tuner.hpp"

namespace kforge::tune {

// ---- generated kernels' entries (tune/generated_space.hpp has the candidates) ----

inline constexpr std::string_view generated_family = "generated";

/// Whether a candidate's (or cache entry's) config is a generated kernel.
inline bool is_generated(const config& c) { return config_value(c, "policy") == generated_family; }

/// The record file a generated config names ("" when it is not one).
inline std::string generated_record(const config& c) { return is_generated(c) ? config_value(c, "record") : ""; }

/// kforge's own config stored in a generated winner's config as its fallback
/// (keys "fallback.<key>"), or nullopt when it is not a generated config or
/// none was stored (no own candidate passed in that tuning run).
inline std::optional<config> generated_fallback(const config& c) {
  if (!is_generated(c)) return std::nullopt;
  constexpr std::string_view prefix = "fallback.";
  config out;
  for (const auto& [k, v] : c)
    if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0) out.emplace_back(k.substr(prefix.size()), v);
  if (out.empty()) return std::nullopt;
  return out;
}

/// The config a generated winner is stored with: its own ({policy, record})
/// and the best own candidate's name and config as fallback.
inline config with_fallback(config winner, const std::string& own_name, const config& own) {
  if (own_name.empty()) return winner;
  winner.emplace_back("fallback", own_name);
  for (const auto& [k, v] : own) winner.emplace_back("fallback." + k, v);
  return winner;
}

/// Writes the trials of `r` to the history and, when a winner was found,
/// its entry to the cache. Returns the entry (nullopt without a winner).
inline std::optional<cache_entry> record(tuning_cache& cache, const problem& p, const std::vector<candidate>& cands,
                                         const tune_result& r, const tune_options& opt,
                                         const device_identity& id = cpu_identity()) {
  const cache_key key = key_for(p, id);
  std::vector<tuning_cache::history_row> rows;
  for (const trial& t : r.trials)
    rows.push_back({id.device, p.op, key.dtype, dims_text(p.dims), key.bucket, opt.strategy, t.candidate,
                    config_json(t.cfg), t.status, t.note, t.median_s, t.seconds});
  cache.append_history(rows);
  if (!r.found) return std::nullopt;
  cache_entry e;
  e.key = key;
  e.candidate = cands[r.best].name;
  e.family = cands[r.best].family;
  e.cfg = cands[r.best].cfg;
  if (is_generated(e.cfg)) {
    // The best of kforge's own candidates in this run: what a resolver runs
    // when it cannot run the generated kernel.
    const trial* own = nullptr;
    for (const trial& t : r.trials)
      if (t.status == "ok" && !is_generated(t.cfg) && (!own || t.median_s < own->median_s)) own = &t;
    e.cfg = with_fallback(e.cfg, own ? own->candidate : "", own ? own->cfg : config{});
  }
  e.shape = dims_text(p.dims);
  e.median_s = r.best_time.median_s;
  e.strategy = opt.strategy;
  e.trials = static_cast<int>(r.trials.size());
  e.tuned_at = utc_now();
  cache.store({e});
  return e;
}

/// Tunes p over cands and records the outcome under device id (the CPU by default).
inline std::pair<tune_result, std::optional<cache_entry>> tune_and_record(tuning_cache& cache, const problem& p,
                                                                          const std::vector<candidate>& cands,
                                                                          const tune_options& opt = {},
                                                                          const device_identity& id = cpu_identity()) {
  tune_result r = tune(p, cands, opt);
  auto e = record(cache, p, cands, r, opt, id);
  return {std::move(r), std::move(e)};
}

}  // namespace kforge::tune
