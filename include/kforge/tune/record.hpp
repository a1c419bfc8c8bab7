// kforge/tune/record.hpp — tune a problem and persist the outcome: every
// trial to the CSV history, the winner to the cache (and the per-device
// best-config export). Used by `kforge tune`, by policy::autotune when it
// tunes on a miss, and by code that pre-tunes a set of shapes.
#pragma once

#include "kforge/tune/cache.hpp"
#include "kforge/tune/tuner.hpp"

namespace kforge::tune {

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
