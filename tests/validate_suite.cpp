// Tests of the validation suite itself: the reference passes its own gate on
// the whole catalog, and plausible wrong kernels are all rejected.
#include <doctest/doctest.h>

#include <kforge/validate.hpp>

#include "policy_suite.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

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

namespace {
/// Attention on a problem's host tensors, written out, with the knobs of
/// plausible kernels: P rounded to f16 before P·V (right, under the f16
/// tolerance), and wrong ones — a causal mask shifted by `mask_shift` keys, the
/// last key dropped, the last query row of each head never written.
struct attention_kernel {
  bool round_p = false, drop_key = false, skip_row = false;
  index_t mask_shift = 0;
  void operator()(const problem& p, std::vector<host_tensor>& ts) const {
    const index_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3];
    const index_t l = attention_traits::attended(p), hk = attention_traits::kv_heads(p);
    const bool bshd = attention_traits::layout(p) == attention_layout::bshd;
    const double scale = p.scale > 0 ? p.scale : 1.0 / std::sqrt(static_cast<double>(d));
    auto at = [&](const host_tensor& x, index_t bi, index_t hi, index_t row, index_t e) {
      const int ha = bshd ? 2 : 1, sa = bshd ? 1 : 2;
      return x.get(bi * x.strides[0] + hi * x.strides[ha] + row * x.strides[sa] + e * x.strides[3]);
    };
    host_tensor& o = ts[3];
    for (index_t bi = 0; bi < b; ++bi)
      for (index_t hi = 0; hi < h; ++hi)
        for (index_t i = 0; i < (skip_row ? s - 1 : s); ++i) {
          index_t n = p.causal ? std::clamp<index_t>(i + 1 + mask_shift, 0, l) : l;
          if (drop_key) n = std::max<index_t>(0, n - 1);
          std::vector<double> sc(static_cast<std::size_t>(n));
          double mx = -std::numeric_limits<double>::infinity();
          for (index_t j = 0; j < n; ++j) {
            double dot = 0;
            for (index_t e = 0; e < d; ++e) dot += at(ts[0], bi, hi, i, e) * at(ts[1], bi, hi / (h / hk), j, e);
            sc[static_cast<std::size_t>(j)] = static_cast<float>(dot * scale);
            mx = std::max(mx, sc[static_cast<std::size_t>(j)]);
          }
          double sum = 0;
          for (auto& x : sc) sum += (x = static_cast<float>(std::exp(x - mx)));
          for (index_t e = 0; e < d; ++e) {
            double acc = 0;
            for (index_t j = 0; j < n; ++j) {
              const double pj = round_p ? static_cast<float>(half(static_cast<float>(sc[static_cast<std::size_t>(j)])))
                                        : sc[static_cast<std::size_t>(j)];
              acc += pj * at(ts[2], bi, hi / (h / hk), j, e);
            }
            const index_t off = bi * o.strides[0] + hi * o.strides[bshd ? 2 : 1] + i * o.strides[bshd ? 1 : 2] + e * o.strides[3];
            o.set(off, n == 0 ? 0.0f : static_cast<float>(acc / sum));
          }
        }
  }
};
}  // namespace

// The f16 and bf16 tolerance (ops/attention.hpp) takes P rounded to f16 and
// nothing wider: the kernel that rounds P passes every attention problem of
// the catalog in f16 and in bf16 (the Vulkan tensor-core kernel's rounding
// for both), and each wrong kernel fails at least one of them.
TEST_CASE_TEMPLATE("attention f16 and bf16: rounding P to f16 passes the suite; wrong scale, mask, key or row do not", T,
                   half, bfloat16) {
  std::vector<problem> att;
  for (const problem& p : test_problems(dtype_of<T>()))
    if (p.op == "attention") att.push_back(p);
  REQUIRE(att.size() >= 10);
  double worst = 0;
  for (const problem& p : att) {
    CAPTURE(describe(p));
    const report r = validate(p, executor(attention_kernel{true}));
    CHECK(r.all_passed);
    worst = std::max(worst, r.max_rel_err);
  }
  MESSAGE(to_string(dtype_of<T>()) << ", f16 P: largest error / error scale over the catalog's attention problems: " << worst);
  auto rejected = [&](const executor& k) {
    for (const problem& p : att)
      if (!validate(p, k).all_passed) return true;
    return false;
  };
  CHECK(rejected([](const problem& q, std::vector<host_tensor>& ts) {
    problem r = q;
    r.scale = 1.0f;
    attention_kernel{true}(r, ts);
  }));
  attention_kernel hides_diagonal{true}, sees_next{true}, drops_key{true}, skips_row{true};
  hides_diagonal.mask_shift = -1;
  sees_next.mask_shift = 1;
  drops_key.drop_key = true;
  skips_row.skip_row = true;
  CHECK(rejected(hides_diagonal));
  CHECK(rejected(sees_next));
  CHECK(rejected(drops_key));
  CHECK(rejected(skips_row));
}

TEST_CASE("ids are drawn in [0, V) in every case; the extremes case names the first and last rows only") {
  const problem e = make("embedding", "37x5,4x25");
  for (input_case c : all_cases) {
    CAPTURE(to_string(c));
    std::vector<host_tensor> ts = allocate(e);
    generate_inputs(e, c, 99, ts);
    REQUIRE(ts[1].type == dtype::i32);
    std::set<std::int32_t> seen;
    for (index_t i = 0; i < ts[1].span(); ++i) seen.insert(ts[1].get_i32(i));
    CHECK(*seen.begin() >= 0);
    CHECK(*seen.rbegin() < 37);
    if (c == input_case::extremes) CHECK(seen == std::set<std::int32_t>{0, 36});
    else CHECK(seen.size() > 20);  // 100 draws over 37 rows
  }
}

TEST_CASE("every output is compared: values right and indices wrong fail, naming the output") {
  problem p = make("topk", "7x50");
  p.attrs["k"] = 3;
  CHECK(validate(p, reference).all_passed);
  auto index_off = [](const problem& q, std::vector<host_tensor>& ts) {
    reference(q, ts);
    ts[2].set_i32(4, ts[2].get_i32(4) + 1);
  };
  const report r = validate(p, index_off);
  CHECK_FALSE(r.all_passed);
  CHECK(r.cases[0].mismatches == 1);
  CHECK(r.cases[0].first_bad == 4);
  CHECK(r.cases[0].first_bad_output == "indices");
  CHECK(r.to_json().find("\"first_bad_output\":\"indices\"") != std::string::npos);
  auto values_only = [](const problem& q, std::vector<host_tensor>& ts) {
    std::vector<host_tensor> full = ts;
    reference(q, full);
    ts[1] = full[1];  // the indices keep their poison (-1)
  };
  const report v = validate(p, values_only);
  CHECK(v.num_passed == 0);
  CHECK(v.cases[0].first_bad_output == "indices");
  // Ties: the zeros case of k > 1 is informative (indices 0, 1, 2), argmax's is degenerate (every index 0).
  suite_options zeros;
  zeros.cases = {input_case::zeros};
  CHECK_FALSE(validate(p, reference, zeros).cases[0].degenerate);
  CHECK(validate(make("argmax", "7x50"), reference, zeros).cases[0].degenerate);
  // Single-output ops report no output name.
  CHECK(validate(make("gemm", "3x4x5"), [](const problem&, std::vector<host_tensor>&) {}).cases[0].first_bad_output.empty());
}
