// tests/vulkan_bf16.cpp — bf16 on the device: device_tensor<bfloat16> moves
// bits unchanged (upload, download, kv_append's copy), the kernels round their
// f32 results to bf16 exactly as kforge's host bfloat16 (Eigen's) does, a
// chain of ops on bf16 device tensors recorded into one stream matches Eigen
// step by step, embedding and topk move bf16 bits between device tensors,
// bf16 host data runs the bf16 kernels where the device has 16-bit storage,
// and bf16 never picks the f16-only cooperative-matrix kernels. With the validation layer on and zero messages. The fallback of a
// device without 16-bit storage: tests/vulkan_bf16_fallback.cpp.
#include "transformer_ops_checks.hpp"
#include "vulkan_common.hpp"

#include <kforge/validate.hpp>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace kforge;
using kft::random_floats;

namespace {

std::uint16_t bits(bfloat16 v) { return Eigen::numext::bit_cast<std::uint16_t>(v); }
bfloat16 from_bits(std::uint16_t b) { return Eigen::numext::bit_cast<bfloat16>(b); }
bool is_nan(std::uint16_t b) { return (b & 0x7fffu) > 0x7f80u; }
bool is_denormal(std::uint16_t b) { return (b & 0x7f80u) == 0 && (b & 0x7fu) != 0; }
std::string hex(std::uint16_t b) {
  char s[8];
  std::snprintf(s, sizeof s, "0x%04x", b);
  return s;
}

/// Every non-NaN element bit for bit, NaN where the reference has NaN.
void check_bits(const std::string& what, const std::vector<bfloat16>& out, const std::vector<bfloat16>& ref) {
  REQUIRE(out.size() == ref.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint16_t o = bits(out[i]), r = bits(ref[i]);
    const bool ok = is_nan(r) ? is_nan(o) : o == r;
    if (!ok && bad++ < 5)
      FAIL_CHECK(what << " element " << i << ": got " << hex(o) << ", reference " << hex(r) << " ("
                      << static_cast<float>(out[i]) << " vs " << static_cast<float>(ref[i]) << ")");
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << out.size() << " elements differ");
}

/// A bf16 of sign s, unbiased exponent e (normal range) and 7 mantissa bits m.
bfloat16 make_bf16(bool s, int e, unsigned m) {
  return from_bits(static_cast<std::uint16_t>((s ? 0x8000u : 0u) | (static_cast<unsigned>(e + 127) << 7) | (m & 0x7fu)));
}

#define KFT_NEED_16BIT_STORAGE()                                        \
  if (!ctx->info().storage_16bit) {                                     \
    MESSAGE("skipped: no 16-bit storage (bf16 runs as f32 there)");     \
    return;                                                             \
  }

}  // namespace

