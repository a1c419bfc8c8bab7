// tests/tune_vulkan.cpp — the Vulkan gemm search space: gemm_with_config and
// gemm_with_tiling against Eigen, valid_tilings against check_tiling,
// valid_configs against gemm_config_check, and a small tuning run
// on the device (lavapipe in CI) in which every candidate is validated before
// it is timed, a fast wrong candidate and a config the device refuses never
// win, and the winner lands in the cache under the Vulkan device's identity.
// Skips (and says so) where no Vulkan device exists.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "vulkan_common.hpp"

#include <kforge/tune.hpp>
#include <kforge/tune/vulkan_space.hpp>

namespace fs = std::filesystem;
namespace tune = kforge::tune;
using kforge::vulkan::gemm_config;
using kforge::vulkan::gemm_kernel;
using kforge::vulkan::gemm_tiling;

namespace {

kforge::problem gemm_problem(kforge::index_t m, kforge::index_t n, kforge::index_t k) {
  kforge::problem p;
  p.op = "gemm";
  p.type = kforge::dtype::f32;
  p.dims = kforge::shape{m, n, k};
  return p;
}

struct scoped_dir {
  fs::path dir = fs::temp_directory_path() / ("kforge-tune-vulkan-" + std::to_string(::getpid()));
  scoped_dir() { fs::remove_all(dir); }
  ~scoped_dir() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("vulkan tuning: valid_tilings keeps exactly what check_tiling accepts") {
  KFT_NEED_DEVICE();
  const auto valid = kforge::vulkan::valid_tilings(*ctx, kforge::dtype::f32);
  const auto all = kforge::vulkan::candidate_tilings();
  REQUIRE(!valid.empty());
  std::size_t accepted = 0;
  for (const auto& t : all) {
    bool ok = true;
    try {
      kforge::vulkan::detail::check_tiling(*ctx, t, "gemm");
    } catch (const std::exception&) {
      ok = false;
    }
    accepted += ok;
  }
  CHECK(valid.size() == accepted);
  // 128x128 tiles of 2x2 per invocation need 4096 invocations: above every
  // device's limit that kforge has met (lavapipe and the H100 allow 1024).
  if (ctx->info().max_workgroup_invocations < 4096) {
    CHECK(valid.size() < all.size());
    CHECK(!kforge::vulkan::tiling_problem(*ctx, kforge::dtype::f32, {128, 128, 16, 2, 2}).empty());
  }
  CHECK(!kforge::vulkan::tiling_problem(*ctx, kforge::dtype::f32, {64, 64, 16, 3, 4}).empty());
  CHECK(!kforge::vulkan::tiling_problem(*ctx, kforge::dtype::f64, {64, 64, 16, 4, 4}).empty());
  MESSAGE(valid.size() << " of " << all.size() << " tilings valid on " << ctx->info().name);
}

TEST_CASE("vulkan tuning: valid_configs are the backend's configs the device runs, default included") {
  KFT_NEED_DEVICE();
  for (const auto dt : {kforge::dtype::f32, kforge::dtype::f16, kforge::dtype::bf16}) {
    if (dt == kforge::dtype::f16 && !ctx->info().storage_16bit) continue;
    const auto cfgs = kforge::vulkan::valid_configs(*ctx, dt);
    REQUIRE(!cfgs.empty());
    const auto dev = kforge::vulkan::device_dtype(ctx->info(), dt);  // bf16 as bf16, or f32 without 16-bit storage
    for (const auto& c : cfgs) CHECK(kforge::vulkan::gemm_config_check(ctx->info(), dev, c).empty());
    kforge::problem p = gemm_problem(33, 17, 40);
    p.type = dt;
    int defaults = 0;
    for (const auto& c : tune::vulkan_gemm_candidates(*ctx, p)) defaults += c.is_default;
    CHECK(defaults == 1);
  }
  CHECK(kforge::vulkan::valid_configs(*ctx, kforge::dtype::f64).empty());
}

TEST_CASE("vulkan tuning: every kernel's config survives its cache entry and keeps its workgroup") {
  // No device needed: a coopmat2 config once lost its subgroups (invocations 0) and could not be read back.
  std::vector<gemm_config> cs;
  for (auto k : {gemm_kernel::generic, gemm_kernel::tiled, gemm_kernel::coopmat_f16, gemm_kernel::gemv,
                 gemm_kernel::gemv_coopmat, gemm_kernel::coopmat2}) {
    gemm_config c;
    c.kernel = k;
    if (k == gemm_kernel::gemv_coopmat) c = {gemm_kernel::gemv_coopmat, 16, 256, 16, 2, 0, 4, 0, 0, 4};
    if (k == gemm_kernel::coopmat2) c = {gemm_kernel::coopmat2, 128, 256, 32, 4, 0, 8, 0, 8, 1};
    if (k == gemm_kernel::gemv) c = {gemm_kernel::gemv, 8, 256, 8, 0, 4, 8, 0, 0, 16};
    cs.push_back(c);
  }
  std::set<std::string> names;
  for (const auto& c : cs) {
    CAPTURE(kforge::vulkan::to_string(c.kernel));
    const auto back = tune::vulkan_config_of(tune::vulkan_config_entry(c));
    REQUIRE(back.has_value());
    CHECK(back->kernel == c.kernel);
    CHECK(back->wg() == c.wg());
    CHECK(tune::vulkan_config_name(*back) == tune::vulkan_config_name(c));
    names.insert(tune::vulkan_config_name(c));
  }
  CHECK(names.size() == cs.size());
  CHECK(tune::vulkan_config_name(cs.back()) == "vulkan/coopmat2/128x256x32/u4w8/g8");
  gemm_config other = cs.back();
  other.tm = 2;  // another unroll is another candidate
  CHECK(tune::vulkan_config_name(other) != tune::vulkan_config_name(cs.back()));
  // gemv_coopmat keeps its A chunk (tm): another chunk is another candidate.
  const gemm_config gc{gemm_kernel::gemv_coopmat, 16, 256, 16, 2, 0, 4, 0, 0, 4};
  CHECK(tune::vulkan_config_name(gc) == "vulkan/gemv_coopmat/16x256x16/c2w4/g0/s4");
  CHECK(tune::vulkan_config_of(tune::vulkan_config_entry(gc))->tm == 2);
  if (auto* ctx = kft::test_context())
    for (const auto dt : {kforge::dtype::f32, kforge::dtype::f16, kforge::dtype::bf16})
      for (const auto& c : kforge::vulkan::valid_configs(*ctx, dt)) {
        const auto back = tune::vulkan_config_of(tune::vulkan_config_entry(c));
        REQUIRE(back.has_value());
        CHECK(back->wg() == c.wg());
        CHECK(kforge::vulkan::gemm_config_check(ctx->info(), kforge::vulkan::device_dtype(ctx->info(), dt), *back).empty());
      }
}

TEST_CASE("vulkan tuning: gemm_with_tiling matches eigen and times the dispatch") {
  KFT_NEED_DEVICE();
  const kforge::index_t m = 33, n = 17, k = 40;
  const auto a = kft::random_floats(static_cast<std::size_t>(m * k), 1);
  const auto b = kft::random_floats(static_cast<std::size_t>(k * n), 2);
  for (const gemm_tiling t : {gemm_tiling{}, gemm_tiling{32, 32, 8, 2, 4}, gemm_tiling{128, 64, 32, 8, 4}}) {
    std::vector<float> c(static_cast<std::size_t>(m * n), 3.0f), ref = c;
    kforge::op::gemm<float> o;
    o.alpha = 0.5f;
    o.beta = 2.0f;
    const auto va = kforge::make_view(a.data(), {m, k});
    const auto vb = kforge::make_view(b.data(), {k, n});
    const std::optional<double> s = kforge::vulkan::gemm_with_tiling(*ctx, t, o, va, vb, kforge::make_view(c.data(), {m, n}));
    kforge::run<kforge::policy::eigen>(o, va, vb, kforge::make_view(ref.data(), {m, n}));
    for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c[i] == doctest::Approx(ref[i]).epsilon(1e-4));
    CHECK(s == kforge::vulkan::last_gemm_seconds());
    if (ctx->info().timestamps) CHECK((s && *s > 0));
    else CHECK(!s);  // not timed: no value, never a number
  }
  for (const auto& cfg : kforge::vulkan::valid_configs(*ctx, kforge::dtype::f32)) {
    std::vector<float> c(static_cast<std::size_t>(m * n), 3.0f), ref = c;
    kforge::op::gemm<float> o;
    o.beta = -1.0f;
    const auto va = kforge::make_view(a.data(), {m, k});
    const auto vb = kforge::make_view(b.data(), {k, n});
    INFO(cfg.str());
    const std::optional<double> s = kforge::vulkan::gemm_with_config(*ctx, cfg, o, va, vb, kforge::make_view(c.data(), {m, n}));
    kforge::run<kforge::policy::eigen>(o, va, vb, kforge::make_view(ref.data(), {m, n}));
    for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c[i] == doctest::Approx(ref[i]).epsilon(1e-4));
    if (ctx->info().timestamps) CHECK((s && *s > 0));
  }
  // A tiling the device refuses throws with the reason; it is not run.
  std::vector<float> c(static_cast<std::size_t>(m * n));
  CHECK_THROWS(kforge::vulkan::gemm_with_tiling(*ctx, gemm_tiling{64, 64, 16, 3, 4}, kforge::op::gemm<float>{},
                                                kforge::make_view(a.data(), {m, k}),
                                                kforge::make_view(b.data(), {k, n}),
                                                kforge::make_view(c.data(), {m, n})));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan tuning: every candidate validated, wrong ones never win, winner cached under the device") {
  KFT_NEED_DEVICE();
  const kforge::problem p = gemm_problem(33, 17, 40);
  // A few candidates of the real space (the default among them), a config the
  // device refuses, and a wrong one that claims to be the fastest.
  std::vector<tune::candidate> cands;
  const auto space = tune::vulkan_gemm_candidates(*ctx, p);
  for (const auto& c : space)
    if (c.is_default) cands.push_back(c);
  REQUIRE(cands.size() == 1);
  for (std::size_t i = 0; i < space.size() && cands.size() < 3; i += 7)
    if (!space[i].is_default) cands.push_back(space[i]);
  const gemm_config refused{gemm_kernel::tiled, 128, 128, 8, 1, 1, 0, 0, 8};  // thread tile not a multiple of 4
  REQUIRE(!kforge::vulkan::gemm_config_check(ctx->info(), p.type, refused).empty());
  cands.push_back(tune::vulkan_gemm_candidate(*ctx, refused));
  tune::candidate wrong = cands[1];
  wrong.name = "vulkan/wrong";
  wrong.is_default = false;
  const auto right_run = wrong.run;
  wrong.run = [right_run](const kforge::problem& pr, std::vector<kforge::host_tensor>& ts) {
    right_run(pr, ts);
    ts.back().set(0, ts.back().get(0) + 1.0f);  // one element off
  };
  wrong.device_seconds = [] { return 1e-9; };
  cands.push_back(wrong);

