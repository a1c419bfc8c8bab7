// bench/vk_bench.cpp — kforge's Vulkan cases for the GPU targets of issue 5,
// printed as `RESULT <case> <ms> <rate> <unit>` lines that bench/h100_vulkan.sh
// joins with bench/torch_peers.py's lines of the same cases.
//
// Timing: GPU timestamps around each dispatch; every case records 3 warm-up +
// 10 timed dispatches in one stream (a barrier between them, since each
// rewrites its output), submits it twice and takes the median of the 10 timed
// ones of the second submission. Inputs are random, never zeros. Each gemm is
// checked on 64 sampled outputs against a double-precision dot product, and
// the check is printed (a fast wrong kernel must not pass unnoticed).
//
// `--attention` times the f16 attention cases of issue 11 instead (prefill,
// GQA, decode; bench/h100_attention.sh runs them beside
// bench/torch_attention.py), `--attention-sweep` also every coopmat tiling,
// and where the device has VK_NV_cooperative_matrix2, beside each prefill
// case the opt-in coopmat2 kernel (every tiling in the sweep);
// `--attention-probes` its tilings and timing probes at causal D = 128 only;
// `--attention-parts` leaves coopmat2 out, times the default coopmat
// kernel's probes (parts of its work left out) at causal D = 64 and 128
// without GQA and every coopmat tiling of each coopmat case, with the
// driver's pipeline statistics under KFORGE_VK_PIPELINE_STATS=1;
// `--attention-decode` only the decode cases, with the split kernel's cuts.
// `--sweep` instead times every gemm config of vulkan::gemm_configs() at 4096³,
// printing each config before it runs; `--sweep-f32` times f32 tiled configs
// beyond that list (8×8 thread tiles, K step 16/32) at 4096³; `--sweep-mem`
// times the copy kernel over workgroup size × vectors per invocation × grid
// cap, and softmax / layer_norm over workgroup sizes, at 8192×8192 f32.
// `--gemm-shapes` times policy::vulkan<>'s default gemm config at the model
// shapes of bench/h100_gemm.sh (decode M = 1..16, prefill, non-square N),
// f32 and f16, each shape on a fresh context, with a 256 MiB copy as the
// bandwidth reference (shapes given as MxNxK after the mode replace that
// list; `--f16` leaves out the f32 rows); `--gemm-sweep` also times candidate configs per
// shape (kernel, tile, K split), which is how the defaults of
// vulkan/gemm_config.hpp were chosen. Their timing (per_call_ms) differs
// from the rest: back-to-back calls in one submission of at least 5 ms,
// replayed after 0.2 s of warm-up, wall clock per call (a split gemm is two
// dispatches and the barrier between them; all of it is counted).
// `--quant [--sweep|--smoke]`: the low-precision weights' decode kernel (quant_cases).
// `--replay` times streams of 1, 10 and 100 small dispatches, dependent
// (barriers) or not, with and without timestamps: what a dispatch costs.
// `--split-parts MxNxK...` times the two dispatches of split f16 configs
// (coopmat2 and the NV subgroup kernel, split 2) apart: the first pass and the sum.
// The memory-bound cases run after the gemms, then again on a fresh context
// (rows "_fresh_ctx"); `--mem-first` runs them before the gemms instead, and
// `--diag` times a 256 MiB copy (ours and vkCmdCopyBuffer) after various
// earlier work on the same or a new context: on the H100, buffers placed after
// about 1 GiB of other allocations copied at half speed with both copies
// (docs/bench/h100-2026-11-22-final2/diag.txt).
#include <kforge/vulkan.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace kforge;

namespace {
// `per_call`: dispatches one record() makes (a call's time is their sum).
// `warm_s`: replay the stream for this long first, so that a GPU that idled
// through a pipeline compile is back at its clock before the timed run
// (PERFORMANCE.md records run-to-run spreads of 2× on the H100).
template <class F>
std::vector<std::vector<double>> call_ms(vulkan::context& ctx, F&& record, int reps, std::size_t per_call, double warm_s) {
  vulkan::stream s(ctx);
  s.time_dispatches(true);
  for (int i = 0; i < reps + 3; ++i) record(s);
  s.run();
  for (const auto t0 = std::chrono::steady_clock::now();
       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warm_s;)
    s.run();
  s.run();
  auto t = s.timings();
  std::vector<std::vector<double>> v;  // per timed call: its dispatches' times
  for (std::size_t i = 3 * per_call; i + per_call <= t.size(); i += per_call) {
    v.emplace_back();
    for (std::size_t j = 0; j < per_call; ++j) v.back().push_back(t[i + j].ms.value());  // timed: throws if not
  }
  return v;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double median_ms(vulkan::context& ctx, F&& record, int reps = 10, std::size_t per_call = 1, double warm_s = 0) {
  std::vector<double> v;
  for (const auto& c : call_ms(ctx, record, reps, per_call, warm_s)) v.push_back(std::accumulate(c.begin(), c.end(), 0.0));
  return median_of(v);
}

// Uniform in [lo, hi) from a counter hash (splitmix64): fast enough for the
// LM head's 4096×128256 B (525 M elements).
std::uint64_t splitmix64(std::uint64_t& st) {
  std::uint64_t z = (st += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
std::vector<T> random_host(std::size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::vector<T> v(n);
  std::uint64_t st = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (auto& x : v) x = static_cast<T>(lo + (hi - lo) * static_cast<float>(splitmix64(st) >> 40) * 0x1.0p-24f);
  return v;
}

void result(const std::string& name, double ms, double rate, const char* unit) {
  std::printf("RESULT %s %.4f %.2f %s\n", name.c_str(), ms, rate, unit);
  std::fflush(stdout);
}

// Largest sampled error (gemm_problem::check: |c - ref| / sum|a·b|) a correct gemm of
// dtype d shows: its output rounding, at most half an ulp of |c| <= sum|a·b| (f16 2^-11,
// bf16 2^-8), with 4x (f16) and 2x (bf16) to spare; f32 accumulation.
double check_tolerance(dtype d) { return d == dtype::f16 ? 2e-3 : d == dtype::bf16 ? 8e-3 : 1e-5; }

template <class T>
struct gemm_problem {
  index_t m, n, k;
  std::vector<T> ha, hb, hbias;
  vulkan::device_tensor<T> a, b, bias, c;
  gemm_problem(vulkan::context& ctx, index_t m_, index_t n_, index_t k_)
      : m(m_), n(n_), k(k_), ha(random_host<T>(static_cast<std::size_t>(m * k), 1)),
        hb(random_host<T>(static_cast<std::size_t>(k * n), 2)), hbias(random_host<T>(static_cast<std::size_t>(n), 3)),
        a(ctx, {m, k}), b(ctx, {k, n}), bias(ctx, {n}), c(ctx, {m, n}) {
    a.upload(make_view(ha, {m, k}));
    b.upload(make_view(hb, {k, n}));
    bias.upload(make_view(hbias, {n}));
  }
  // Max over 64 sampled outputs of |c - ref| / sum|a||b| (ref in double, with bias+gelu_tanh if asked);
  // b_kmajor: B's buffer holds [N, K] (C = A·Bᵀ of that buffer).
  double check(bool bias_gelu, bool b_kmajor = false) const {
    const auto hc = c.to_vector();
    std::mt19937 g(7);
    double worst = 0;
    for (int s = 0; s < 64; ++s) {
      const index_t i = static_cast<index_t>(g() % static_cast<unsigned>(m)), j = static_cast<index_t>(g() % static_cast<unsigned>(n));
      double ref = 0, mag = 0;
      for (index_t p = 0; p < k; ++p) {
        const double x = static_cast<float>(ha[i * k + p]), y = static_cast<float>(b_kmajor ? hb[j * k + p] : hb[p * n + j]);
        ref += x * y, mag += std::fabs(x * y);
      }
      if (bias_gelu) {
        ref += static_cast<float>(hbias[j]);
        ref = 0.5 * ref * (1 + std::tanh(0.7978845608028654 * (ref + 0.044715 * ref * ref * ref)));
      }
      const double got = static_cast<float>(hc[i * n + j]);
      const double e = std::isnan(got) ? 1e30 : std::fabs(got - ref) / (mag + 1e-30);
      worst = std::max(worst, e);
    }
    return worst;
  }
};

template <class T>
void gemm_case(vulkan::context& ctx, const char* dt, index_t n, const vulkan::gemm_config* forced = nullptr,
               bool bias_gelu = false) {
  if (forced) std::printf("  sweep %s %s ...\n", dt, forced->str().c_str()), std::fflush(stdout);
  gemm_problem<T> p(ctx, n, n, n);
  const dtype d = dtype_of<T>();
  const auto cfg = forced ? *forced : vulkan::knobs<>::gemm(ctx.info(), d, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(n),
                                                                     static_cast<std::uint64_t>(n));
  const vulkan::buffer_ref br = p.bias.ref();
  const double ms = median_ms(ctx, [&](vulkan::stream& s) {
    vulkan::record_gemm(s, d, cfg, n, n, n, 1.0f, 0.0f, bias_gelu ? fn::gelu_tanh : fn::identity, 0.0f, p.a.ref(),
                        p.b.ref(), bias_gelu ? &br : nullptr, p.c.ref());
  });
  const double err = p.check(bias_gelu);
  const double tol = check_tolerance(d);
  const std::string name = std::string(bias_gelu ? "gemm_bias_gelu_" : "gemm_") + dt + "_" + std::to_string(n);
  std::printf("  %s config: %s; sampled error %.2e (%s)\n", name.c_str(), cfg.str().c_str(), err, err <= tol ? "ok" : "FAIL");
  if (!forced) result(name, ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12, "TFLOP/s");
  else {
    std::printf("  sweep %s %s: %.3f ms %.2f TFLOP/s%s\n", dt, cfg.str().c_str(), ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12,
                err <= tol ? "" : " WRONG");
    // The driver's statistics of the pipeline just timed (KFORGE_VK_PIPELINE_STATS=1).
    const auto& pl = vulkan::detail::gemm_pipeline(
        ctx, cfg, vulkan::detail::gemm_variant(cfg, d, bias_gelu, bias_gelu ? fn::gelu_tanh : fn::identity,
                                               vulkan::detail::gemm_vector_loads(cfg, n, n)));
    if (!pl.statistics.empty()) std::printf("    stats: %s\n", pl.statistics.c_str());
  }
}

/// Host wall clock (µs, sorted) of submit + wait for `runs` replays of a
/// recorded stream, after 5 unmeasured ones.
std::vector<double> replay_wall_us(vulkan::stream& s, int runs) {
  for (int i = 0; i < 5; ++i) s.run();
  std::vector<double> wall;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    s.run();
    wall.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  return wall;
}

template <std::uint32_t WG>
void rows_sweep(vulkan::context& ctx, vulkan::device_tensor<float>& x, vulkan::device_tensor<float>& g,
                vulkan::device_tensor<float>& be, vulkan::device_tensor<float>& y, double gb2) {
  using P = policy::vulkan<policy::wg<WG>>;
  double ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record<P>(s, op::softmax<float>{}, x, y); });
  std::printf("  sweep softmax wg %u: %.4f ms %.1f GB/s\n", WG, ms, gb2 / (ms * 1e-3));
  ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record<P>(s, op::layer_norm<float>{}, x, g, be, y); });
  std::printf("  sweep layer_norm wg %u: %.4f ms %.1f GB/s\n", WG, ms, gb2 / (ms * 1e-3));
  std::fflush(stdout);
}

