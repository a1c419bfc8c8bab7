// H100 timing of the Vulkan backend (issue 4): GPU timestamps around each
// dispatch, median of 10 after 3 warm-ups, in one recorded stream replayed.
#include <kforge/vulkan.hpp>
#include <algorithm>
#include <cstdio>
using namespace kforge;
template <class F>
double median_ms(vulkan::context& ctx, F&& record, int reps = 10) {
  vulkan::stream s(ctx);
  for (int i = 0; i < reps + 3; ++i) record(s);
  s.run();
  s.run();
  auto t = s.timings();
  std::vector<double> v;
  for (std::size_t i = 3; i < t.size(); ++i) v.push_back(t[i].ms);
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
template <class T>
void gemm_bench(vulkan::context& ctx, const char* name) {
  const index_t n = 4096;
  vulkan::device_tensor<T> a(ctx, {n, n}), b(ctx, {n, n}), c(ctx, {n, n});
  std::vector<T> h(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<T>(float((i * 7919) % 17) / 17.0f - 0.5f);
  a.upload(make_view(h, {n, n}));
  b.upload(make_view(h, {n, n}));
  const double ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::gemm<T>{}, a, b, c); });
  std::printf("vulkan gemm 4096^3 %s: %.3f ms, %.2f TFLOP/s\n", name, ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12);
}
int main() {
  vulkan::context ctx;
  std::printf("%s", vulkan::devices_text().c_str());
  std::printf("using: %s\n", ctx.info().name.c_str());
  gemm_bench<float>(ctx, "f32");
  if (ctx.info().storage_16bit) gemm_bench<half>(ctx, "f16");
  const index_t r = 8192;
  vulkan::device_tensor<float> x(ctx, {r, r}), y(ctx, {r, r}), g(ctx, {r}), be(ctx, {r});
  std::vector<float> h(static_cast<std::size_t>(r * r));
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = float((i * 7919) % 101) / 101.0f;
  x.upload(make_view(h, {r, r}));
  g.upload(make_view(std::vector<float>(r, 1.0f), {r}));
  be.upload(make_view(std::vector<float>(r, 0.0f), {r}));
  const double gb = 2.0 * r * r * 4 / 1e9;  // read + write
  double ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::softmax<float>{}, x, y); });
  std::printf("vulkan softmax 8192x8192 f32: %.3f ms, %.0f GB/s (r+w)\n", ms, gb / (ms * 1e-3));
  ms = median_ms(ctx, [&](vulkan::stream& s) { vulkan::record(s, op::layer_norm<float>{}, x, g, be, y); });
  std::printf("vulkan layer_norm 8192x8192 f32: %.3f ms, %.0f GB/s (r+w)\n", ms, gb / (ms * 1e-3));
  ms = median_ms(ctx, [&](vulkan::stream& s) { s.copy(x.ref(), y.ref(), x.bytes()); });
  std::printf("vulkan device copy 256 MiB: %.3f ms, %.0f GB/s (r+w)\n", ms, gb / (ms * 1e-3));
  return 0;
}
