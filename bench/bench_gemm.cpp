// bench/bench_gemm.cpp — sgemm: kforge eigen / blocked / threaded against
// OpenBLAS cblas_sgemm in the same run, GFLOP/s counters.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./build/bench/bench_gemm --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Cases: square n = 64…4096; skinny M ∈ {1, 8, 32} with N = K = 4096 (LLM
// decoding); bias+gelu fused in the write-back vs gemm followed by one
// separate bias+gelu pass, and the plain gemm of the same shape (the bound);
// decode rows M ∈ {1, 4, 8} × K 4096 × N 14336 with f32, f16 and bf16
// operands (GB/s of B) beside a threaded copy of the same bytes. OpenBLAS
// runs with 2 threads next to policy::threaded and with 1 thread
// (openblas_set_num_threads(1)) next to policy::blocked. Operands are
// row-major f32 except in the decode cases.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <kforge/kforge.hpp>

#include <cstring>
#include <random>
#include <vector>

namespace {

namespace policy = kforge::policy;
namespace op = kforge::op;
namespace epilogue = kforge::epilogue;
using kforge::index_t;

struct operands {
  index_t m, n, k;
  std::vector<float> a, b, c, bias;
  operands(index_t m_, index_t n_, index_t k_) : m(m_), n(n_), k(k_), a(m_ * k_), b(k_ * n_), c(m_ * n_), bias(n_) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (auto* v : {&a, &b, &bias})
      for (float& x : *v) x = d(rng);
  }
  kforge::tensor_view<const float> av() const { return {a.data(), kforge::shape{m, k}}; }
  kforge::tensor_view<const float> bv() const { return {b.data(), kforge::shape{k, n}}; }
  kforge::tensor_view<const float> biasv() const { return {bias.data(), kforge::shape{n}}; }
  kforge::tensor_view<float> cv() { return {c.data(), kforge::shape{m, n}}; }
};