void mem_sweep(vulkan::context& ctx) {
  const index_t r = 8192;
  vulkan::device_tensor<float> x(ctx, {r, r}), y(ctx, {r, r}), g(ctx, {r}), be(ctx, {r});
  x.upload(make_view(random_host<float>(static_cast<std::size_t>(r * r), 11, -4, 4), {r, r}));
  g.upload(make_view(random_host<float>(static_cast<std::size_t>(r), 12, 0.5f, 1.5f), {r}));
  be.upload(make_view(random_host<float>(static_cast<std::size_t>(r), 13), {r}));
  const double gb2 = 2.0 * r * r * 4 / 1e9;
  for (std::uint32_t wg : {128u, 256u, 512u, 1024u})
    for (std::uint32_t u : {1u, 2u, 4u, 8u, 16u})
      for (std::uint64_t cap : {std::uint64_t{132 * 4}, std::uint64_t{132 * 16}, std::uint64_t{65535 * 64}}) {
        const double ms = median_ms(ctx, [&](vulkan::stream& s) {
          vulkan::record_copy(s, x.ref(), y.ref(), x.bytes(), wg, u, cap);
        });
        std::printf("  sweep copy wg %u unroll %u cap %llu: %.4f ms %.1f GB/s\n", wg, u,
                    static_cast<unsigned long long>(cap), ms, gb2 / (ms * 1e-3));
        std::fflush(stdout);
      }
  rows_sweep<128>(ctx, x, g, be, y, gb2);
  rows_sweep<256>(ctx, x, g, be, y, gb2);
  rows_sweep<512>(ctx, x, g, be, y, gb2);
  rows_sweep<1024>(ctx, x, g, be, y, gb2);
}
// ---- gemm by shape class (bench/h100_gemm.sh) --------------------------------

