// tests/quant_checks.hpp — op::gemm with a quantized B (B = dequantize(W)ᵀ)
// checked against its meaning computed in f64 here: C = act(alpha·A·Bᵀ... +
// beta·C + bias) with A in its storage type's values and W dequantized as
// core/quant.hpp defines it, under gemm_quantized_tolerance (ops/gemm.hpp) — for
// any policy, T, epilogue and operand layout (tests/cpu_check.hpp's).
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_check.hpp"

namespace quant_test {

using namespace kforge;

/// A weight matrix W [n, k] of normal values with an outlier, quantized in f.
inline quantized_matrix weights(qformat f, index_t n, index_t k, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> w(static_cast<std::size_t>(n * k));
  for (auto& v : w) v = nd(rng);
  w[static_cast<std::size_t>(k / 2)] = 0.9f;
  return quantize(f, w.data(), n, k);
}

/// Runs op::gemm<T, E> under policy P with the quantized q as B on m rows of
/// A (layout l for A and C, C filled first: beta reads it) and compares C
/// with the f64 reference. `run` is how the call is made: it receives
/// (op, A, q, bias, C) and calls kforge::run (or anything equivalent).
template <class T, class E, class Run>
void check_gemm(const Run& run, qformat f, index_t m, index_t k, index_t n, cpu_test::layout l, float alpha, float beta,
                const std::string& what) {
  const quantized_matrix q = weights(f, n, k, static_cast<unsigned>(m * 31 + k + n));
  auto a = cpu_test::make<T>(shape{m, k}, l);
  auto c = cpu_test::make<T>(shape{m, n}, l);
  auto bias = cpu_test::make<T>(shape{n}, cpu_test::layout::row);
  cpu_test::fill(a.v, 11);
  cpu_test::fill(c.v, 12);
  cpu_test::fill(bias.v, 13);
  const std::vector<float> av = cpu_test::values(a.v), c0 = cpu_test::values(c.v), bv = cpu_test::values(bias.v);
  const std::vector<float> d = q.dequantize();
  op::gemm<T, E> op;
  op.alpha = alpha;
  op.beta = beta;
  op.epilogue.slope = 0.05f;
  run(op, a.cv(), q, bias.cv(), c.v);
  std::vector<float> ref(static_cast<std::size_t>(m * n)), scale(ref.size());
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (index_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(av[static_cast<std::size_t>(i * k + p)]) * d[static_cast<std::size_t>(j * k + p)];
        s += t;
        mag += std::fabs(t);
      }
      const std::size_t e = static_cast<std::size_t>(i * n + j);
      double v = alpha * s + (beta != 0.0f ? beta * static_cast<double>(c0[e]) : 0.0);
      if constexpr (E::has_bias) v += bv[static_cast<std::size_t>(j)];
      ref[e] = math::apply<E::activation>(static_cast<float>(v), op.epilogue.slope);
      // The activations' slopes stay below 1.2: the sum's error scale carries through.
      scale[e] = static_cast<float>(1.2 * (std::fabs(alpha) * mag + std::fabs(beta * c0[e]) + (E::has_bias ? std::fabs(bv[static_cast<std::size_t>(j)]) : 0.0)));
    }
  cpu_test::compare(cpu_test::values(c.v), ref, scale, gemm_quantized_tolerance(dtype_of<T>(), k), dtype_of<T>(),
                    what + " " + std::string(to_string(f)) + " " + epilogue::epilogue_name<E>() + " M=" + std::to_string(m) +
                        " K=" + std::to_string(k) + " N=" + std::to_string(n) + " " + cpu_test::name(l));
}

/// Calls kforge::run<P> with or without the bias, as E asks.
template <class P>
struct run_policy {
  template <class Op, class T>
  void operator()(const Op& op, tensor_view<const T> a, const quantized_matrix& q, tensor_view<const T> bias,
                  tensor_view<T> c) const {
    if constexpr (Op::epilogue_type::has_bias) kforge::run<P>(op, a, q, bias, c);
    else kforge::run<P>(op, a, q, c);
  }
};

/// op::embedding<T> from a quantized table [v, d] in format f: `run(op,
/// table, ids, out)` makes the call (host views: ids [2, 3] with one repeat
/// and both ends of the table). Each output row must be the table's row
/// dequantized and rounded once to T, bit for bit.
template <class T, class Run>
void check_embedding(const Run& run, qformat f, index_t v, index_t d, const std::string& what) {
  CAPTURE(what);
  CAPTURE(to_string(f));
  CAPTURE(to_string(dtype_of<T>()));
  const quantized_matrix q = weights(f, v, d, static_cast<unsigned>(v * 7 + d));
  const std::vector<std::int32_t> ids{static_cast<std::int32_t>(v - 1), 0, 2, 2, 1, static_cast<std::int32_t>(v / 2)};
  std::vector<T> out(static_cast<std::size_t>(6 * d), static_cast<T>(-1.0f));
  run(op::embedding<T>{}, q, tensor_view<const std::int32_t>(ids.data(), {2, 3}), tensor_view<T>(out.data(), {2, 3, d}));
  std::vector<float> row(static_cast<std::size_t>(d));
  int wrong = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    q.dequantize_row(ids[i], row.data());
    for (index_t j = 0; j < d; ++j) {
      const T want = static_cast<T>(row[static_cast<std::size_t>(j)]), got = out[i * static_cast<std::size_t>(d) + static_cast<std::size_t>(j)];
      if (std::memcmp(&want, &got, sizeof(T)) != 0 && wrong++ < 3)
        FAIL_CHECK("out[" << i << "," << j << "] = " << static_cast<float>(got) << ", row " << ids[i] << " defines "
                          << static_cast<float>(want));
    }
  }
  CHECK(wrong == 0);
  // An id out of range: argument_error naming it; a wrong output shape: shape_error.
  const std::vector<std::int32_t> bad{0, static_cast<std::int32_t>(v)};
  std::vector<T> two(static_cast<std::size_t>(2 * d));
  const std::string named = "id " + std::to_string(v) + " at position 1";
  CHECK_THROWS_WITH_AS(run(op::embedding<T>{}, q, tensor_view<const std::int32_t>(bad.data(), {2}), tensor_view<T>(two.data(), {2, d})),
                       doctest::Contains(named.c_str()), argument_error);
  CHECK_THROWS_AS(run(op::embedding<T>{}, q, tensor_view<const std::int32_t>(bad.data(), {1}), tensor_view<T>(two.data(), {1, d + 1})),
                  shape_error);
}

/// kforge::run<P>(op, table, ids, out) for check_embedding.
template <class P>
struct run_embedding {
  template <class T>
  void operator()(const op::embedding<T>& op, const quantized_matrix& q, tensor_view<const std::int32_t> ids, tensor_view<T> out) const {
    kforge::run<P>(op, q, ids, out);
  }
};

}  // namespace quant_test
