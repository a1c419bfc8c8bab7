#include <kforge/kforge.hpp>
#include <Eigen/Dense>
#include <chrono>
#include <cstdio>
#include <random>
using namespace kforge;
using RM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class P> double one(int m, int n, int k) {
  RM A = RM::Random(m, k), B = RM::Random(k, n), C(m, n);
  run<P>(op::gemm<float>{}, A, B, C);
  RM R = A * B;
  double err = (C - R).cwiseAbs().maxCoeff() / R.cwiseAbs().maxCoeff();
  std::vector<double> t;
  for (int i = 0; i < 11; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run<P>(op::gemm<float>{}, A, B, C);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  std::printf("%dx%dx%d rel err %.1e median %.3f ms (%.0f GFLOP/s)\n", m, n, k, err, t[5], 2.0 * m * n * k / t[5] / 1e6);
  return err;
}
int main() {
  for (auto [m, n, k] : {std::tuple{24, 2048, 1024}, {12, 4096, 512}, {32, 2048, 1024}, {32, 3072, 768}, {20, 8192, 256}}) one<policy::threaded<>>(m, n, k);
  one<policy::blocked<>>(16, 2304, 768);
  RM A = RM::Random(20, 10), B = RM::Random(11, 2000), C(20, 2000);
  try { run<policy::threaded<>>(op::gemm<float>{}, A, B, C); } catch (const std::exception& e) { std::printf("bad shape: %s\n", e.what()); }
}
