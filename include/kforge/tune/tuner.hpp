// kforge/tune/tuner.hpp — validating, timing and searching a space.
//
// Every candidate passes the 16-case validation suite on the tuned problem
// before it is timed: a fast wrong kernel is recorded as "invalid" and can
// never win. Timing: warm-up runs, then repeated samples on the steady clock
// (or the executor's device time when it reports one); a sample batches
// several calls when one call is shorter than 200 µs so that clock
// granularity and call overhead stay below 1 %; the median is the figure of
// merit and the median absolute deviation its noise. The winner is validated
// again after timing (with another seed); if it fails there, the next best
// takes its place.
//
// Strategies (all honour a time budget and a trial budget; a trial is one
// candidate validated and timed; a trial that has started finishes):
//   grid     every candidate, full repetitions.
//   halving  successive halving: every candidate with 3 samples, then the best
//            third (plus any within 2 noise-widths of the cut, at most as many
//            again) re-timed with 3× the samples, until one remains. Same
//            trials as grid, fewer timed runs.
//   descent  coordinate descent over the config keys from the backend's
//            default: time every candidate that differs from the current best
//            in one key, move to the best of them if it is faster by more
//            than the noise, stop when no neighbour is. Far fewer trials.
//
// Off-grid candidates — those whose config keys differ from the default's,
// such as generated kernels (tune/generated_space.hpp) next to a backend's
// knob grid — are no point of the grid: halving takes them right after the
// default, so a trial budget does not skip them (there are few, and each was
// costly to obtain), and descent, which only walks the grid, times each of
// them once after it stops.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kforge/tune/space.hpp"

namespace kforge::tune {

using clock = std::chrono::steady_clock;

struct measurement {
  double median_s = 0, min_s = 0, mad_s = 0;
  int samples = 0, calls_per_sample = 1, runs = 0;
  bool device_time = false;
};

/// Times c on p with ts as operands: `warmup` calls, then `samples` samples.
inline measurement measure(const candidate& c, const problem& p, std::vector<host_tensor>& ts, int warmup, int samples) {
  auto one = [&] {
    const auto t0 = clock::now();
    c.run(p, ts);
    const double host = std::chrono::duration<double>(clock::now() - t0).count();
    const std::optional<double> dev = c.device_seconds ? c.device_seconds() : std::nullopt;
    return std::pair{dev.value_or(host), dev.has_value()};
  };
  measurement m;
  double first = 0;
  for (int i = 0; i < std::max(1, warmup); ++i) first = one().first;
  m.runs = std::max(1, warmup);
  // Batch short calls: 200 µs per sample keeps steady_clock's overhead
  // (~20-40 ns per read) and its granularity far below 1 %.
  m.calls_per_sample = first > 0 && first < 200e-6 ? std::min(1000, static_cast<int>(std::ceil(200e-6 / first))) : 1;
  std::vector<double> t;
  for (int s = 0; s < std::max(1, samples); ++s) {
    double sum = 0;
    bool dev = false;
    const auto t0 = clock::now();
    for (int r = 0; r < m.calls_per_sample; ++r) {
      auto [x, d] = one();
      sum += x;
      dev = d;
    }
    // Host time of a batch is taken around the whole batch (the per-call
    // reads above are only used for device time).
    const double host = std::chrono::duration<double>(clock::now() - t0).count();
    t.push_back((dev ? sum : host) / m.calls_per_sample);
    m.device_time = dev;
    m.runs += m.calls_per_sample;
  }
  std::sort(t.begin(), t.end());
  m.samples = static_cast<int>(t.size());
  m.median_s = t[t.size() / 2];
  m.min_s = t.front();
  std::vector<double> dev(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) dev[i] = std::fabs(t[i] - m.median_s);
  std::sort(dev.begin(), dev.end());
  m.mad_s = dev[dev.size() / 2];
  return m;
}

struct tune_options {
  std::string strategy = "halving";  ///< grid, halving, descent
  double budget_s = 60;              ///< wall-clock budget of the whole search
  int max_trials = 0;                ///< 0 = no limit
  int warmup = 2;
  int samples = 9;                   ///< samples per full measurement
  std::uint64_t seed = 0x6b666f7267650001ull;
  /// Called after every trial: trials done, trials planned (an estimate for
  /// descent), seconds elapsed.
  std::function<void(int done, int planned, double elapsed)> on_progress;
};

/// One trial as recorded in the history.
struct trial {
  std::string candidate;
  config cfg;
  std::string status;   ///< ok, invalid (failed the suite), error (threw), revalidation_failed
  std::string note;     ///< why invalid / the error message
  double median_s = -1; ///< last measurement's median (ok trials)
  double mad_s = 0;
  int samples = 0;
  double seconds = 0;   ///< wall time of the trial (validation + timing)
};

struct tune_result {
  bool found = false;
  std::size_t best = 0;  ///< index into the candidate list
  std::string best_name;
  measurement best_time;
  std::vector<trial> trials;
  int timed_runs = 0;    ///< calls made while timing (warm-up included)
  double elapsed_s = 0;
  std::string stopped_by;  ///< "", "time budget", "trial budget"
};

namespace detail {

struct search {
  const problem& p;
  const std::vector<candidate>& cands;
  const tune_options& opt;
  tune_result& res;
  clock::time_point start = clock::now();
  std::vector<host_tensor> ts;
  std::map<std::size_t, std::size_t> trial_of;   // candidate → its trial
  std::map<std::size_t, measurement> timed;      // candidate → last measurement
  std::vector<std::size_t> finalists;            // halving: the last rung; else empty (= every timed one)
  int planned = 0;

