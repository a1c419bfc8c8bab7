// Experiment driver (2026-12-02): needs cpu::detail::gemm_tasks_per_thread as a mutable variable (the experiment tree), threaded gemm n^3 with the tasks per thread alternated call by call.
#include <cstdlib>
#include <kforge/cpu/cpu.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <random>
using namespace kforge;
int main(int argc, char** argv) {
  const int vals[] = {2, 3, 6, 16, 24, 32}; constexpr int NV = 6;
  for (int ai = 1; ai < argc; ++ai) {
    int n = std::atoi(argv[ai]);
    std::vector<float> A(size_t(n)*n), B(size_t(n)*n), C(size_t(n)*n);
    std::mt19937 g(1); std::uniform_real_distribution<float> u(-1,1);
    for (auto& x : A) x = u(g); for (auto& x : B) x = u(g);
    tensor_view<const float> a(A.data(), shape{n, n}), b(B.data(), shape{n, n});
    tensor_view<float> c(C.data(), shape{n, n});
    auto med = [](std::vector<double> v){ std::sort(v.begin(), v.end()); return v[v.size()/2]; };
    double fl = 2.0*n*n*n;
    std::vector<double> t[NV];
    run<policy::threaded<>>(op::gemm<float>{}, a, b, c);
    int reps = n >= 2048 ? 12 : n >= 1024 ? 40 : 150;
    for (int i = 0; i < reps; ++i) for (int v = 0; v < NV; ++v) {
      int w = (i + v) % NV;
      cpu::detail::gemm_tasks_per_thread = vals[w];
      auto t0 = std::chrono::steady_clock::now(); run<policy::threaded<>>(op::gemm<float>{}, a, b, c);
      t[w].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()); }
    std::printf("n=%d", n); for (int v = 0; v < NV; ++v) std::printf("  %d: %.1f", vals[v], fl/med(t[v])*1e-9); std::printf("\n");
  }
}
