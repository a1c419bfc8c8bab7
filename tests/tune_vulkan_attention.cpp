// tests/tune_vulkan_attention.cpp — the Vulkan attention search space: what
// attention_configs lists (every config the device takes, the default among
// them; the split kernel's cuts, loads and lanes only where it applies),
// what attention_config_check refuses, names and cache entries that read
// back, attention_with_config against Eigen for a config of every kernel,
// the attention bucket of the cache key, a small tuning run on the device
// that stores its winner, and policy::autotune on device tensors (default,
// cache hit, a shape of the bucket the cached config does not take).
// Skips (and says so) where no Vulkan device exists.
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "vulkan_common.hpp"

#include <kforge/tune.hpp>
#include <kforge/tune/vulkan_space.hpp>

namespace fs = std::filesystem;
namespace tune = kforge::tune;
namespace vk = kforge::vulkan;
using kforge::index_t;
using vk::attention_config;
using vk::attention_kernel;

namespace {

/// attention B×H×S×D over L keys and Hkv KV heads, f32.
kforge::problem attention_problem(index_t b, index_t h, index_t s, index_t d, index_t l, index_t hkv, bool causal = false) {
  kforge::problem p;
  p.op = "attention";
  p.type = kforge::dtype::f32;
  p.dims = kforge::shape{b, h, s, d};
  p.dims2 = kforge::shape{l, hkv};
  p.causal = causal;
  return p;
}

struct attention_cache_env {
  fs::path dir = fs::temp_directory_path() / ("kforge-tune-vk-attention-" + std::to_string(::getpid()));
  attention_cache_env() {
    fs::remove_all(dir);
    ::setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    tune::forget_resolutions();
    tune::autotune_settings().tune_on_miss = false;
  }
  ~attention_cache_env() {
    ::unsetenv("KFORGE_CACHE_DIR");
    tune::forget_resolutions();
    fs::remove_all(dir);
  }
};

/// policy::autotune on device tensors ([B,H,S,D] layout, f32) for p, checked
/// against Eigen; returns the resolution.
tune::resolution autotune_attention(vk::context& ctx, const kforge::problem& p) {
  const index_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3], l = p.dims2[0], hkv = p.dims2[1];
  const auto q = kft::random_floats(static_cast<std::size_t>(b * h * s * d), 21);
  const auto k = kft::random_floats(static_cast<std::size_t>(b * hkv * l * d), 22);
  const auto v = kft::random_floats(static_cast<std::size_t>(b * hkv * l * d), 23);
  kforge::op::attention<float> o;
  o.causal = p.causal;
  const auto vq = kforge::make_view(q.data(), {b, h, s, d});
  const auto vkk = kforge::make_view(k.data(), {b, hkv, l, d});
  const auto vv = kforge::make_view(v.data(), {b, hkv, l, d});
  std::vector<float> ref(static_cast<std::size_t>(b * h * s * d));
  kforge::run<kforge::policy::eigen>(o, vq, vkk, vv, kforge::make_view(ref.data(), {b, h, s, d}));
  auto dq = vk::device_tensor<float>::from_host(ctx, vq);
  auto dk = vk::device_tensor<float>::from_host(ctx, vkk);
  auto dv = vk::device_tensor<float>::from_host(ctx, vv);
  vk::device_tensor<float> out(ctx, {b, h, s, d});
  kforge::run<kforge::policy::autotune>(o, dq, dk, dv, out);
  const tune::resolution r = tune::last_resolution();
  const auto got = out.to_vector();
  for (std::size_t i = 0; i < ref.size(); ++i) REQUIRE(got[i] == doctest::Approx(ref[i]).epsilon(1e-4).scale(1));
  return r;
}

}  // namespace

