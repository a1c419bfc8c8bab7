// tests/cpu_quant.cpp — cpu::gemm_quantized (cpu/quant_gemm.hpp): Y = X · Wᵀ
// with a quantized W equals the f32 gemm of X and dequantize(W) within the
// rounding of f32 sums, for every format, decode-sized M (1 to 9, across
// the 4-row tile), odd N, K of one block up to many (past 8192: the
// two-rows-a-pass decode path; fp8: not a multiple of
// 32 too), one thread or several, the packed prefill path (M ≥ 48),
// leading dimensions wider than the rows; bad shapes refused. And op::gemm
// with a quantized B (ops/gemm.hpp) on policy::eigen, blocked and threaded:
// every format, f32/f16/bf16 operands of any layout, alpha, beta and the
// fused epilogues, decode and prefill rows, against its f64 meaning.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kforge/core/quant.hpp"
#include "kforge/cpu/quant_gemm.hpp"
#include "quant_checks.hpp"

using namespace kforge;

TEST_CASE("cpu::gemm_quantized is the f32 gemm of X and dequantize(W), every format, M, N, K and thread count") {
  std::mt19937 rng(48);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (qformat f : all_qformats) {
    for (index_t k : {32, 96, 1024, 45, 8224}) {  // 8224: M = 1 takes two rows of W per pass (K > 8192)
      if (k % 32 != 0 && info_of(f).block == 32) continue;  // fp8 only: rows of any length (its generic path)
      const index_t n = 37;
      std::vector<float> w(static_cast<std::size_t>(n * k));
      for (auto& v : w) v = nd(rng) * 0.05f;
      w[3] = 0.9f;  // an outlier, as trained weights have
      const quantized_matrix q = quantize(f, w.data(), n, k);
      const std::vector<float> d = q.dequantize();
      for (index_t m : {1, 3, 4, 5, 9, 49}) {  // 49: the prefill path (packed driver)
        for (int threads : {1, 2}) {
          CAPTURE(to_string(f));
          CAPTURE(k);
          CAPTURE(m);
          CAPTURE(threads);
          const index_t ldx = k + 5, ldy = n + 3;
          std::vector<float> x(static_cast<std::size_t>(m * ldx), NAN);  // padding is never read
          for (index_t i = 0; i < m; ++i)
            for (index_t j = 0; j < k; ++j) x[static_cast<std::size_t>(i * ldx + j)] = nd(rng);
          std::vector<float> y(static_cast<std::size_t>(m * ldy), -7.0f);
          cpu::gemm_quantized(q, x.data(), m, ldx, y.data(), ldy, threads);
          int wrong = 0;
          for (index_t i = 0; i < m; ++i) {
            for (index_t c = 0; c < n; ++c) {
              double ref = 0, mag = 0;
              for (index_t j = 0; j < k; ++j) {
                const double p = static_cast<double>(x[static_cast<std::size_t>(i * ldx + j)]) * d[static_cast<std::size_t>(c * k + j)];
                ref += p;
                mag += std::fabs(p);
              }
              const double got = y[static_cast<std::size_t>(i * ldy + c)];
              if (!(std::fabs(got - ref) <= 2.0 * static_cast<double>(k) * 0x1p-24 * mag + 1e-30)) ++wrong;
            }
            for (index_t c = n; c < ldy; ++c) CHECK(y[static_cast<std::size_t>(i * ldy + c)] == -7.0f);  // beyond N: untouched
          }
          CHECK(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("cpu::gemm_quantized refuses shapes that do not fit") {
  std::vector<float> w(64, 0.5f), x(64, 1.0f), y(8, 0.0f);
  const quantized_matrix q = quantize(qformat::q8_0, w.data(), 2, 32);
  CHECK_THROWS_AS(cpu::gemm_quantized(q, x.data(), 0, 32, y.data(), 2), shape_error);
  CHECK_THROWS_AS(cpu::gemm_quantized(q, x.data(), 1, 31, y.data(), 2), shape_error);
  CHECK_THROWS_AS(cpu::gemm_quantized(q, x.data(), 1, 32, y.data(), 1), shape_error);
  cpu::gemm_quantized(q, x.data(), 1, 32, y.data(), 2);
  CHECK(y[0] == doctest::Approx(16.0f).epsilon(0.01));
}

namespace {
template <class P, class T>
void op_gemm_cases(const char* policy) {
  using cpu_test::layout;
  const quant_test::run_policy<P> run;
  for (qformat f : all_qformats) {
    const index_t k = info_of(f).block == 32 ? 96 : 45;  // fp8: any K
    for (index_t m : {1, 6, 50}) {  // 50: the prefill path
      quant_test::check_gemm<T, epilogue::none>(run, f, m, k, 37, layout::row, 1.0f, 0.0f, policy);
      quant_test::check_gemm<T, epilogue::bias_gelu>(run, f, m, k, 37, layout::col, 0.5f, 0.25f, policy);
      quant_test::check_gemm<T, epilogue::silu>(run, f, m, 64, 19, layout::strided, -1.5f, 1.0f, policy);
      quant_test::check_gemm<T, epilogue::bias_leaky_relu>(run, f, m, 64, 19, layout::row, 1.0f, 0.0f, policy);
    }
  }
}
}  // namespace

TEST_CASE("op::gemm with a quantized B: its meaning on policy::eigen, blocked and threaded, every epilogue and dtype") {
  op_gemm_cases<policy::eigen, float>("eigen");
  op_gemm_cases<policy::blocked<>, float>("blocked");
  op_gemm_cases<policy::threaded<>, float>("threaded");
  op_gemm_cases<policy::threaded<>, half>("threaded");
  op_gemm_cases<policy::blocked<>, bfloat16>("blocked");
  op_gemm_cases<policy::eigen, half>("eigen");
}

TEST_CASE("op::gemm with a quantized B refuses operands that do not fit") {
  const quantized_matrix q = quant_test::weights(qformat::q4_0, 8, 64, 1);
  std::vector<float> a(2 * 64, 1.0f), c(2 * 8, 0.0f);
  const tensor_view<const float> av(a.data(), {2, 64}), a_short(a.data(), {2, 32});
  const tensor_view<float> cv(c.data(), {2, 8}), c_wrong(c.data(), {2, 7});
  op::gemm<float> op;
  CHECK_THROWS_AS(run<policy::threaded<>>(op, a_short, q, cv), shape_error);  // K = 32 against W's 64
  CHECK_THROWS_AS(run<policy::threaded<>>(op, av, q, c_wrong), shape_error);
  CHECK_THROWS_AS(run<policy::eigen>(op, av, quantized_matrix{}, cv), argument_error);
  run<policy::threaded<>>(op, av, q, cv);
  std::vector<float> row(64);
  q.dequantize_row(3, row.data());
  double want = 0;
  for (float v : row) want += v;
  CHECK(c[3] == doctest::Approx(want).epsilon(1e-5));
}

TEST_CASE("op::embedding from a quantized table: each row as its format defines it, on policy::eigen, blocked and threaded") {
  for (qformat f : all_qformats) {
    const index_t d = info_of(f).block == 32 ? 96 : 45;  // fp8: rows of any length
    quant_test::check_embedding<float>(quant_test::run_embedding<policy::eigen>{}, f, 9, d, "eigen");
    quant_test::check_embedding<float>(quant_test::run_embedding<policy::threaded<>>{}, f, 9, d, "threaded");
    quant_test::check_embedding<half>(quant_test::run_embedding<policy::blocked<>>{}, f, 5, 64, "blocked");
    quant_test::check_embedding<bfloat16>(quant_test::run_embedding<policy::threaded<>>{}, f, 5, 64, "threaded");
  }
  std::vector<std::int32_t> ids{0};
  std::vector<float> out(32);
  CHECK_THROWS_AS(run<policy::threaded<>>(op::embedding<float>{}, quantized_matrix{}, tensor_view<const std::int32_t>(ids.data(), {1}),
                                          tensor_view<float>(out.data(), {1, 32})),
                  argument_error);  // no table
}
