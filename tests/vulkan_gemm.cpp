// tests/vulkan_gemm.cpp — every gemm kernel configuration the device runs
// (vulkan::gemm_configs: the tuner's search space) against the Eigen
// reference, on shapes that take both the vector-load and the scalar-load
// variants and that leave partial tiles on every edge; the output is poisoned
// with NaN first so an unwritten element fails. The decode kernel (gemv) and
// K splits through the 10-case validation suite at the shape-class
// boundaries (M = 1, 2, 7, 15, 16, 17; odd N and K; K not a multiple of the
// split; every epilogue; alpha/beta; f32, f16 and bf16), through policy::vulkan<>'s
// default as well as forced configs. Also: which config the default picks
// per shape class, and that the cooperative-matrix kernel (split or not)
// compiles and matches its interface on any machine (lavapipe has no
// cooperative matrices, so there it is only compiled).
#include "vulkan_common.hpp"

#include <kforge/validate/suite.hpp>
#include <kforge/vulkan/tuning.hpp>

#include <cstring>
#include <limits>

using namespace kforge;
using kft::check_close;
using kft::convert;
using kft::random_floats;

namespace {

template <class T, class E>
void config_case(vulkan::context& ctx, const vulkan::gemm_config& cfg, index_t m, index_t n, index_t k, float beta,
                 unsigned seed) {
  auto a = convert<T>(random_floats(static_cast<std::size_t>(m * k), seed)),
       b = convert<T>(random_floats(static_cast<std::size_t>(k * n), seed + 1)),
       bias = convert<T>(random_floats(static_cast<std::size_t>(n), seed + 2)),
       c0 = convert<T>(random_floats(static_cast<std::size_t>(m * n), seed + 3));
  std::vector<T> c(c0.size(), static_cast<T>(std::numeric_limits<float>::quiet_NaN())), ref = c0;
  if (beta != 0) c = c0;
  op::gemm<T, E> o;
  o.beta = beta;
  vulkan::device_tensor<T> da(ctx, {m, k}), db(ctx, {k, n}), dbias(ctx, {n}), dc(ctx, {m, n});
  da.upload(make_view(a, {m, k}));
  db.upload(make_view(b, {k, n}));
  dbias.upload(make_view(bias, {n}));
  dc.upload(make_view(c, {m, n}));
  vulkan::stream s(ctx);
  const vulkan::buffer_ref br = dbias.ref();
  vulkan::record_gemm(s, dtype_of<T>(), cfg, m, n, k, 1.0f, beta, E::activation, 0.1f, da.ref(), db.ref(),
                      E::has_bias ? &br : nullptr, dc.ref());
  s.run();
  dc.download(make_view(c, {m, n}));
  if constexpr (E::has_bias)
    run<policy::eigen>(o, make_view(a, {m, k}), make_view(b, {k, n}), make_view(bias, {n}), make_view(ref, {m, n}));
  else
    run<policy::eigen>(o, make_view(a, {m, k}), make_view(b, {k, n}), make_view(ref, {m, n}));
  // Error scale per element: sum |a||b| over k, plus |beta c| and |bias|.
  std::vector<float> scale(static_cast<std::size_t>(m * n));
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double sc = 1e-30;
      for (index_t p = 0; p < k; ++p)
        sc += std::fabs(static_cast<float>(a[i * k + p])) * std::fabs(static_cast<float>(b[p * n + j]));
      sc += std::fabs(beta * static_cast<float>(c0[i * n + j])) + (E::has_bias ? std::fabs(static_cast<float>(bias[j])) : 0.0);
      scale[i * n + j] = static_cast<float>(sc);
    }
  check_close(cfg.str() + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), c, ref, scale,
              gemm_tolerance(dtype_of<T>(), k));
}

}  // namespace

