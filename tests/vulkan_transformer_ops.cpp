// tests/vulkan_transformer_ops.cpp — the transformer-block ops' typed errors,
// kv_append's in-place property, attention's kv_len, embedding's id checks
// and topk's order, long rows and k = N on policy::vulkan, host views and
// device tensors (validation layer on); their numerics run through
// vulkan_suite.
#include "transformer_ops_checks.hpp"
#include "vulkan_common.hpp"

namespace tc = transformer_checks;
using namespace kforge;

TEST_CASE("vulkan gated: known values and typed errors") {
  KFT_NEED_DEVICE();
  tc::check_gated<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan gated: the vector paths (one and four vectors per invocation) and the scalar path match Eigen") {
  KFT_NEED_DEVICE();
  using P = policy::vulkan<policy::wg<32>>;  // wg 32: four vectors per invocation from 131072 vectors of output
  for (const auto& [rows, f] : {std::pair<index_t, index_t>{5, 12}, {257, 2052}, {3, 2051}}) {
    std::vector<float> x(static_cast<std::size_t>(rows * 2 * f)), got(static_cast<std::size_t>(rows * f)), want(got.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 2654435761u % 4001u) - 2000) / 400.0f;
    const tensor_view<const float> xv(x.data(), shape{rows, 2 * f});
    for (fn act : {fn::silu, fn::gelu_tanh}) {
      run<P>(op::gated<float>{act}, xv, tensor_view<float>(got.data(), shape{rows, f}));
      run<policy::eigen>(op::gated<float>{act}, xv, tensor_view<float>(want.data(), shape{rows, f}));
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / (1.0 + std::fabs(double(want[i]))));
      INFO("rows " << rows << ", F " << f << ", " << to_string(act));
      CHECK(worst <= 1e-5);
    }
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan kv_append: host views write rows [pos, pos + T) and nothing else; typed errors") {
  KFT_NEED_DEVICE();
  tc::check_kv_append_in_place<policy::vulkan<>, float>();
  tc::check_kv_append_in_place<policy::vulkan<>, half>();
  tc::check_kv_append_in_place<policy::vulkan<>, bfloat16>();
  tc::check_kv_append_errors<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan kv_append on device tensors: decode steps fill the cache in place") {
  KFT_NEED_DEVICE();
  const index_t b = 2, h = 3, d = 7, lmax = 6;
  std::vector<float> cache(static_cast<std::size_t>(b * lmax * h * d), -5.0f);
  auto dc = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(cache.data(), shape{b, lmax, h, d}));
  for (index_t step = 0; step < 4; ++step) {  // rows 0..3 written one token at a time; rows 4, 5 keep -5
    std::vector<float> x(static_cast<std::size_t>(b * h * d), static_cast<float>(step));
    auto dx = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(x.data(), shape{b, 1, h, d}));
    run<policy::vulkan<>>(op::kv_append<float>{step}, dx, dc);
  }
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::kv_append<float>{lmax}, vulkan::device_tensor<float>(*ctx, shape{b, 1, h, d}), dc),
                  argument_error);
  dc.download(tensor_view<float>(cache.data(), shape{b, lmax, h, d}));
  int bad = 0;
  for (index_t i = 0; i < b * lmax * h * d; ++i) {
    const index_t row = (i / (h * d)) % lmax;
    bad += cache[static_cast<std::size_t>(i)] != (row < 4 ? static_cast<float>(row) : -5.0f);
  }
  CHECK(bad == 0);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan embedding: host views gather known rows; ids out of range are typed errors before anything runs") {
  KFT_NEED_DEVICE();
  tc::check_embedding_values<policy::vulkan<>, float>();
  tc::check_embedding_values<policy::vulkan<>, half>();
  tc::check_embedding_values<policy::vulkan<>, bfloat16>();
  tc::check_embedding_errors<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

