// tests/vulkan_vector_paths.cpp — the memory-bound kernels' vector variants
// against the Eigen reference: unary and binary ops with n % 4 == 0 (vec4
// loads, 4 per invocation), the register-resident softmax / layer_norm /
// rms_norm rows (cols % 4 == 0, up to 16 vectors per invocation, and one size
// past that which falls back), their NaN / Inf rules, and the compute-shader
// copy beside vkCmdCopyBuffer for sizes it does not take.
#include "special_values.hpp"
#include "vulkan_common.hpp"

#include <cstring>
#include <limits>

using namespace kforge;
using kft::check_close;
using kft::convert;
using kft::random_floats;

namespace {
using kft::nan_f;
using kft::inf_f;

template <class T, fn F>
void unary_vec(const std::vector<float>& xf, shape s) {
  auto x = convert<T>(xf);
  std::vector<T> y(x.size(), static_cast<T>(nan_f)), ref(x.size());
  run<policy::vulkan<>>(op::unary<T, F>{}, make_view(x, s), make_view(y, s));
  run<policy::eigen>(op::unary<T, F>{}, make_view(x, s), make_view(ref, s));
  std::vector<float> scale(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) scale[i] = std::max(1.0f, std::fabs(xf[i]));
  check_close(std::string(to_string(F)) + " " + s.str(), y, ref, scale, elementwise_tolerance(dtype_of<T>()));
}
template <class T, binop F>
void binary_vec(shape sa, shape sb, unsigned seed) {
  auto af = random_floats(static_cast<std::size_t>(sa.numel()), seed, -2, 2);
  auto bf = random_floats(static_cast<std::size_t>(sb.numel()), seed + 1, 0.5f, 2);
  af[1] = nan_f;
  auto a = convert<T>(af), b = convert<T>(bf);
  const shape out = broadcast_shape("test", sa, sb);
  std::vector<T> c(static_cast<std::size_t>(out.numel())), ref(c.size());
  run<policy::vulkan<>>(op::binary<T, F>{}, make_view(a, sa), make_view(b, sb), make_view(c, out));
  run<policy::eigen>(op::binary<T, F>{}, make_view(a, sa), make_view(b, sb), make_view(ref, out));
  check_close(std::string(to_string(F)) + " " + sa.str() + "∘" + sb.str(), c, ref, {1.0f},
              elementwise_tolerance(dtype_of<T>()));
}
template <class T>
void rows_case(shape s, unsigned seed) {
  auto xf = random_floats(static_cast<std::size_t>(s.numel()), seed, -5, 5);
  const index_t cols = s.back();
  auto gf = random_floats(static_cast<std::size_t>(cols), seed + 1, 0.5f, 1.5f),
       bf = random_floats(static_cast<std::size_t>(cols), seed + 2);
  auto x = convert<T>(xf), g = convert<T>(gf), b = convert<T>(bf);
  std::vector<T> y(x.size(), static_cast<T>(nan_f)), ref(x.size());
  run<policy::vulkan<>>(op::softmax<T>{}, make_view(x, s), make_view(y, s));
  run<policy::eigen>(op::softmax<T>{}, make_view(x, s), make_view(ref, s));
  check_close("softmax " + s.str(), y, ref, {1.0f}, softmax_tolerance(dtype_of<T>(), cols));
  std::vector<float> scale(ref.size());
  y.assign(x.size(), static_cast<T>(nan_f));
  run<policy::vulkan<>>(op::layer_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(b, {cols}), make_view(y, s));
  run<policy::eigen>(op::layer_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(b, {cols}), make_view(ref, s));
  for (std::size_t i = 0; i < ref.size(); ++i) scale[i] = 2.0f + std::fabs(static_cast<float>(ref[i]));
  check_close("layer_norm " + s.str(), y, ref, scale, norm_tolerance(dtype_of<T>(), cols));
  y.assign(x.size(), static_cast<T>(nan_f));
  run<policy::vulkan<>>(op::rms_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(y, s));
  run<policy::eigen>(op::rms_norm<T>{}, make_view(x, s), make_view(g, {cols}), make_view(ref, s));
  for (std::size_t i = 0; i < ref.size(); ++i) scale[i] = 2.0f + std::fabs(static_cast<float>(ref[i]));
  check_close("rms_norm " + s.str(), y, ref, scale, norm_tolerance(dtype_of<T>(), cols));
}
}  // namespace

