// examples/04_vulkan_chain.cpp — a gemm → gelu → layer_norm chain on the GPU
// with device tensors and one submission: the data is uploaded once, the
// three kernels run back to back (barriers only between dependent ones), and
// only the result comes back. Then the same recording is replayed and the
// GPU time of each dispatch printed.
//
// Run: build/examples/04_vulkan_chain        (KFORGE_VK_DEVICE=1 or =llvmpipe
// picks a device; KFORGE_VK_VALIDATION=1 turns the validation layer on)
#include <kforge/vulkan.hpp>

#include <cstdio>
#include <vector>

int main() try {
  using namespace kforge;
  vulkan::context ctx;
  std::printf("device: %s\n", ctx.info().name.c_str());

  const index_t m = 256, k = 128, n = 64;
  Eigen::MatrixXf A = Eigen::MatrixXf::Random(m, k), B = Eigen::MatrixXf::Random(k, n);  // column-major is fine
  std::vector<float> gamma(n, 1.0f), beta(n, 0.0f), out(m * n);

  auto a = vulkan::device_tensor<float>::from_host(ctx, A);
  auto b = vulkan::device_tensor<float>::from_host(ctx, B);
  auto g = vulkan::device_tensor<float>::from_host(ctx, make_view(gamma, {n}));
  auto be = vulkan::device_tensor<float>::from_host(ctx, make_view(beta, {n}));
  vulkan::device_tensor<float> h(ctx, {m, n}), act(ctx, {m, n}), y(ctx, {m, n});

  vulkan::stream s(ctx);
  s.time_dispatches(true);  // a GPU timestamp pair around each dispatch (profiling: it serializes them)
  vulkan::record(s, op::gemm<float>{}, a, b, h);
  vulkan::record(s, op::unary<float, fn::gelu_erf>{}, h, act);
  vulkan::record(s, op::layer_norm<float>{}, act, g, be, y);
  s.run();  // one submission, one fence wait
  std::printf("%zu dispatches, %zu barriers, %zu submission\n", s.dispatch_count(), s.barrier_count(),
              s.submit_count());

  s.run();  // replay the recorded chain
  for (const auto& t : s.timings())  // no time where the device has no timestamps
    t.ms ? std::printf("  %-16s %8.3f ms\n", t.label.c_str(), *t.ms) : std::printf("  %-16s   (not timed)\n", t.label.c_str());

  y.download(make_view(out, {m, n}));
  // Each row of a layer_norm with gamma = 1, beta = 0 has mean ~0.
  double mean0 = 0;
  for (index_t j = 0; j < n; ++j) mean0 += out[j];
  std::printf("row 0 mean after layer_norm: %.2e\n", mean0 / n);
  return 0;
} catch (const kforge::vulkan::no_device& e) {
  std::printf("no Vulkan device: %s\n", e.what());
  return 0;
}
