// tests/cpu_gemm.cpp — policy::blocked and policy::threaded gemm against the
// Eigen reference: odd shapes, every dtype, row/column-major and strided
// operands, every fused epilogue, alpha/beta, NaN propagation, K split over
// several KC blocks and M/N over several MC/NC blocks (small-blocking knobs).
#include "cpu_check.hpp"

#include <limits>
#include <tuple>

namespace {

using namespace cpu_test;
using kforge::bfloat16;
using kforge::half;
namespace policy = kforge::policy;
namespace epilogue = kforge::epilogue;
namespace op = kforge::op;

// Small blocks so that odd shapes cross MC/NC/KC boundaries.
using blocked_small = policy::blocked<policy::mc<24>, policy::nc<64>, policy::kc<16>>;
using threaded_small = policy::threaded<blocked_small, policy::threads<3>>;

struct gemm_case {
  index_t m, n, k;
  layout la, lb, lc;
};

template <class P, class T, class E>
void check_gemm(const gemm_case& gc, float alpha, float beta, std::uint32_t seed) {
  auto a = make<T>(shape{gc.m, gc.k}, gc.la);
  auto b = make<T>(shape{gc.k, gc.n}, gc.lb);
  auto c = make<T>(shape{gc.m, gc.n}, gc.lc);
  auto ref = make<T>(shape{gc.m, gc.n}, layout::row);
  auto bias = make<T>(shape{gc.n}, layout::strided);
  fill(a.v, seed);
  fill(b.v, seed + 1);
  fill(bias.v, seed + 2);
  fill(c.v, seed + 3);
  fill(ref.v, seed + 3);  // same initial C (the fill order is row-major in both)
  op::gemm<T, E> g;
  g.alpha = alpha;
  g.beta = beta;
  g.epilogue.slope = 0.05f;
  g.epilogue.slope = 0.05f;
  if constexpr (E::has_bias) {
    kforge::run<P>(g, a.cv(), b.cv(), bias.cv(), c.v);
    kforge::run<policy::eigen>(g, a.cv(), b.cv(), bias.cv(), ref.v);
  } else {
    kforge::run<P>(g, a.cv(), b.cv(), c.v);
    kforge::run<policy::eigen>(g, a.cv(), b.cv(), ref.v);
  }
  // Error scale: |alpha|·|A|·|B| + |beta|·|C| + |bias|.
  const auto av = values(a.v), bv = values(b.v), biasv = values(bias.v);
  std::vector<float> c0(static_cast<std::size_t>(gc.m * gc.n));
  {
    auto tmp = make<T>(shape{gc.m, gc.n}, layout::row);
    fill(tmp.v, seed + 3);
    c0 = values(tmp.v);
  }
  std::vector<float> scale(c0.size());
  for (index_t i = 0; i < gc.m; ++i)
    for (index_t j = 0; j < gc.n; ++j) {
      double s = 0;
      for (index_t p = 0; p < gc.k; ++p)
        s += std::fabs(av[static_cast<std::size_t>(i * gc.k + p)]) * std::fabs(bv[static_cast<std::size_t>(p * gc.n + j)]);
      s = s * std::fabs(alpha) + std::fabs(beta) * std::fabs(c0[static_cast<std::size_t>(i * gc.n + j)]);
      if (E::has_bias) s += std::fabs(biasv[static_cast<std::size_t>(j)]);
      scale[static_cast<std::size_t>(i * gc.n + j)] = static_cast<float>(s + 1e-30);
    }
  std::ostringstream what;
  what << P::name() << " gemm<" << kforge::to_string(kforge::dtype_of<T>()) << ", " << epilogue::epilogue_name<E>()
       << "> " << gc.m << "x" << gc.n << "x" << gc.k << " A " << name(gc.la) << " B " << name(gc.lb) << " C "
       << name(gc.lc) << " alpha " << alpha << " beta " << beta;
  compare(values(c.v), values(ref.v), scale, kforge::gemm_tolerance(kforge::dtype_of<T>(), gc.k), kforge::dtype_of<T>(),
          what.str());
}

const gemm_case odd_shapes[] = {
    {1, 1, 1, layout::row, layout::row, layout::row},           {3, 7, 5, layout::col, layout::row, layout::row},
    {7, 3, 17, layout::row, layout::col, layout::col},          {17, 33, 7, layout::strided, layout::strided, layout::strided},
    {33, 17, 100, layout::row, layout::row, layout::strided},   {100, 257, 33, layout::col, layout::col, layout::row},
    {257, 100, 3, layout::row, layout::strided, layout::col},   {1, 257, 33, layout::row, layout::row, layout::row},
    {1000, 3, 17, layout::row, layout::row, layout::row},       {8, 300, 600, layout::row, layout::row, layout::row},
    {5, 77, 300, layout::col, layout::row, layout::col},        {2, 40, 9, layout::row, layout::col, layout::row},
    {65, 70, 600, layout::row, layout::row, layout::row},       {130, 129, 257, layout::strided, layout::row, layout::row},
    {37, 41, 0, layout::row, layout::row, layout::row},         {7, 129, 70, layout::strided, layout::row, layout::row},
};

template <class P, class T>
void all_shapes(std::uint32_t seed) {
  for (const auto& gc : odd_shapes) check_gemm<P, T, epilogue::none>(gc, 1.0f, 0.0f, seed++);
}

template <class P, class T>
void all_epilogues(const gemm_case& gc, std::uint32_t seed) {
  check_gemm<P, T, epilogue::bias>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::relu>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::bias_relu>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::leaky_relu>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::bias_leaky_relu>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::gelu_tanh>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::bias_gelu_tanh>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::gelu>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::bias_gelu>(gc, 0.5f, 0.75f, seed);
  check_gemm<P, T, epilogue::silu>(gc, 1.0f, 0.0f, seed);
  check_gemm<P, T, epilogue::bias_silu>(gc, -2.0f, 1.0f, seed);
}

}  // namespace

