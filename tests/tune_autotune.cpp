// tests/tune_autotune.cpp — policy::autotune for gemm: a cache hit runs the
// cached policy (each micro-kernel of the CPU space, with an epilogue), a miss
// runs the default, a stale name falls back, and tune-on-miss tunes, stores
// and uses the winner; every candidate of the CPU space passes the validation
// suite. Results are checked against the Eigen reference each time.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <vector>

#include <kforge/tune.hpp>

namespace fs = std::filesystem;
namespace tune = kforge::tune;
namespace op = kforge::op;
using kforge::index_t;

namespace {

struct scoped_cache_dir {
  fs::path dir;
  explicit scoped_cache_dir(const std::string& name)
      : dir(fs::temp_directory_path() / ("kforge-autotune-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    ::setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    tune::forget_resolutions();
  }
  ~scoped_cache_dir() { fs::remove_all(dir); }
};

/// Runs autotune on an m×n×k gemm and checks it against Eigen.
void run_and_check(index_t m, index_t n, index_t k) {
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  std::vector<float> c(static_cast<std::size_t>(m * n), -7.0f), ref(c.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 13) / 13.0f - 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 17) / 17.0f - 0.5f;
  const auto va = kforge::make_view(a.data(), {m, k});
  const auto vb = kforge::make_view(b.data(), {k, n});
  kforge::run<kforge::policy::autotune>(op::gemm<float>{}, va, vb, kforge::make_view(c.data(), {m, n}));
  kforge::run<kforge::policy::eigen>(op::gemm<float>{}, va, vb, kforge::make_view(ref.data(), {m, n}));
  for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c[i] == doctest::Approx(ref[i]).epsilon(1e-4));
}

}  // namespace

TEST_CASE("autotune supports gemm and refuses what it does not cover") {
  static_assert(kforge::supports<kforge::policy::autotune, op::gemm<float>>);
  static_assert(kforge::supports<kforge::policy::autotune, op::gemm<kforge::half, kforge::epilogue::bias_relu>>);
  static_assert(!kforge::supports<kforge::policy::autotune, op::softmax<float>>);
}

TEST_CASE("a miss runs the default policy") {
  scoped_cache_dir d("miss");
  tune::autotune_settings().tune_on_miss = false;
  run_and_check(33, 20, 17);
  const auto r = tune::last_resolution();
  CHECK(r.source == "default");
  CHECK(r.candidate == tune::policy_traits<tune::cpu_default_policy>::name());
  CHECK(r.bucket == "64x32x32");
}

TEST_CASE("a hit runs the cached policy, for every shape of the bucket") {
  scoped_cache_dir d("hit");
  tune::autotune_settings().tune_on_miss = false;
  const auto cands = tune::cpu_gemm_candidates();
  const std::string chosen = cands[cands.size() - 1].name;  // not the default
  REQUIRE(chosen != tune::policy_traits<tune::cpu_default_policy>::name());
  kforge::problem p;
  kforge::set_shape(p, "40x30x20");
  tune::cache_entry e;
  e.key = tune::key_for(p);
  e.candidate = chosen;
  e.cfg = cands.back().cfg;
  tune::tuning_cache().store({e});

  run_and_check(40, 30, 20);
  CHECK(tune::last_resolution().source == "cache");
  CHECK(tune::last_resolution().candidate == chosen);
  run_and_check(64, 17, 32);  // same bucket 64x32x32
  CHECK(tune::last_resolution().candidate == chosen);
  run_and_check(65, 17, 32);  // bucket 128x32x32: a miss
  CHECK(tune::last_resolution().source == "default");
}

TEST_CASE("a cached name this build does not have falls back to the default") {
  scoped_cache_dir d("stale");
  tune::autotune_settings().tune_on_miss = false;
  kforge::problem p;
  kforge::set_shape(p, "10x10x10");
  tune::cache_entry e;
  e.key = tune::key_for(p);
  e.candidate = "blocked/99x99/mc1/nc1/kc1";
  tune::tuning_cache().store({e});
  run_and_check(10, 10, 10);
  CHECK(tune::last_resolution().source.find("not in this build") != std::string::npos);
  CHECK(tune::last_resolution().candidate == tune::policy_traits<tune::cpu_default_policy>::name());
}

