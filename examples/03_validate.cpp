// 03_validate.cpp — the validation suite: run a problem through the ten
// cases (five random distributions, five edge cases) against the Eigen
// reference, and see a wrong kernel rejected.
//
//   build/examples/03_validate
#include <kforge/validate.hpp>

#include <iostream>

int main() {
  kforge::problem p;
  p.op = "layer_norm";
  kforge::set_shape(p, "33x257");  // odd sizes on purpose: no tile divides them

  const kforge::report good = kforge::validate<kforge::policy::eigen>(p);
  std::cout << good.problem << ": " << good.num_passed << "/" << good.num_total << " passed\n";

  // A plausible bug: epsilon dropped. The suite catches it.
  auto no_epsilon = [](const kforge::problem& q, std::vector<kforge::host_tensor>& ts) {
    kforge::problem r = q;
    r.epsilon = 0.5f;
    kforge::execute<kforge::policy::eigen>(r, ts);
  };
  const kforge::report bad = kforge::validate(p, no_epsilon);
  std::cout << "with a wrong epsilon: " << bad.num_passed << "/" << bad.num_total << " passed -> "
            << (bad.all_passed ? "accepted" : "rejected") << "\n";
  std::cout << bad.to_json().substr(0, 300) << "...\n";
  return good.all_passed && !bad.all_passed ? 0 : 1;
}