/// Milliseconds per call of `record` (which records one gemm): R calls back to
/// back in one submission of >= 5 ms (R <= max_reps), replayed for warm_ms to
/// raise the clocks, then the median of 5 replays' wall time / R.
template <class F>
double per_call_ms(vulkan::context& ctx, F&& record, int max_reps, double warm_ms = 200) {
  using clk = std::chrono::steady_clock;
  auto wall_ms = [](clk::time_point t0) { return std::chrono::duration<double, std::milli>(clk::now() - t0).count(); };
  double est;
  {
    vulkan::stream probe(ctx);
    for (int i = 0; i < 3; ++i) record(probe);
    probe.run();
    const auto t0 = clk::now();
    probe.run();
    est = wall_ms(t0) / 3;
  }
  const int reps = static_cast<int>(std::clamp(std::ceil(5.0 / std::max(est, 1e-4)), 3.0, static_cast<double>(std::max(max_reps, 3))));
  vulkan::stream s(ctx);
  for (int i = 0; i < reps; ++i) record(s);
  for (const auto t0 = clk::now(); wall_ms(t0) < warm_ms;) s.run();
  std::vector<double> v;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = clk::now();
    s.run();
    v.push_back(wall_ms(t0) / reps);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct gemm_shape {
  index_t m, n, k;
  std::string name() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};
// M x N x K (kforge's SHAPE order): decode, prefill and non-square N of
// 7-8B-parameter models (hidden 4096, MLP 11008/14336, vocabulary 128256).
const gemm_shape model_shapes[] = {{1, 14336, 4096},  {1, 4096, 4096},    {8, 4096, 4096},    {16, 4096, 14336},
                                   {1, 128256, 4096}, {512, 4096, 4096},  {512, 14336, 4096}, {2048, 4096, 4096},
                                   {4096, 11008, 4096}, {4096, 4096, 4096}, {8192, 8192, 8192}};
// The decode/tile boundaries, swept only.
const gemm_shape boundary_shapes[] = {{4, 4096, 4096}, {17, 4096, 4096}, {32, 4096, 4096}, {64, 4096, 4096}};

/// Candidates of the sweep for one shape: variations of the default's kernel
/// (tile, K split, rows and columns per invocation), and the other kernels
/// that could serve the shape class.
std::vector<vulkan::gemm_config> sweep_candidates(const vulkan::device_info& d, dtype dt, const gemm_shape& sh) {
  using vulkan::gemm_config;
  using vulkan::gemm_kernel;
  std::vector<gemm_config> out;
  auto add = [&](gemm_config c) {
    if (!vulkan::gemm_config_check(d, dt, c).empty()) return;
    for (const auto& o : out)
      if (o.str() == c.str()) return;
    out.push_back(c);
  };
  const auto m = static_cast<std::uint64_t>(sh.m);
  const gemm_config g = vulkan::gemv_default_config(dt, m, static_cast<std::uint64_t>(sh.n), static_cast<std::uint64_t>(sh.k));
  if (m <= 16) {
    for (std::uint32_t s : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
      gemm_config c = g;
      c.splits = s;
      add(c);
    }
    // columns per invocation, lanes per column group, rows per lane per step, subgroups
    for (auto [tn, kl, bk, w] : std::initializer_list<std::array<std::uint32_t, 4>>{
             {4, 1, 8, 8}, {4, 2, 8, 8}, {4, 4, 4, 8}, {4, 4, 8, 8}, {4, 4, 16, 8}, {4, 8, 8, 8}, {4, 4, 8, 4},
             {8, 4, 8, 8}, {8, 2, 8, 8}, {4, 4, 8, 16}}) {
      gemm_config c = g;
      c.tn = tn, c.bk = bk, c.warps = w, c.bn = 32 * w / kl * tn;
      add(c);
    }
    // gemv_coopmat (f16): subgroups × column fragments each × B rows per step × splits.
    for (auto [w, nf, bk] : std::initializer_list<std::array<std::uint32_t, 3>>{
             {4, 4, 32}, {4, 2, 32}, {4, 4, 16}, {4, 2, 64}, {8, 2, 32}, {8, 4, 32}, {2, 4, 32}, {4, 8, 16}, {4, 4, 64}})
      for (std::uint32_t kc : {1u, 2u, 4u})
        for (std::uint32_t s : {1u, 2u, 4u, 8u, 16u}) add({gemm_kernel::gemv_coopmat, 16, 16 * nf * w, bk, kc, 0, w, 0, 0, s});
  } else if (m <= 32) {  // gemv past its class: two workgroup rows of 16, or one of 32
    for (std::uint32_t s : {4u, 8u, 16u}) {
      gemm_config c = g;
      c.splits = s;
      add(c);
      add({gemm_kernel::gemv, 32, 256, 4, 0, 4, 8, 0, 0, s});
    }
  }
  {
    const bool coop = dt == dtype::f16 && vulkan::coopmat_f16_available(d);
    std::vector<gemm_config> tiles;
    if (coop)
      tiles = {{gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 8, 1}, {gemm_kernel::coopmat_f16, 128, 128, 16, 0, 0, 8, 2, 8, 1},
               {gemm_kernel::coopmat_f16, 64, 128, 32, 0, 0, 4, 2, 8, 1},  {gemm_kernel::coopmat_f16, 64, 64, 32, 0, 0, 4, 2, 8, 1},
               {gemm_kernel::coopmat_f16, 128, 256, 32, 0, 0, 8, 2, 8, 1}, {gemm_kernel::coopmat_f16, 32, 128, 32, 0, 0, 4, 2, 8, 1},
               {gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 0, 1}, {gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 4, 1},
               {gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 16, 1}};
    else
      tiles = {{gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8, 1},  {gemm_kernel::tiled, 128, 64, 8, 8, 4, 8, 2, 8, 1},
               {gemm_kernel::tiled, 64, 128, 8, 4, 8, 8, 2, 8, 1},   {gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 8, 1},
               {gemm_kernel::tiled, 128, 256, 8, 8, 16, 8, 2, 8, 1}, {gemm_kernel::tiled, 256, 128, 8, 16, 8, 8, 2, 8, 1},
               {gemm_kernel::tiled, 128, 128, 16, 8, 8, 8, 2, 8, 1}, {gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 1},
               {gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 0, 1}};
    if (vulkan::coopmat2_available(d, dt))  // workgroup-scope tiles, as coopmat2_default_config orders them
      for (const gemm_config& t : {gemm_config{gemm_kernel::coopmat2, 128, 256, 32, 4, 0, 8, 0, 8, 1},
                                   gemm_config{gemm_kernel::coopmat2, 128, 128, 32, 4, 0, 8, 0, 8, 1},
                                   gemm_config{gemm_kernel::coopmat2, 64, 128, 32, 2, 0, 4, 0, 8, 1},
                                   gemm_config{gemm_kernel::coopmat2, 32, 128, 32, 2, 0, 4, 0, 8, 1}})
        tiles.push_back(t);
    for (const auto& t : tiles) {
      if (t.bm > 2 * std::max<std::uint64_t>(m, 16)) continue;
      const std::uint64_t n_tiles = ((m + t.bm - 1) / t.bm) * ((static_cast<std::uint64_t>(sh.n) + t.bn - 1) / t.bn);
      for (std::uint32_t s : {1u, 2u, 4u, 8u, 16u}) {
        if (s > 1 && n_tiles * s > 1024) break;  // splitting a full grid
        gemm_config c = t;
        c.splits = s;
        add(c);
      }
    }
  }
  return out;
}

/// One shape in one dtype on a fresh context: the default config (a RESULT
/// row; for M <= 16 also GB/s of B), then with `sweep` every candidate.
template <class T>
void shape_case(const gemm_shape& sh, const char* dt_name, bool sweep) {
  vulkan::context ctx;
  const dtype d = dtype_of<T>();
  gemm_problem<T> p(ctx, sh.m, sh.n, sh.k);
  const double flop = 2.0 * sh.m * sh.n * sh.k, b_bytes = static_cast<double>(sh.k) * sh.n * sizeof(T);
  const std::string name = std::string("gemm_") + dt_name + "_" + sh.name();
  const double tol = check_tolerance(d);
  auto time_cfg = [&](const vulkan::gemm_config& cfg, double* err, double warm_ms) {
    // Scratch of a split gemm is held per recorded call: cap the calls at 1 GiB of it.
    const double scratch = 4.0 * vulkan::gemm_splits_used(cfg, static_cast<std::uint64_t>(sh.k)) * sh.m * sh.n;
    const int max_reps = static_cast<int>(std::min(2000.0, (1 << 30) / std::max(scratch, 1.0)));
    // 0.5 s of warm-up for the default, 0.3 s for each candidate after it: the coopmat2 kernel's
    // pipelines take seconds to build, and after 0.1 s the GPU was not back at its clock.
    const double ms = per_call_ms(ctx, [&](vulkan::stream& s) {
      vulkan::record_gemm(s, d, cfg, sh.m, sh.n, sh.k, 1.0f, 0.0f, fn::identity, 0.0f, p.a.ref(), p.b.ref(), nullptr, p.c.ref());
    }, max_reps, warm_ms);
    *err = p.check(false);
    return ms;
  };
  const auto dflt = vulkan::knobs<>::gemm(ctx.info(), d, static_cast<std::uint64_t>(sh.m), static_cast<std::uint64_t>(sh.n),
                                          static_cast<std::uint64_t>(sh.k));
  double err = 0;
  const double ms = time_cfg(dflt, &err, 500);
  std::printf("  %s default: %s; %.4f ms, %.2f TFLOP/s, B %.0f GB/s; sampled error %.2e (%s)\n", name.c_str(),
              dflt.str().c_str(), ms, flop / (ms * 1e-3) / 1e12, b_bytes / (ms * 1e-3) / 1e9, err, err <= tol ? "ok" : "FAIL");
  result(name, ms, flop / (ms * 1e-3) / 1e12, "TFLOP/s");
  if (sh.m <= 16) result(name + "_B", ms, b_bytes / (ms * 1e-3) / 1e9, "GB/s");
  if (!sweep) return;
  double best = ms;
  std::string best_cfg = dflt.str() + " (default)";
  for (const auto& c : sweep_candidates(ctx.info(), d, sh)) {
    if (c.str() == dflt.str()) continue;
    const double t = time_cfg(c, &err, 300);
    std::printf("SWEEP %s %-62s %9.4f ms %8.2f TFLOP/s %7.0f GB/s %s\n", name.c_str(), c.str().c_str(), t,
                flop / (t * 1e-3) / 1e12, b_bytes / (t * 1e-3) / 1e9, err <= tol ? "ok" : "WRONG");
    std::fflush(stdout);
    if (err <= tol && t < best) best = t, best_cfg = c.str();
  }
  std::printf("BEST %s %s %.4f ms (default %.4f ms, %.2fx)\n", name.c_str(), best_cfg.c_str(), best, ms, ms / best);
  std::fflush(stdout);
}

/// `--coopmat2`: every coopmat2 config of the tuner's space (and the NV
/// subgroup-scope default beside it) at the f16 prefill and square shapes,
/// each on the same context, and the fused bias+gelu_tanh epilogue on the
/// default config at 4096³; then bf16 with its default config (coopmat2 where
/// the device has bf16 matrices) at 4096³ and 8192³, and bias+gelu_tanh at
/// 4096³ (rows gemm_bf16_<shape>, gemm_bias_gelu_bf16_<shape>: torch_gemm.py
/// times cuBLAS under the same names). GPU timestamps (a split gemm: both
/// dispatches), median of 10 after 0.3 s of warm-up: a pipeline of this
/// kernel takes seconds to build, and the GPU idles down meanwhile. `--smoke`:
/// one small shape; its bf16 rows run on any device with 16-bit storage (the
/// default config there), so that the bf16 path is exercised on lavapipe.
void coopmat2_sweep(bool smoke, bool bf16_only) {
  vulkan::context ctx;
  const auto& d = ctx.info();
  std::printf("coopmat2: %s; max workgroup %u, max dimension %u, reserved shared %u; shapes: %s\n",
              d.nv_cooperative_matrix2 ? "yes" : "no", d.coopmat2_max_workgroup, d.coopmat2_max_dimension,
              d.coopmat2_reserved_shared, vulkan::detail::coopmat2_shapes_str(d).c_str());
  std::vector<gemm_shape> shapes{{4096, 4096, 4096}, {512, 4096, 4096}, {2048, 4096, 4096}, {4096, 11008, 4096},
                                 {512, 14336, 4096}, {64, 4096, 4096}, {8192, 8192, 8192}};
  std::vector<gemm_shape> bf16_shapes{{4096, 4096, 4096}, {8192, 8192, 8192}};
  if (smoke) shapes = bf16_shapes = {{136, 264, 72}};
  auto time = [&](auto& p, const vulkan::gemm_config& c, const gemm_shape& sh, dtype dt, bool bias_gelu, double* err) {
    const vulkan::buffer_ref br = p.bias.ref();
    const std::size_t per_call = vulkan::gemm_splits_used(c, static_cast<std::uint64_t>(sh.k)) > 1 ? 2 : 1;
    const double ms = median_ms(ctx, [&](vulkan::stream& s) {
      vulkan::record_gemm(s, dt, c, sh.m, sh.n, sh.k, 1.0f, 0.0f, bias_gelu ? fn::gelu_tanh : fn::identity, 0.0f, p.a.ref(),
                          p.b.ref(), bias_gelu ? &br : nullptr, p.c.ref());
    }, 10, per_call, 0.3);
    *err = p.check(bias_gelu);
    return ms;
  };
  // bf16: the default config (coopmat2 on a device with bf16 matrices), plain and with bias+gelu_tanh.
  auto bf16_rows = [&] {
    for (const auto& sh : bf16_shapes) {
      gemm_problem<bfloat16> p(ctx, sh.m, sh.n, sh.k);
      const double flop = 2.0 * sh.m * sh.n * sh.k;
      const auto dflt = vulkan::knobs<>::gemm(d, dtype::bf16, static_cast<std::uint64_t>(sh.m),
                                              static_cast<std::uint64_t>(sh.n), static_cast<std::uint64_t>(sh.k));
      for (const bool bias_gelu : {false, true}) {
        if (bias_gelu && sh.m != bf16_shapes.front().m) continue;
        double err = 0;
        const double ms = time(p, dflt, sh, dtype::bf16, bias_gelu, &err);
        const std::string name = std::string(bias_gelu ? "gemm_bias_gelu_bf16_" : "gemm_bf16_") + sh.name();
        std::printf("  %s config: %s; sampled error %.2e (%s)\n", name.c_str(), dflt.str().c_str(), err,
                    err <= check_tolerance(dtype::bf16) ? "ok" : "WRONG");
        result(name, ms, flop / (ms * 1e-3) / 1e12, "TFLOP/s");
      }
    }
  };
  if (bf16_only) {
    if (d.storage_16bit) bf16_rows();
    return;
  }
  if (!vulkan::coopmat2_available(d, dtype::f16)) {
    if (smoke && d.storage_16bit) bf16_rows();
    return;
  }
  for (const auto& sh : shapes) {
    gemm_problem<half> p(ctx, sh.m, sh.n, sh.k);
    const double flop = 2.0 * sh.m * sh.n * sh.k;
    // The tiles of the default's list and their neighbours (each pipeline is built once per context,
    // then reused by the next shapes), split along K where the grid is thin.
    std::vector<vulkan::gemm_config> cands;
    using vulkan::gemm_kernel;
    for (const vulkan::gemm_config& c : {vulkan::gemm_config{gemm_kernel::coopmat2, 128, 256, 32, 4, 0, 8, 0, 8, 1},
                                         {gemm_kernel::coopmat2, 128, 128, 32, 2, 0, 4, 0, 8, 1},
                                         {gemm_kernel::coopmat2, 128, 128, 32, 4, 0, 8, 0, 8, 1},
                                         {gemm_kernel::coopmat2, 256, 128, 32, 4, 0, 8, 0, 8, 1},
                                         {gemm_kernel::coopmat2, 64, 128, 32, 2, 0, 4, 0, 8, 1},
                                         {gemm_kernel::coopmat2, 64, 64, 32, 2, 0, 4, 0, 8, 1},
                                         {gemm_kernel::coopmat2, 32, 128, 32, 2, 0, 4, 0, 8, 1}})
      for (std::uint32_t s : {1u, 2u, 4u, 8u}) {
        vulkan::gemm_config x = c;
        x.splits = s;
        const std::uint64_t tiles = ((static_cast<std::uint64_t>(sh.m) + c.bm - 1) / c.bm) * ((static_cast<std::uint64_t>(sh.n) + c.bn - 1) / c.bn);
        if (s > 1 && tiles * s > 1024) break;
        if (vulkan::gemm_config_check(d, dtype::f16, x).empty()) cands.push_back(x);
      }
    const auto dflt = vulkan::gemm_default_config(d, dtype::f16, static_cast<std::uint64_t>(sh.m),
                                                  static_cast<std::uint64_t>(sh.n), static_cast<std::uint64_t>(sh.k));
    cands.insert(cands.begin(), dflt);
    vulkan::device_info nv1 = d;
    nv1.nv_cooperative_matrix2 = false;
    cands.push_back(vulkan::gemm_default_config(nv1, dtype::f16, static_cast<std::uint64_t>(sh.m),
                                                static_cast<std::uint64_t>(sh.n), static_cast<std::uint64_t>(sh.k)));
    double best = 1e30;
    vulkan::gemm_config best_cfg = cands.front();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const auto& c = cands[i];
      if (i && c.str() == dflt.str()) continue;
      double err = 0, ms = 0;
      try {
        ms = time(p, c, sh, dtype::f16, false, &err);
      } catch (const vulkan::vulkan_error& e) {
        std::printf("SWEEP gemm_f16_%s %-62s refused: %s\n", sh.name().c_str(), c.str().c_str(), e.what());
        continue;
      }
      const bool ok = err <= 2e-3;
      std::printf("SWEEP gemm_f16_%s %-62s %9.4f ms %8.2f TFLOP/s %s%s\n", sh.name().c_str(), c.str().c_str(), ms,
                  flop / (ms * 1e-3) / 1e12, ok ? "ok" : "WRONG", i == 0 ? " (default)" : "");
      std::fflush(stdout);
      if (ok && ms < best) best = ms, best_cfg = c;
    }
    std::printf("BEST gemm_f16_%s %s %.4f ms %.2f TFLOP/s\n", sh.name().c_str(), best_cfg.str().c_str(), best,
                flop / (best * 1e-3) / 1e12);
    if (sh.m == 4096 && sh.n == 4096) {  // the fused epilogue on the default config
      double err = 0;
      const double ms = time(p, dflt, sh, dtype::f16, true, &err);
      std::printf("SWEEP gemm_bias_gelu_f16_%s %-52s %9.4f ms %8.2f TFLOP/s %s\n", sh.name().c_str(), dflt.str().c_str(), ms,
                  flop / (ms * 1e-3) / 1e12, err <= 2e-3 ? "ok" : "WRONG");
    }
  }
  if (vulkan::coopmat2_available(d, dtype::bf16) || (smoke && d.storage_16bit)) bf16_rows();
}

