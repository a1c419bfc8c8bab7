// tests/tune_search.cpp — the strategies on synthetic spaces whose timings
// are known: a fast but wrong candidate never wins (before or after timing),
// every strategy finds the known optimum, time and trial budgets hold.
// Candidates compute with the Eigen reference and spin for a set time, so
// the ranking does not depend on this machine's kernels.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include <kforge/tune/record.hpp>
#include <kforge/tune/tuner.hpp>

namespace tune = kforge::tune;
using kforge::host_tensor;
using kforge::problem;

namespace {

void spin(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

problem small_gemm() {
  problem p;
  p.op = "gemm";
  kforge::set_shape(p, "9x7x5");
  return p;
}

/// A correct candidate that takes `seconds` per call.
tune::candidate correct(const std::string& name, double seconds, tune::config cfg = {}) {
  tune::candidate c;
  c.name = name;
  c.family = "test";
  c.cfg = cfg.empty() ? tune::config{{"name", name}} : cfg;
  c.run = [seconds](const problem& p, std::vector<host_tensor>& ts) {
    kforge::execute<kforge::policy::eigen>(p, ts);
    spin(seconds);
  };
  return c;
}

}  // namespace

TEST_CASE("a fast but wrong candidate is rejected and never wins") {
  std::vector<tune::candidate> cands;
  cands.push_back(correct("slow_right", 300e-6));
  tune::candidate wrong;
  wrong.name = "fast_wrong";
  wrong.cfg = {{"name", "fast_wrong"}};
  // Writes zeros: instantaneous, and wrong on every case with a nonzero reference.
  wrong.run = [](const problem&, std::vector<host_tensor>& ts) {
    for (kforge::index_t i = 0; i < ts.back().span(); ++i) ts.back().set(i, 0.0f);
  };
  cands.push_back(wrong);
  for (const char* strategy : {"grid", "halving", "descent"}) {
    CAPTURE(strategy);
    tune::tune_options o;
    o.strategy = strategy;
    o.samples = 3;
    const auto r = tune::tune(small_gemm(), cands, o);
    REQUIRE(r.found);
    CHECK(r.best_name == "slow_right");
    if (std::string(strategy) != "descent") {  // descent starts at the default and may never visit it
      bool rejected = false;
      for (const auto& t : r.trials) rejected |= t.candidate == "fast_wrong" && t.status == "invalid";
      CHECK(rejected);
    }
  }
}

TEST_CASE("a candidate that turns wrong after timing fails re-validation and loses") {
  std::vector<tune::candidate> cands;
  cands.push_back(correct("steady", 400e-6));
  // Right for its first calls (the suite before timing: one per case the
  // suite runs on this shape), then fast and wrong.
  const int suite_cases = static_cast<int>(kforge::validate<kforge::policy::eigen>(small_gemm()).cases.size());
  REQUIRE(suite_cases >= 10);
  auto calls = std::make_shared<int>(0);
  tune::candidate flaky;
  flaky.name = "flaky";
  flaky.cfg = {{"name", "flaky"}};
  flaky.run = [calls, suite_cases](const problem& p, std::vector<host_tensor>& ts) {
    if ((*calls)++ < suite_cases) {
      kforge::execute<kforge::policy::eigen>(p, ts);
      return;
    }
    for (kforge::index_t i = 0; i < ts.back().span(); ++i) ts.back().set(i, 1.0f);
  };
  cands.push_back(flaky);
  tune::tune_options o;
  o.strategy = "grid";
  o.samples = 3;
  const auto r = tune::tune(small_gemm(), cands, o);
  REQUIRE(r.found);
  CHECK(r.best_name == "steady");
  bool caught = false;
  for (const auto& t : r.trials) caught |= t.candidate == "flaky" && t.status == "revalidation_failed";
  CHECK(caught);
}

TEST_CASE("candidates that throw are recorded as errors") {
  std::vector<tune::candidate> cands{correct("ok", 50e-6)};
  tune::candidate bad;
  bad.name = "throws";
  bad.run = [](const problem&, std::vector<host_tensor>&) { throw kforge::unsupported_error("no such kernel"); };
  cands.push_back(bad);
  tune::tune_options o;
  o.strategy = "grid";
  o.samples = 3;
  const auto r = tune::tune(small_gemm(), cands, o);
  REQUIRE(r.found);
  CHECK(r.best_name == "ok");
  CHECK(r.trials[1].status == "error");
  CHECK(r.trials[1].note.find("no such kernel") != std::string::npos);
}

namespace {
/// A 4×4 space over knobs a and b: time = base · (1 + |a − 3| + |b − 1|),
/// so (a=3, b=1) is best and every coordinate step towards it helps.
std::vector<tune::candidate> bowl(double base) {
  std::vector<tune::candidate> cs;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      auto c = correct("a" + std::to_string(a) + "b" + std::to_string(b), base * (1 + std::abs(a - 3) + std::abs(b - 1)),
                       {{"a", std::to_string(a)}, {"b", std::to_string(b)}});
      c.is_default = a == 0 && b == 3;
      cs.push_back(c);
    }
  return cs;
}
}  // namespace

