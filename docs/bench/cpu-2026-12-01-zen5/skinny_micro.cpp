#include <kforge/kforge.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <random>
#include <algorithm>
#include <string>
using namespace kforge;
template <class P, class T>
double run1(index_t m, index_t n, index_t k, int reps) {
  std::vector<T> a(m * k), b(k * n), c(m * n);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : a) x = T(d(g)); for (auto& x : b) x = T(d(g));
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    run<P>(op::gemm<T>{}, tensor_view<const T>(a.data(), shape{m, k}), tensor_view<const T>(b.data(), shape{k, n}), tensor_view<T>(c.data(), shape{m, n}));
    ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
// Shapes: M 1/4/8 × (1024 × 64, 1024 × 128, 14336 × 4096); with the argument
// `gpt2`, M 1/3/8 × GPT-2's decode shapes (768 × 768, 2304 × 768, 768 × 3072).
int main(int argc, char** argv) {
  const bool gpt2 = argc > 1 && std::string(argv[1]) == "gpt2";
  const std::vector<index_t> ms = gpt2 ? std::vector<index_t>{1, 3, 8} : std::vector<index_t>{1, 4, 8};
  const std::vector<std::pair<index_t, index_t>> nks =
      gpt2 ? std::vector<std::pair<index_t, index_t>>{{768, 768}, {2304, 768}, {768, 3072}}
           : std::vector<std::pair<index_t, index_t>>{{1024, 64}, {1024, 128}, {14336, 4096}};
  for (index_t m : ms) {
    for (auto [n, k] : nks) {
      int reps = n * k > 1e6 ? 9 : 2001;
      double tb = run1<policy::blocked<>, float>(m, n, k, reps);
      double tt = run1<policy::threaded<>, float>(m, n, k, reps);
      double th = run1<policy::blocked<>, half>(m, n, k, reps);
      double fl = 2.0 * m * n * k;
      std::printf("m=%ld n=%ld k=%ld  blocked f32 %.1f GFLOP/s (%.1f GB/s)  threaded f32 %.1f GFLOP/s (%.1f GB/s) blocked f16 %.1f GFLOP/s\n", (long)m, (long)n, (long)k,
                  fl / tb * 1e-9, 4.0 * n * k / tb * 1e-9, fl / tt * 1e-9, 4.0 * n * k / tt * 1e-9, fl / th * 1e-9);
    }
  }
}