TEST_CASE("tune on miss: tunes within its budget, stores the winner, uses it") {
  scoped_cache_dir d("ondemand");
  auto& s = tune::autotune_settings();
  const auto saved = s;
  s.tune_on_miss = true;
  s.budget_s = 3;
  s.strategy = "descent";
  run_and_check(24, 20, 12);
  const auto r = tune::last_resolution();
  CHECK(r.source == "tuned");
  kforge::problem p;
  kforge::set_shape(p, "24x20x12");
  const auto hit = tune::tuning_cache().find(tune::key_for(p));
  REQUIRE(hit);
  CHECK(hit->candidate == r.candidate);
  CHECK(fs::exists(d.dir / "history.csv"));
  // Another process (here: a forgotten memo) now hits the cache.
  tune::forget_resolutions();
  s.tune_on_miss = false;
  run_and_check(24, 20, 12);
  CHECK(tune::last_resolution().source == "cache");
  CHECK(tune::last_resolution().candidate == r.candidate);
  s = saved;
}

TEST_CASE("the CPU space: its policies' names in order, one default, every candidate passes the suite") {
  const auto cands = tune::cpu_gemm_candidates();
  const auto& names = tune::detail::space_names<tune::cpu_gemm_space>::get();
  REQUIRE(cands.size() == tune::cpu_gemm_space::size);
  std::set<std::string> seen;
  int defaults = 0;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    CHECK(cands[i].name == names[i]);
    CHECK(seen.insert(cands[i].name).second);
    if (cands[i].is_default) {
      ++defaults;
      CHECK(cands[i].name == tune::policy_traits<tune::cpu_default_policy>::name());
    }
  }
  CHECK(defaults == 1);
  // Odd sizes: partial micro-tiles and blocks in every dimension; K > 128 and
  // M > 96 cross the smallest KC and MC of the space.
  for (const auto* dt : {"f32", "f16", "bf16"}) {
    kforge::problem p;
    kforge::set_shape(p, "101x75x133");
    p.type = kforge::parse_dtype(dt);
    for (const auto& c : cands) {
      CAPTURE(c.name);
      CAPTURE(dt);
      CHECK(kforge::validate(p, c.run).all_passed);
    }
  }
  kforge::problem p;
  kforge::set_shape(p, "8x8x8");
  p.epilogue = "bias_relu";
  std::vector<kforge::host_tensor> none;
  CHECK_THROWS_AS(cands.front().run(p, none), kforge::unsupported_error);
}

TEST_CASE("a hit on each micro-kernel of the CPU space runs it, with the call's epilogue") {
  scoped_cache_dir d("micro");
  tune::autotune_settings().tune_on_miss = false;
  const index_t m = 45, n = 70, k = 33;  // bucket 64x128x64, the packed path (M > 8)
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)), bias(n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 13) / 13.0f - 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 17) / 17.0f - 0.5f;
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) / 5.0f - 0.4f;
  const auto va = kforge::make_view(a.data(), {m, k});
  const auto vb = kforge::make_view(b.data(), {k, n});
  const auto vbias = kforge::make_view(bias.data(), {n});
  std::vector<float> ref(static_cast<std::size_t>(m * n));
  const op::gemm<float, kforge::epilogue::bias_gelu> o;
  kforge::run<kforge::policy::eigen>(o, va, vb, vbias, kforge::make_view(ref.data(), {m, n}));
  kforge::problem p;
  kforge::set_shape(p, "45x70x33");
  std::set<std::string> micros;
  for (const auto& c : tune::cpu_gemm_candidates()) {
    const std::string micro = c.name.substr(0, c.name.find("/mc"));  // "threaded/12x32"
    if (!micros.insert(micro).second) continue;
    CAPTURE(c.name);
    tune::cache_entry e;
    e.key = tune::key_for(p);
    e.candidate = c.name;
    e.cfg = c.cfg;
    tune::tuning_cache().store({e});
    tune::forget_resolutions();
    std::vector<float> out(ref.size(), -7.0f);
    kforge::run<kforge::policy::autotune>(o, va, vb, vbias, kforge::make_view(out.data(), {m, n}));
    CHECK(tune::last_resolution().candidate == c.name);
    CHECK(tune::last_resolution().source == "cache");
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == doctest::Approx(ref[i]).epsilon(1e-4));
  }
  CHECK(micros.size() == tune::cpu_gemm_space::size / 9);  // {threaded, blocked} x each micro-tile, 9 blockings each
}