TEST_CASE("every strategy finds the optimum of a known space; descent with fewer trials") {
  const auto cands = bowl(250e-6);
  int grid_trials = 0;
  for (const char* strategy : {"grid", "halving", "descent"}) {
    CAPTURE(strategy);
    tune::tune_options o;
    o.strategy = strategy;
    o.samples = 5;
    const auto r = tune::tune(small_gemm(), cands, o);
    REQUIRE(r.found);
    CHECK(r.best_name == "a3b1");
    CHECK(r.stopped_by.empty());
    if (std::string(strategy) == "grid") grid_trials = static_cast<int>(r.trials.size());
    if (std::string(strategy) == "descent") CHECK(static_cast<int>(r.trials.size()) < grid_trials);
  }
  CHECK(grid_trials == 16);
}

TEST_CASE("off-grid candidates (other config keys, like generated kernels) are timed by every strategy") {
  auto cands = bowl(250e-6);
  cands.push_back(correct("generated:c_x.json", 100e-6, {{"policy", "generated"}, {"record", "c_x.json"}}));
  auto run = [&](const char* strategy, int samples, int max_trials) {
    tune::tune_options o;
    o.strategy = strategy;
    o.samples = samples;
    o.max_trials = max_trials;
    return tune::tune(small_gemm(), cands, o);
  };
  for (const char* strategy : {"grid", "halving", "descent"}) {
    CAPTURE(strategy);
    const auto r = run(strategy, 5, 0);
    REQUIRE(r.found);
    CHECK(r.best_name == "generated:c_x.json");
  }
  // Under a trial budget halving takes it right after the default.
  const auto r = run("halving", 3, 2);
  REQUIRE(r.trials.size() == 2);
  CHECK(r.trials[0].candidate == "a0b3");
  CHECK(r.trials[1].candidate == "generated:c_x.json");
}

TEST_CASE("a generated winner is cached with the best own candidate as its fallback") {
  auto cands = bowl(100e-6);
  cands.push_back(correct("generated:c_x.json", 50e-6, {{"policy", "generated"}, {"record", "c_x.json"}}));
  const auto dir = std::filesystem::temp_directory_path() / ("kforge-tune-fallback-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  tune::tuning_cache cache(dir);
  tune::tune_options o;
  o.strategy = "grid";
  o.samples = 5;
  const auto [r, e] = tune::tune_and_record(cache, small_gemm(), cands, o);
  REQUIRE(e);
  CHECK(e->candidate == "generated:c_x.json");
  CHECK(tune::is_generated(e->cfg));
  CHECK(tune::generated_record(e->cfg) == "c_x.json");
  CHECK(tune::config_value(e->cfg, "fallback") == "a3b1");
  const auto fb = tune::generated_fallback(e->cfg);
  REQUIRE(fb);
  CHECK(*fb == tune::config{{"a", "3"}, {"b", "1"}});
  // What is read back from the file is the same.
  const auto again = tune::tuning_cache(dir).find(e->key);
  REQUIRE(again);
  CHECK(tune::generated_fallback(again->cfg) == fb);
  CHECK_FALSE(tune::generated_fallback(cands[0].cfg));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the trial budget caps every strategy") {
  const auto cands = bowl(50e-6);
  for (const char* strategy : {"grid", "halving", "descent"}) {
    CAPTURE(strategy);
    tune::tune_options o;
    o.strategy = strategy;
    o.samples = 3;
    o.max_trials = 3;
    const auto r = tune::tune(small_gemm(), cands, o);
    CHECK(r.trials.size() == 3);
    CHECK(r.stopped_by == "trial budget");
    CHECK(r.found);
  }
}

TEST_CASE("the time budget holds: a trial that started finishes, no other starts") {
  // 2 ms per call: one trial is 10 validation calls + 2 warm-up + 5 samples ≈ 35 ms.
  std::vector<tune::candidate> cands;
  for (int i = 0; i < 40; ++i) cands.push_back(correct("c" + std::to_string(i), 2e-3));
  for (const char* strategy : {"grid", "halving", "descent"}) {
    CAPTURE(strategy);
    tune::tune_options o;
    o.strategy = strategy;
    o.samples = 5;
    o.budget_s = 0.15;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = tune::tune(small_gemm(), cands, o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (std::string(strategy) != "descent") {  // descent on a flat space stops by itself
      CHECK(r.stopped_by == "time budget");
      CHECK(r.trials.size() < cands.size());
    }
    CHECK(r.found);
    // The last trial may overrun the budget by one trial (and the winner's
    // re-validation): well under 0.15 + 0.25 s even on a loaded machine.
    CHECK(r.elapsed_s < o.budget_s + 0.25);
    CHECK(took < o.budget_s + 0.3);
  }
}

TEST_CASE("measure batches short calls and reports the median") {
  auto c = correct("quick", 20e-6);
  problem p = small_gemm();
  auto ts = kforge::allocate(p);
  const auto m = tune::measure(c, p, ts, 1, 5);
  CHECK(m.calls_per_sample > 1);
  CHECK(m.samples == 5);
  CHECK(m.median_s >= 20e-6);
  CHECK(m.median_s < 2e-3);
  CHECK_FALSE(m.device_time);
  // An executor that reports device time is timed by it.
  c.device_seconds = [] { return 1e-6; };
  const auto d = tune::measure(c, p, ts, 1, 3);
  CHECK(d.device_time);
  CHECK(d.median_s == doctest::Approx(1e-6));
}

TEST_CASE("bad options are argument errors") {
  CHECK_THROWS_AS(tune::tune(small_gemm(), {}, {}), kforge::argument_error);
  tune::tune_options o;
  o.strategy = "magic";
  CHECK_THROWS_AS(tune::tune(small_gemm(), bowl(1e-6), o), kforge::argument_error);
}
