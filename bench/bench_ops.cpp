// bench/bench_ops.cpp — every non-gemm op: kforge eigen / blocked / threaded
// in the same run. GFLOP/s for compute-bound ops (conv2d, attention), GB/s
// (bytes read + written) for memory-bound ones, next to two copies of the
// same size that measure the machine's bandwidth in the same process: memcpy,
// and one with non-temporal stores (copy_stream, as the row ops write large
// outputs; the faster of the two is the reference).
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./build/bench/bench_ops --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Shapes: conv2d on ResNet-50 layers at batch 1 and 8; softmax, layer_norm,
// rms_norm, gelu, add and sum over 4096×4096 f32; attention B=1, H=16,
// S = L ∈ {512, 2048}, D = 64, causal and not.
#include <benchmark/benchmark.h>

#include <kforge/kforge.hpp>

#include <cstring>
#include <random>
#include <vector>

namespace {

namespace policy = kforge::policy;
namespace op = kforge::op;
using kforge::index_t;
using kforge::shape;
using eigen = policy::eigen;
using blocked = policy::blocked<>;
using threaded = policy::threaded<>;

std::vector<float> random(index_t n, std::uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : v) x = d(rng);
  return v;
}

void gbs(benchmark::State& st, double bytes) {
  st.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void gflops(benchmark::State& st, double flops) {
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr index_t big = 4096;

// ---- bandwidth reference --------------------------------------------------

void bm_copy(benchmark::State& st, int threads) {
  const index_t n = big * big;
  std::vector<float> src = random(n, 1), dst(static_cast<std::size_t>(n));
  for (auto _ : st) {
    kforge::cpu::detail::parallel_for(threads, n, 1 << 20, [&](index_t b, index_t e) {
      std::memcpy(dst.data() + b, src.data() + b, static_cast<std::size_t>(e - b) * sizeof(float));
    });
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * n * sizeof(float));
}

/// The same copy with non-temporal stores (no read-for-ownership of the
/// destination), as the row ops write large outputs: on machines where that
/// is faster than memcpy it is the bandwidth the row ops are held to.
void bm_copy_stream(benchmark::State& st, int threads) {
  using S = kforge::cpu::detail::simd_native;
  constexpr index_t W = S::width;
  const index_t n = big * big;
  std::vector<float> src = random(n, 1), buf(static_cast<std::size_t>(n + W));
  float* dst = buf.data();  // aligned to a register, as non-temporal stores need
  while (reinterpret_cast<std::uintptr_t>(dst) % sizeof(S::reg) != 0) ++dst;
  for (auto _ : st) {
    kforge::cpu::detail::parallel_for(threads, n / W, (1 << 20) / W, [&](index_t b, index_t e) {
      for (index_t i = b * W; i < e * W; i += W) S::stream(dst + i, S::load(src.data() + i));
      kforge::cpu::detail::stream_fence();
    });
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * n * sizeof(float));
}

// ---- row ops ----------------------------------------------------------------

template <class P>
void bm_softmax(benchmark::State& st) {
  std::vector<float> x = random(big * big, 2), y(x.size());
  for (auto _ : st) {
    kforge::run<P>(op::softmax<float>{}, kforge::tensor_view<const float>(x.data(), shape{big, big}),
                   kforge::tensor_view<float>(y.data(), shape{big, big}));
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * big * big * sizeof(float));
}

template <class P>
void bm_layer_norm(benchmark::State& st) {
  std::vector<float> x = random(big * big, 3), y(x.size()), g = random(big, 4), b = random(big, 5);
  for (auto _ : st) {
    kforge::run<P>(op::layer_norm<float>{}, kforge::tensor_view<const float>(x.data(), shape{big, big}),
                   kforge::tensor_view<const float>(g.data(), shape{big}),
                   kforge::tensor_view<const float>(b.data(), shape{big}),
                   kforge::tensor_view<float>(y.data(), shape{big, big}));
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * big * big * sizeof(float));
}

template <class P>
void bm_rms_norm(benchmark::State& st) {
  std::vector<float> x = random(big * big, 3), y(x.size()), g = random(big, 4);
  for (auto _ : st) {
    kforge::run<P>(op::rms_norm<float>{}, kforge::tensor_view<const float>(x.data(), shape{big, big}),
                   kforge::tensor_view<const float>(g.data(), shape{big}),
                   kforge::tensor_view<float>(y.data(), shape{big, big}));
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * big * big * sizeof(float));
}

template <class P>
void bm_gelu(benchmark::State& st) {
  std::vector<float> x = random(big * big, 6), y(x.size());
  for (auto _ : st) {
    kforge::run<P>(op::unary<float, kforge::fn::gelu_erf>{}, kforge::tensor_view<const float>(x.data(), shape{big, big}),
                   kforge::tensor_view<float>(y.data(), shape{big, big}));
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * big * big * sizeof(float));
}

template <class P>
void bm_add_bias(benchmark::State& st) {
  std::vector<float> x = random(big * big, 7), b = random(big, 8), y(x.size());
  for (auto _ : st) {
    kforge::run<P>(op::binary<float, kforge::binop::add>{}, kforge::tensor_view<const float>(x.data(), shape{big, big}),
                   kforge::tensor_view<const float>(b.data(), shape{big}),
                   kforge::tensor_view<float>(y.data(), shape{big, big}));
    benchmark::ClobberMemory();
  }
  gbs(st, 2.0 * big * big * sizeof(float));
}

template <class P>
void bm_sum(benchmark::State& st, int axis) {
  std::vector<float> x = random(big * big, 9), y(big);
  op::reduce<float, kforge::reduce_fn::sum> o;
  o.axis = axis;
  for (auto _ : st) {
    kforge::run<P>(o, kforge::tensor_view<const float>(x.data(), shape{big, big}),
                   kforge::tensor_view<float>(y.data(), shape{big}));
    benchmark::ClobberMemory();
  }
  gbs(st, 1.0 * big * big * sizeof(float));
}

// ---- conv2d -------------------------------------------------------------------

struct conv_shape {
  const char* name;
  index_t c, hw, k, r;
  int stride, pad;
};
const conv_shape resnet50[] = {
    {"conv1_7x7s2_3to64_224", 3, 224, 64, 7, 2, 3},    {"res2_3x3_64to64_56", 64, 56, 64, 3, 1, 1},
    {"res2_1x1_64to256_56", 64, 56, 256, 1, 1, 0},     {"res3_3x3_128to128_28", 128, 28, 128, 3, 1, 1},
    {"res4_3x3_256to256_14", 256, 14, 256, 3, 1, 1},   {"res4_1x1_1024to256_14", 1024, 14, 256, 1, 1, 0},
    {"res5_3x3_512to512_7", 512, 7, 512, 3, 1, 1},
};

template <class P>
void bm_conv(benchmark::State& st, conv_shape cs, index_t n) {
  op::conv2d<float, kforge::epilogue::bias_relu> o;
  o.stride_h = o.stride_w = cs.stride;
  o.pad_h = o.pad_w = cs.pad;
  const index_t p = (cs.hw + 2 * cs.pad - cs.r) / cs.stride + 1;
  std::vector<float> x = random(n * cs.c * cs.hw * cs.hw, 10), w = random(cs.k * cs.c * cs.r * cs.r, 11),
                     b = random(cs.k, 12), y(static_cast<std::size_t>(n * cs.k * p * p));
  for (auto _ : st) {
    kforge::run<P>(o, kforge::tensor_view<const float>(x.data(), shape{n, cs.c, cs.hw, cs.hw}),
                   kforge::tensor_view<const float>(w.data(), shape{cs.k, cs.c, cs.r, cs.r}),
                   kforge::tensor_view<const float>(b.data(), shape{cs.k}),
                   kforge::tensor_view<float>(y.data(), shape{n, cs.k, p, p}));
    benchmark::ClobberMemory();
  }
  gflops(st, 2.0 * n * cs.k * p * p * cs.c * cs.r * cs.r);
}

// ---- attention ------------------------------------------------------------------

template <class P>
void bm_attention(benchmark::State& st, index_t s, bool causal) {
  const index_t b = 1, h = 16, d = 64;
  std::vector<float> q = random(b * h * s * d, 13), k = random(b * h * s * d, 14), v = random(b * h * s * d, 15),
                     o(static_cast<std::size_t>(b * h * s * d));
  op::attention<float> a;
  a.causal = causal;
  const shape sh{b, h, s, d};
  for (auto _ : st) {
    kforge::run<P>(a, kforge::tensor_view<const float>(q.data(), sh), kforge::tensor_view<const float>(k.data(), sh),
                   kforge::tensor_view<const float>(v.data(), sh), kforge::tensor_view<float>(o.data(), sh));
    benchmark::ClobberMemory();
  }
  // Q·Kᵀ and P·V over the (query, key) pairs that are computed: all of them,
  // or the lower triangle when causal.
  const double pairs = causal ? 0.5 * static_cast<double>(s) * static_cast<double>(s + 1) : static_cast<double>(s * s);
  gflops(st, 4.0 * b * h * pairs * d);
}

template <class F>
void reg(const std::string& name, F f) {
  benchmark::RegisterBenchmark(name.c_str(), f)->Unit(benchmark::kMillisecond)->UseRealTime();
}

int register_all() {
  reg("copy/1thread/4096x4096", [](benchmark::State& s) { bm_copy(s, 1); });
  reg("copy/threads/4096x4096", [](benchmark::State& s) { bm_copy(s, kforge::cpu::default_num_threads()); });
  reg("copy_stream/1thread/4096x4096", [](benchmark::State& s) { bm_copy_stream(s, 1); });
  reg("copy_stream/threads/4096x4096", [](benchmark::State& s) { bm_copy_stream(s, kforge::cpu::default_num_threads()); });
#define KFORGE_BENCH_POLICIES(NAME, FN, ...)                                                  \
  reg(std::string(NAME) + "/eigen", [](benchmark::State& s) { FN<eigen>(s, ##__VA_ARGS__); });     \
  reg(std::string(NAME) + "/blocked", [](benchmark::State& s) { FN<blocked>(s, ##__VA_ARGS__); }); \
  reg(std::string(NAME) + "/threaded", [](benchmark::State& s) { FN<threaded>(s, ##__VA_ARGS__); });
  KFORGE_BENCH_POLICIES("softmax/4096x4096", bm_softmax)
  KFORGE_BENCH_POLICIES("layer_norm/4096x4096", bm_layer_norm)
  KFORGE_BENCH_POLICIES("rms_norm/4096x4096", bm_rms_norm)
  KFORGE_BENCH_POLICIES("gelu/4096x4096", bm_gelu)
  KFORGE_BENCH_POLICIES("add_bias/4096x4096+4096", bm_add_bias)
  KFORGE_BENCH_POLICIES("sum_rows/4096x4096", bm_sum, 1)
  KFORGE_BENCH_POLICIES("sum_cols/4096x4096", bm_sum, 0)
  KFORGE_BENCH_POLICIES("attention/B1H16S512D64", bm_attention, 512, false)
  KFORGE_BENCH_POLICIES("attention/B1H16S512D64_causal", bm_attention, 512, true)
  KFORGE_BENCH_POLICIES("attention/B1H16S2048D64", bm_attention, 2048, false)
  KFORGE_BENCH_POLICIES("attention/B1H16S2048D64_causal", bm_attention, 2048, true)
#undef KFORGE_BENCH_POLICIES
  for (index_t n : {1, 8})
    for (const conv_shape& cs : resnet50) {
      const std::string name = std::string("conv2d/") + cs.name + "/N" + std::to_string(n);
      reg(name + "/eigen", [cs, n](benchmark::State& s) { bm_conv<eigen>(s, cs, n); });
      reg(name + "/blocked", [cs, n](benchmark::State& s) { bm_conv<blocked>(s, cs, n); });
      reg(name + "/threaded", [cs, n](benchmark::State& s) { bm_conv<threaded>(s, cs, n); });
    }
  return 0;
}
const int registered = register_all();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("kforge.isa", kforge::cpu::isa_name());
  benchmark::AddCustomContext("kforge.threaded", kforge::cpu::microkernel_name<threaded>());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  (void)registered;
  return 0;
}