TEST_CASE("vulkan attention tuning: the space is every config the device takes, the default among them") {
  KFT_NEED_DEVICE();
  const auto& info = ctx->info();
  // Decode (4 query heads over 2 KV heads, one query): the split kernel's knobs.
  const kforge::problem dec = attention_problem(1, 4, 1, 32, 700, 2);
  const vk::attention_dims a = vk::attention_dims_of(dec);
  CHECK(a.group() == 2);
  CHECK(a.l == 700);
  const auto cfgs = vk::valid_attention_configs(*ctx, dec);
  std::set<std::string> names;
  int split = 0, scalar = 0;
  std::set<std::uint32_t> lanes, loads;
  for (const auto& c : cfgs) {
    CHECK(vk::attention_config_check(info, dec.type, a, c).empty());
    CHECK(names.insert(tune::vulkan_attention_config_name(c)).second);  // no two configs share a name
    split += c.kernel == attention_kernel::split;
    scalar += c.kernel == attention_kernel::scalar;
    if (c.kernel == attention_kernel::split) lanes.insert(c.lanes), loads.insert(c.loads);
  }
  CHECK(scalar == 4);
  CHECK(split > 0);
  CHECK(lanes.size() == static_cast<std::size_t>(std::countr_zero(vk::attention_split_max_lanes(info)) + 1));
  CHECK(loads == (info.type == "cpu" ? std::set<std::uint32_t>{1, 4} : std::set<std::uint32_t>{1, 4, 8, 16}));
  const auto space = tune::vulkan_attention_candidates(*ctx, dec);
  REQUIRE(space.size() == cfgs.size());
  int defaults = 0;
  for (const auto& c : space) defaults += c.is_default;
  CHECK(defaults == 1);
  const attention_config dflt = vk::attention_default_config(info, dec.type, a);
  CHECK(dflt.kernel == attention_kernel::split);  // what policy::vulkan<> runs for decode
  CHECK(names.count(tune::vulkan_attention_config_name(dflt)) == 1);

  // Prefill (64 query rows per KV head): no split configs; coopmat ones only where the device has them.
  const kforge::problem pre = attention_problem(1, 2, 64, 32, 64, 2, true);
  for (const auto& c : vk::valid_attention_configs(*ctx, pre)) {
    CHECK(c.kernel != attention_kernel::split);
    if (c.kernel == attention_kernel::coopmat) CHECK(vk::coopmat_f16_available(info));
  }
  CHECK(vk::valid_attention_configs(*ctx, pre).size() >= 4);
}

TEST_CASE("vulkan attention tuning: configs the device cannot run are refused with a reason") {
  KFT_NEED_DEVICE();
  const auto& info = ctx->info();
  const vk::attention_dims dec = vk::attention_dims_of(attention_problem(1, 4, 1, 32, 700, 2));
  const vk::attention_dims pre = vk::attention_dims_of(attention_problem(1, 2, 64, 32, 64, 2));
  auto check = [&](const vk::attention_dims& a, attention_config c, const std::string& why) {
    const std::string got = vk::attention_config_check(info, kforge::dtype::f32, a, c);
    INFO(got);
    CHECK(got.find(why) != std::string::npos);
  };
  check(dec, {attention_kernel::scalar, 48}, "a power of two");
  check(dec, {attention_kernel::scalar, 16}, "a power of two");
  check(pre, {attention_kernel::split, 128, {}, 512, 8, 1}, "query rows per KV head");
  check(dec, {attention_kernel::split, 128, {}, 0, 8, 1}, "workgroups");
  check(dec, {attention_kernel::split, 128, {}, 512, 33, 1}, "loads in flight");
  check(dec, {attention_kernel::split, 128, {}, 512, 8, 3}, "lanes per key");
  check(dec, {attention_kernel::split, 128, {}, 512, 8, 2 * vk::attention_split_max_lanes(info)}, "lanes per key");
  // f32 data never runs coopmat; coopmat2 is no tunable choice.
  CHECK(!vk::attention_config_check(info, kforge::dtype::f32, dec, {attention_kernel::coopmat, 128, {4, 1, 64}}).empty());
  CHECK(!vk::attention_config_check(info, kforge::dtype::f32, dec, {attention_kernel::coopmat2}).empty());
  // Refused before anything runs, as unsupported_error.
  kforge::problem p = attention_problem(1, 2, 64, 32, 64, 2);
  std::vector<kforge::host_tensor> ts = kforge::allocate(p);
  CHECK_THROWS_AS(vk::attention_with_config(*ctx, {attention_kernel::split, 128, {}, 512, 8, 1}, p, ts),
                  kforge::unsupported_error);
  ts.pop_back();
  CHECK_THROWS_AS(vk::attention_with_config(*ctx, {attention_kernel::scalar, 64}, p, ts), kforge::argument_error);
}