TEST_CASE_TEMPLATE("cpu gemm: odd shapes and layouts match the Eigen reference", T, float, half, bfloat16) {
  all_shapes<policy::blocked<>, T>(10);
  all_shapes<policy::threaded<>, T>(20);
  all_shapes<blocked_small, T>(30);
  all_shapes<threaded_small, T>(40);
}

TEST_CASE_TEMPLATE("cpu gemm: every fused epilogue, alpha and beta", T, float, half, bfloat16) {
  // One shape that needs edge tiles, the skinny path and several KC blocks.
  for (const gemm_case& gc : {gemm_case{45, 70, 40, layout::row, layout::row, layout::row},
                              gemm_case{6, 100, 50, layout::row, layout::row, layout::col}}) {
    all_epilogues<policy::blocked<>, T>(gc, 50);
    all_epilogues<threaded_small, T>(gc, 60);
  }
  for (float beta : {0.0f, 1.0f, -0.5f})
    for (float alpha : {1.0f, 0.25f})
      check_gemm<policy::threaded<>, T, epilogue::none>({29, 67, 300, layout::col, layout::row, layout::strided}, alpha,
                                                        beta, 70);
}

TEST_CASE("cpu gemm: larger problems split over threads (square, tall-skinny, short-wide)") {
  const gemm_case cases[] = {{300, 300, 300, layout::row, layout::row, layout::row},
                             {1500, 40, 200, layout::row, layout::row, layout::row},
                             {20, 1500, 200, layout::row, layout::row, layout::row},
                             // Up to 32 rows over N > 1024, K ≥ 4096 stream B unpacked (AVX-512 builds): a
                             // right edge, column-major and strided C and A, 9 rows (blocks 8 + 1), 15
                             // (8 + 7); N = 1024, K = 4095 and 33 rows take the packed path.
                             {32, 1100, 4096, layout::row, layout::row, layout::row},
                             {9, 1100, 4096, layout::col, layout::row, layout::col},
                             {15, 1025, 4096, layout::strided, layout::row, layout::strided},
                             {30, 1024, 4096, layout::row, layout::row, layout::row},
                             {32, 1100, 4095, layout::row, layout::row, layout::row},
                             {33, 1100, 4096, layout::row, layout::row, layout::row},
                             {4, 2000, 500, layout::row, layout::row, layout::row},
                             // The task split's two rules (gemm_kernel.hpp): a slab of B that fits L2 with
                             // C's rows cut into many short row blocks (2000 rows × 320 columns), and one
                             // past any L2 up to 4 MiB (N = 4200: 4.3 MB at KC 256, two NC blocks) in a few
                             // tall row blocks per thread, then column blocks.
                             {2000, 300, 300, layout::row, layout::row, layout::row},
                             {400, 4200, 300, layout::row, layout::row, layout::row}};
  for (const auto& gc : cases) {
    check_gemm<policy::threaded<>, float, epilogue::bias_gelu>(gc, 1.0f, 0.0f, 80);
    check_gemm<policy::threaded<>, half, epilogue::bias_relu>(gc, 1.0f, 0.5f, 81);
    check_gemm<policy::blocked<>, bfloat16, epilogue::gelu>(gc, 0.5f, 1.0f, 82);
  }
}