/// `--coopmat2-variants`: the coopmat2 kernel's code-shape options (fast
/// path or bounds-checked loads only, K steps unrolled per iteration) at
/// 4096³ f16 for a few tiles, each pipeline built from the emitter directly;
/// what chose the kernel's defaults. A pipeline the driver refuses is
/// reported, not fatal.
void coopmat2_variants() {
  vulkan::context ctx;
  const auto& d = ctx.info();
  if (!vulkan::coopmat2_available(d, dtype::f16)) {
    std::printf("coopmat2 variants: no workgroup-scope f16 matrices\n");
    return;
  }
  const index_t n = 4096;
  gemm_problem<half> p(ctx, n, n, n);
  struct tile {
    std::uint32_t bm, bn, bk, wg;
  };
  // The fast path at the defaults' tiles and unrolling, with the experiments' options: A and B
  // through uvec4 pointers, and B stored [N, K] (read through a transposing view).
  for (const tile t : {tile{128, 256, 32, 256}, tile{128, 128, 32, 128}, tile{128, 128, 64, 256}})
    for (int opt = 0; opt < 4; ++opt)
      for (std::uint32_t u : {t.wg == 256 ? 4u : 2u}) {
        const int fast = 1;
        vulkan::spirv::gemm_coopmat2_spec spec;
        spec.unroll = u, spec.fast_path = true, spec.vec_pointers = opt & 1, spec.b_kmajor = (opt & 2) != 0;
        vulkan::shader_variant v;
        v.name = spec.name();
        v.spirv = vulkan::spirv::gemm_coopmat2(spec);
        char label[128];
        std::snprintf(label, sizeof label, "%ux%ux%u/%u %s unroll %u%s%s", t.bm, t.bn, t.bk, t.wg, fast ? "fast" : "clamped", u,
                      spec.vec_pointers ? " uvec4" : "", spec.b_kmajor ? " B[N,K]" : "");
        try {
          const auto& pl = ctx.get_pipeline(v, {4, 24, {0, 1, 2, 3, 4}}, {t.wg, t.bm, t.bn, t.bk, 8});
          struct {
            std::uint32_t m, n, k;
            float alpha, beta, slope;
          } pc{4096, 4096, 4096, 1.0f, 0.0f, 0.0f};
          const double ms = median_ms(ctx, [&](vulkan::stream& s) {
            s.dispatch(pl, {{p.a.ref()}, {p.b.ref()}, {p.a.ref()}, {p.c.ref(), true}}, &pc, sizeof pc,
                       {static_cast<std::uint32_t>(n / t.bn), static_cast<std::uint32_t>(n / t.bm), 1}, "cm2");
          }, 10, 1, 0.3);
          const double err = p.check(false, spec.b_kmajor);
          std::printf("VARIANT %-44s %8.4f ms %8.2f TFLOP/s %s%s%s\n", label, ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12,
                      err <= 2e-3 ? "ok" : "WRONG", pl.statistics.empty() ? "" : "\n  stats: ", pl.statistics.c_str());
        } catch (const std::exception& e) {
          std::printf("VARIANT %-44s refused: %s\n", label, e.what());
        }
        std::fflush(stdout);
      }
}

/// The tensor-core ceiling of the instructions Vulkan exposes here: matrix
/// multiply-adds on operands already in registers, no memory traffic in the
/// loop. NV (GL_NV_cooperative_matrix, glslang): each subgroup holds 4 A and
/// 2 B 16×16×16 f16 fragments and 8 f32 accumulators, as the gemm kernel's
/// warp tile; coopmat2 (workgroup scope, kforge's SPIR-V): one BM×BK A, one
/// BK×BN B and the BM×BN accumulator per workgroup. TFLOP/s over the
/// multiply-adds issued; one workgroup's result is stored so none is dead.
void mma_probes() {
  vulkan::context ctx;
  const auto& d = ctx.info();
  vulkan::device_tensor<float> out(ctx, {1 << 20});
  const std::uint32_t groups = 132 * 16;
  if (vulkan::coopmat_f16_available(d)) {
    vulkan::shader_variant v;
    v.name = "probe_mma_nv";
    v.source = R"glsl(#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer Out { float o[]; };
layout(push_constant) uniform P { uint iters; } pc;
shared float16_t sm[16 * 16 * 6];
void main() {
  for (uint i = gl_LocalInvocationID.x; i < 16 * 16 * 6; i += gl_WorkGroupSize.x) sm[i] = float16_t(float(i % 7) * 0.01);
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[4], b[2];
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[8];
  for (uint i = 0; i < 4; ++i) coopMatLoadNV(a[i], sm, i * 256, 16, false);
  for (uint j = 0; j < 2; ++j) coopMatLoadNV(b[j], sm, (4 + j) * 256, 16, false);
  for (uint i = 0; i < 8; ++i) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  for (uint it = 0; it < pc.iters; ++it)
    [[unroll]] for (uint i = 0; i < 4; ++i)
      [[unroll]] for (uint j = 0; j < 2; ++j) acc[i * 2 + j] = coopMatMulAddNV(a[i], b[j], acc[i * 2 + j]);
  for (uint i = 1; i < 8; ++i) acc[0] = acc[0] + acc[i];
  coopMatStoreNV(acc[0], o, (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * 256 % (1u << 20), 16, false);
}
)glsl";
    const std::uint32_t wg = 256, iters = 4096;
    const auto& pl = ctx.get_pipeline(v, {1, 4, {0}}, {wg});
    const double ms = median_ms(ctx, [&](vulkan::stream& s) { s.dispatch(pl, {{out.ref(), true}}, &iters, 4, {groups, 1, 1}, "probe"); },
                                10, 1, 0.3);
    const double flop = 2.0 * 16 * 16 * 16 * 8 * iters * (wg / 32) * groups;
    std::printf("PROBE mma NV subgroup 16x16x16 f16->f32, 8 warps x 8 accumulators: %.3f ms %.1f TFLOP/s%s%s\n", ms,
                flop / (ms * 1e-3) / 1e12, pl.statistics.empty() ? "" : "\n  stats: ", pl.statistics.c_str());
  }
  if (vulkan::coopmat2_available(d, dtype::f16)) {
    namespace sp = vulkan::spirv;
    struct tile {
      std::uint32_t bm, bn, bk, wg;
    };
    for (const tile t : {tile{128, 128, 32, 128}, tile{128, 128, 32, 256}, tile{128, 256, 32, 256}, tile{128, 128, 64, 256},
                         tile{256, 128, 32, 256}, tile{64, 64, 32, 128}}) {
      sp::module_builder mb;
      for (sp::word c : {sp::cap::shader, sp::cap::vulkan_memory_model, sp::cap::storage_buffer_16bit, sp::cap::float16,
                         sp::cap::cooperative_matrix_khr})
        mb.capability(c);
      mb.extension("SPV_KHR_cooperative_matrix");
      mb.memory_model_vulkan();
      const sp::id u32 = mb.type_uint(), f32 = mb.type_float(32), f16 = mb.type_float(16);
      const sp::id st = mb.type_struct({mb.type_runtime_array(f32, 4)});
      mb.decorate(st, sp::decoration::block);
      mb.member_decorate(st, 0, sp::decoration::offset, {0});
      const sp::id buf = mb.global(sp::storage::storage_buffer, st);
      mb.decorate(buf, sp::decoration::descriptor_set, {0});
      mb.decorate(buf, sp::decoration::binding, {0});
      const sp::id pt = mb.type_struct({u32});
      mb.decorate(pt, sp::decoration::block);
      mb.member_decorate(pt, 0, sp::decoration::offset, {0});
      const sp::id push = mb.global(sp::storage::push_constant, pt);
      const sp::id wgx = mb.spec_uint(0, t.wg);
      const sp::id zero = mb.const_uint(0), one = mb.const_uint(1), scope = mb.const_uint(2);
      const sp::id ta = mb.type_coopmat(f16, scope, mb.const_uint(t.bm), mb.const_uint(t.bk), mb.const_uint(sp::use_a));
      const sp::id tb = mb.type_coopmat(f16, scope, mb.const_uint(t.bk), mb.const_uint(t.bn), mb.const_uint(sp::use_b));
      const sp::id tc = mb.type_coopmat(f32, scope, mb.const_uint(t.bm), mb.const_uint(t.bn), mb.const_uint(sp::use_accumulator));
      const sp::id a = mb.const_composite(ta, {mb.const_bits(f16, 0x2000)}), b = mb.const_composite(tb, {mb.const_bits(f16, 0x2000)});
      const sp::id fn = mb.begin_function(mb.type_void(), mb.type_function(mb.type_void(), {}));
      mb.label(mb.new_label());
      const sp::id it = mb.local(u32), acc = mb.local(tc);
      mb.store(acc, mb.const_composite(tc, {mb.const_float(0.0f)}));
      const sp::id n = mb.load(u32, mb.access(mb.type_pointer(sp::storage::push_constant, u32), push, {zero}));
      mb.for_loop(it, zero, n, one, [&] {
        mb.store(acc, mb.inst(sp::op::cooperative_matrix_mul_add_khr, tc, {a, b, mb.load(tc, acc)}));
      });
      mb.inst_void(sp::op::cooperative_matrix_store_khr,
                   {mb.access(mb.type_pointer(sp::storage::storage_buffer, f32), buf, {zero, zero}), mb.load(tc, acc), zero,
                    mb.const_uint(t.bn)});
      mb.ret();
      mb.end_function();
      mb.entry_point(fn, mb.interface());
      mb.execution_mode_id(fn, 38, {wgx, one, one});
      vulkan::shader_variant v;
      char name[64];
      std::snprintf(name, sizeof name, "probe_mma_cm2_%ux%ux%u_%u", t.bm, t.bn, t.bk, t.wg);
      v.name = name;
      v.spirv = mb.words(0x00010600u);
      const std::uint32_t iters = 512;
      try {
        const auto& pl = ctx.get_pipeline(v, {1, 4, {0}}, {t.wg});
        const double ms = median_ms(ctx, [&](vulkan::stream& s) { s.dispatch(pl, {{out.ref(), true}}, &iters, 4, {groups, 1, 1}, "probe"); },
                                    10, 1, 0.3);
        const double flop = 2.0 * t.bm * t.bn * t.bk * iters * groups;
        std::printf("PROBE mma coopmat2 workgroup %ux%ux%u, %u invocations: %.3f ms %.1f TFLOP/s%s%s\n", t.bm, t.bn, t.bk, t.wg, ms,
                    flop / (ms * 1e-3) / 1e12, pl.statistics.empty() ? "" : "\n  stats: ", pl.statistics.c_str());
      } catch (const std::exception& e) {
        std::printf("PROBE mma coopmat2 %s refused: %s\n", name, e.what());
      }
      std::fflush(stdout);
    }
  }
}

// smoke: N, K and the copy 1/16 as large, M of the large shapes too (a
// CPU implementation's run of the code path, not a measurement).
void gemm_shapes(bool sweep, bool smoke) {
  auto scaled = [&](gemm_shape sh) {
    if (smoke) sh = {sh.m > 64 ? sh.m / 16 : sh.m, sh.n / 16 + 1, sh.k / 16 + 3};
    return sh;
  };
  {  // bandwidth reference: 256 MiB copy, bytes read + written
    vulkan::context ctx;
    const index_t r = smoke ? 2048 : 8192;
    vulkan::device_tensor<float> x(ctx, {r, r}), y(ctx, {r, r});
    x.upload(make_view(random_host<float>(static_cast<std::size_t>(r * r), 11), {r, r}));
    const double ms = per_call_ms(ctx, [&](vulkan::stream& s) { vulkan::record_copy(s, x.ref(), y.ref(), x.bytes()); }, 100);
    result("copy_256MiB", ms, 2.0 * r * r * 4 / (ms * 1e-3) / 1e9, "GB/s");
  }
  auto both = [&](const gemm_shape& sh) {
    shape_case<float>(sh, "f32", sweep);
    shape_case<half>(sh, "f16", sweep);
  };
  for (const auto& sh : model_shapes)
    if (!sweep || sh.m < 8192) both(scaled(sh));
  if (!sweep || smoke) return;
  for (const auto& sh : boundary_shapes) both(sh);
  // The f16 4096x11008x4096 case again, on a context that first ran the
  // other f16 shapes and still holds their memory (as in a long benchmark
  // process): is a slowdown there the kernel's or the memory's?
  vulkan::context ctx;
  std::deque<gemm_problem<half>> held;
  for (const auto& sh : model_shapes) {
    if (sh.n == 11008 || sh.m == 8192) continue;
    held.emplace_back(ctx, sh.m, sh.n, sh.k);
    auto& p = held.back();
    const auto cfg = vulkan::knobs<>::gemm(ctx.info(), dtype::f16, static_cast<std::uint64_t>(sh.m),
                                           static_cast<std::uint64_t>(sh.n), static_cast<std::uint64_t>(sh.k));
    vulkan::stream s(ctx);
    vulkan::record_gemm(s, dtype::f16, cfg, sh.m, sh.n, sh.k, 1.0f, 0.0f, fn::identity, 0.0f, p.a.ref(), p.b.ref(), nullptr, p.c.ref());
    s.run();
  }
  gemm_problem<half> p(ctx, 4096, 11008, 4096);
  const auto cfg = vulkan::knobs<>::gemm(ctx.info(), dtype::f16, 4096, 11008, 4096);
  const double ms = per_call_ms(ctx, [&](vulkan::stream& s) {
    vulkan::record_gemm(s, dtype::f16, cfg, 4096, 11008, 4096, 1.0f, 0.0f, fn::identity, 0.0f, p.a.ref(), p.b.ref(), nullptr, p.c.ref());
  }, 100);
  const double err = p.check(false);
  std::printf("SWEEP gemm_f16_4096x11008x4096_after_other_shapes %s %.4f ms %.2f TFLOP/s %s\n", cfg.str().c_str(), ms,
              2.0 * 4096 * 11008 * 4096 / (ms * 1e-3) / 1e12, err <= 2e-3 ? "ok" : "WRONG");
}