  // Count the calls each candidate receives.
  std::map<std::string, int> calls;
  for (auto& c : cands) {
    auto inner = c.run;
    c.run = [&calls, inner, name = c.name](const kforge::problem& pr, std::vector<kforge::host_tensor>& ts) {
      ++calls[name];
      inner(pr, ts);
    };
  }

  tune::tune_options o;
  o.strategy = "grid";
  o.budget_s = 120;
  o.warmup = 1;
  o.samples = 3;
  const tune::tune_result r = tune::tune(p, cands, o);
  // The cases the suite runs on this shape (a case an op has no use for,
  // such as gemm's overflow, is not run).
  const int suite_cases = static_cast<int>(kforge::validate<kforge::policy::eigen>(p).cases.size());
  REQUIRE(suite_cases >= 10);

  REQUIRE(r.trials.size() == cands.size());
  for (const auto& t : r.trials) {
    INFO(t.candidate << ": " << t.status << " " << t.note);
    CHECK(calls[t.candidate] >= suite_cases);  // the whole suite ran before any timing
    if (t.candidate == "vulkan/wrong") CHECK(t.status == "invalid");
    else if (t.candidate == tune::vulkan_config_name(refused)) CHECK(t.status == "error");
    else {
      CHECK(t.status == "ok");
      CHECK(calls[t.candidate] > suite_cases);  // then timed
      CHECK(t.median_s > 0);
    }
  }
  REQUIRE(r.found);
  CHECK(r.best_name != "vulkan/wrong");
  CHECK(r.best_name != tune::vulkan_config_name(refused));
  CHECK(r.best_time.device_time == ctx->info().timestamps);