TEST_CASE_TEMPLATE("vulkan every gemm config matches eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  if (sizeof(T) == 2 && !ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const auto cfgs = vulkan::gemm_configs(ctx->info(), dtype_of<T>());
  REQUIRE(!cfgs.empty());
  std::size_t coop = 0, checked = 0;
  unsigned seed = 100;
  const bool cpu = ctx->info().type == "cpu";
  bool deep_k_checked = false;
  for (const auto& cfg : cfgs) {
    // On a CPU implementation (slow; lavapipe compiles each unrolled variant
    // for seconds), group_m 0 (the plain order) only for the first config,
    // the tiled kernel's K step 16 only for the first config that has it,
    // at most 64 accumulators per invocation (tiled) or 32 (gemv), and gemv
    // with 1 and 16 splits: the same kernels with fewer unrolled steps. The
    // decode-boundary test below runs gemv with 16 rows. Elsewhere (the
    // H100) gemv with 1 and 16 splits only: a split count is the grid, not
    // the pipeline, and every pipeline compiles for a while there.
    if (cpu && cfg.group_m == 0 && cfg.kernel != vulkan::gemm_kernel::gemv && &cfg != &cfgs.front()) continue;
    if (cpu && cfg.kernel == vulkan::gemm_kernel::tiled && cfg.tm * cfg.tn > 64) continue;
    if (cpu && cfg.kernel == vulkan::gemm_kernel::tiled && cfg.bk != 8) {
      if (deep_k_checked) continue;
      deep_k_checked = true;
    }
    if (cfg.kernel == vulkan::gemm_kernel::gemv && ((cfg.splits != 1 && cfg.splits != 16) || (cpu && cfg.bm * cfg.tn > 32)))
      continue;
    if (cfg.kernel == vulkan::gemm_kernel::gemv_coopmat && cfg.splits != 1 && cfg.splits != 8 && cfg.splits != 16) continue;
    // coopmat2 pipelines take seconds each to build on the H100: its tiles with K step 32, the
    // default unrolling and tile order, unsplit or split in 2 (vk_bench --coopmat2 checks the rest).
    if (cfg.kernel == vulkan::gemm_kernel::coopmat2 &&
        (cfg.bk != 32 || cfg.group_m != 8 || cfg.tm != (cfg.warps == 8 ? 4u : 2u) || cfg.splits > 2))
      continue;
    CAPTURE(cfg.str());
    if (!cpu) std::printf("  %s %s\n", to_string(dtype_of<T>()).data(), cfg.str().c_str()), std::fflush(stdout);
    ++checked;
    coop += cfg.kernel == vulkan::gemm_kernel::coopmat_f16;
    // K % 8 == 0 and N % 8 == 0: vector loads; several K tiles; partial M/N tiles.
    config_case<T, epilogue::none>(*ctx, cfg, 136, 264, 72, 0.0f, seed++);
    // Odd K and N: scalar loads, partial K tile too.
    config_case<T, epilogue::bias_gelu_tanh>(*ctx, cfg, 67, 45, 33, 0.0f, seed++);
  }
  // coopmat2's fast path (tiles inside M×N, rows aligned): K long enough for its unrolled loop and a
  // remainder past it, every epilogue through the per-element function, beta too.
  if (vulkan::coopmat2_available(ctx->info(), dtype_of<T>()))
    for (const auto& cfg : cfgs)
      if (cfg.kernel == vulkan::gemm_kernel::coopmat2 && cfg.splits == 1 && cfg.group_m == 8) {
        config_case<T, epilogue::bias_gelu>(*ctx, cfg, 264, 136, 1000, 0.0f, seed++);
        config_case<T, epilogue::silu>(*ctx, cfg, 256, 264, 520, -0.75f, seed++);
        break;
      }
  // ... and split along K: partial sums stored from inside tiles (unclamped) and edge tiles
  // (rows past M dropped, not written into the next split's block).
  if (vulkan::coopmat2_available(ctx->info(), dtype_of<T>()))
    for (const auto& cfg : cfgs)
      if (cfg.kernel == vulkan::gemm_kernel::coopmat2 && cfg.splits == 2 && cfg.group_m == 8) {
        config_case<T, epilogue::bias_gelu>(*ctx, cfg, 264, 136, 1000, 0.0f, seed++);
        config_case<T, epilogue::none>(*ctx, cfg, 256, 256, 776, 0.5f, seed++);
        break;
      }
  // beta and a fused epilogue on the default choice of a larger problem.
  config_case<T, epilogue::bias_relu>(*ctx, vulkan::gemm_default_config(ctx->info(), dtype_of<T>(), 300, 300, 96), 300,
                                      300, 96, 0.5f, seed++);
  MESSAGE(checked << " of " << cfgs.size() << " configs checked, " << coop << " on cooperative matrices");
  if (dtype_of<T>() == dtype::f16) CHECK((coop > 0) == vulkan::coopmat_f16_available(ctx->info()));
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {

/// The suite on an m×n×k gemm problem of dtype dt, epilogue e, alpha/beta,
/// run by `cfg` (nullptr: policy::vulkan<>'s default for the shape).
void suite_case(vulkan::context& ctx, dtype dt, index_t m, index_t n, index_t k, const char* e, float alpha, float beta,
                const vulkan::gemm_config* cfg) {
  problem p;
  p.op = "gemm";
  p.type = dt;
  p.dims = shape{m, n, k};
  p.epilogue = e;
  p.alpha = alpha;
  p.beta = beta;
  p.slope = 0.1f;
  const std::string what = (cfg ? cfg->str() : "policy::vulkan<> default " +
                                                   vulkan::gemm_default_config(ctx.info(), dt, m, n, k).str()) +
                           " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + e +
                           " " + std::string(to_string(dt));
  const report r = cfg ? kforge::validate(p, [&](const problem& pr, std::vector<host_tensor>& ts) {
    vulkan::gemm_with_config(ctx, *cfg, pr, ts);
  })
                       : kforge::validate<policy::vulkan<>>(p);
  for (const auto& c : r.cases)
    if (!c.passed)
      FAIL_CHECK(what << ": case " << c.name << " " << c.error << " (first bad element " << c.first_bad << ": "
                      << c.first_bad_out << " vs " << c.first_bad_ref << ")");
  CHECK_MESSAGE(r.all_passed, what);
}

}  // namespace

// The decode class and its boundaries: M = 1, 2, 4, 5 (gemv by default; f16
// on cooperative matrices from 5), 7, 8 (gemv), 9, 15, 16, 17 (32-row tile
// kernels split along K); N odd (scalar loads) and a multiple of 8 (vector
// loads); K odd and K a multiple of 4 but not of any split's K step;
// policy::vulkan<>'s default at every M, forced configs (K split or not) at
// M = 1, 7, 16, 17; every epilogue, alpha and beta.
TEST_CASE_TEMPLATE("vulkan gemv and split-K pass the validation suite at the decode boundary", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  const dtype dt = dtype_of<T>();
  if (sizeof(T) == 2 && !ctx->info().storage_16bit) {
    MESSAGE("skipped: no 16-bit storage");
    return;
  }
  const auto& d = ctx->info();
  const char* epilogues[] = {"none", "bias", "relu", "bias_relu", "leaky_relu", "bias_leaky_relu",
                             "gelu_tanh", "bias_gelu_tanh", "gelu", "bias_gelu", "silu", "bias_silu"};
  std::size_t next_e = 0, suites = 0;
  // gemv with a K split and without, 8 columns per invocation where f16 packs
  // them; tile kernels split 3 ways (a split count that divides nothing).
  const std::vector<vulkan::gemm_config> forced{
      {vulkan::gemm_kernel::gemv, 4, 256, 8, 0, 4, 8, 0, 0, 1},
      {vulkan::gemm_kernel::gemv, 16, 128, 4, 0, 4, 8, 0, 0, 4},
      {vulkan::gemm_kernel::gemv, 2, 256, 4, 0, 8, 4, 0, 0, 3},
      {vulkan::gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 3},
      {vulkan::gemm_kernel::coopmat_f16, 32, 128, 32, 0, 0, 4, 2, 8, 3},
      {vulkan::gemm_kernel::gemv_coopmat, 16, 128, 16, 1, 0, 4, 0, 0, 3},
      {vulkan::gemm_kernel::gemv_coopmat, 16, 256, 32, 2, 0, 4, 0, 0, 1},
  };
  for (const index_t m : {1, 2, 4, 5, 7, 8, 9, 15, 16, 17})
    for (const auto& [n, k] : {std::pair<index_t, index_t>{67, 133}, std::pair<index_t, index_t>{96, 300}}) {
      const float beta = m % 2 ? 0.0f : -0.75f, alpha = m == 7 ? 1.5f : 1.0f;
      suite_case(*ctx, dt, m, n, k, epilogues[next_e++ % std::size(epilogues)], alpha, beta, nullptr);
      ++suites;
      if (m != 1 && m != 7 && m != 16 && m != 17) continue;
      for (const auto& cfg : forced) {
        if (!vulkan::gemm_config_check(d, dt, cfg).empty()) continue;
        suite_case(*ctx, dt, m, n, k, epilogues[next_e++ % std::size(epilogues)], alpha, beta, &cfg);
        ++suites;
      }
    }
  // gemv_coopmat's vector path over several chunks of A, the last one with an
  // odd number of K steps (its B registers alternate between two sets by step):
  // K = 776 is 3 chunks of 256 and 8 columns, or 512 and 264 with 32-row steps.
  for (const index_t m : {8, 16})
    for (const auto& cfg : forced) {
      if (cfg.kernel != vulkan::gemm_kernel::gemv_coopmat || !vulkan::gemm_config_check(d, dt, cfg).empty()) continue;
      suite_case(*ctx, dt, m, 96, 776, epilogues[next_e++ % std::size(epilogues)], 1.0f, 0.0f, &cfg);
      ++suites;
    }
  MESSAGE(suites << " suites of 10 cases");
  CHECK(next_e >= std::size(epilogues));  // every epilogue ran at least once
  KFT_NO_VALIDATION_MESSAGES();
}

// A split gemm sums its partials in a fixed order: two runs give the same bits.
TEST_CASE("vulkan split-K gemm is deterministic") {
  KFT_NEED_DEVICE();
  const index_t m = 5, n = 70, k = 777;
  const auto a = random_floats(static_cast<std::size_t>(m * k), 3), b = random_floats(static_cast<std::size_t>(k * n), 4);
  for (const vulkan::gemm_config& cfg : {vulkan::gemm_config{vulkan::gemm_kernel::gemv, 8, 256, 8, 0, 4, 8, 0, 0, 7},
                                         vulkan::gemm_config{vulkan::gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 5}}) {
    REQUIRE(vulkan::gemm_splits_used(cfg, k) > 1);
    std::vector<float> c1(static_cast<std::size_t>(m * n)), c2(c1.size());
    op::gemm<float> o;
    vulkan::gemm_with_config(*ctx, cfg, o, make_view(a.data(), {m, k}), make_view(b.data(), {k, n}), make_view(c1.data(), {m, n}));
    vulkan::gemm_with_config(*ctx, cfg, o, make_view(a.data(), {m, k}), make_view(b.data(), {k, n}), make_view(c2.data(), {m, n}));
    CHECK_MESSAGE(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0, cfg.str());
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan gemm: splits used follow the K step") {
  const vulkan::gemm_config t{vulkan::gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8, 8};
  CHECK(vulkan::gemm_splits_used(t, 4096) == 8);
  CHECK(vulkan::gemm_splits_used(t, 20) == 3);   // ranges of whole K steps: 8, 8, 4
  CHECK(vulkan::gemm_splits_used(t, 8) == 1);
  CHECK(vulkan::gemm_splits_used(t, 0) == 1);
  const vulkan::gemm_config g{vulkan::gemm_kernel::gemv, 1, 256, 8, 0, 4, 8, 0, 0, 16};
  CHECK(vulkan::gemv_lanes_k(g) == 4);
  CHECK(vulkan::gemm_k_step(g) == 32);
  CHECK(vulkan::gemm_splits_used(g, 4096) == 16);
  CHECK(vulkan::gemm_splits_used(g, 100) == 4);  // 32 + 32 + 32 + 4
}

TEST_CASE("vulkan gemm: the default picks its kernel per shape class") {
  KFT_NEED_DEVICE();
  const auto& d = ctx->info();
  using K0 = vulkan::knobs<>;
  using vulkan::gemm_kernel;
  const bool gemv_ok = vulkan::gemm_config_check(d, dtype::f32, vulkan::gemv_default_config(dtype::f32, 1, 4096, 4096)).empty();
  for (const dtype dt : {dtype::f32, dtype::f16}) {
    CAPTURE(to_string(dt));
    // f16 tiles run on cooperative matrices: workgroup-scope (coopmat2) where the device has them,
    // else the NV subgroup-scope kernel.
    const bool coop2 = vulkan::coopmat2_available(d, dt);
    const bool coop = coop2 || (dt == dtype::f16 && vulkan::coopmat_f16_available(d));
    const gemm_kernel tile = coop2 ? gemm_kernel::coopmat2 : coop ? gemm_kernel::coopmat_f16 : gemm_kernel::tiled;
    // Decode: gemv up to 8 rows (4 where f16 runs on cooperative matrices),
    // rows per workgroup the next power of two, K split to fill the device.
    const std::uint64_t last_gemv = coop ? 4 : 8;
    if (gemv_ok) {
      for (const auto& [m, bm] : {std::pair<std::uint64_t, std::uint32_t>{1, 1}, {2, 2}, {3, 4}, {4, 4}, {7, 8}, {8, 8}}) {
        const auto c = K0::gemm(d, dt, m, 4096, 4096);
        CAPTURE(m);
        CHECK((c.kernel == gemm_kernel::gemv) == (m <= last_gemv));
        if (m <= last_gemv) CHECK(c.bm == bm);
        CHECK(c.splits > 1);
      }
      CHECK(K0::gemm(d, dt, 1, 4096, 64).splits == 1);       // K too short to split
      CHECK(K0::gemm(d, dt, 1, 128256, 4096).splits == 1);  // the grid fills the device as it is
      // 16 rows of B per lane step for f32 at 5–8 rows, 8 otherwise (measured on the H100).
      if (last_gemv >= 8) CHECK(K0::gemm(d, dt, 8, 4096, 4096).bk == (dt == dtype::f32 ? 16u : 8u));
      CHECK(K0::gemm(d, dt, 1, 4096, 4096).bk == 8);
    }
    // Past the last gemv row, up to 16: f16 on NV subgroup-scope matrices streams B through the
    // tensor cores (gemv_coopmat, one 16-row fragment, K split to fill the device).
    const bool gemv_coop = dt == dtype::f16 && vulkan::coopmat_f16_available(d);
    for (const std::uint64_t m : {last_gemv + 1, std::uint64_t{16}}) {
      if (!gemv_coop) break;
      const auto c = K0::gemm(d, dt, m, 4096, 4096);
      CAPTURE(m);
      CHECK(c.kernel == gemm_kernel::gemv_coopmat);
      CHECK(c.bm == 16);
      // 16 column blocks of 256: a thin grid, 32 rows of B per step, 512-deep chunks of A, split
      // towards 128 workgroups.
      CHECK(c.splits == 8);
      CHECK(c.bk == 32);
      CHECK(c.tm == 2);
      const auto wide = K0::gemm(d, dt, m, 14336, 4096);  // 56 column blocks: 16 rows a step, towards 200
      CHECK(wide.bk == 16);
      CHECK(wide.splits == 4);
      CHECK(K0::gemm(d, dt, m, 128256, 4096).splits == 1);  // 501 column blocks fill the device
    }
    // Else, up to 32: 32-row tiles split along K (16 and 17 alike).
    for (const std::uint64_t m : {last_gemv + 1, std::uint64_t{16}, std::uint64_t{17}, std::uint64_t{32}}) {
      if (gemv_coop && m <= 16) continue;
      const auto c = K0::gemm(d, dt, m, 4096, 4096);
      CAPTURE(m);
      CHECK(c.kernel == tile);
      CHECK(c.bm == 32);
      CHECK(c.splits > 1);
    }
    CHECK(K0::gemm(d, dt, 64, 4096, 4096).splits > 1);  // a thin grid splits K
    CHECK(K0::gemm(d, dt, 64, 4096, 4096).bm == 64);
    // 512×4096: 128 tiles of 128×128, as they are on NV subgroup-scope matrices, split for the
    // vector units; coopmat2's 64 wide tiles split in two.
    const auto thin = K0::gemm(d, dt, 512, 4096, 4096);
    CHECK(thin.kernel == tile);
    CHECK(thin.bm == 128);
    CHECK(thin.bn == (coop2 ? 256u : 128u));
    CHECK((thin.splits > 1) == (!coop || coop2));
    CHECK(K0::gemm(d, dt, 512, 4096, 128).splits == 1);  // K too short to split
    const auto full = K0::gemm(d, dt, 4096, 4096, 4096);
    CHECK(full.kernel == tile);
    CHECK(full.splits == 1);
    CHECK(full.bm == 128);
    CHECK(K0::gemm(d, dt, 4096, 11008, 4096).splits == 1);
    CHECK(K0::gemm(d, dt, 4096, 11008, 4096).bn == (coop2 ? 256u : 128u));  // coopmat2's wide tile on full grids
  }
  // f32 register tiles: 8×8 per invocation on a full grid.
  CHECK(K0::gemm(d, dtype::f32, 4096, 4096, 4096).tm * K0::gemm(d, dtype::f32, 4096, 4096, 4096).tn == 64);
  CHECK(K0::gemm(d, dtype::f32, 2048, 2048, 2048).bn == 128);   // 256 tiles of 128×128
  CHECK(K0::gemm(d, dtype::f32, 1900, 2048, 2048).bn == 128);   // 240: still as they are
  CHECK(K0::gemm(d, dtype::f32, 1900, 2048, 2048).splits == 1);
  CHECK(K0::gemm(d, dtype::f32, 1536, 2048, 128).bn == 64);     // 192 tiles of 128×128 and K too short: 128×64
  using K2 = vulkan::knobs<policy::tile<32, 16, 8>, policy::thread_tile<2, 2>>;
  CHECK(K2::gemm(d, dtype::f32, 64, 64, 64).kernel == gemm_kernel::generic);
  using Koff = vulkan::knobs<policy::coopmat<false>>;
  CHECK(Koff::gemm(d, dtype::f16, 4096, 4096, 4096).kernel != gemm_kernel::coopmat_f16);
  CHECK(Koff::gemm(d, dtype::f16, 4096, 4096, 4096).kernel != gemm_kernel::coopmat2);
  if (vulkan::coopmat_f16_available(d)) {
    using Kon = vulkan::knobs<policy::coopmat<true>>;
    const auto dec = Kon::gemm(d, dtype::f16, 1, 4096, 4096).kernel;  // decode on tensor cores too
    CHECK((dec == gemm_kernel::coopmat_f16 || dec == gemm_kernel::coopmat2));
  } else {
    using Kon = vulkan::knobs<policy::coopmat<true>>;
    CHECK_THROWS_AS(Kon::gemm(d, dtype::f16, 64, 64, 64), unsupported_error);
    vulkan::gemm_config c;
    c.kernel = gemm_kernel::coopmat_f16;
    CHECK(!vulkan::gemm_config_check(d, dtype::f16, c).empty());
  }
  // Every default is a config the device runs.
  for (const dtype dt : {dtype::f32, dtype::f16, dtype::bf16})
    for (const std::uint64_t m : {1u, 4u, 5u, 8u, 9u, 16u, 17u, 100u, 512u, 4096u})
      for (const std::uint64_t n : {1u, 67u, 4096u, 128256u})
        for (const std::uint64_t k : {1u, 300u, 14336u}) {
          const auto c = vulkan::gemm_default_config(d, dt, m, n, k);
          CHECK_MESSAGE(vulkan::gemm_config_check(d, dt, c).empty(), c.str());
        }
}

TEST_CASE("vulkan gemm_config_check says why") {
  KFT_NEED_DEVICE();
  const auto& d = ctx->info();
  vulkan::gemm_config g{vulkan::gemm_kernel::gemv, 1, 256, 8, 0, 4, 8, 0, 0, 1};
  CHECK(vulkan::gemm_config_check(d, dtype::f32, g).empty());
  g.splits = 0;
  CHECK(vulkan::gemm_config_check(d, dtype::f32, g).find("splits") != std::string::npos);
  g.splits = 1;
  g.bn = 96;  // 256 invocations × 4 columns / 96: not whole column groups
  CHECK(vulkan::gemm_config_check(d, dtype::f32, g).find("column groups") != std::string::npos);
  g.bn = 256;
  g.bk = 6;
  CHECK(vulkan::gemm_config_check(d, dtype::f32, g).find("bk") != std::string::npos);
  const vulkan::gemm_config generic{vulkan::gemm_kernel::generic, 64, 64, 16, 4, 4, 0, 0, 0, 2};
  CHECK(vulkan::gemm_config_check(d, dtype::f32, generic).find("split") != std::string::npos);
  // A refused config throws before anything runs.
  g.bk = 6;
  vulkan::device_tensor<float> t(*ctx, {4, 4});
  vulkan::stream s(*ctx);
  CHECK_THROWS_AS(vulkan::record_gemm(s, dtype::f32, g, 4, 4, 4, 1, 0, fn::identity, 0, t.ref(), t.ref(), nullptr, t.ref()),
                  unsupported_error);
}

// No device needed: glslang compiles every load and split variant of the
// cooperative-matrix kernel, of gemv and of the split-K sum, and SPIRV-Cross
// (or the decorations, for coopmat) finds the interface the host binds.
TEST_CASE("vulkan gemm_coopmat_f16, gemv, gemv_coopmat and the split-K sum compile and match their interfaces") {
  const vulkan::gemm_config coop{vulkan::gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 8, 2};
  for (const bool vec : {false, true})
    for (const bool split : {false, true}) {
      const vulkan::shader_variant v = vulkan::detail::gemm_variant(coop, dtype::f16, true, fn::gelu_tanh, vec, split);
      std::vector<std::uint32_t> spv;
      REQUIRE_NOTHROW(spv = vulkan::shader_compiler::compile(v));
      CHECK_NOTHROW(vulkan::check_interface(v.name, spv, {4, 24, {0, 1, 2, 3, 4, 5}}));
    }
  for (const dtype dt : {dtype::f32, dtype::f16})
    for (const std::uint32_t tn : {4u, 8u})
      for (const bool vec : {false, true})
        for (const bool split : {false, true}) {
          const vulkan::gemm_config g{vulkan::gemm_kernel::gemv, 4, 64 * tn, 8, 0, tn, 8, 0, 0, 2};
          const vulkan::shader_variant v = vulkan::detail::gemm_variant(g, dt, !split, fn::silu, vec, split);
          std::vector<std::uint32_t> spv;
          REQUIRE_NOTHROW(spv = vulkan::shader_compiler::compile(v));
          CHECK_NOTHROW(vulkan::check_interface(v.name, spv, {4, 24, {0, 1, 2, 3, 4}}));
        }
  const vulkan::gemm_config gc{vulkan::gemm_kernel::gemv_coopmat, 16, 256, 32, 1, 0, 4, 0, 0, 2};
  for (const bool vec : {false, true})
    for (const bool split : {false, true}) {
      const vulkan::shader_variant v = vulkan::detail::gemm_variant(gc, dtype::f16, !split, fn::gelu_erf, vec, split);
      std::vector<std::uint32_t> spv;
      REQUIRE_NOTHROW(spv = vulkan::shader_compiler::compile(v));
      CHECK_NOTHROW(vulkan::check_interface(v.name, spv, {4, 24, {0, 1, 2, 3, 4}}));
    }
  for (const dtype dt : {dtype::f32, dtype::f16}) {
    const vulkan::shader_variant v = vulkan::detail::gemm_splitk_variant(dt, true, fn::relu);
    std::vector<std::uint32_t> spv;
    REQUIRE_NOTHROW(spv = vulkan::shader_compiler::compile(v));
    CHECK_NOTHROW(vulkan::check_interface(v.name, spv, {3, 24, {0}}));
  }
}