// ---- low-precision weights (issue 48) -----------------------------------------
// `--quant [--sweep] [--smoke]`: vulkan::gemm_quantized at the shapes of
// issue 48 (N×K = 14336×4096, 4096×14336, 6144×4096, 128256×4096; M = 1, 4,
// 8: the decode kernel, GB/s; M = 512, 2048: the prefill path, TFLOP/s; X
// and Y f16), every format, beside the f16-weight
// gemm of the same shape (policy::vulkan<>'s default config) and a 256 MiB
// copy. GB/s counts the packed bytes read (codes and scales), the copy's the
// bytes read and written. Each call reads the next of enough copies of W to
// pass 256 MiB, so W is never served from the GPU's L2 (50 MiB on the H200).
// Weights are random codes under fixed scales; 16 sampled outputs of each
// case are checked against an f64 dot product with core's dequantize_row.
quantized_matrix random_quantized(qformat f, index_t n, index_t k, unsigned seed) {
  const qformat_info in = info_of(f);
  const std::size_t bytes = static_cast<std::size_t>(n) * static_cast<std::size_t>(k / in.block * in.block_bytes);
  std::vector<std::uint8_t> b(bytes);
  std::uint64_t st = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t z = splitmix64(st);
    std::memcpy(b.data() + i, &z, std::min<std::size_t>(8, bytes - i));
  }
  std::vector<float> scales;
  if (in.row_scale) {
    scales.assign(static_cast<std::size_t>(n), 0.01f);
    for (auto& c : b)
      if (f == qformat::fp8_e4m3 ? (c & 0x7f) == 0x7f : (c & 0x7c) == 0x7c) c = 0;
  } else {
    for (std::size_t i = 0; i < bytes; i += static_cast<std::size_t>(in.block_bytes)) {
      if (f == qformat::mxfp4) b[i] = 120;
      else b[i] = 0x00, b[i + 1] = 0x20;  // f16 2^-7
    }
  }
  return quantized_matrix(f, n, k, std::move(b), std::move(scales));
}

void quant_cases(bool sweep, bool smoke) {
  vulkan::context ctx;
  {  // bandwidth reference: 256 MiB copy, bytes read + written
    const index_t r = smoke ? 2048 : 8192;
    vulkan::device_tensor<float> x(ctx, {r, r}), y(ctx, {r, r});
    x.upload(make_view(random_host<float>(static_cast<std::size_t>(r * r), 11), {r, r}));
    const double ms = per_call_ms(ctx, [&](vulkan::stream& s) { vulkan::record_copy(s, x.ref(), y.ref(), x.bytes()); }, 100);
    result("copy_256MiB", ms, 2.0 * r * r * 4 / (ms * 1e-3) / 1e9, "GB/s");
  }
  const std::vector<std::pair<index_t, index_t>> shapes = {{14336, 4096}, {4096, 14336}, {6144, 4096}, {128256, 4096}};
  const double pass_bytes = smoke ? 4.0 * (1 << 20) : 256.0 * (1 << 20);
  for (auto [n, k] : shapes) {
    if (smoke) n = n / 16 + 1, k /= 16;
    for (index_t m : {1, 4, 8, 512, 2048}) {
      const bool prefill = m >= vulkan::quant_dense_rows;  // W dequantized, then the f16 gemm
      const double flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
      // f16 weights: the gemm of today's decode path, B [K, N].
      const std::string sh = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
      auto hx = random_host<half>(static_cast<std::size_t>(m * k), 5);
      vulkan::device_tensor<half> x(ctx, {m, k}), y(ctx, {m, n});
      x.upload(make_view(hx, {m, k}));
      double f16_ms = 0;
      {
        const double b_bytes = 2.0 * static_cast<double>(n) * static_cast<double>(k);
        std::deque<vulkan::device_tensor<half>> bs;
        const int copies = static_cast<int>(std::ceil(pass_bytes / b_bytes));
        for (int i = 0; i < copies; ++i) {
          bs.emplace_back(ctx, shape{k, n});
          vulkan::stream s(ctx);
          s.fill(bs.back().ref(), bs.back().bytes(), static_cast<std::uint32_t>(0x2c002c00u + i));  // f16 1/16 + i ulps
          s.run();
        }
        const auto cfg = vulkan::knobs<>::gemm(ctx.info(), dtype::f16, static_cast<std::uint64_t>(m),
                                               static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(k));
        int next = 0;
        f16_ms = per_call_ms(ctx, [&](vulkan::stream& s) {
          vulkan::record_gemm(s, dtype::f16, cfg, m, n, k, 1.0f, 0.0f, fn::identity, 0.0f, x.ref(),
                              bs[static_cast<std::size_t>(next++ % copies)].ref(), nullptr, y.ref());
        }, 2000, 300);
        if (prefill) result("qgemm_f16_" + sh, f16_ms, flop / (f16_ms * 1e-3) / 1e12, "TFLOP/s");
        else result("qgemv_f16_" + sh, f16_ms, b_bytes / (f16_ms * 1e-3) / 1e9, "GB/s");
      }
      for (qformat f : all_qformats) {
        const std::string name = (prefill ? "qgemm_" : "qgemv_") + std::string(to_string(f)) + "_" + sh;
        const quantized_matrix q = random_quantized(f, n, k, 7);
        std::deque<vulkan::quantized_tensor> ws;
        ws.emplace_back(ctx, q);
        const double w_bytes = static_cast<double>(ws.front().bytes());
        const int copies = static_cast<int>(std::ceil(pass_bytes / w_bytes));
        for (int i = 1; i < copies; ++i) ws.emplace_back(ctx, q);
        auto time_cfg = [&](const vulkan::qgemv_config* cfg) {
          int next = 0;
          return per_call_ms(ctx, [&](vulkan::stream& s) {
            vulkan::gemm_quantized(s, ws[static_cast<std::size_t>(next++ % copies)], x, y, cfg);
          }, 2000, 300);
        };
        auto check = [&] {
          const auto hy = y.to_vector();
          std::vector<float> row(static_cast<std::size_t>(k));
          double worst = 0;
          for (int t = 0; t < 16; ++t) {
            const index_t i = t % m, c = (static_cast<index_t>(t) * 7919) % n;
            q.dequantize_row(c, row.data());
            double ref = 0, mag = 0;
            for (index_t j = 0; j < k; ++j) {
              const double p = static_cast<double>(static_cast<float>(hx[static_cast<std::size_t>(i * k + j)])) * row[static_cast<std::size_t>(j)];
              ref += p;
              mag += std::fabs(p);
            }
            worst = std::max(worst, std::fabs(static_cast<float>(hy[static_cast<std::size_t>(i * n + c)]) - ref) / (mag + 1e-30));
          }
          return worst;
        };
        const double ms = time_cfg(nullptr);
        const double err = check();
        if (prefill) {
          std::printf("  %s dequantized + f16 gemm: %.4f ms, %.1f TFLOP/s, %.2fx the f16 weights' rate; sampled error %.2e (%s)\n",
                      name.c_str(), ms, flop / (ms * 1e-3) / 1e12, f16_ms / ms, err, err <= 2e-3 ? "ok" : "FAIL");
          result(name, ms, flop / (ms * 1e-3) / 1e12, "TFLOP/s");
          std::fflush(stdout);
          continue;
        }
        const auto d = vulkan::default_qgemv_config(m);
        std::printf("  %s default wg %u rows %u bm %u: %.4f ms, %.0f GB/s packed, %.2fx the f16 weights' time; sampled error %.2e (%s)\n",
                    name.c_str(), d.wg, d.rows, d.bm, ms, w_bytes / (ms * 1e-3) / 1e9, f16_ms / ms, err, err <= 2e-3 ? "ok" : "FAIL");
        result(name, ms, w_bytes / (ms * 1e-3) / 1e9, "GB/s");
        std::fflush(stdout);
        if (!sweep) continue;
        double best = ms;
        std::string best_cfg = "default";
        const auto um = static_cast<std::uint32_t>(m);
        for (std::uint32_t probe : {1u, 2u}) {
          vulkan::qgemv_config c = d;
          c.probe = probe;
          const double t = time_cfg(&c);
          std::printf("PROBE %s without %s: %.4f ms %.0f GB/s\n", name.c_str(), probe == 1 ? "decoding" : "X loads", t,
                      w_bytes / (t * 1e-3) / 1e9);
        }
        const bool has_pairs = f == qformat::q8_0 || f == qformat::q4_0;
        for (std::uint32_t pairs : {0u, 1u})
          for (std::uint32_t wg : {64u, 128u, 256u})
            for (std::uint32_t rows : {1u, 2u, 4u, 8u})
              for (std::uint32_t bm : {um, 4u}) {
                if ((pairs && !has_pairs) || bm > um || (bm != um && um != 8) || rows * bm > 64) continue;
                const vulkan::qgemv_config c{wg, rows, bm, pairs};
                const double t = time_cfg(&c);
                const double e = check();
                const std::string cs = "wg " + std::to_string(wg) + " rows " + std::to_string(rows) + " bm " +
                                       std::to_string(bm) + " pairs " + std::to_string(pairs);
                std::printf("SWEEP %s %s %.4f ms %.0f GB/s %s\n", name.c_str(), cs.c_str(), t, w_bytes / (t * 1e-3) / 1e9,
                            e <= 2e-3 ? "ok" : "WRONG");
                std::fflush(stdout);
                if (e <= 2e-3 && t < best) best = t, best_cfg = cs;
              }
        std::printf("BEST %s %s %.4f ms (default %.4f ms, %.2fx)\n", name.c_str(), best_cfg.c_str(), best, ms, ms / best);
      }
    }
  }
}
}  // namespace