TEST_CASE("vulkan device_tensor<bfloat16> moves every bit pattern unchanged") {
  KFT_NEED_DEVICE();
  KFT_NEED_16BIT_STORAGE();
  std::vector<bfloat16> all(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = from_bits(static_cast<std::uint16_t>(i));
  // Upload and download: the bits, NaN payloads included.
  auto t = vulkan::device_tensor<bfloat16>::from_host(*ctx, make_view(all, {256, 256}));
  CHECK(t.bytes() == 2 * all.size());
  const std::vector<bfloat16> back = t.to_vector();
  CHECK(std::memcmp(back.data(), all.data(), 2 * all.size()) == 0);
  // kv_append copies elements without converting them: rows [pos, pos + T) are the new rows' bits.
  const index_t b = 1, tn = 256, h = 2, d = 128, lmax = 260, pos = 3;
  std::vector<bfloat16> cache(static_cast<std::size_t>(b * lmax * h * d), from_bits(0x3f80));  // 1.0
  auto dcache = vulkan::device_tensor<bfloat16>::from_host(*ctx, make_view(cache, {b, lmax, h, d}));
  t.reshape({b, tn, h, d});
  run<policy::vulkan<>>(op::kv_append<bfloat16>{pos}, t, dcache);
  const std::vector<bfloat16> got = dcache.to_vector();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const index_t row = static_cast<index_t>(i) / (h * d);
    const std::uint16_t want = row >= pos && row < pos + tn ? static_cast<std::uint16_t>(i - pos * h * d) : 0x3f80;
    wrong += bits(got[i]) != want;
  }
  CHECK(wrong == 0);
  // A float view uploads rounded to nearest even as bfloat16(float) does, and downloads widened.
  const auto f = random_floats(1000, 3, -1e3f, 1e3f);
  auto tf = vulkan::device_tensor<bfloat16>::from_host(*ctx, make_view(f, {1000}));
  const std::vector<bfloat16> rounded = tf.to_vector();
  std::vector<float> widened(1000);
  tf.download(make_view(widened, {1000}));
  for (std::size_t i = 0; i < f.size(); ++i) {
    CHECK(bits(rounded[i]) == bits(bfloat16(f[i])));
    CHECK(widened[i] == static_cast<float>(bfloat16(f[i])));
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan bf16 kernels round their f32 results to bf16 exactly as the host does") {
  KFT_NEED_DEVICE();
  KFT_NEED_16BIT_STORAGE();
  std::mt19937 g(11);
  std::uniform_int_distribution<int> exp_d(-40, 40), gap_d(0, 15);
  std::uniform_int_distribution<unsigned> man_d(0, 127), sign_d(0, 1);
  // a + b with exponents at most 15 apart (and far from the denormals) is exact in f32, so the
  // kernel's rounding to bf16 is all that can differ from the reference: ties to even included.
  // n % 4 == 0 takes the binary kernel's vector path (kf_st4), n + 3 its scalar path (kf_st).
  for (const index_t n : {4096, 4099}) {
    std::vector<bfloat16> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size()), ref(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const int e = exp_d(g);
      a[i] = make_bf16(sign_d(g), e, man_d(g));
      b[i] = make_bf16(sign_d(g), e - gap_d(g), man_d(g));
    }
    const bfloat16 max = from_bits(0x7f7f), half_ulp = from_bits(0x7b00), inf = from_bits(0x7f80);
    const std::vector<std::pair<bfloat16, bfloat16>> edges{
        {max, half_ulp},                                    // a tie that rounds up to +Inf
        {from_bits(0xff7f), from_bits(0xfb00)},             // and to -Inf
        {max, from_bits(0x7a80)},                           // below the tie: stays max
        {from_bits(0x3f81), from_bits(0x3b80)},             // odd + half ulp: rounds up to even
        {from_bits(0x3f80), from_bits(0x3b80)},             // even + half ulp: stays
        {from_bits(0x4000), from_bits(0xc000)},             // x + -x = +0
        {inf, from_bits(0xff80)},                           // Inf - Inf = NaN
        {inf, from_bits(0x3f80)},                           // Inf + 1 = Inf
        {from_bits(0x7fc1), from_bits(0x3f80)},             // NaN stays NaN
        {from_bits(0x8000), from_bits(0x8000)}};            // -0 + -0 = -0
    for (std::size_t i = 0; i < edges.size(); ++i) a[i] = edges[i].first, b[i] = edges[i].second;
    run<policy::vulkan<>>(op::binary<bfloat16, binop::add>{}, make_view(a, {n}), make_view(b, {n}), make_view(c, {n}));
    run<policy::eigen>(op::binary<bfloat16, binop::add>{}, make_view(a, {n}), make_view(b, {n}), make_view(ref, {n}));
    check_bits("add " + std::to_string(n), c, ref);
    CHECK(bits(c[0]) == 0x7f80);
    CHECK(bits(c[1]) == 0xff80);
    CHECK(bits(c[3]) == 0x3f82);
    CHECK(bits(c[9]) == 0x8000);
  }
  // gemm with K = 1: each product of two bf16 is exact in f32 (16 significant bits); gemv (M = 1)
  // and the tile kernel (M = 37) both round it in their epilogue.
  for (const index_t m : {1, 37}) {
    const index_t n = 64;
    std::vector<bfloat16> a(static_cast<std::size_t>(m)), b(static_cast<std::size_t>(n)), c(static_cast<std::size_t>(m * n)),
        ref(c.size());
    for (auto& x : a) x = make_bf16(sign_d(g), exp_d(g), man_d(g));
    for (auto& x : b) x = make_bf16(sign_d(g), exp_d(g), man_d(g));
    run<policy::vulkan<>>(op::gemm<bfloat16>{}, make_view(a, {m, 1}), make_view(b, {1, n}), make_view(c, {m, n}));
    run<policy::eigen>(op::gemm<bfloat16>{}, make_view(a, {m, 1}), make_view(b, {1, n}), make_view(ref, {m, n}));
    check_bits("gemm " + std::to_string(m) + "x64x1", c, ref);
  }
  // relu of every bf16 but the denormals (which a GPU may flush): x itself, 0, or NaN, bit for bit.
  std::vector<bfloat16> x, y, ry;
  for (std::uint32_t i = 0; i < 65536; ++i)
    if (!is_denormal(static_cast<std::uint16_t>(i))) x.push_back(from_bits(static_cast<std::uint16_t>(i)));
  y.resize(x.size()), ry.resize(x.size());
  const index_t nx = static_cast<index_t>(x.size());
  run<policy::vulkan<>>(op::unary<bfloat16, fn::relu>{}, make_view(x, {nx}), make_view(y, {nx}));
  run<policy::eigen>(op::unary<bfloat16, fn::relu>{}, make_view(x, {nx}), make_view(ry, {nx}));
  check_bits("relu of every bf16", y, ry);
  KFT_NO_VALIDATION_MESSAGES();
}

