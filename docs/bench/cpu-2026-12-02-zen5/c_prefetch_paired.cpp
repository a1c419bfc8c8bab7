# Experiment driver: needs cpu::detail::gemm_prefetch_c_min_bytes as a mutable variable (the experiment tree; the commit prefetches always).
#include <cstdlib>
#include <kforge/cpu/cpu.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <random>
using namespace kforge;
int main(int argc, char** argv) {
  for (int ai = 1; ai < argc; ++ai) {
    int n = std::atoi(argv[ai]);
    std::vector<float> A(size_t(n)*n), B(size_t(n)*n), C(size_t(n)*n);
    std::mt19937 g(1); std::uniform_real_distribution<float> u(-1,1);
    for (auto& x : A) x = u(g); for (auto& x : B) x = u(g);
    tensor_view<const float> a(A.data(), shape{n, n}), b(B.data(), shape{n, n});
    tensor_view<float> c(C.data(), shape{n, n});
    auto med = [](std::vector<double> v){ std::sort(v.begin(), v.end()); return v[v.size()/2]; };
    double fl = 2.0*n*n*n;
    std::vector<double> t[2];
    run<policy::threaded<>>(op::gemm<float>{}, a, b, c);
    int reps = n >= 2048 ? 20 : n >= 1024 ? 60 : 200;
    for (int i = 0; i < reps; ++i) for (int v = 0; v < 2; ++v) {
      int w = (i % 2) ? v : 1 - v;
      cpu::detail::gemm_prefetch_c_min_bytes = w ? 0 : (index_t{1} << 60);
      auto t0 = std::chrono::steady_clock::now(); run<policy::threaded<>>(op::gemm<float>{}, a, b, c);
      t[w].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()); }
    std::printf("n=%d off %.1f on %.1f GFLOP/s on/off %.3f\n", n, fl/med(t[0])*1e-9, fl/med(t[1])*1e-9, med(t[0])/med(t[1]));
  }
}
