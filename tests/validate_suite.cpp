// Tests of the validation suite itself: the reference passes its own gate on
// the whole catalog, and plausible wrong kernels are all rejected.
#include <doctest/doctest.h>

#include <kforge/validate.hpp>

#include "policy_suite.hpp"

using namespace kforge;

namespace {
problem make(std::string op, const char* shp, dtype t = dtype::f32) {
  problem p;
  p.op = std::move(op);
  p.type = t;
  set_shape(p, shp);
  return p;
}
void reference(const problem& p, std::vector<host_tensor>& ts) { execute<policy::eigen>(p, ts); }
}  // namespace

TEST_CASE("the Eigen reference passes the whole catalog in every dtype") {
  CHECK(test::check_policy<policy::eigen>() > 100);
}

TEST_CASE("generators are deterministic per seed and cover ten cases") {
  const problem p = make("gemm", "7x5x3");
  std::vector<host_tensor> a = allocate(p), b = allocate(p), c = allocate(p);
  generate_inputs(p, input_case::normal, 42, a);
  generate_inputs(p, input_case::normal, 42, b);
  generate_inputs(p, input_case::normal, 43, c);
  CHECK(a[0].storage == b[0].storage);
  CHECK(a[0].storage != c[0].storage);
  const problem big = make("relu", "100x50");
  std::vector<host_tensor> s = allocate(big);
  generate_inputs(big, input_case::sparse, 1, s);
  int zeros = 0;
  for (index_t i = 0; i < s[0].span(); ++i) zeros += s[0].get(i) == 0.0f;
  CHECK(zeros > 4250);  // ~90% of 5000
  CHECK(zeros < 4750);
  generate_inputs(p, input_case::nan_inf, 7, a);
  const report r = validate<policy::eigen>(make("relu", "1000"));
  CHECK(r.num_total == 10);
  CHECK(r.all_passed);
}

TEST_CASE("a kernel that writes zeros, skips the tail or shifts by one is rejected") {
  const problem p = make("gemm", "17x33x100");
  CHECK(validate(p, reference).all_passed);
  auto zeros = [](const problem&, std::vector<host_tensor>& ts) {
    for (index_t i = 0; i < ts.back().span(); ++i) ts.back().set(i, 0.0f);
  };
  auto skip_tail = [](const problem& q, std::vector<host_tensor>& ts) {
    reference(q, ts);
    ts.back().set(ts.back().span() - 1, std::numeric_limits<float>::quiet_NaN());
  };
  auto partial = [](const problem& q, std::vector<host_tensor>& ts) {
    std::vector<host_tensor> tmp = ts;
    reference(q, tmp);
    for (index_t i = 0; i < ts.back().span() / 2; ++i) ts.back().set(i, tmp.back().get(i));
  };
  auto shifted = [](const problem& q, std::vector<host_tensor>& ts) {
    problem r = q;
    reference(r, ts);
    for (index_t i = ts.back().span() - 1; i > 0; --i) ts.back().set(i, ts.back().get(i - 1));
  };
  for (const executor& bad : {executor(zeros), executor(skip_tail), executor(partial), executor(shifted)}) {
    const report r = validate(p, bad);
    CHECK_FALSE(r.all_passed);
    CHECK(r.num_passed < r.num_total);
  }
}

TEST_CASE("dropping attention's 1/sqrt(d) or computing gemm in f16 is rejected") {
  const problem att = make("attention", "1x2x17x16");
  auto no_scale = [](const problem& q, std::vector<host_tensor>& ts) {
    problem r = q;
    r.scale = 1.0f;
    reference(r, ts);
  };
  CHECK_FALSE(validate(att, no_scale).all_passed);
  // f16 accumulation: round every partial sum to half — loses digits at K = 1000.
  const problem g = make("gemm", "3x4x1000", dtype::f16);
  auto f16_acc = [](const problem& q, std::vector<host_tensor>& ts) {
    const index_t m = q.dims[0], n = q.dims[1], k = q.dims[2];
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        half acc(0.0f);
        for (index_t l = 0; l < k; ++l) acc = half(static_cast<float>(acc) + ts[0].get(i * k + l) * ts[1].get(l * n + j));
        ts.back().set(i * n + j, static_cast<float>(acc));
      }
  };
  CHECK_FALSE(validate(g, f16_acc).all_passed);
  CHECK(validate(g, reference).all_passed);
}

TEST_CASE("degenerate references are flagged; an all-degenerate suite fails") {
  const problem p = make("relu", "3x7");
  suite_options only_zeros;
  only_zeros.cases = {input_case::zeros};
  const report r = validate(p, reference, only_zeros);
  REQUIRE(r.cases.size() == 1);
  CHECK(r.cases[0].degenerate);
  CHECK(r.cases[0].passed);
  CHECK_FALSE(r.all_passed);
  CHECK(r.note.find("degenerate") != std::string::npos);
  suite_options skip;
  skip.skip_degenerate = true;
  const report s = validate(make("gemm", "17x33x100"), reference, skip);
  CHECK(s.num_total == 8);  // zeros and ones (constant) cases dropped
  CHECK(s.all_passed);
}

TEST_CASE("a candidate that throws fails with the message recorded") {
  auto throws = [](const problem&, std::vector<host_tensor>&) { throw unsupported_error("no such device"); };
  const report r = validate(make("softmax", "3x5"), throws);
  CHECK_FALSE(r.all_passed);
  CHECK(r.num_passed == 0);
  CHECK(r.cases[0].error == "no such device");
  CHECK(r.to_json().find("\"error\":\"no such device\"") != std::string::npos);
}

TEST_CASE("unsupported dtype and unknown names are typed errors") {
  problem p = make("softmax", "3x5");
  p.type = dtype::f64;
  std::vector<host_tensor> ts = allocate(p);
  CHECK_THROWS_AS(execute<policy::eigen>(p, ts), unsupported_error);
  problem g = make("gemm", "3x4x5");
  g.epilogue = "sparkle";
  std::vector<host_tensor> gs = allocate(g);
  CHECK_THROWS_AS(execute<policy::eigen>(g, gs), argument_error);
}