// Ids in a device tensor never pass the host: the kernel checks them, writes
// a bad id's row as zeros (it never reads outside the table) and the call
// throws the same argument_error once the submission completes.
TEST_CASE("vulkan embedding on device tensors: ids checked on the device, reported after the submission") {
  KFT_NEED_DEVICE();
  const index_t v = 11, d = 5;
  std::vector<float> table(static_cast<std::size_t>(v * d));
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = 1.0f + static_cast<float>(i);
  auto dt = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(table.data(), shape{v, d}));
  auto check_rows = [&](const vulkan::device_tensor<float>& out, const std::vector<std::int32_t>& ids) {
    const std::vector<float> got = out.to_vector();
    int bad = 0;
    for (std::size_t i = 0; i < ids.size(); ++i)
      for (index_t j = 0; j < d; ++j) {
        const bool in_range = ids[i] >= 0 && ids[i] < v;
        const float want = in_range ? table[static_cast<std::size_t>(ids[i] * d + j)] : 0.0f;
        bad += got[i * d + static_cast<std::size_t>(j)] != want;
      }
    return bad;
  };
  const std::vector<std::int32_t> good{10, 0, 3, 3, 7, 1};
  auto di = vulkan::device_tensor<std::int32_t>::from_host(*ctx, make_view(good, shape{2, 3}));
  vulkan::device_tensor<float> dout(*ctx, shape{2, 3, d});
  run<policy::vulkan<>>(op::embedding<float>{}, dt, di, dout);
  CHECK(check_rows(dout, good) == 0);
  CHECK(di.to_vector() == good);  // int32 round trip is exact

  const std::vector<std::int32_t> bad_ids{10, 0, 11, 3, -4, 1};  // first bad: 11 at position 2
  auto db = vulkan::device_tensor<std::int32_t>::from_host(*ctx, make_view(bad_ids, shape{2, 3}));
  const std::string m = tc::message_of<argument_error>([&] { run<policy::vulkan<>>(op::embedding<float>{}, dt, db, dout); });
  CHECK(m.find("kforge::embedding: id 11 at position 2 of ids [2x3]") != std::string::npos);
  CHECK(m.find("V = 11") != std::string::npos);
  CHECK(check_rows(dout, bad_ids) == 0);  // good rows gathered, bad rows zero

  // Recorded into a stream: the check runs when the submission completes, on every replay.
  vulkan::stream s(*ctx);
  vulkan::record(s, op::embedding<float>{}, dt, db, dout);
  CHECK_THROWS_AS(s.run(), argument_error);
  CHECK_THROWS_AS(s.run(), argument_error);
  s.reset();
  vulkan::record(s, op::embedding<float>{}, dt, di, dout);
  CHECK_NOTHROW(s.run());
  CHECK(check_rows(dout, good) == 0);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan topk / argmax: NaN first, ties by position, exact values; bad k and shapes are typed errors") {
  KFT_NEED_DEVICE();
  tc::check_topk_order<policy::vulkan<>, float>();
  tc::check_topk_order<policy::vulkan<>, half>();
  tc::check_topk_order<policy::vulkan<>, bfloat16>();
  tc::check_argmax_rows<policy::vulkan<>, float>();
  tc::check_argmax_rows<policy::vulkan<>, half>();
  tc::check_topk_errors<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

// bf16 host data is bf16 on a device with 16-bit storage (NaN payloads
// kept), f32 on one without (tests/vulkan_bf16_fallback.cpp); device tensors:
// tests/vulkan_bf16.cpp.
TEST_CASE("vulkan embedding / topk: bf16 host data moved bit for bit") {
  KFT_NEED_DEVICE();
  tc::check_bf16_moved<policy::vulkan<>>(ctx->info().storage_16bit);
  KFT_NO_VALIDATION_MESSAGES();
}

// The sampling case on device tensors: one long row and a few (the split
// kernel: chunks across workgroups, then a merge), with ties planted across
// chunks and a NaN; a stream that samples twice without leaving the device.
TEST_CASE("vulkan topk on device tensors: long rows split across workgroups match the reference") {
  KFT_NEED_DEVICE();
  const index_t rows = 3, n = 20001, k = 40;
  std::vector<float> x = kft::random_floats(static_cast<std::size_t>(rows * n), 7, -8.0f, 8.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::round(x[i] * 4.0f) / 4.0f;  // many ties
  x[5000] = x[15000] = 100.0f;                                                     // a tie across chunks, row 0
  x[static_cast<std::size_t>(n + 19999)] = std::numeric_limits<float>::quiet_NaN();  // row 1: NaN near the end
  const tensor_view<const float> xv(x.data(), shape{rows, n});
  std::vector<float> rv(static_cast<std::size_t>(rows * k));
  std::vector<std::int32_t> ri(static_cast<std::size_t>(rows * k));
  run<policy::eigen>(op::topk<float>{k}, xv, tensor_view<float>(rv.data(), shape{rows, k}),
                     tensor_view<std::int32_t>(ri.data(), shape{rows, k}));
  CHECK(ri[0] == 5000);
  CHECK(ri[1] == 15000);
  CHECK(ri[static_cast<std::size_t>(k)] == 19999);

  auto dx = vulkan::device_tensor<float>::from_host(*ctx, xv);
  vulkan::device_tensor<float> dv(*ctx, shape{rows, k});
  vulkan::device_tensor<std::int32_t> di(*ctx, shape{rows, k});
  run<policy::vulkan<>>(op::topk<float>{k}, dx, dv, di);
  CHECK(di.to_vector() == ri);
  const std::vector<float> gv = dv.to_vector();
  int bad = 0;
  for (std::size_t i = 0; i < gv.size(); ++i) bad += !(gv[i] == rv[i] || (std::isnan(gv[i]) && std::isnan(rv[i])));
  CHECK(bad == 0);

  // argmax of the same rows recorded with the topk into one stream, replayed.
  vulkan::device_tensor<float> av(*ctx, shape{rows, 1});
  vulkan::device_tensor<std::int32_t> ai(*ctx, shape{rows, 1});
  vulkan::stream s(*ctx);
  vulkan::record(s, op::topk<float>{1}, dx, av, ai);
  vulkan::record(s, op::topk<float>{k}, dx, dv, di);
  s.run();
  s.run();
  CHECK(ai.to_vector() == std::vector<std::int32_t>{ri[0], ri[static_cast<std::size_t>(k)], ri[static_cast<std::size_t>(2 * k)]});
  CHECK(di.to_vector() == ri);
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::topk<float>{k + 1}, dx, dv, di), shape_error);
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::topk<float>{n + 1}, dx, vulkan::device_tensor<float>(*ctx, shape{rows, n + 1}),
                                        vulkan::device_tensor<std::int32_t>(*ctx, shape{rows, n + 1})),
                  argument_error);
  KFT_NO_VALIDATION_MESSAGES();
}

