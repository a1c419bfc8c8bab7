// tests/cpu_quant.cpp — cpu::gemm_quantized (cpu/quant_gemm.hpp): Y = X · Wᵀ
// with a quantized W equals the f32 gemm of X and dequantize(W) within the
// rounding of f32 sums, for every format, decode-sized M (1 to 9, across
// the 4-row tile), odd N, K of one block up to many (past 8192: the
// two-rows-a-pass decode path; fp8: not a multiple of
// 32 too), one thread or several, the packed prefill path (M ≥ 48),
// leading dimensions wider than the rows; bad shapes refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kforge/core/quant.hpp"
#include "kforge/cpu/quant_gemm.hpp"

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