TEST_CASE_TEMPLATE("vulkan vector unary and binary ops match eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  auto x = random_floats(4 * 1030, 21, -4, 4);
  x[0] = nan_f, x[1] = inf_f, x[2] = -inf_f, x[3] = 0.0f, x[4097] = nan_f;
  unary_vec<T, fn::relu>(x, {4, 1030});
  unary_vec<T, fn::gelu_tanh>(x, {4, 1030});
  unary_vec<T, fn::exp>(x, {4, 1030});
  unary_vec<T, fn::neg>(random_floats(8, 3), {8});
  binary_vec<T, binop::add>({6, 1028}, {6, 1028}, 1);
  binary_vec<T, binop::max>({4, 4}, {4, 4}, 2);
  binary_vec<T, binop::mul>({6, 1028}, {1, 1028}, 3);  // n % 4 == 0 but broadcast: scalar path
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE_TEMPLATE("vulkan register-resident row kernels match eigen", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  rows_case<T>({3, 4}, 1);      // one vector per row, most invocations idle
  rows_case<T>({5, 4100}, 2);   // 1025 vectors: 8 per invocation, the last partly empty
  rows_case<T>({2, 16384}, 3);  // exactly 16 per invocation at 256 invocations
  rows_case<T>({2, 16388}, 4);  // 17 needed: the two-pass kernels
  // Edge rows on the vector path: NaN, +Inf, all -Inf give NaN rows; -Inf gives 0.
  std::vector<float> xf = {1, nan_f, 2, 3, inf_f, 1, 0, 2, -inf_f, -inf_f, -inf_f, -inf_f, 0, -inf_f, 1, 5};
  auto x = convert<T>(xf);
  std::vector<T> y(16), ref(16);
  run<policy::vulkan<>>(op::softmax<T>{}, make_view(x, {4, 4}), make_view(y, {4, 4}));
  run<policy::eigen>(op::softmax<T>{}, make_view(x, {4, 4}), make_view(ref, {4, 4}));
  check_close("softmax edge rows", y, ref, {1.0f}, softmax_tolerance(dtype_of<T>(), 4));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan stream fill: words written on the device, neighbours untouched, sizes not a multiple of 4 refused") {
  KFT_NEED_DEVICE();
  const index_t n = 1000;
  const auto h = random_floats(static_cast<std::size_t>(n), 7u);
  vulkan::device_tensor<float> a(*ctx, {n}), b(*ctx, {n});
  a.upload(make_view(h, {n}));
  b.upload(make_view(h, {n}));
  vulkan::stream s(*ctx);
  vulkan::buffer_ref mid = a.ref();
  mid.offset += 40;  // elements 10 .. 509
  s.fill(mid, 500 * sizeof(float));
  s.fill(b.ref(), b.bytes(), 0x3f800000u);  // 1.0f
  s.run();
  const auto out = a.to_vector(), ones = b.to_vector();
  for (index_t i = 0; i < n; ++i) {
    const bool zeroed = i >= 10 && i < 510;
    CHECK(out[i] == (zeroed ? 0.0f : h[i]));
    CHECK(ones[i] == 1.0f);
  }
  vulkan::stream bad(*ctx);
  CHECK_THROWS_AS(bad.fill(a.ref(), 6), argument_error);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan record_copy: compute-shader copy and vkCmdCopyBuffer fallback") {
  KFT_NEED_DEVICE();
  for (index_t n : {index_t{4}, index_t{1000}, index_t{70001}, index_t{3}}) {  // 16-byte multiples, then not
    auto h = random_floats(static_cast<std::size_t>(n), static_cast<unsigned>(n));
    vulkan::device_tensor<float> a(*ctx, {n}), b(*ctx, {n});
    a.upload(make_view(h, {n}));
    vulkan::stream s(*ctx);
    vulkan::record_copy(s, a.ref(), b.ref(), a.bytes());
    s.run();
    CHECK(s.copy_count() == (n % 4 ? 1u : 0u));
    const auto out = b.to_vector();
    CHECK(std::memcmp(out.data(), h.data(), a.bytes()) == 0);
  }
  KFT_NO_VALIDATION_MESSAGES();
}