// ---- attention (issue 11) ---------------------------------------------------
// f16 prefill (causal, S = L = 4096, D 64 / 128, 32 query heads over 32 or 8
// KV heads), decode (S = 1, L 4096 / 32768, D 128, 32 over 8) and B8 H16
// S2048 D64; prefill rates in TFLOP/s over the query-key pairs computed,
// decode in GB/s of K and V read once. Each case checks four query rows
// (first and last head and position) against a double-precision reference.
struct attention_case {
  const char* name;
  index_t b, h, hkv, s, l, d;
  bool causal;
};

double attention_check(const attention_case& c, const std::vector<half>& hq, const std::vector<half>& hk,
                       const std::vector<half>& hv, const std::vector<half>& ho) {
  const index_t g = c.h / c.hkv;
  double worst = 0;
  for (index_t bh : {index_t{0}, c.b * c.h - 1})
    for (index_t row : {index_t{0}, std::min(c.s - 1, c.s / 2 + 7), c.s - 1}) {
      const index_t b = bh / c.h, hh = bh % c.h, kv = b * c.hkv + hh / g;
      const index_t n = c.causal ? std::min(c.l, row + 1) : c.l;
      std::vector<double> sc(static_cast<std::size_t>(n));
      double mx = -1e300, sum = 0;
      for (index_t j = 0; j < n; ++j) {
        double dot = 0;
        for (index_t e = 0; e < c.d; ++e)
          dot += double(float(hq[(bh * c.s + row) * c.d + e])) * double(float(hk[(kv * c.l + j) * c.d + e]));
        sc[static_cast<std::size_t>(j)] = dot / std::sqrt(double(c.d));
        mx = std::max(mx, sc[static_cast<std::size_t>(j)]);
      }
      for (auto& x : sc) sum += (x = std::exp(x - mx));
      for (index_t e = 0; e < c.d; ++e) {
        double ref = 0;
        for (index_t j = 0; j < n; ++j) ref += sc[static_cast<std::size_t>(j)] / sum * double(float(hv[(kv * c.l + j) * c.d + e]));
        const double got = double(float(ho[(bh * c.s + row) * c.d + e]));
        worst = std::max(worst, std::isnan(got) ? 1e30 : std::fabs(got - ref));
      }
    }
  return worst;
}

void attention_cases(vulkan::context& ctx, bool sweep, bool probes = false, bool parts = false, bool decode_only = false) {
  const attention_case cases[] = {
      {"attention_f16_causal_b1h32s4096d64", 1, 32, 32, 4096, 4096, 64, true},
      {"attention_f16_causal_b1h32kv8s4096d64", 1, 32, 8, 4096, 4096, 64, true},
      {"attention_f16_causal_b1h32s4096d128", 1, 32, 32, 4096, 4096, 128, true},
      {"attention_f16_causal_b1h32kv8s4096d128", 1, 32, 8, 4096, 4096, 128, true},
      {"attention_f16_decode_b1h32kv8l4096d128", 1, 32, 8, 1, 4096, 128, false},
      {"attention_f16_decode_b1h32kv8l32768d128", 1, 32, 8, 1, 32768, 128, false},
      {"attention_f16_b8h16s2048d64", 8, 16, 16, 2048, 2048, 64, false},
  };
  const std::vector<vulkan::attention_coopmat_config> tilings = {
      {4, 1, 32}, {4, 1, 64}, {4, 2, 32}, {4, 2, 64}, {8, 1, 32}, {8, 1, 64}, {8, 2, 32}};
  for (const auto& c : cases) {
    if (decode_only && c.s != 1) continue;
    const shape qs{c.b, c.h, c.s, c.d}, ks{c.b, c.hkv, c.l, c.d};
    const auto hq = random_host<half>(static_cast<std::size_t>(qs.numel()), 41);
    const auto hk = random_host<half>(static_cast<std::size_t>(ks.numel()), 42);
    const auto hv = random_host<half>(static_cast<std::size_t>(ks.numel()), 43);
    vulkan::device_tensor<half> q(ctx, qs), k(ctx, ks), v(ctx, ks), o(ctx, qs);
    q.upload(make_view(hq, qs));
    k.upload(make_view(hk, ks));
    v.upload(make_view(hv, ks));
    const vulkan::attention_dims a{c.b, c.h, c.hkv, c.s, c.l, c.d, c.d, c.causal, false};
    const auto kind = vulkan::attention_kernel_for(ctx.info(), dtype::f16, a);
    const std::size_t per_call = kind == vulkan::attention_kernel::split && vulkan::attention_split_plan_for(a).nsplit > 1 ? 2 : 1;
    const double s = static_cast<double>(c.s), l = static_cast<double>(c.l);
    const double pairs = !c.causal ? s * l : s <= l ? s * (s + 1) / 2 : l * (l + 1) / 2 + (s - l) * l;
    const double tflop = 4.0 * c.b * c.h * pairs * c.d / 1e12, gb = 2.0 * 2 * c.b * c.hkv * c.l * c.d / 1e9;
    const bool decode = c.s == 1;
    auto report = [&](const std::string& what, double ms, bool as_result) {
      const double err = attention_check(c, hq, hk, hv, o.to_vector());
      const char* ok = err < 4e-3 ? "ok" : "FAIL";
      if (as_result) {
        std::printf("  %s kernel %s: sampled max abs error %.2e (%s)\n", c.name, what.c_str(), err, ok);
        result(c.name, ms, decode ? gb / (ms * 1e-3) : tflop / (ms * 1e-3), decode ? "GB/s" : "TFLOP/s");
      } else {
        std::printf("  sweep %s %s: %.4f ms %.1f %s, error %.2e (%s)\n", c.name, what.c_str(), ms,
                    decode ? gb / (ms * 1e-3) : tflop / (ms * 1e-3), decode ? "GB/s" : "TFLOP/s", err, ok);
      }
      std::fflush(stdout);
    };
    op::attention<half> att;
    att.causal = c.causal;
    const double ms = median_ms(ctx, [&](vulkan::stream& st) { vulkan::record(st, att, q, k, v, o); }, 10, per_call, 0.3);
    std::string what(vulkan::to_string(kind));
    if (kind == vulkan::attention_kernel::coopmat) what += " (" + vulkan::attention_coopmat_default(c.d, c.d).str() + ")";
    if (kind == vulkan::attention_kernel::split) what += " (" + std::to_string(vulkan::attention_split_plan_for(a).nsplit) + " splits)";
    report(what, ms, true);
    if ((sweep || decode_only) && kind == vulkan::attention_kernel::split)
      for (std::uint64_t groups : {128, 256, 512, 1024, 2048})
        for (std::uint32_t lanes : {1u, 4u, 8u, 16u})
          for (std::uint32_t loads : {4u, 8u, 16u}) {
            if (lanes > vulkan::attention_split_max_lanes(ctx.info()) || (groups != 512 && lanes != 1 && lanes != 8) ||
                (loads != 8 && (groups != 512 || lanes == 1)))
              continue;
            auto plan = vulkan::attention_split_plan_for(a, groups);
            plan.lanes = lanes;
            plan.loads = loads;
            const double tm = median_ms(ctx, [&](vulkan::stream& st) {
              vulkan::record_attention(st, dtype::f16, a, 1.0f / std::sqrt(static_cast<float>(c.d)), q.ref(), k.ref(), v.ref(),
                                       o.ref(), -1, 128, nullptr, &plan);
            }, 10, plan.nsplit > 1 ? 2 : 1, 0.3);
            report("split " + std::to_string(plan.nsplit) + " x " + std::to_string(plan.chunk) + " keys, " +
                       std::to_string(lanes) + " lanes per key, " + std::to_string(loads) + " loads", tm, false);
          }
    const float sc = 1.0f / std::sqrt(static_cast<float>(c.d));
    // The workgroup-scope kernel beside the default where the device has it (no policy picks it:
    // vulkan/attention.hpp says why), and in a sweep every tiling the device takes and the timing
    // probes (parts of its softmax left out: wrong results, so their checks fail).
    const vulkan::attention_coopmat2_config t2d = vulkan::attention_coopmat2_default(c.d, c.d);
    if (!parts && c.s > 1 && vulkan::attention_coopmat2_check(ctx.info(), dtype::f16, c.d, c.d, t2d).empty()) {
      std::vector<vulkan::attention_coopmat2_config> t2s{t2d};
      if ((sweep || probes) && (!probes || (c.d == 128 && c.causal && c.h == c.hkv))) {
        for (const vulkan::attention_coopmat2_config t2 : {vulkan::attention_coopmat2_config{32, 16, 64}, {32, 16, 32},
                                                           {64, 32, 64}, {64, 32, 32}, {128, 64, 32}, {256, 64, 64},
                                                           {256, 128, 64}})
          t2s.push_back(t2);
        for (std::uint32_t probe = 1; probe <= 4; ++probe) t2s.push_back({t2d.wg, t2d.br, t2d.bc, probe});
      }
      for (const auto& t2 : t2s) {
        const std::string why = vulkan::attention_coopmat2_check(ctx.info(), dtype::f16, c.d, c.d, t2);
        if (!why.empty() || c.s % t2.br || c.l % t2.bc) {
          std::printf("  sweep %s coopmat2 %s: refused (%s)\n", c.name, t2.str().c_str(), why.empty() ? "S, L not in whole blocks" : why.c_str());
          continue;
        }
        const double t2m = median_ms(ctx, [&](vulkan::stream& st) {
          vulkan::record_attention(st, dtype::f16, a, sc, q.ref(), k.ref(), v.ref(), o.ref(), 1, 128, nullptr, nullptr, &t2);
        }, 10, 1, 0.3);
        report("coopmat2 " + t2.str(), t2m, false);
      }
    }
    // Timing probes of the default kernel (attention_coopmat's PROBE bits: parts of the work left
    // out, wrong results by design) with the driver's statistics of each pipeline
    // (KFORGE_VK_PIPELINE_STATS=1): where a block's time goes.
    if (parts && kind == vulkan::attention_kernel::coopmat && c.causal && c.h == c.hkv) {
      const vulkan::attention_coopmat_config base = vulkan::attention_coopmat_default(c.d, c.d);
      for (const std::uint32_t bits : {0u, 1u, 4u, 5u, 2u, 8u, 16u, 24u, 26u, 7u, 31u}) {
        vulkan::attention_coopmat_config t = base;
        t.probe = bits;
        const double tm = median_ms(ctx, [&](vulkan::stream& st) {
          vulkan::record_attention(st, dtype::f16, a, sc, q.ref(), k.ref(), v.ref(), o.ref(), 1, 128, &t);
        }, 10, 1, 0.3);
        report(t.str(), tm, false);
        const auto& pl = vulkan::attention_coopmat_pipeline(ctx, dtype::f16, c.d, c.d, t);
        if (!pl.statistics.empty()) std::printf("    stats: %s\n", pl.statistics.c_str());
      }
    }
    if ((!sweep && !parts) || probes || kind != vulkan::attention_kernel::coopmat) continue;
    for (const auto& t : tilings) {
      const std::string why = vulkan::attention_coopmat_check(ctx.info(), dtype::f16, c.d, c.d, t);
      if (!why.empty()) {
        std::printf("  sweep %s %s: refused (%s)\n", c.name, t.str().c_str(), why.c_str());
        continue;
      }
      const double tm = median_ms(ctx, [&](vulkan::stream& st) {
        vulkan::record_attention(st, dtype::f16, a, 1.0f / std::sqrt(static_cast<float>(c.d)), q.ref(), k.ref(), v.ref(),
                                 o.ref(), 1, 128, &t);
      }, 10, 1, 0.3);
      report(t.str(), tm, false);
      const auto& pl = vulkan::attention_coopmat_pipeline(ctx, dtype::f16, c.d, c.d, t);
      if (!pl.statistics.empty()) std::printf("    stats: %s\n", pl.statistics.c_str());
    }
  }
}

