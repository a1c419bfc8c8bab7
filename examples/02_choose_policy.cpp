// 02_choose_policy.cpp — one call site, several policies. The op says what
// to compute; the policy template argument says how and where.
//
//   build/examples/02_choose_policy
//
// policy::eigen is the reference. policy::blocked<> (cache-blocked SIMD
// micro-kernels) and policy::threaded<> (the same on a thread pool) are
// compiled in when the CPU backend is present; knobs are template arguments,
// e.g. policy::blocked<policy::kc<256>>. kforge::supports<Policy, Op> says at
// compile time whether a policy implements an op.
#include <kforge/kforge.hpp>

#include <chrono>
#include <iostream>
#include <vector>

template <class Policy>
void softmax_rows(const char* name, const std::vector<float>& x, std::vector<float>& y, kforge::index_t rows,
                  kforge::index_t cols) {
  using op = kforge::op::softmax<float>;
  if constexpr (kforge::supports<Policy, op>) {
    const auto t0 = std::chrono::steady_clock::now();
    kforge::run<Policy>(op{}, kforge::make_view(x, {rows, cols}), kforge::make_view(y, {rows, cols}));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::cout << name << ": " << ms << " ms, y[0] = " << y[0] << "\n";
  } else {
    std::cout << name << ": not implemented by this policy\n";
  }
}

int main() {
  const kforge::index_t rows = 512, cols = 1000;
  std::vector<float> x(static_cast<std::size_t>(rows * cols)), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.01f;
  softmax_rows<kforge::policy::eigen>("eigen", x, y, rows, cols);
  softmax_rows<kforge::policy::blocked<>>("blocked", x, y, rows, cols);
  softmax_rows<kforge::policy::threaded<>>("threaded", x, y, rows, cols);
}
