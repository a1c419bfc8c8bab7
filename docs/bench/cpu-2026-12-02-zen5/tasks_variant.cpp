// Experiment driver (2026-12-02): needs cpu::detail::exp_variant in the experiment tree (0: 3 row blocks per thread and tasks = row blocks where B is in L3; 1: the same row blocks, at least 6 tasks per thread from column blocks, the commit; 2: 6 row blocks per thread, the rule before).
#include <cstdlib>
#include <kforge/cpu/cpu.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <random>
using namespace kforge;
int main(int argc, char** argv) {
  for (int ai = 1; ai + 2 < argc; ai += 3) {
    int m = std::atoi(argv[ai]), n = std::atoi(argv[ai+1]), k = std::atoi(argv[ai+2]);
    std::vector<float> A(size_t(m)*k), B(size_t(k)*n), C(size_t(m)*n);
    std::mt19937 g(1); std::uniform_real_distribution<float> u(-1,1);
    for (auto& x : A) x = u(g); for (auto& x : B) x = u(g);
    tensor_view<const float> a(A.data(), shape{m, k}), b(B.data(), shape{k, n});
    tensor_view<float> c(C.data(), shape{m, n});
    auto med = [](std::vector<double> v){ std::sort(v.begin(), v.end()); return v[v.size()/2]; };
    double fl = 2.0*m*n*k;
    std::vector<double> t[3];
    run<policy::threaded<>>(op::gemm<float>{}, a, b, c);
    int reps = std::max(10, int(3e10 / fl));
    for (int i = 0; i < reps; ++i) for (int v = 0; v < 3; ++v) {
      int w = (i + v) % 3; cpu::detail::exp_variant = w;
      auto t0 = std::chrono::steady_clock::now(); run<policy::threaded<>>(op::gemm<float>{}, a, b, c);
      t[w].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()); }
    std::printf("%dx%dx%d committed %.1f rows-only %.1f old %.1f GFLOP/s\n", m, n, k, fl/med(t[0])*1e-9, fl/med(t[1])*1e-9, fl/med(t[2])*1e-9);
  }
}