  // Recorded under the Vulkan device's identity, not the CPU's.
  scoped_dir d;
  tune::tuning_cache cache(d.dir);
  const tune::device_identity id = tune::vulkan_identity(*ctx);
  CHECK(id.device.find(ctx->info().name) != std::string::npos);
  CHECK(id.device.rfind("vulkan ", 0) == 0);
  const auto stored = tune::record(cache, p, cands, r, o, id);
  REQUIRE(stored);
  tune::tuning_cache reread(d.dir);
  const auto e = reread.find(tune::key_for(p, id));
  REQUIRE(e);
  CHECK(e->candidate == r.best_name);
  CHECK(e->family == "vulkan");
  CHECK(e->key.device == id.device);
  CHECK(e->key.driver == id.driver);
  CHECK(e->key.bucket == "64x32x64");
  CHECK(!reread.find(tune::key_for(p)));  // nothing under this CPU's identity
  // The stored config names the winning tiling, which still passes the suite.
  const auto t = tune::vulkan_config_of(e->cfg);
  REQUIRE(t);
  CHECK(tune::vulkan_config_name(*t) == r.best_name);
  CHECK(kforge::validate(p, tune::vulkan_gemm_candidate(*ctx, *t).run).all_passed);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan tuning: the full space on a trial budget") {
  KFT_NEED_DEVICE();
  const kforge::problem p = gemm_problem(33, 17, 40);
  const auto cands = tune::vulkan_gemm_candidates(*ctx, p);
  REQUIRE(cands.size() == kforge::vulkan::valid_configs(*ctx, p.type).size());
  tune::tune_options o;
  o.strategy = "descent";
  o.max_trials = 4;
  o.warmup = 1;
  o.samples = 3;
  const auto r = tune::tune(p, cands, o);
  CHECK(r.trials.size() <= 4);
  CHECK(r.found);
  for (const auto& t : r.trials) CHECK(t.status == "ok");  // every listed tiling is valid on the device
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {
/// policy::autotune on device tensors (a plain run and a recorded stream) for
/// an m×n×k gemm with bias+relu, checked against Eigen; returns the resolution.
tune::resolution autotune_on_device(kforge::vulkan::context& ctx, kforge::index_t m, kforge::index_t n,
                                    kforge::index_t k) {
  namespace vk = kforge::vulkan;
  const auto a = kft::random_floats(static_cast<std::size_t>(m * k), 11);
  const auto b = kft::random_floats(static_cast<std::size_t>(k * n), 12);
  const auto bias = kft::random_floats(static_cast<std::size_t>(n), 13);
  kforge::op::gemm<float, kforge::epilogue::bias_relu> o;
  o.alpha = 0.75f;
  std::vector<float> ref(static_cast<std::size_t>(m * n));
  const auto va = kforge::make_view(a.data(), {m, k});
  const auto vb = kforge::make_view(b.data(), {k, n});
  const auto vbias = kforge::make_view(bias.data(), {n});
  kforge::run<kforge::policy::eigen>(o, va, vb, vbias, kforge::make_view(ref.data(), {m, n}));
  auto da = vk::device_tensor<float>::from_host(ctx, va);
  auto db = vk::device_tensor<float>::from_host(ctx, vb);
  auto dbias = vk::device_tensor<float>::from_host(ctx, vbias);
  vk::device_tensor<float> dc(ctx, {m, n}), dd(ctx, {m, n});
  kforge::run<kforge::policy::autotune>(o, da, db, dbias, dc);
  const tune::resolution r = tune::last_resolution();
  vk::stream s(ctx);
  vk::record<kforge::policy::autotune>(s, o, da, db, dbias, dd);
  s.run();
  for (const auto& out : {dc.to_vector(), dd.to_vector()})
    for (std::size_t i = 0; i < ref.size(); ++i) REQUIRE(out[i] == doctest::Approx(ref[i]).epsilon(1e-4).scale(1));
  return r;
}

struct scoped_cache_env {
  scoped_dir d;
  scoped_cache_env() {
    ::setenv("KFORGE_CACHE_DIR", d.dir.c_str(), 1);
    tune::forget_resolutions();
    tune::autotune_settings().tune_on_miss = false;
  }
  ~scoped_cache_env() {
    ::unsetenv("KFORGE_CACHE_DIR");
    tune::forget_resolutions();
    tune::autotune_settings().tune_on_miss = false;
  }
};
}  // namespace

TEST_CASE("vulkan autotune: device tensors resolve on the device: default, cache hit, refused entry, tune on miss") {
  KFT_NEED_DEVICE();
  static_assert(kforge::supports<kforge::policy::autotune, kforge::op::gemm<float>>);
  scoped_cache_env env;
  const kforge::index_t m = 37, n = 21, k = 19;
  const kforge::problem p = gemm_problem(m, n, k);
  const tune::device_identity id = tune::vulkan_identity(*ctx);
  const std::string dflt = tune::vulkan_config_name(kforge::vulkan::gemm_default_config(ctx->info(), p.type, m, n, k));

  // A miss without tune-on-miss runs what policy::vulkan<> runs.
  tune::resolution r = autotune_on_device(*ctx, m, n, k);
  CHECK(r.source == "default");
  CHECK(r.candidate == dflt);
  CHECK(r.bucket == "64x32x32");

  // The default is chosen per shape, not per bucket: 2048×2048 and 1100×1100 share a bucket
  // but not policy::vulkan<>'s choice (256 tiles of 128×128, or not).
  for (const kforge::index_t e : {2048, 1100}) {
    r = autotune_on_device(*ctx, e, e, 8);
    CHECK(r.bucket == "2048x2048x8");
    CHECK(r.source == "default");
    CHECK(r.candidate ==
          tune::vulkan_config_name(kforge::vulkan::gemm_default_config(ctx->info(), p.type, e, e, 8)));
  }
  CHECK(tune::vulkan_config_name(kforge::vulkan::gemm_default_config(ctx->info(), p.type, 2048, 2048, 8)) !=
        tune::vulkan_config_name(kforge::vulkan::gemm_default_config(ctx->info(), p.type, 1100, 1100, 8)));

  // A cached Vulkan winner for this device runs (a config other than the default).
  const auto space = tune::vulkan_gemm_candidates(*ctx, p);
  const tune::candidate* other = nullptr;
  for (const auto& c : space)
    if (!c.is_default && c.name.find("/tiled/") != std::string::npos) other = &c;
  REQUIRE(other);
  {
    tune::tuning_cache cache(env.d.dir);
    tune::cache_entry e;
    e.key = tune::key_for(p, id);
    e.candidate = other->name;
    e.family = "vulkan";
    e.cfg = other->cfg;
    e.shape = "37x21x19";
    e.median_s = 1e-5;
    cache.store({e});
    // The same key under the CPU's identity names a CPU policy; it must not leak into Vulkan.
    e.key = tune::key_for(p);
    e.candidate = "blocked";
    e.family = "cpu";
    e.cfg = {{"policy", "blocked"}};
    cache.store({e});
  }
  tune::forget_resolutions();
  r = autotune_on_device(*ctx, m, n, k);
  CHECK(r.source == "cache");
  CHECK(r.candidate == other->name);
  // A shape in the same bucket reuses the resolution without reading the cache again.
  r = autotune_on_device(*ctx, 40, 30, 20);
  CHECK(r.candidate == other->name);

  // A generated kernel won that tuning: autotune runs the best of kforge's own configs stored with it.
  {
    tune::tuning_cache cache(env.d.dir);
    tune::cache_entry e;
    e.key = tune::key_for(p, id);
    e.candidate = "generated:c_gemm_example.json";
    e.family = "generated";
    e.cfg = tune::with_fallback({{"policy", "generated"}, {"record", "c_gemm_example.json"}}, other->name, other->cfg);
    e.shape = "37x21x19";
    cache.store({e});
  }
  tune::forget_resolutions();
  r = autotune_on_device(*ctx, m, n, k);
  CHECK(r.source.rfind("cache: generated winner generated:c_gemm_example.json", 0) == 0);
  CHECK(r.candidate == other->name);

  // An entry naming a config this device refuses falls back to the default.
  {
    tune::tuning_cache cache(env.d.dir);
    tune::cache_entry e;
    e.key = tune::key_for(p, id);
    e.candidate = "vulkan/tiled/128x128x8/1x1/g8";
    e.family = "vulkan";
    e.cfg = {{"policy", "vulkan"}, {"kernel", "tiled"}, {"bm", "128"}, {"bn", "128"}, {"bk", "8"}, {"tm", "1"},
             {"tn", "1"}, {"warps", "0"}, {"warps_m", "0"}, {"group_m", "8"}};
    e.shape = "37x21x19";
    cache.store({e});
  }
  tune::forget_resolutions();
  r = autotune_on_device(*ctx, m, n, k);
  CHECK(r.source.rfind("default: cached candidate", 0) == 0);
  CHECK(r.candidate == dflt);

  // Tune on a miss (another bucket): tunes on the device, stores under its identity, runs the winner.
  tune::autotune_settings().tune_on_miss = true;
  tune::autotune_settings().budget_s = 30;
  tune::autotune_settings().strategy = "descent";
  r = autotune_on_device(*ctx, 9, 70, 5);
  CHECK(r.source == "tuned");
  CHECK(r.bucket == "16x128x8");
  tune::tuning_cache cache(env.d.dir);
  const auto e = cache.find(tune::key_for(gemm_problem(9, 70, 5), id));
  REQUIRE(e);
  CHECK(e->family == "vulkan");
  CHECK(e->candidate == r.candidate);
  CHECK(!cache.find(tune::key_for(gemm_problem(9, 70, 5))));  // nothing under the CPU's identity
  KFT_NO_VALIDATION_MESSAGES();
}