// k = N sorts whole rows in rounds of the kernel's lists: 47 rounds for a row
// of 3000. lavapipe stops a shader invocation after 65535 loop iterations
// (gallivm's loop limiter): a row of 30000 sorted whole would run past it, and
// is refused there with a typed error instead of a wrong order.
TEST_CASE("vulkan topk with k = N: whole rows sorted in rounds; a typed refusal where lavapipe cannot") {
  KFT_NEED_DEVICE();
  for (const index_t n : {index_t{3000}, index_t{30000}}) {
    CAPTURE(n);
    std::vector<float> x = kft::random_floats(static_cast<std::size_t>(n), 11);
    for (auto& v : x) v = std::round(v * 64.0f) / 64.0f;  // ties
    const tensor_view<const float> xv(x.data(), shape{1, n});
    std::vector<float> rv(x.size()), gv(x.size());
    std::vector<std::int32_t> ri(x.size()), gi(x.size(), -1);
    run<policy::eigen>(op::topk<float>{n}, xv, make_view(rv, shape{1, n}), make_view(ri, shape{1, n}));
    auto gpu = [&] { run<policy::vulkan<>>(op::topk<float>{n}, xv, make_view(gv, shape{1, n}), make_view(gi, shape{1, n})); };
    if (n > 3000 && ctx->info().driver_name == "llvmpipe") {
      const std::string m = tc::message_of<unsupported_error>(gpu);
      CHECK(m.find("lavapipe") != std::string::npos);
      continue;
    }
    gpu();
    CHECK(gi == ri);
    CHECK(gv == rv);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention kv_len on host views: keys [0, kv_len) of a longer cache; typed errors") {
  KFT_NEED_DEVICE();
  tc::check_attention_kv_len<policy::vulkan<>>();
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan attention kv_len on device tensors: one sequence reads a prefix of the cache, two gather their rows") {
  KFT_NEED_DEVICE();
  for (const index_t b : {index_t{1}, index_t{2}}) {
    const index_t s = 2, h = 4, hkv = 2, d = 16, lmax = 11;
    std::vector<float> q(static_cast<std::size_t>(b * s * h * d)), cache(static_cast<std::size_t>(b * lmax * hkv * d));
    for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.3f * static_cast<float>(i));
    for (std::size_t i = 0; i < cache.size(); ++i) cache[i] = std::cos(0.05f * static_cast<float>(i));
    auto dq = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(q.data(), shape{b, s, h, d}));
    auto dk = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(cache.data(), shape{b, lmax, hkv, d}));
    vulkan::device_tensor<float> dv(*ctx, shape{b, lmax, hkv, d}), dout(*ctx, shape{b, s, h, d});
    std::vector<float> vhost(cache.size(), std::numeric_limits<float>::infinity());  // rows past kv_len: Inf
    for (index_t kv_len : {index_t{1}, index_t{6}, lmax}) {
      for (index_t bi = 0; bi < b; ++bi)
        for (index_t l = 0; l < kv_len; ++l)
          for (index_t e = 0; e < hkv * d; ++e) {
            const std::size_t i = static_cast<std::size_t>((bi * lmax + l) * hkv * d + e);
            vhost[i] = std::sin(0.02f * static_cast<float>(i));
          }
      dv.upload(tensor_view<const float>(vhost.data(), shape{b, lmax, hkv, d}));
      const op::attention<float> a{.layout = attention_layout::bshd, .kv_len = kv_len};
      vulkan::stream st(*ctx);
      vulkan::record(st, a, dq, dk, dv, dout);
      st.run();
      CHECK(st.copy_count() == (b == 1 || kv_len == lmax ? 0u : 4u));  // K and V of two sequences
      std::vector<float> got(q.size()), ref(q.size());
      dout.download(tensor_view<float>(got.data(), shape{b, s, h, d}));
      run<policy::eigen>(a, tensor_view<const float>(q.data(), shape{b, s, h, d}),
                         tensor_view<const float>(cache.data(), shape{b, lmax, hkv, d}),
                         tensor_view<const float>(vhost.data(), shape{b, lmax, hkv, d}), tensor_view<float>(ref.data(), shape{b, s, h, d}));
      double err = 0;
      for (std::size_t i = 0; i < got.size(); ++i) err = std::isfinite(got[i]) ? std::max(err, std::fabs(double(got[i]) - ref[i])) : 1e30;
      CHECK_MESSAGE(err < 1e-5, "B " << b << ", kv_len " << kv_len << ": max error " << err);
    }
  }
  KFT_NO_VALIDATION_MESSAGES();
}
