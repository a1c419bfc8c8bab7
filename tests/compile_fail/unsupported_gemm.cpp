// Must NOT compile: a policy that implements no op, asked for a gemm.
#include <kforge/kforge.hpp>

struct made_up_policy {
  static std::string name() { return "made_up"; }
};

int main() {
  Eigen::MatrixXf a(2, 2), b(2, 2), c(2, 2);
  kforge::run<made_up_policy>(kforge::op::gemm<float>{}, a, b, c);
  static_assert(!kforge::supports<made_up_policy, kforge::op::gemm<float>>);
}
