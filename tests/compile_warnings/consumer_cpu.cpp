// A user's program on the CPU policies, compiled at -O2 with -Wall -Wextra
// -Werror and kforge's headers as a normal include (compile_warnings_gcc):
// the paths that GCC's middle-end warnings reach — the vector math of every
// activation (AVX-512 on x86-64-v4), the gemm's fused write-back, the row
// ops, attention, conv2d, the quantized gemm and embedding.
#include <kforge/kforge.hpp>

#include <cstdint>
#include <vector>

int main() {
  using namespace kforge;
  const index_t n = 64;
  std::vector<float> x(n * n, 0.5f), y(n * n), b(n * n, 0.25f), c(n * n), bias(n, 0.1f), g(n, 1.0f);
  const auto xv = make_view(x, {n, n});
  const auto yv = make_view(y, {n, n});
  run<policy::threaded<>>(op::unary<float, fn::gelu_tanh>{}, xv, yv);
  run<policy::threaded<>>(op::unary<float, fn::gelu_erf>{}, xv, yv);
  run<policy::threaded<>>(op::unary<float, fn::silu>{}, xv, yv);
  run<policy::threaded<>>(op::unary<float, fn::sigmoid>{}, xv, yv);
  run<policy::blocked<>>(op::binary<float, binop::add>{}, xv, make_view(bias, {n}), yv);
  run<policy::threaded<>>(op::softmax<float>{}, xv, yv);
  run<policy::threaded<>>(op::rms_norm<float>{}, xv, make_view(g, {n}), yv);
  run<policy::threaded<>>(op::layer_norm<float>{}, xv, make_view(g, {n}), make_view(bias, {n}), yv);
  run<policy::threaded<>>(op::reduce<float, reduce_fn::sum>{.axis = 1}, xv, make_view(c, {n}));
  run<policy::threaded<>>(op::gemm<float, epilogue::bias_gelu>{}, xv, make_view(b, {n, n}), make_view(bias, {n}),
                          make_view(c, {n, n}));
  std::vector<half> xh(x.begin(), x.end()), bh(b.begin(), b.end()), ch(c.size());
  run<policy::threaded<>>(op::gemm<half, epilogue::silu>{}, make_view(xh, {n, n}), make_view(bh, {n, n}), make_view(ch, {n, n}));
  run<policy::threaded<>>(op::attention<float>{.causal = true}, make_view(x, {1, 2, 32, 64}), make_view(b, {1, 2, 32, 64}),
                          make_view(b, {1, 2, 32, 64}), make_view(y, {1, 2, 32, 64}));
  run<policy::threaded<>>(op::conv2d<float, epilogue::bias_relu>{}, make_view(x, {1, 4, 32, 32}), make_view(b, {8, 4, 3, 3}),
                          make_view(bias, {8}), make_view(c, {1, 8, 30, 30}));
  const quantized_matrix q = quantize(qformat::q4_0, b.data(), n, n);
  run<policy::threaded<>>(op::gemm<float>{}, xv, q, make_view(c, {n, n}));
  run<policy::threaded<>>(op::gemm<float>{}, make_view(x.data(), {1, n}), quantize(qformat::fp8_e4m3, b.data(), n, n),
                          make_view(c.data(), {1, n}));
  std::vector<std::int32_t> ids{0, 3, 5};
  run<policy::threaded<>>(op::embedding<float>{}, q, make_view(ids, {3}), make_view(y.data(), {3, n}));
  return static_cast<int>(c[0] + y[0]);
}