  search(const problem& pr, const std::vector<candidate>& c, const tune_options& o, tune_result& r)
      : p(pr), cands(c), opt(o), res(r), ts(allocate(pr)) {
    generate_inputs(p, input_case::normal, opt.seed, ts);
  }
  double elapsed() const { return std::chrono::duration<double>(clock::now() - start).count(); }
  /// Whether another trial may start; records what stopped the search.
  bool may_start_trial() {
    if (opt.max_trials > 0 && static_cast<int>(res.trials.size()) >= opt.max_trials) {
      res.stopped_by = "trial budget";
      return false;
    }
    return may_continue();
  }
  bool may_continue() {
    if (elapsed() >= opt.budget_s) {
      res.stopped_by = "time budget";
      return false;
    }
    return true;
  }
  /// Validates (once) and times candidate i; false if it is unusable.
  bool evaluate(std::size_t i, int samples, int warmup) {
    const auto t0 = clock::now();
    auto it = trial_of.find(i);
    if (it == trial_of.end()) {
      trial t;
      t.candidate = cands[i].name;
      t.cfg = cands[i].cfg;
      const report r = validate(p, cands[i].run);
      if (!r.all_passed) {
        t.status = "invalid";
        for (const auto& c : r.cases)
          if (!c.passed) {
            t.note = c.error.empty() ? "failed case " + c.name : c.error;
            if (!c.error.empty()) t.status = "error";
            break;
          }
        if (t.note.empty()) t.note = r.note;
      }
      t.seconds = std::chrono::duration<double>(clock::now() - t0).count();
      res.trials.push_back(t);
      it = trial_of.emplace(i, res.trials.size() - 1).first;
      if (opt.on_progress) opt.on_progress(static_cast<int>(res.trials.size()), planned, elapsed());
      if (!t.status.empty()) return false;
    }
    trial& t = res.trials[it->second];
    if (t.status != "" && t.status != "ok") return false;
    try {
      const measurement m = measure(cands[i], p, ts, warmup, samples);
      res.timed_runs += m.runs;
      timed[i] = m;
      t.status = "ok";
      t.median_s = m.median_s;
      t.mad_s = m.mad_s;
      t.samples = m.samples;
    } catch (const std::exception& e) {
      t.status = "error";
      t.note = e.what();
    }
    t.seconds += std::chrono::duration<double>(clock::now() - t0).count();
    return t.status == "ok";
  }
  /// Relative noise of a measurement (MAD / median), at least 0.5 %.
  static double noise(const measurement& m) { return std::max(0.005, m.median_s > 0 ? m.mad_s / m.median_s : 0.0); }
};

inline void run_grid(search& s) {
  s.planned = static_cast<int>(s.cands.size());
  if (s.opt.max_trials > 0) s.planned = std::min(s.planned, s.opt.max_trials);
  for (std::size_t i = 0; i < s.cands.size(); ++i) {
    if (!s.may_start_trial()) break;
    s.evaluate(i, s.opt.samples, s.opt.warmup);
  }
}

/// Whether candidate i's config has other keys than the default's (see the header comment).
inline bool off_grid(const std::vector<candidate>& cands, std::size_t i) {
  const auto dflt = std::find_if(cands.begin(), cands.end(), [](const candidate& c) { return c.is_default; });
  if (dflt == cands.end()) return false;
  const config &a = cands[i].cfg, &b = dflt->cfg;
  if (a.size() != b.size()) return true;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k].first != b[k].first) return true;
  return false;
}