TEST_CASE("vulkan attention tuning: every config survives its cache entry; foreign entries are not configs") {
  KFT_NEED_DEVICE();
  std::vector<attention_config> all = vk::valid_attention_configs(*ctx, attention_problem(1, 4, 1, 32, 700, 2));
  all.push_back({attention_kernel::coopmat, 128, {8, 2, 128}});
  for (const auto& c : all) {
    const auto back = tune::vulkan_attention_config_of(tune::vulkan_attention_config_entry(c));
    REQUIRE(back);
    CHECK(tune::vulkan_attention_config_name(*back) == tune::vulkan_attention_config_name(c));
    CHECK(tune::vulkan_attention_config_entry(*back) == tune::vulkan_attention_config_entry(c));
  }
  CHECK(tune::vulkan_attention_config_name({attention_kernel::split, 128, {}, 512, 8, 4}) == "vulkan/attention/split/g512/ld8/ln4");
  CHECK(tune::vulkan_attention_config_name({attention_kernel::coopmat, 128, {8, 1, 64}}) == "vulkan/attention/coopmat/w8r1k64");
  CHECK(tune::vulkan_attention_config_name({attention_kernel::scalar, 64}) == "vulkan/attention/scalar/wg64");
  // A gemm entry, a CPU entry, a value that is no number: not attention configs.
  CHECK(!tune::vulkan_attention_config_of(tune::vulkan_config_entry(vk::gemm_config{})));
  CHECK(!tune::vulkan_attention_config_of({{"policy", "threaded"}}));
  auto bad = tune::vulkan_attention_config_entry({attention_kernel::scalar, 64});
  for (auto& [k, v] : bad)
    if (k == "wg") v = "-64";
  CHECK(!tune::vulkan_attention_config_of(bad));
}