TEST_CASE_TEMPLATE("cpu gemm: NaN propagates; beta == 0 does not read C", P, policy::blocked<>, policy::threaded<>,
                   blocked_small) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Skinny, packed, 9-32 rows unpacked.
  for (const auto& [m, n, k] : {std::tuple<index_t, index_t, index_t>{5, 37, 20}, {40, 37, 20}, {20, 1030, 4096}}) {
    auto a = make<float>(shape{m, k}, layout::row);
    auto b = make<float>(shape{k, n}, layout::row);
    auto c = make<float>(shape{m, n}, layout::row);
    fill(a.v, 1);
    fill(b.v, 2);
    a.v(2, 3) = nan;  // row 2 of the product is NaN, also through relu
    for (auto& x : c.buf) x = nan;
    kforge::run<P>(op::gemm<float, epilogue::relu>{}, a.cv(), b.cv(), c.v);
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        INFO("m " << m << " at " << i << "," << j);
        CHECK(std::isnan(c.v(i, j)) == (i == 2));
      }
  }
}

TEST_CASE("cpu gemm: shape errors and the micro-kernel name") {
  auto a = make<float>(shape{3, 4}, layout::row);
  auto b = make<float>(shape{5, 6}, layout::row);
  auto c = make<float>(shape{3, 6}, layout::row);
  CHECK_THROWS_AS(kforge::run<policy::blocked<>>(op::gemm<float>{}, a.cv(), b.cv(), c.v), kforge::shape_error);
  const std::string isa = kforge::cpu::isa_name();
#if defined(__AVX512F__)
  CHECK(isa == "avx512");
#elif defined(__AVX2__) && defined(__FMA__)
  CHECK(isa == "avx2+fma");
#else
  CHECK(isa == "scalar");
#endif
  // 4x16 fits the register file of every ISA (AVX2: 4·2 + 2 + 1 of 16 ymm).
  CHECK(kforge::cpu::microkernel_name<policy::blocked<policy::micro<4, 16>>>().find(isa + " 4x16") == 0);
  CHECK(kforge::cpu::microkernel_name<policy::threaded<policy::blocked<>, policy::threads<2>>>().find("x2 threads") !=
        std::string::npos);
  static_assert(kforge::supports<policy::blocked<>, op::gemm<kforge::bfloat16, epilogue::bias_silu>>);
  static_assert(!kforge::supports<policy::blocked<>, op::gemm<double>>);
}