/// Candidate order for a search that may not see every candidate: the
/// default first, then the off-grid ones, the rest in a seeded shuffle (so a
/// trial budget samples the whole space rather than its first rows).
inline std::vector<std::size_t> sample_order(const search& s) {
  std::vector<std::size_t> order(s.cands.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 g(s.opt.seed);
  std::shuffle(order.begin(), order.end(), g);
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return off_grid(s.cands, i); });
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return s.cands[i].is_default; });
  return order;
}

inline void run_halving(search& s) {
  std::vector<std::size_t> alive;
  const std::vector<std::size_t> order = sample_order(s);
  s.planned = static_cast<int>(order.size());
  if (s.opt.max_trials > 0) s.planned = std::min(s.planned, s.opt.max_trials);
  int samples = 3;
  for (std::size_t i : order) {
    if (!s.may_start_trial()) break;
    if (s.evaluate(i, samples, 1)) alive.push_back(i);
  }
  while (alive.size() > 1 && s.may_continue()) {
    std::sort(alive.begin(), alive.end(), [&](auto a, auto b) { return s.timed[a].median_s < s.timed[b].median_s; });
    const std::size_t keep = std::max<std::size_t>(1, (alive.size() + 2) / 3);
    const measurement& cut = s.timed[alive[keep - 1]];
    // Noise-aware cut: a candidate whose median is within two noise-widths
    // of the last one kept is not distinguishable from it yet; keep it too.
    // The noise counted is capped at 5 % and the extras at `keep`, so that on
    // a noisy machine a rung still drops at least half of the candidates.
    const double limit = cut.median_s * (1.0 + 2.0 * std::min(0.05, search::noise(cut)));
    std::vector<std::size_t> next(alive.begin(), alive.begin() + static_cast<std::ptrdiff_t>(keep));
    for (std::size_t j = keep; j < alive.size(); ++j)
      if (s.timed[alive[j]].median_s <= limit && next.size() < std::min(2 * keep, alive.size() - 1))
        next.push_back(alive[j]);
    samples = std::min(samples * 3, std::max(s.opt.samples, 27));
    std::vector<std::size_t> measured;
    for (std::size_t i : next) {
      if (!s.may_continue()) break;
      if (s.evaluate(i, next.size() <= 2 ? std::max(samples, s.opt.samples) : samples, 1)) measured.push_back(i);
    }
    if (measured.size() < next.size()) {
      // The budget ran out mid-rung: only the re-measured ones are comparable.
      if (!measured.empty()) alive = measured;
      break;
    }
    alive = measured;
  }
  // Only the last rung's measurements are comparable with each other: a
  // candidate dropped after 3 samples may have a lucky median.
  s.finalists = alive;
}