namespace {

/// One step of the chain: op's output (the last of `dev`) against Eigen run on
/// the step's inputs as the device holds them, with the op's tolerance.
template <class Op, class... Dev>
void check_step(const std::string& what, const Op& op, Dev&... dev) {
  const problem p = traits_of_t<Op>::problem_of(op, tensor_view<const bfloat16>(nullptr, dev.dims())...);
  std::vector<host_tensor> ts = allocate(p);
  REQUIRE(ts.size() == sizeof...(Dev));
  std::size_t i = 0;
  (dev.download(ts[i++].template view<bfloat16>()), ...);
  std::vector<host_tensor> ref = ts;
  execute<policy::eigen>(p, ref);
  const case_result r = compare_outputs(p, ts.back(), ref.back(), error_scale(p, ts, ref.back()));
  CHECK_MESSAGE(r.passed, what << " (" << describe(p) << "): " << r.mismatches << " of " << r.elements
                               << " elements outside tolerance; first " << r.first_bad << ": " << r.first_bad_out
                               << " vs " << r.first_bad_ref);
  CHECK_MESSAGE(!r.degenerate, what << ": the reference is degenerate");
}

}  // namespace

TEST_CASE("vulkan a chain of ops on bf16 device tensors matches eigen at every step") {
  KFT_NEED_DEVICE();
  KFT_NEED_16BIT_STORAGE();
  using T = bfloat16;
  using dt = vulkan::device_tensor<T>;
  unsigned seed = 40;
  auto up = [&](shape s, float lo = -1, float hi = 1) {
    const auto v = kft::convert<T>(random_floats(static_cast<std::size_t>(s.numel()), seed++, lo, hi));
    return dt::from_host(*ctx, tensor_view<const T>(v.data(), s));
  };
  // An MLP block and its neighbours: gemm + bias + gelu_tanh (tile kernel), layer_norm, a residual
  // add, softmax, row sums, swiglu, silu, a decode gemm (gemv, packed bf16 loads), a split-K gemm
  // (its f32 partials and the sum pass), conv2d, rope, attention (decode: the split kernel;
  // prefill: the scalar kernel, grouped KV heads), all recorded into one stream.
  dt x = up({33, 40}), w = up({40, 48}), bias = up({48}), gamma = up({48}, 0.5f, 1.5f), beta = up({48});
  dt h(*ctx, {33, 48}), n(*ctx, {33, 48}), r(*ctx, {33, 48}), s(*ctx, {33, 48}), sum(*ctx, {33}), gate(*ctx, {33, 24}),
      act(*ctx, {33, 24});
  dt row = up({1, 48}), w2 = up({48, 40}), dec(*ctx, {1, 40});
  dt a3 = up({17, 2048}), b3 = up({2048, 64}), c3(*ctx, {17, 64});
  dt img = up({2, 3, 9, 9}), filt = up({4, 3, 3, 3}), fb = up({4}), conv(*ctx, {2, 4, 7, 7});
  dt q0 = up({1, 4, 20, 16}), q(*ctx, {1, 4, 20, 16}), k = up({1, 2, 29, 16}), v = up({1, 2, 29, 16}), o(*ctx, {1, 4, 20, 16});
  dt qd = up({1, 4, 1, 16}), od(*ctx, {1, 4, 1, 16});
  op::layer_norm<T> ln;
  ln.epsilon = 1e-5f;
  op::reduce<T, reduce_fn::sum> rsum;
  rsum.axis = 1;
  op::conv2d<T, epilogue::bias_relu> cv;
  op::rope<T> rp;
  rp.offset = 5;
  op::attention<T> causal;
  causal.causal = true;
  vulkan::stream st(*ctx);
  vulkan::record(st, op::gemm<T, epilogue::bias_gelu_tanh>{}, x, w, bias, h);
  vulkan::record(st, ln, h, gamma, beta, n);
  vulkan::record(st, op::binary<T, binop::add>{}, n, h, r);
  vulkan::record(st, op::softmax<T>{}, r, s);
  vulkan::record(st, rsum, r, sum);
  vulkan::record(st, op::gated<T>{fn::silu}, r, gate);
  vulkan::record(st, op::unary<T, fn::silu>{}, gate, act);
  vulkan::record(st, op::gemm<T>{}, row, w2, dec);
  vulkan::record(st, op::gemm<T>{}, a3, b3, c3);
  vulkan::record(st, cv, img, filt, fb, conv);
  vulkan::record(st, rp, q0, q);
  vulkan::record(st, causal, q, k, v, o);
  vulkan::record(st, op::attention<T>{}, qd, k, v, od);
  st.run();
  CHECK(vulkan::gemm_default_config(ctx->info(), dtype::bf16, 17, 64, 2048).splits > 1);  // the split-K step is one
  check_step("gemm bias_gelu_tanh", op::gemm<T, epilogue::bias_gelu_tanh>{}, x, w, bias, h);
  check_step("layer_norm", ln, h, gamma, beta, n);
  check_step("add", op::binary<T, binop::add>{}, n, h, r);
  check_step("softmax", op::softmax<T>{}, r, s);
  check_step("reduce_sum", rsum, r, sum);
  check_step("swiglu", op::gated<T>{fn::silu}, r, gate);
  check_step("silu", op::unary<T, fn::silu>{}, gate, act);
  check_step("decode gemm", op::gemm<T>{}, row, w2, dec);
  check_step("split-K gemm", op::gemm<T>{}, a3, b3, c3);
  check_step("conv2d bias_relu", cv, img, filt, fb, conv);
  check_step("rope", rp, q0, q);
  check_step("causal attention", causal, q, k, v, o);
  check_step("decode attention", op::attention<T>{}, qd, k, v, od);
  KFT_NO_VALIDATION_MESSAGES();
}