TEST_CASE("vulkan attention tuning: a config of every kernel matches eigen and is timed") {
  KFT_NEED_DEVICE();
  const auto& info = ctx->info();
  // GQA decode (two queries, 300 keys: the split kernel cuts them and merges), then a causal prefill shape.
  for (const kforge::problem& p : {attention_problem(2, 4, 2, 20, 300, 2), attention_problem(1, 2, 33, 16, 40, 1, true)}) {
    const vk::attention_dims a = vk::attention_dims_of(p);
    std::vector<attention_config> run = {{attention_kernel::scalar, 32}, {attention_kernel::scalar, 256}};
    if (vk::attention_split_applies(info, p.type, a)) {
      run.push_back({attention_kernel::split, 128, {}, 128, 1, 1});
      run.push_back({attention_kernel::split, 128, {}, 2048, 4, vk::attention_split_max_lanes(info)});
    }
    for (const auto& c : run) {
      INFO(kforge::describe(p) << " " << tune::vulkan_attention_config_name(c));
      const tune::candidate cand = tune::vulkan_attention_candidate(*ctx, c);
      const kforge::report r = kforge::validate(p, cand.run);
      CHECK(r.all_passed);
      const std::optional<double> dev = cand.device_seconds();
      CHECK(dev.has_value() == info.timestamps);
      if (dev) CHECK(*dev > 0);
    }
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention tuning: the cache key's bucket holds keys, KV heads, mask and layout") {
  kforge::problem p = attention_problem(1, 32, 1, 128, 30000, 8, true);
  CHECK(tune::key_for(p).bucket == "1x32x1x128/32768x8/causal");
  p.attrs["bshd"] = 1;
  p.causal = false;
  CHECK(tune::key_for(p).bucket == "1x32x1x128/32768x8/bshd");
  p.attrs["kv_len"] = 3000;  // the keys attended, not the rows the cache holds
  CHECK(tune::key_for(p).bucket == "1x32x1x128/4096x8/bshd");
  kforge::problem g;
  g.dims = kforge::shape{200, 250, 256};
  CHECK(tune::key_for(g).bucket == "256x256x256");  // gemm's stays {M,N,K}
}

TEST_CASE("vulkan attention tuning: a tuning run over the space stores its winner under the device") {
  KFT_NEED_DEVICE();
  attention_cache_env env;
  const kforge::problem p = attention_problem(1, 4, 1, 32, 700, 2);
  const auto cands = tune::vulkan_attention_candidates(*ctx, p);
  tune::tune_options o;
  o.strategy = "descent";
  o.max_trials = 4;
  o.warmup = 1;
  o.samples = 3;
  const auto r = tune::tune(p, cands, o);
  CHECK(r.trials.size() <= 4);
  REQUIRE(r.found);
  for (const auto& t : r.trials) CHECK(t.status == "ok");  // every listed config is valid on the device
  CHECK(r.trials.front().candidate ==
        tune::vulkan_attention_config_name(vk::attention_default_config(ctx->info(), p.type, vk::attention_dims_of(p))));
  tune::tuning_cache cache(env.dir);
  const tune::device_identity id = tune::vulkan_identity(*ctx);
  REQUIRE(tune::record(cache, p, cands, r, o, id));
  const auto e = tune::tuning_cache(env.dir).find(tune::key_for(p, id));
  REQUIRE(e);
  CHECK(e->key.bucket == "1x4x1x32/1024x2");
  CHECK(e->candidate == r.best_name);
  const auto back = tune::vulkan_attention_config_of(e->cfg);
  REQUIRE(back);
  CHECK(tune::vulkan_attention_config_name(*back) == r.best_name);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan autotune: attention on device tensors runs the default, a cached config, or the default where it does not fit") {
  KFT_NEED_DEVICE();
  static_assert(kforge::supports<kforge::policy::autotune, kforge::op::attention<float>>);
  attention_cache_env env;
  const auto& info = ctx->info();
  const kforge::problem p = attention_problem(1, 4, 1, 32, 700, 2);
  const vk::attention_dims a = vk::attention_dims_of(p);
  const std::string dflt = tune::vulkan_attention_config_name(vk::attention_default_config(info, p.type, a));

  tune::resolution r = autotune_attention(*ctx, p);
  CHECK(r.source == "default");
  CHECK(r.candidate == dflt);
  CHECK(r.bucket == "1x4x1x32/1024x2");

  // A cached config for this device and bucket (not the default) runs.
  // Stores config c as the Vulkan device's entry for q's bucket.
  auto plant = [&](const kforge::problem& q, const attention_config& c) {
    tune::tuning_cache cache(env.dir);
    tune::cache_entry e;
    e.key = tune::key_for(q, tune::vulkan_identity(*ctx));
    e.candidate = tune::vulkan_attention_config_name(c);
    e.family = "vulkan";
    e.cfg = tune::vulkan_attention_config_entry(c);
    e.shape = tune::dims_text(q.dims);
    e.median_s = 1e-5;
    cache.store({e});
    tune::forget_resolutions();
  };
  const attention_config other{attention_kernel::scalar, 64};
  plant(p, other);
  r = autotune_attention(*ctx, p);
  CHECK(r.source == "cache");
  CHECK(r.candidate == tune::vulkan_attention_config_name(other));

  // A split config cached for the decode bucket; a shape of the same bucket
  // with too many query rows for the split kernel runs the default instead.
  const attention_config cut{attention_kernel::split, 128, {}, 128, 4, 2};
  REQUIRE(vk::attention_config_check(info, p.type, a, cut).empty());
  // Ten query heads over two KV heads, D = 8: 3 queries (15 rows) and 4 (20 rows) share the bucket 1x16x4x8/1024x2.
  const kforge::problem fits = attention_problem(1, 10, 3, 8, 700, 2), wide = attention_problem(1, 10, 4, 8, 700, 2);
  REQUIRE(tune::key_for(fits).bucket == tune::key_for(wide).bucket);
  REQUIRE(vk::attention_config_check(info, p.type, vk::attention_dims_of(fits), cut).empty());
  plant(fits, cut);
  r = autotune_attention(*ctx, wide);  // the bucket's first call, 20 rows: the split kernel does not take them
  CHECK(r.source.rfind("default: the bucket's " + tune::vulkan_attention_config_name(cut), 0) == 0);
  r = autotune_attention(*ctx, fits);  // 15 rows it takes, whichever shape came first
  CHECK(r.source == "cache");
  CHECK(r.candidate == tune::vulkan_attention_config_name(cut));
  r = autotune_attention(*ctx, wide);  // not 20
  CHECK(r.source.rfind("default: the bucket's " + tune::vulkan_attention_config_name(cut), 0) == 0);
  CHECK(r.candidate == tune::vulkan_attention_config_name(vk::attention_default_config(info, p.type, vk::attention_dims_of(wide))));

  // Host views run the CPU default.
  const auto q = kft::random_floats(4 * 32, 1), k = kft::random_floats(2 * 5 * 32, 2), v = kft::random_floats(2 * 5 * 32, 3);
  std::vector<float> o1(4 * 32), o2(4 * 32);
  kforge::op::attention<float> op;
  kforge::run<kforge::policy::autotune>(op, kforge::make_view(q.data(), {1, 4, 1, 32}), kforge::make_view(k.data(), {1, 2, 5, 32}),
                                        kforge::make_view(v.data(), {1, 2, 5, 32}), kforge::make_view(o1.data(), {1, 4, 1, 32}));
  kforge::run<kforge::policy::eigen>(op, kforge::make_view(q.data(), {1, 4, 1, 32}), kforge::make_view(k.data(), {1, 2, 5, 32}),
                                     kforge::make_view(v.data(), {1, 2, 5, 32}), kforge::make_view(o2.data(), {1, 4, 1, 32}));
  for (std::size_t i = 0; i < o1.size(); ++i) CHECK(o1[i] == doctest::Approx(o2[i]).epsilon(1e-4).scale(1));
  CHECK(tune::last_resolution().source == "default: host views run the CPU default");
  KFT_NO_VALIDATION_MESSAGES();
}