void flops(benchmark::State& st, index_t m, index_t n, index_t k) {
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <class P>
void bm_kforge(benchmark::State& st, index_t m, index_t n, index_t k) {
  operands o(m, n, k);
  for (auto _ : st) {
    kforge::run<P>(op::gemm<float>{}, o.av(), o.bv(), o.cv());
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  flops(st, m, n, k);
}

void bm_openblas(benchmark::State& st, index_t m, index_t n, index_t k, int threads) {
  openblas_set_num_threads(threads);
  operands o(m, n, k);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, o.a.data(), static_cast<int>(k), o.b.data(), static_cast<int>(n), 0.0f,
                o.c.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  flops(st, m, n, k);
}

template <class P>
void bm_fused(benchmark::State& st, index_t n, index_t k) {
  operands o(n, n, k);
  for (auto _ : st) {
    kforge::run<P>(op::gemm<float, epilogue::bias_gelu>{}, o.av(), o.bv(), o.biasv(), o.cv());
    benchmark::ClobberMemory();
  }
  flops(st, n, n, k);
}

/// The unfused baseline: the same gemm, then one separate pass (threaded,
/// on whole SIMD registers, the same gelu formula) applying bias + gelu to C.
template <class P>
void bm_unfused(benchmark::State& st, index_t n, index_t k) {
  operands o(n, n, k);
  const int threads = kforge::cpu::detail::cpu_config<P>::threads();
  for (auto _ : st) {
    kforge::run<P>(op::gemm<float>{}, o.av(), o.bv(), o.cv());
    kforge::cpu::detail::parallel_for(threads, n, 16, [&](index_t r0, index_t r1) {
      for (index_t r = r0; r < r1; ++r) {
        using S = kforge::cpu::detail::simd_native;
        float* row = o.c.data() + r * n;
        const float* b = o.bias.data();
        index_t j = 0;
        for (; j + S::width <= n; j += S::width)
          S::store(row + j, kforge::cpu::detail::vapply<kforge::fn::gelu_erf>(S::load(row + j) + S::load(b + j), 0.0f));
        for (; j < n; ++j) row[j] = kforge::cpu::detail::vapply<kforge::fn::gelu_erf>(row[j] + b[j], 0.0f);
      }
    });
    benchmark::ClobberMemory();
  }
  flops(st, n, n, k);
}

/// Decode-shaped gemm: M rows of activations times a K×N weight matrix B of
/// T (f32, f16 or bf16), all operands T. Bound by reading B once, so the
/// counter that matters is GB/s of B bytes (compare with copy/threads).
template <class T>
void bm_decode(benchmark::State& st, index_t m, index_t n, index_t k) {
  std::vector<T> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)), c(static_cast<std::size_t>(m * n));
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (auto* v : {&a, &b})
    for (T& x : *v) x = static_cast<T>(d(rng));
  for (auto _ : st) {
    kforge::run<policy::threaded<>>(op::gemm<T>{}, kforge::tensor_view<const T>(a.data(), kforge::shape{m, k}),
                                   kforge::tensor_view<const T>(b.data(), kforge::shape{k, n}),
                                   kforge::tensor_view<T>(c.data(), kforge::shape{m, n}));
    benchmark::ClobberMemory();
  }
  st.counters["GB/s"] = benchmark::Counter(static_cast<double>(k * n * sizeof(T)) * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
  flops(st, m, n, k);
}

/// memcpy of `bytes` split over the pool's threads (glibc streams copies
/// this large): GB/s counts bytes read + bytes written, as bench_ops.
void bm_copy(benchmark::State& st, index_t bytes) {
  std::vector<char> src(static_cast<std::size_t>(bytes), 1), dst(static_cast<std::size_t>(bytes));
  const int threads = kforge::cpu::default_num_threads();
  for (auto _ : st) {
    kforge::cpu::detail::parallel_for(threads, bytes, 1 << 22, [&](index_t b, index_t e) {
      std::memcpy(dst.data() + b, src.data() + b, static_cast<std::size_t>(e - b));
    });
    benchmark::ClobberMemory();
  }
  st.counters["GB/s"] = benchmark::Counter(2.0 * static_cast<double>(bytes) * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
}

void args_square(benchmark::internal::Benchmark* b) { b->Unit(benchmark::kMillisecond)->UseRealTime(); }

int register_all() {
  using threaded = policy::threaded<>;
  using blocked = policy::blocked<>;
  for (index_t n : {64, 128, 256, 512, 1024, 2048, 4096}) {
    const std::string s = std::to_string(n);
    if (n <= 2048) args_square(benchmark::RegisterBenchmark(("square/eigen/" + s).c_str(), bm_kforge<policy::eigen>, n, n, n));
    args_square(benchmark::RegisterBenchmark(("square/blocked/" + s).c_str(), bm_kforge<blocked>, n, n, n));
    args_square(benchmark::RegisterBenchmark(("square/openblas_1t/" + s).c_str(), bm_openblas, n, n, n, 1));
    args_square(benchmark::RegisterBenchmark(("square/threaded/" + s).c_str(), bm_kforge<threaded>, n, n, n));
    args_square(benchmark::RegisterBenchmark(("square/openblas/" + s).c_str(), bm_openblas, n, n, n, 2));
  }
  for (index_t m : {1, 8, 32}) {
    const std::string s = std::to_string(m) + "x4096x4096";
    args_square(benchmark::RegisterBenchmark(("skinny/eigen/" + s).c_str(), bm_kforge<policy::eigen>, m, 4096, 4096));
    args_square(benchmark::RegisterBenchmark(("skinny/blocked/" + s).c_str(), bm_kforge<blocked>, m, 4096, 4096));
    args_square(benchmark::RegisterBenchmark(("skinny/threaded/" + s).c_str(), bm_kforge<threaded>, m, 4096, 4096));
    args_square(benchmark::RegisterBenchmark(("skinny/openblas/" + s).c_str(), bm_openblas, m, 4096, 4096, 2));
  }
  // Square shapes, where the separate pass over C is small next to the
  // K-deep product, and a transformer-projection-like shape with K = 64,
  // where the pass over the 64 MiB C costs about as much as the product.
  const index_t fused_shapes[][2] = {{512, 512}, {1024, 1024}, {2048, 2048}, {4096, 64}};
  for (const auto& sh : fused_shapes) {
    const index_t n = sh[0], k = sh[1];
    const std::string s = std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(k);
    args_square(benchmark::RegisterBenchmark(("bias_gelu/fused/threaded/" + s).c_str(), bm_fused<threaded>, n, k));
    args_square(benchmark::RegisterBenchmark(("bias_gelu/unfused/threaded/" + s).c_str(), bm_unfused<threaded>, n, k));
    args_square(benchmark::RegisterBenchmark(("bias_gelu/fused/blocked/" + s).c_str(), bm_fused<blocked>, n, k));
    args_square(benchmark::RegisterBenchmark(("bias_gelu/unfused/blocked/" + s).c_str(), bm_unfused<blocked>, n, k));
    // The plain gemm: no fused epilogue can be faster, so unfused / gemm
    // bounds what fusion can win on this shape.
    args_square(benchmark::RegisterBenchmark(("bias_gelu/gemm_only/threaded/" + s).c_str(), bm_kforge<threaded>, n, n, k));
  }
  // Decode rows against a LLaMA-sized 4096×14336 weight (117 MiB in f16,
  // well past the L3), and the copy bandwidth of the same bytes.
  for (index_t m : {1, 4, 8}) {
    const std::string s = std::to_string(m) + "x14336x4096";
    args_square(benchmark::RegisterBenchmark(("decode/f32/" + s).c_str(), bm_decode<float>, m, 14336, 4096));
    args_square(benchmark::RegisterBenchmark(("decode/f16/" + s).c_str(), bm_decode<kforge::half>, m, 14336, 4096));
    args_square(benchmark::RegisterBenchmark(("decode/bf16/" + s).c_str(), bm_decode<kforge::bfloat16>, m, 14336, 4096));
  }
  args_square(benchmark::RegisterBenchmark("copy/threads/117MiB", bm_copy, index_t{4096} * 14336 * 2));
  args_square(benchmark::RegisterBenchmark("copy/threads/235MiB", bm_copy, index_t{4096} * 14336 * 4));
  return 0;
}
const int registered = register_all();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("kforge.isa", kforge::cpu::isa_name());
  benchmark::AddCustomContext("kforge.blocked", kforge::cpu::microkernel_name<policy::blocked<>>());
  benchmark::AddCustomContext("kforge.threaded", kforge::cpu::microkernel_name<policy::threaded<>>());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  (void)registered;
  return 0;
}
