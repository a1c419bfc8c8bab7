#include <cstdlib>
#ifndef POL
#define POL policy::threaded<>
#endif
#include <kforge/cpu/cpu.hpp>
#include <cblas.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <random>
using namespace kforge;
int main(int argc, char** argv) {
  std::vector<int> sizes; for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i])); if (sizes.empty()) sizes = {512, 1024, 2048};
  for (int n : sizes) {
    std::vector<float> A(size_t(n)*n), B(size_t(n)*n), C(size_t(n)*n), D(size_t(n)*n);
    std::mt19937 g(1); std::uniform_real_distribution<float> u(-1,1);
    for (auto& x : A) x = u(g); for (auto& x : B) x = u(g);
    tensor_view<const float> a(A.data(), shape{n, n}), b(B.data(), shape{n, n});
    tensor_view<float> c(C.data(), shape{n, n});
    auto med = [](std::vector<double> v){ std::sort(v.begin(), v.end()); return v[v.size()/2]; };
    double fl = 2.0*n*n*n;
    std::vector<double> tk, tb;
    run<POL>(op::gemm<float>{}, a, b, c);
    for (int i = 0; i < 15; ++i) { auto t0 = std::chrono::steady_clock::now(); run<POL>(op::gemm<float>{}, a, b, c); tk.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()); }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, D.data(), n);
    for (int i = 0; i < 15; ++i) { auto t0 = std::chrono::steady_clock::now(); cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, D.data(), n); tb.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count()); }
    double err = 0; for (size_t i = 0; i < C.size(); ++i) err = std::max(err, double(std::abs(C[i]-D[i])));
    std::printf("%s n=%d kforge %.1f GFLOP/s openblas %.1f ratio %.3f maxdiff %.2g\n", argv[0], n, fl/med(tk)*1e-9, fl/med(tb)*1e-9, med(tb)/med(tk), err);
  }
}
