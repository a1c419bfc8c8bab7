// tests/vulkan_gemm.cpp — every gemm kernel configuration the device runs
// (vulkan::gemm_configs: the tuner's search space) against the Eigen
// reference, on shapes that take both the vector-load and the scalar-load
// variants and that leave partial tiles on every edge; the output is poisoned
// with NaN first so an unwritten element fails. Also: the cooperative-matrix
// kernel compiles and matches its interface on any machine (lavapipe has no
// cooperative matrices, so there it is only compiled), and the default choice.
#include "vulkan_common.hpp"

#include <limits>

using namespace kforge;
using kft::check_close;
using kft::convert;
using kft::random_floats;

namespace {

// Big unrolled gemm kernels run slowly on lavapipe on a busy 2-core machine:
// this suite's waits get 60 s unless KFORGE_VK_TIMEOUT_MS says otherwise.
const bool long_timeout = [] { return ::setenv("KFORGE_VK_TIMEOUT_MS", "60000", 0) == 0; }();

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

TEST_CASE_TEMPLATE("vulkan every gemm config matches eigen", T, float, half) {
  KFT_NEED_DEVICE();
  if (dtype_of<T>() == dtype::f16 && !ctx->info().storage_16bit) {
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
    // On a CPU implementation (slow), group_m 0 (the plain order) only for the
    // first config, and the tiled kernel's K step 16 only for the first config
    // that has it: every tile shape still runs, with K step 8.
    if (cpu && cfg.group_m == 0 && &cfg != &cfgs.front()) continue;
    if (cpu && cfg.kernel == vulkan::gemm_kernel::tiled && cfg.bk != 8) {
      if (deep_k_checked) continue;
      deep_k_checked = true;
    }
    CAPTURE(cfg.str());
    if (!cpu) std::printf("  %s %s\n", to_string(dtype_of<T>()).data(), cfg.str().c_str()), std::fflush(stdout);
    ++checked;
    coop += cfg.kernel == vulkan::gemm_kernel::coopmat_f16;
    // K % 8 == 0 and N % 8 == 0: vector loads; several K tiles; partial M/N tiles.
    config_case<T, epilogue::none>(*ctx, cfg, 136, 264, 72, 0.0f, seed++);
    // Odd K and N: scalar loads, partial K tile too.
    config_case<T, epilogue::bias_gelu_tanh>(*ctx, cfg, 67, 45, 33, 0.0f, seed++);
  }
  // beta and a fused epilogue on the default choice of a larger problem.
  config_case<T, epilogue::bias_relu>(*ctx, vulkan::gemm_default_config(ctx->info(), dtype_of<T>(), 300, 300), 300, 300,
                                      96, 0.5f, seed++);
  MESSAGE(checked << " of " << cfgs.size() << " configs checked, " << coop << " on cooperative matrices");
  if (dtype_of<T>() == dtype::f16) CHECK((coop > 0) == vulkan::coopmat_f16_available(ctx->info()));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan gemm: policy knobs choose the kernel") {
  KFT_NEED_DEVICE();
  const auto& d = ctx->info();
  using K0 = vulkan::knobs<>;
  CHECK(K0::gemm(d, dtype::f32, 4096, 4096).kernel == vulkan::gemm_kernel::tiled);
  CHECK(K0::gemm(d, dtype::f32, 4096, 4096).bm == 128);
  CHECK(K0::gemm(d, dtype::f32, 4096, 4096).tm * K0::gemm(d, dtype::f32, 4096, 4096).tn == 64);  // 8×8
  CHECK(K0::gemm(d, dtype::f32, 2048, 2048).bn == 128);  // 256 tiles of 128×128
  CHECK(K0::gemm(d, dtype::f32, 1900, 2048).bn == 64);   // 240: 128×64 tiles instead
  CHECK(K0::gemm(d, dtype::f32, 1024, 1024).bm == 64);   // 128² tiles would leave most of an H100 idle
  using K2 = vulkan::knobs<policy::tile<32, 16, 8>, policy::thread_tile<2, 2>>;
  CHECK(K2::gemm(d, dtype::f32, 64, 64).kernel == vulkan::gemm_kernel::generic);
  using Koff = vulkan::knobs<policy::coopmat<false>>;
  CHECK(Koff::gemm(d, dtype::f16, 4096, 4096).kernel != vulkan::gemm_kernel::coopmat_f16);
  if (vulkan::coopmat_f16_available(d)) {
    CHECK(K0::gemm(d, dtype::f16, 4096, 4096).kernel == vulkan::gemm_kernel::coopmat_f16);
  } else {
    using Kon = vulkan::knobs<policy::coopmat<true>>;
    CHECK_THROWS_AS(Kon::gemm(d, dtype::f16, 64, 64), unsupported_error);
    vulkan::gemm_config c;
    c.kernel = vulkan::gemm_kernel::coopmat_f16;
    CHECK(!vulkan::gemm_config_check(d, dtype::f16, c).empty());
  }
}

// No device needed: glslang compiles both load variants of the cooperative
// matrix kernel and SPIRV-Cross finds the interface the host binds.
TEST_CASE("vulkan gemm_coopmat_f16 compiles and matches its interface") {
  for (const char* vec : {"0", "1"}) {
    vulkan::shader_variant v = vulkan::detail::gemm_variant(vulkan::gemm_kernel::coopmat_f16, dtype::f16, true,
                                                            fn::gelu_tanh, vec[0] == '1');
    std::vector<std::uint32_t> spv;
    REQUIRE_NOTHROW(spv = vulkan::shader_compiler::compile(v));
    CHECK_NOTHROW(vulkan::check_interface(v.name, spv, {4, 24, {0, 1, 2, 3, 4, 5}}));
  }
}