int run_bench(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool sweep = mode == "--sweep";
  vulkan::context ctx;
  std::printf("%s", vulkan::devices_text().c_str());
  std::printf("using: %s; NV coopmat 16x16x16 f16: %s\n", ctx.info().name.c_str(),
              ctx.info().nv_coopmat_f16_16x16x16 ? "yes" : "no");
  if (mode == "--quant") {
    quant_cases(argc > 2 && std::string(argv[2]) == "--sweep", argc > 2 && std::string(argv[2]) == "--smoke");
    return 0;
  }
  if (mode == "--mma-probes") {
    mma_probes();
    return 0;
  }
  if (mode == "--coopmat2-variants") {
    coopmat2_variants();
    return 0;
  }
  if (mode == "--coopmat2") {
    // --smoke: tiny shapes (any device); --bf16: only the bf16 rows at full size.
    coopmat2_sweep(argc > 2 && std::string(argv[2]) == "--smoke", argc > 2 && std::string(argv[2]) == "--bf16");
    return 0;
  }
  if (mode == "--gemm-shapes" || mode == "--gemm-sweep") {
    // Shapes given as MxNxK after the mode replace the built-in list (both dtypes each).
    std::vector<gemm_shape> given;
    bool f16_only = false, bf16 = false;
    for (int i = 2; i < argc; ++i) {
      long long m = 0, n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(argv[i], "%lldx%lldx%lld%c", &m, &n, &k, &tail) == 3 && m > 0 && n > 0 && k > 0)
        given.push_back({static_cast<index_t>(m), static_cast<index_t>(n), static_cast<index_t>(k)});
      else if (std::string(argv[i]) == "--f16")
        f16_only = true;
      else if (std::string(argv[i]) == "--bf16")
        bf16 = true;
      else if (std::string(argv[i]) != "--smoke") {
        std::fprintf(stderr, "vk_bench: '%s' is not a gemm shape MxNxK\n", argv[i]);
        return 2;
      }
    }
    if (!given.empty()) {
      for (const auto& sh : given) {
        if (bf16) {
          shape_case<bfloat16>(sh, "bf16", mode == "--gemm-sweep");
          continue;
        }
        if (!f16_only) shape_case<float>(sh, "f32", mode == "--gemm-sweep");
        shape_case<half>(sh, "f16", mode == "--gemm-sweep");
      }
      return 0;
    }
    gemm_shapes(mode == "--gemm-sweep", argc > 2 && std::string(argv[2]) == "--smoke");
    return 0;
  }
  if (mode == "--split-parts") {
    for (int i = 2; i < argc; ++i) {
      long long m = 0, n = 0, k = 0;
      char tail = 0;
      if (std::sscanf(argv[i], "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 || k <= 0) {
        std::fprintf(stderr, "vk_bench: '%s' is not a gemm shape MxNxK\n", argv[i]);
        return 2;
      }
      gemm_problem<half> p(ctx, m, n, k);
      using vulkan::gemm_kernel;
      for (const vulkan::gemm_config& c : {vulkan::gemm_config{gemm_kernel::coopmat2, 128, 128, 32, 4, 0, 8, 0, 8, 1},
                                           vulkan::gemm_config{gemm_kernel::coopmat2, 128, 128, 32, 4, 0, 8, 0, 8, 2},
                                           vulkan::gemm_config{gemm_kernel::coopmat2, 64, 128, 32, 2, 0, 4, 0, 8, 2},
                                           vulkan::gemm_config{gemm_kernel::coopmat2, 128, 256, 32, 4, 0, 8, 0, 8, 2},
                                           vulkan::gemm_config{gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 8, 2}}) {
        if (!vulkan::gemm_config_check(ctx.info(), dtype::f16, c).empty()) continue;
        const std::size_t pc = vulkan::gemm_splits_used(c, static_cast<std::uint64_t>(k)) > 1 ? 2 : 1;
        const auto t = call_ms(ctx, [&](vulkan::stream& s) {
          vulkan::record_gemm(s, dtype::f16, c, m, n, k, 1.0f, 0.0f, fn::identity, 0.0f, p.a.ref(), p.b.ref(), nullptr, p.c.ref());
        }, 10, pc, 0.3);
        std::vector<double> a, b;
        for (const auto& call : t) {
          a.push_back(call[0]);
          if (pc == 2) b.push_back(call[1]);
        }
        const double err = p.check(false);
        std::printf("PARTS %lldx%lldx%lld %-60s first %.4f ms sum %.4f ms err %.2e (%s)\n", m, n, k, c.str().c_str(), median_of(a),
                    b.empty() ? 0.0 : median_of(b), err, err <= check_tolerance(dtype::f16) ? "ok" : "WRONG");
        std::fflush(stdout);
      }
    }
    return 0;
  }
  if (mode == "--attention" || mode == "--attention-sweep" || mode == "--attention-probes" || mode == "--attention-parts" ||
      mode == "--attention-decode") {
    if (!ctx.info().storage_16bit) {
      std::printf("attention cases need 16-bit storage\n");
      return 1;
    }
    attention_cases(ctx, mode == "--attention-sweep", mode == "--attention-probes", mode == "--attention-parts",
                    mode == "--attention-decode");
    return 0;
  }
  if (mode == "--sweep-mem") {
    mem_sweep(ctx);
    return 0;
  }
  if (mode == "--sweep-f32") {
    for (auto [bm, bn, bk, tm, tn] : std::initializer_list<std::array<std::uint32_t, 5>>{
             {128, 64, 8, 8, 4}, {128, 128, 8, 8, 8}, {128, 128, 16, 8, 8}, {128, 64, 16, 8, 8},
             {64, 128, 16, 8, 8}, {128, 128, 8, 8, 4}, {128, 128, 16, 8, 4}, {256, 128, 8, 8, 8},
             {128, 128, 8, 4, 8}, {64, 64, 8, 8, 8}, {128, 256, 8, 8, 8}})
      for (std::uint32_t gm : {8u}) {
        const vulkan::gemm_config c{vulkan::gemm_kernel::tiled, bm, bn, bk, tm, tn, 8, 2, gm};
        const std::string why = vulkan::gemm_config_check(ctx.info(), dtype::f32, c);
        if (!why.empty()) {
          std::printf("  sweep f32 %s: refused (%s)\n", c.str().c_str(), why.c_str());
          continue;
        }
        for (index_t n : {2048, 4096}) gemm_case<float>(ctx, "f32", n, &c);
      }
    return 0;
  }

  if (sweep) {
    // gemv is for a few rows (it reads B once per workgroup row): --gemm-sweep times it.
    for (const auto& c : vulkan::gemm_configs(ctx.info(), dtype::f32))
      if (c.kernel != vulkan::gemm_kernel::gemv) gemm_case<float>(ctx, "f32", 4096, &c);
    if (ctx.info().storage_16bit)
      for (const auto& c : vulkan::gemm_configs(ctx.info(), dtype::f16))
        if (c.kernel == vulkan::gemm_kernel::coopmat_f16) gemm_case<half>(ctx, "f16", 4096, &c);
    return 0;
  }
  auto gemms = [&] {
    for (index_t n : {1024, 2048, 4096, 8192}) gemm_case<float>(ctx, "f32", n);
    if (ctx.info().storage_16bit)
      for (index_t n : {1024, 2048, 4096, 8192}) gemm_case<half>(ctx, "f16", n);
    gemm_case<float>(ctx, "f32", 4096, nullptr, true);
    if (ctx.info().storage_16bit) gemm_case<half>(ctx, "f16", 4096, nullptr, true);
    if (ctx.info().storage_16bit) {  // bf16 (the dtype models ship in): its default config, coopmat2 where available
      for (index_t n : {4096, 8192}) gemm_case<bfloat16>(ctx, "bf16", n);
      gemm_case<bfloat16>(ctx, "bf16", 4096, nullptr, true);
    }
  };
  auto memory = [&](vulkan::context& ctx, const std::string& suffix) {
    // Memory-bound cases: 8192 x 8192 f32 (256 MiB per tensor); GB/s counts each tensor read or written once.
    const index_t r = 8192;
    const auto hx = random_host<float>(static_cast<std::size_t>(r * r), 11, -4, 4);
    vulkan::device_tensor<float> x(ctx, {r, r}), x2(ctx, {r, r}), y(ctx, {r, r}), g(ctx, {r}), be(ctx, {r});
    x.upload(make_view(hx, {r, r}));
    x2.upload(make_view(hx, {r, r}));
    g.upload(make_view(random_host<float>(static_cast<std::size_t>(r), 12, 0.5f, 1.5f), {r}));
    be.upload(make_view(random_host<float>(static_cast<std::size_t>(r), 13), {r}));
    const double gb2 = 2.0 * r * r * 4 / 1e9, gb3 = 3.0 * r * r * 4 / 1e9;
    double ms = median_ms(ctx, [&](vulkan::stream& s) { s.copy(x.ref(), y.ref(), x.bytes()); });
    result(std::string("copy_vkCmdCopyBuffer_256MiB") + suffix, ms, gb2 / (ms * 1e-3), "GB/s");
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record_copy(s, x.ref(), y.ref(), x.bytes()); });
    result(std::string("copy_256MiB") + suffix, ms, gb2 / (ms * 1e-3), "GB/s");
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::unary<float, fn::relu>{}, x, y); });
    result(std::string("relu_8192x8192_f32") + suffix, ms, gb2 / (ms * 1e-3), "GB/s");
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::unary<float, fn::gelu_tanh>{}, x, y); });
    result(std::string("gelu_8192x8192_f32") + suffix, ms, gb2 / (ms * 1e-3), "GB/s");
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::binary<float, binop::add>{}, x, x2, y); });
    result(std::string("add_8192x8192_f32") + suffix, ms, gb3 / (ms * 1e-3), "GB/s");
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::softmax<float>{}, x, y); });
    result(std::string("softmax_8192x8192_f32") + suffix, ms, gb2 / (ms * 1e-3), "GB/s");
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::layer_norm<float>{}, x, g, be, y); });
    result(std::string("layer_norm_8192x8192_f32") + suffix, ms, gb2 / (ms * 1e-3), "GB/s");
    {  // correctness of softmax on two rows against a double reference
      vulkan::stream s(ctx);
      vulkan::record(s, op::softmax<float>{}, x, y);
      s.run();
      const auto hy = y.to_vector();
      double worst = 0;
      for (index_t row : {index_t{0}, r - 1}) {
        double mx = -1e300, sum = 0;
        for (index_t j = 0; j < r; ++j) mx = std::max(mx, double(hx[row * r + j]));
        for (index_t j = 0; j < r; ++j) sum += std::exp(double(hx[row * r + j]) - mx);
        for (index_t j = 0; j < r; ++j)
          worst = std::max(worst, std::fabs(hy[row * r + j] - std::exp(double(hx[row * r + j]) - mx) / sum));
      }
      std::printf("  softmax sampled max abs error %.2e (%s)\n", worst, worst < 1e-6 ? "ok" : "FAIL");
    }

  };
  // --mem-first: the memory-bound cases before the gemms (to see whether what
  // ran before changes them).
  auto copy_only = [&](vulkan::context& c, const char* what) {
    const index_t r = 8192;
    vulkan::device_tensor<float> x(c, {r, r}), y(c, {r, r});
    x.upload(make_view(random_host<float>(static_cast<std::size_t>(r * r), 11), {r, r}));
    const double ms = median_ms(c, [&](vulkan::stream& s) { vulkan::record_copy(s, x.ref(), y.ref(), x.bytes()); });
    const double ms2 = median_ms(c, [&](vulkan::stream& s) { s.copy(x.ref(), y.ref(), x.bytes()); });
    std::printf("  diag %-40s copy %7.1f GB/s, vkCmdCopyBuffer %6.1f GB/s (x offset %llu, y offset %llu; %zu blocks)\n",
                what, 2.0 * r * r * 4 / 1e9 / (ms * 1e-3), 2.0 * r * r * 4 / 1e9 / (ms2 * 1e-3),
                static_cast<unsigned long long>(x.ref().offset), static_cast<unsigned long long>(y.ref().offset),
                c.device_memory().stats().blocks);
    std::fflush(stdout);
  };
  // Does the amount of device memory a context has touched slow its later
  // memory-bound kernels? Fresh context each row: allocate GiB of 256 MiB
  // tensors, optionally write them (a copy into each), free them, then time a
  // copy of 256 MiB.
  if (mode == "--touch") {
    for (const int quarters : {0, 3, 4, 6, 8, 16, 32})
      for (const bool write : {false, true}) {
        if (quarters == 0 && write) continue;
        vulkan::context c;
        {
          const index_t r = 8192;
          vulkan::device_tensor<float> src(c, {r, r});
          std::vector<vulkan::device_tensor<float>> hold;
          vulkan::stream s(c);
          for (int i = 0; i < quarters; ++i) {
            hold.emplace_back(c, kforge::shape{r, r});
            if (write) vulkan::record_copy(s, src.ref(), hold.back().ref(), src.bytes());
          }
          s.run();
        }
        const std::string what = std::to_string(quarters / 4.0).substr(0, 4) + " GiB " + (write ? "written" : "allocated") + ", freed";
        copy_only(c, what.c_str());
      }
    return 0;
  }
  // When does a context's copy slow down? One context: a copy after each gemm
  // case of the default sequence, and after idling, to tell history from time.
  if (mode == "--age") {
    vulkan::context c;
    copy_only(c, "fresh");
    for (index_t n : {1024, 2048, 4096, 8192}) {
      gemm_case<float>(c, "f32", n);
      copy_only(c, ("after f32 " + std::to_string(n)).c_str());
    }
    for (index_t n : {1024, 2048, 4096, 8192}) {
      gemm_case<half>(c, "f16", n);
      copy_only(c, ("after f16 " + std::to_string(n)).c_str());
    }
    gemm_case<float>(c, "f32", 4096, nullptr, true);
    copy_only(c, "after f32 bias_gelu 4096");
    gemm_case<half>(c, "f16", 4096, nullptr, true);
    copy_only(c, "after f16 bias_gelu 4096");
    std::this_thread::sleep_for(std::chrono::seconds(2));
    copy_only(c, "after 2 s idle");
    vulkan::context fresh;
    copy_only(fresh, "a second context, now");
    copy_only(c, "the first context again");
    return 0;
  }
  if (mode == "--diag") {  // which earlier work slows a later copy on the same context
    { vulkan::context c; copy_only(c, "fresh"); gemm_case<float>(c, "f32", 8192); copy_only(c, "after f32 8192 gemm"); }
    { vulkan::context c; copy_only(c, "fresh"); gemm_case<half>(c, "f16", 8192); copy_only(c, "after f16 8192 gemm"); }
    { vulkan::context c; gemm_case<float>(c, "f32", 1024); copy_only(c, "after f32 1024 gemm"); }
    { vulkan::context c; gemm_case<float>(c, "f32", 4096); copy_only(c, "after f32 4096 gemm"); }
    {
      vulkan::context c;
      gemm_case<float>(c, "f32", 8192);
      vulkan::device_tensor<float> d1(c, {8192, 8192}), d2(c, {8192, 8192}), d3(c, {8192, 8192});
      copy_only(c, "after f32 8192 gemm, its blocks held");
    }
    gemms();
    copy_only(ctx, "after all gemm cases");
    {
      vulkan::device_tensor<float> d1(ctx, {8192, 8192}), d2(ctx, {8192, 8192}), d3(ctx, {8192, 8192});
      copy_only(ctx, "after all gemm cases, old 256 MiB blocks held");
    }
    gemm_case<half>(ctx, "f16", 4096, nullptr, true);
    copy_only(ctx, "after f16 bias_gelu gemm again");
    {
      vulkan::context c;
      gemm_case<half>(c, "f16", 4096, nullptr, true);
      copy_only(c, "after f16 bias_gelu gemm alone");
    }
    {
      vulkan::context c;
      gemm_case<half>(c, "f16", 1024);
      copy_only(c, "after f16 1024 gemm alone");
    }
    return 0;
  }
  // After the gemms the same cases run again on a fresh context ("_fresh_ctx").
  if (mode == "--replay") {
    // Where a replayed stream's per-dispatch time goes: streams of 1, 10 and
    // 100 element-wise dispatches (4096 f32 each), recorded once, replayed;
    // dependent (each reads the last one's output: a barrier between every
    // two) or independent (each writes its own tensor: no barrier), with and
    // without a timestamp pair around each dispatch. Wall clock of submit +
    // wait, median of 50 replays after 5; the slope between 1 and 100
    // dispatches is what one more dispatch costs inside a submission.
    const index_t n = 4096;
    vulkan::device_tensor<float> a(ctx, {n}), b(ctx, {n});
    a.upload(make_view(random_host<float>(static_cast<std::size_t>(n), 31), {n}));
    std::vector<vulkan::device_tensor<float>> outs;
    for (int i = 0; i < 100; ++i) outs.emplace_back(ctx, shape{n});
    for (const bool chain : {true, false})
      for (const bool timed : {false, true}) {
        double t1 = 0;
        for (const int count : {1, 10, 100}) {
          vulkan::stream s(ctx);
          s.time_dispatches(timed);
          for (int i = 0; i < count; ++i) {
            if (chain) vulkan::record(s, op::unary<float, fn::neg>{}, i % 2 ? b : a, i % 2 ? a : b);
            else vulkan::record(s, op::unary<float, fn::neg>{}, a, outs[static_cast<std::size_t>(i)]);
          }
          const auto wall = replay_wall_us(s, 50);
          const double med = wall[wall.size() / 2];
          if (count == 1) t1 = med;
          std::printf("  replay %-11s %-13s %3d dispatches, %3zu barriers: submit+wait median %7.1f us (p10 %7.1f), "
                      "%5.2f us/dispatch%s\n",
                      chain ? "dependent" : "independent", timed ? "timestamps" : "no timestamps", count,
                      s.barrier_count(), med, wall[wall.size() / 10], med / count,
                      count > 1 ? (", slope from 1: " + std::to_string((med - t1) / (count - 1)).substr(0, 5) + " us").c_str()
                                : "");
          std::fflush(stdout);
        }
      }
    return 0;
  }
  if (mode == "--mem-first") {
    memory(ctx, "");
    gemms();
  } else {
    gemms();
    memory(ctx, "");
    vulkan::context fresh;
    memory(fresh, "_fresh_ctx");
  }
  double ms = 0;
  if (ctx.info().storage_16bit) {  // attention B=8, H=16, S=L=2048, D=64, f16
    const index_t B = 8, H = 16, S = 2048, D = 64;
    const auto hq = random_host<half>(static_cast<std::size_t>(B * H * S * D), 21);
    vulkan::device_tensor<half> q(ctx, {B, H, S, D}), k(ctx, {B, H, S, D}), v(ctx, {B, H, S, D}), o(ctx, {B, H, S, D});
    q.upload(make_view(hq, {B, H, S, D}));
    k.upload(make_view(random_host<half>(hq.size(), 22), {B, H, S, D}));
    v.upload(make_view(random_host<half>(hq.size(), 23), {B, H, S, D}));
    ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::attention<half>{}, q, k, v, o); }, 5);
    {  // two query rows of the first and last head against a double-precision reference
      const auto hk = k.to_vector(), hv = v.to_vector(), ho = o.to_vector();
      double worst = 0;
      for (index_t bh : {index_t{0}, B * H - 1})
        for (index_t row : {index_t{0}, S - 1}) {
          std::vector<double> sc(static_cast<std::size_t>(S));
          double mx = -1e300, sum = 0;
          for (index_t j = 0; j < S; ++j) {
            double dot = 0;
            for (index_t e = 0; e < D; ++e)
              dot += double(float(hq[(bh * S + row) * D + e])) * double(float(hk[(bh * S + j) * D + e]));
            sc[j] = dot / std::sqrt(double(D));
            mx = std::max(mx, sc[j]);
          }
          for (auto& x : sc) sum += (x = std::exp(x - mx));
          for (index_t e = 0; e < D; ++e) {
            double ref = 0;
            for (index_t j = 0; j < S; ++j) ref += sc[j] / sum * double(float(hv[(bh * S + j) * D + e]));
            worst = std::max(worst, std::fabs(double(float(ho[(bh * S + row) * D + e])) - ref));
          }
        }
      std::printf("  attention sampled max abs error %.2e (%s)\n", worst, worst < 2e-3 ? "ok" : "FAIL");
    }
    result("attention_b8h16s2048d64_f16", ms, 4.0 * B * H * S * S * D / (ms * 1e-3) / 1e12, "TFLOP/s");
  }

  for (const bool timed : {true, false}) {  // 100 small dependent element-wise dispatches (4096 f32 each), recorded once, replayed
    const index_t n = 4096;
    vulkan::device_tensor<float> a(ctx, {n}), b(ctx, {n});
    a.upload(make_view(random_host<float>(static_cast<std::size_t>(n), 31), {n}));
    vulkan::stream s(ctx);
    s.time_dispatches(timed);
    for (int i = 0; i < 50; ++i) {
      vulkan::record(s, op::unary<float, fn::neg>{}, a, b);
      vulkan::record(s, op::unary<float, fn::neg>{}, b, a);
    }
    const auto wall = replay_wall_us(s, 20);
    const auto t = s.timings();
    double gpu = 0;
    for (const auto& e : t) gpu += e.ms.value_or(0);
    std::printf("  replay of 100 dispatches%s: host submit+wait median %.1f us, sum of per-dispatch GPU time %.1f us\n",
                timed ? "" : " (no timestamps)", wall[wall.size() / 2], gpu * 1e3);
    result(timed ? "replay_100_small_dispatches_per_dispatch_us" : "replay_100_small_dispatches_untimed_per_dispatch_us",
           wall[wall.size() / 2] / 100 * 1e-3, wall[wall.size() / 2] / 100, "us/dispatch");
  }

  return 0;
}

int main(int argc, char** argv) {
  // No device, a failed pipeline or a lost device: one line and a non-zero exit, not an abort.
  try {
    return run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vk_bench: %s\n", e.what());
    return 1;
  }
}