inline void run_descent(search& s) {
  const std::size_t n = s.cands.size();
  std::size_t cur = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (s.cands[i].is_default) cur = i;
  s.planned = 1;
  for (const auto& [k, v] : s.cands[cur].cfg) {
    std::vector<std::string> values;
    for (std::size_t i = 0; i < n; ++i)
      if (auto x = config_value(s.cands[i].cfg, k);
          !off_grid(s.cands, i) && std::find(values.begin(), values.end(), x) == values.end())
        values.push_back(x);
    s.planned += static_cast<int>(values.size()) - 1;
  }
  for (std::size_t i = 0; i < n; ++i) s.planned += off_grid(s.cands, i);
  auto differs_in_one = [&](std::size_t a, std::size_t b) {
    const config &x = s.cands[a].cfg, &y = s.cands[b].cfg;
    if (x.size() != y.size()) return false;
    int d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d += x[i] != y[i];
    return d == 1;
  };
  if (s.opt.max_trials > 0) s.planned = std::min(s.planned, s.opt.max_trials);
  if (!s.may_start_trial()) return;
  if (!s.evaluate(cur, s.opt.samples, s.opt.warmup)) {
    // The default is unusable: start from the first candidate that works.
    bool found = false;
    for (std::size_t i = 0; i < n && !found; ++i) {
      if (i == cur || s.trial_of.count(i) || off_grid(s.cands, i)) continue;
      if (!s.may_start_trial()) return;
      if (s.evaluate(i, s.opt.samples, s.opt.warmup)) cur = i, found = true;
    }
    if (!found) goto off;
  }
  for (;;) {
    std::size_t best = cur;
    for (std::size_t i = 0; i < n; ++i) {
      if (!differs_in_one(cur, i) || s.trial_of.count(i)) continue;
      if (!s.may_start_trial()) goto done;
      if (s.evaluate(i, s.opt.samples, s.opt.warmup) && s.timed[i].median_s < s.timed[best].median_s) best = i;
    }
    if (best == cur) break;
    // Move only past the noise of the two measurements.
    const double margin = search::noise(s.timed[cur]) + search::noise(s.timed[best]);
    if (s.timed[best].median_s >= s.timed[cur].median_s * (1.0 - margin)) break;
    cur = best;
  }
off:
  for (std::size_t i = 0; i < n; ++i) {
    if (!off_grid(s.cands, i) || s.trial_of.count(i)) continue;
    if (!s.may_start_trial()) break;
    s.evaluate(i, s.opt.samples, s.opt.warmup);
  }
done:
  return;
}

}  // namespace detail

/// Searches `cands` for the fastest valid candidate on p.
inline tune_result tune(const problem& p, const std::vector<candidate>& cands, const tune_options& opt = {}) {
  tune_result res;
  if (cands.empty()) throw argument_error("kforge::tune: the search space is empty");
  if (opt.strategy != "grid" && opt.strategy != "halving" && opt.strategy != "descent")
    throw argument_error("kforge::tune: unknown strategy '" + opt.strategy + "' (grid, halving, descent)");
  detail::search s(p, cands, opt, res);
  if (opt.strategy == "grid") detail::run_grid(s);
  else if (opt.strategy == "halving") detail::run_halving(s);
  else detail::run_descent(s);

  // Rank what was timed; the winner must pass the suite again (another seed)
  // after timing, else the next one is tried.
  std::vector<std::size_t> ranked;
  for (auto& [i, m] : s.timed)
    if (res.trials[s.trial_of[i]].status == "ok" &&
        (s.finalists.empty() || std::find(s.finalists.begin(), s.finalists.end(), i) != s.finalists.end()))
      ranked.push_back(i);
  std::sort(ranked.begin(), ranked.end(), [&](auto a, auto b) { return s.timed[a].median_s < s.timed[b].median_s; });
  suite_options again;
  again.seed = opt.seed ^ 0x9e3779b97f4a7c15ull;
  for (std::size_t i : ranked) {
    if (validate(p, cands[i].run, again).all_passed) {
      res.found = true;
      res.best = i;
      res.best_name = cands[i].name;
      res.best_time = s.timed[i];
      break;
    }
    trial& t = res.trials[s.trial_of[i]];
    t.status = "revalidation_failed";
    t.note = "passed the suite before timing, failed it after";
  }
  res.elapsed_s = s.elapsed();
  return res;
}

}  // namespace kforge::tune
