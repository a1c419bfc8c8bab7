// A consumer of the installed kforge package: gemm and the validation suite.
#include <kforge/kforge.hpp>
#include <kforge/validate.hpp>

#include <iostream>

int main() {
  Eigen::MatrixXf a = Eigen::MatrixXf::Ones(3, 4), b = Eigen::MatrixXf::Ones(4, 5), c(3, 5);
  kforge::run<kforge::policy::eigen>(kforge::op::gemm<float>{}, a, b, c);
  kforge::problem p;
  p.op = "softmax";
  kforge::set_shape(p, "7x33");
  const bool ok = c(2, 4) == 4.0f && kforge::validate<kforge::policy::eigen>(p).all_passed;
  std::cout << (ok ? "consumer ok" : "consumer FAILED") << "\n";
  return ok ? 0 : 1;
}