// The decoder's first and last ops on bf16 device tensors: embedding gathers
// the table's rows bit for bit (NaN payloads too: a raw copy of T, never
// kf_ld / kf_st), topk reads keys through kf_ld and copies the picked
// values' bits; ids and indices are int32 tensors beside them. Host views:
// tests/vulkan_transformer_ops.cpp.
TEST_CASE("vulkan embedding and topk on bf16 device tensors move bits: gathered rows, picked values") {
  KFT_NEED_DEVICE();
  KFT_NEED_16BIT_STORAGE();
  namespace tc = transformer_checks;
  const index_t v = 512, d = 128, n = 5;
  const std::vector<bfloat16> table = tc::every_bf16();
  // Rows 0xff80.. (-Inf, then negative NaNs), 0x0080.. (small normals), 0x8080.. and 0x9600.. (negative
  // normals), the first again; no row of denormals, which a GPU may flush when topk reads them as keys.
  const std::vector<std::int32_t> ids{511, 1, 257, 300, 511};
  auto dtab = vulkan::device_tensor<bfloat16>::from_host(*ctx, make_view(table, {v, d}));
  auto dids = vulkan::device_tensor<std::int32_t>::from_host(*ctx, make_view(ids, {n}));
  vulkan::device_tensor<bfloat16> drows(*ctx, {n, d});
  run<policy::vulkan<>>(op::embedding<bfloat16>{}, dtab, dids, drows);
  std::vector<bfloat16> want;
  for (const std::int32_t id : ids) want.insert(want.end(), table.begin() + id * d, table.begin() + (id + 1) * d);
  const std::vector<bfloat16> rows = drows.to_vector();
  CHECK(std::memcmp(rows.data(), want.data(), 2 * want.size()) == 0);

  // topk of those rows and of tied rows with NaNs (long rows split across workgroups), recorded
  // into one stream with the embedding: values and indices as eigen's, bit for bit.
  for (const auto& [r, len] : {std::pair<index_t, index_t>{3, 5000}, {1, 20001}}) {
    CAPTURE(len);
    const std::vector<bfloat16> x = tc::bf16_tied_rows(r, len, 9);
    auto dx = vulkan::device_tensor<bfloat16>::from_host(*ctx, make_view(x, {r, len}));
    vulkan::device_tensor<bfloat16> dv(*ctx, {r, 40}), arow_v(*ctx, {n, 1});
    vulkan::device_tensor<std::int32_t> di(*ctx, {r, 40}), arow_i(*ctx, {n, 1});
    vulkan::stream st(*ctx);
    vulkan::record(st, op::embedding<bfloat16>{}, dtab, dids, drows);
    vulkan::record(st, op::topk<bfloat16>{1}, drows, arow_v, arow_i);
    vulkan::record(st, op::topk<bfloat16>{40}, dx, dv, di);
    st.run();
    std::vector<bfloat16> rv(static_cast<std::size_t>(r * 40)), av(static_cast<std::size_t>(n));
    std::vector<std::int32_t> ri(rv.size()), ai(av.size());
    run<policy::eigen>(op::topk<bfloat16>{40}, make_view(x, {r, len}), make_view(rv, {r, 40}), make_view(ri, {r, 40}));
    run<policy::eigen>(op::topk<bfloat16>{1}, make_view(want, {n, d}), make_view(av, {n, 1}), make_view(ai, {n, 1}));
    CHECK(di.to_vector() == ri);
    CHECK(tc::bf16_bit_mismatches(dv.to_vector(), rv, true) == 0);
    CHECK(arow_i.to_vector() == ai);
    CHECK(tc::bf16_bit_mismatches(arow_v.to_vector(), av, true) == 0);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan bf16 host data runs the bf16 kernels where the device has 16-bit storage") {
  KFT_NEED_DEVICE();
  std::vector<bfloat16> x(8, bfloat16(1.5f)), y(8);
  const tensor_view<const bfloat16> xv(x.data(), shape{8});
  vulkan::detail::call<bfloat16> c({&xv}, make_view(y, {8}));
  CHECK(c.dt == (ctx->info().storage_16bit ? dtype::bf16 : dtype::f32));
  CHECK(c.dt == vulkan::device_dtype(ctx->info(), dtype::bf16));
  vulkan::record_unary(c.s(), c.dt, 64, fn::neg, 0.0f, 8, c.in(0), c.out());
  c.finish();
  for (const auto& e : y) CHECK(static_cast<float>(e) == -1.5f);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("bf16 never takes the f16-only cooperative-matrix kernels; coopmat2 where the device has bf16 matrices") {
  vulkan::device_info d;  // an H100-like device (tests/vulkan_spirv.cpp lists its shapes)
  d.name = "H100-like";
  d.storage_16bit = d.fp16_arithmetic = d.nv_cooperative_matrix = d.nv_coopmat_f16_16x16x16 = true;
  d.nv_cooperative_matrix2 = d.bf16_cooperative_matrix = d.coopmat2_conversions = true;
  d.subgroup_size = d.min_subgroup_size = d.max_subgroup_size = 32;
  d.subgroup_ops = VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  d.max_workgroup_invocations = 1024, d.max_shared_memory = 49152;
  d.coopmat2_max_workgroup = 256, d.coopmat2_max_dimension = 1024;
  for (dtype t : {dtype::f16, dtype::bf16})
    for (vulkan::coopmat2_shape sh : {vulkan::coopmat2_shape{16, 16, 16, t, 128}, {32, 32, 16, t, 256}})
      d.coopmat2_shapes.push_back(sh);
  using vulkan::gemm_kernel;
  using K = vulkan::knobs<>;
  // gemm: coopmat2 for prefill, gemv (16-byte loads of 8 bf16) for decode, never coopmat_f16.
  CHECK(K::gemm(d, dtype::bf16, 4096, 4096, 4096).kernel == gemm_kernel::coopmat2);
  const auto dec = K::gemm(d, dtype::bf16, 1, 4096, 4096);
  CHECK(dec.kernel == gemm_kernel::gemv);
  CHECK(dec.tn == 8);
  const auto short_k = K::gemm(d, dtype::bf16, 1, 50257, 768);  // a short K: 4 columns per invocation, split 2
  CHECK(short_k.kernel == gemm_kernel::gemv);
  CHECK(short_k.tn == 4);
  CHECK(short_k.bn == 256);
  CHECK(short_k.splits == 2);
  CHECK(vulkan::knobs<policy::coopmat<true>>::gemm(d, dtype::bf16, 1, 4096, 4096).kernel == gemm_kernel::coopmat2);
  CHECK(vulkan::knobs<policy::coopmat<false>>::gemm(d, dtype::bf16, 4096, 4096, 4096).kernel == gemm_kernel::tiled);
  for (const auto& c : vulkan::gemm_configs(d, dtype::bf16)) CHECK(c.kernel != gemm_kernel::coopmat_f16);
  vulkan::device_info no_bf16 = d;  // NV2 with f16 matrices only
  no_bf16.bf16_cooperative_matrix = false;
  std::erase_if(no_bf16.coopmat2_shapes, [](const vulkan::coopmat2_shape& s) { return s.type == dtype::bf16; });
  CHECK(!vulkan::coopmat2_available(no_bf16, dtype::bf16));
  CHECK(K::gemm(no_bf16, dtype::bf16, 4096, 4096, 4096).kernel == gemm_kernel::tiled);
  CHECK(K::gemm(no_bf16, dtype::f16, 4096, 4096, 4096).kernel == gemm_kernel::coopmat2);
  CHECK_THROWS_AS(vulkan::knobs<policy::coopmat<true>>::gemm(no_bf16, dtype::bf16, 64, 64, 64), unsupported_error);
  // bf16 C leaves the kernel through a use conversion (no bf16 accumulators are listed): without
  // the conversions feature bf16 takes the tiled kernel, f16 (an f16 accumulator) still coopmat2.
  vulkan::device_info no_conversions = d;
  no_conversions.coopmat2_conversions = false;
  CHECK(!vulkan::coopmat2_available(no_conversions, dtype::bf16));
  CHECK(K::gemm(no_conversions, dtype::bf16, 4096, 4096, 4096).kernel == gemm_kernel::tiled);
  CHECK(K::gemm(no_conversions, dtype::f16, 4096, 4096, 4096).kernel == gemm_kernel::coopmat2);
  // attention: bf16 prefill takes the coopmat kernel (f16 fragments, scaled tiles) like f16, decode the
  // split one; coopmat<false> the scalar one; without f16 cooperative matrices bf16 prefill is scalar.
  const vulkan::attention_dims prefill{1, 8, 8, 512, 512, 64, 64, true, false}, decode{1, 32, 8, 1, 4096, 128, 128, false, false};
  CHECK(vulkan::attention_kernel_for(d, dtype::f16, prefill) == vulkan::attention_kernel::coopmat);
  CHECK(vulkan::attention_kernel_for(d, dtype::bf16, prefill) == vulkan::attention_kernel::coopmat);
  CHECK(vulkan::attention_kernel_for(d, dtype::bf16, prefill, 0) == vulkan::attention_kernel::scalar);
  CHECK(vulkan::attention_kernel_for(d, dtype::bf16, decode) == vulkan::attention_kernel::split);
  CHECK(vulkan::attention_kernel_for(d, dtype::bf16, prefill, 1) == vulkan::attention_kernel::coopmat);
  CHECK(vulkan::attention_kernel_for(d, dtype::f32, prefill) == vulkan::attention_kernel::scalar);
  CHECK_THROWS_AS(vulkan::attention_kernel_for(d, dtype::f32, prefill, 1), unsupported_error);
  vulkan::device_info no_coop = d;
  no_coop.nv_coopmat_f16_16x16x16 = false;
  CHECK(vulkan::attention_kernel_for(no_coop, dtype::bf16, prefill) == vulkan::attention_kernel::scalar);
  CHECK_THROWS_AS(vulkan::attention_kernel_for(no_coop, dtype::bf16, prefill, 1), unsupported_error);
  // Storage: bf16 as bf16 with 16-bit storage, else as f32; f16 and f32 as they are.
  CHECK(vulkan::device_dtype(d, dtype::bf16) == dtype::bf16);
  vulkan::device_info no16 = d;
  no16.storage_16bit = false;
  CHECK(vulkan::device_dtype(no16, dtype::bf16) == dtype::f32);
  CHECK(vulkan::device_dtype(no16, dtype::f16) == dtype::f16);
  CHECK(vulkan::device_dtype(no16, dtype::f32) == dtype::f32);
  CHECK(!vulkan::coopmat2_available(no16, dtype::bf16));
}
