// Must NOT compile: a policy that implements no op, asked for a softmax.
#include <kforge/kforge.hpp>

struct made_up_policy {
  static std::string name() { return "made_up"; }
};

int main() {
  Eigen::MatrixXf x(2, 2), y(2, 2);
  kforge::run<made_up_policy>(kforge::op::softmax<float>{}, x, y);
}
