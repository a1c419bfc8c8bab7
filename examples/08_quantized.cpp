// 08_quantized.cpp — low-precision weights: a linear layer's weight (N rows of
// K floats, as checkpoints store it) packed as llama.cpp's q8_0 / q4_0 blocks,
// OCP MXFP4 or FP8 E4M3, then C = A·Wᵀ computed on the packed bytes by an
// ordinary op::gemm call, checked against the same product with the weights
// dequantized.
//
//   build/examples/08_quantized
//
// The bytes are GGUF's block layout, byte for byte what llama.cpp's reference
// quantisers write: a GGUF tensor is adopted as it is with
// quantized_matrix(format, n, k, bytes). On the GPU, vulkan::quantized_tensor
// holds them in device memory (docs/VULKAN.md).
#include <kforge/kforge.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  using namespace kforge;
  const index_t m = 4, n = 256, k = 512;  // 4 decode rows through a 512 -> 256 projection
  std::vector<float> w(n * k), a(m * k), c(m * n);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * std::sin(0.37f * static_cast<float>(i));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::cos(0.11f * static_cast<float>(i));

  for (qformat f : {qformat::q8_0, qformat::q4_0, qformat::mxfp4, qformat::fp8_e4m3}) {
    const quantized_matrix q = quantize(f, w.data(), n, k);  // W [N, K], blocks along K
    run<policy::threaded<>>(op::gemm<float>{}, make_view(a, {m, k}), q, make_view(c, {m, n}));  // C = A·dequantize(W)ᵀ

    // What that means, by hand: the same product on the dequantized floats.
    const std::vector<float> wd = q.dequantize();
    double worst = 0, worst_vs_f32 = 0;
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double dq = 0, full = 0;
        for (index_t p = 0; p < k; ++p) {
          dq += static_cast<double>(a[i * k + p]) * wd[j * k + p];
          full += static_cast<double>(a[i * k + p]) * w[j * k + p];
        }
        worst = std::max(worst, std::abs(c[i * n + j] - dq));
        worst_vs_f32 = std::max(worst_vs_f32, std::abs(c[i * n + j] - full));
      }
    std::printf("%-9s %5.2f bits per weight | max |C - A·deq(W)ᵀ| %.2e | max |C - A·Wᵀ| (the format's rounding) %.2e\n",
                std::string(to_string(f)).c_str(), 8.0 * static_cast<double>(q.bytes()) / static_cast<double>(n * k),
                worst, worst_vs_f32);
    if (worst > 1e-3) return 1;
  }
  return 0;
}
