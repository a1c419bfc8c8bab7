// tests/gen_bucket.cpp — an admitted kernel serving its tuning bucket
// (gen/bucket.hpp): the shapes a proof draws, a kernel wrong on part of the
// bucket left unproven, policy::generated on a new shape of a proven bucket
// (sandbox verdict, cached), a refused shape outside it, a failed verdict
// refusing, a damaged verdict checked again; policy::autotune running a
// cached generated gemm winner on device tensors of its bucket.
#include "gen/common.hpp"

#include <fstream>

#include <kforge/tune.hpp>

using namespace kforge;
using kgt::relu_kernel;

namespace {

problem make(const std::string& op, const std::string& dims, const std::string& dims2 = "") {
  problem p;
  p.op = op;
  p.dims = parse_dims(dims);
  if (!dims2.empty()) p.dims2 = parse_dims(dims2);
  return p;
}

const std::string good_relu = "  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); }";
// Right whenever n is odd — every shape the gate draws has odd extents — and
// wrong on the last element when n is even.
const std::string odd_only_relu =
    "  if (i < pc.n) { float v = x_[i]; y_[i] = (pc.n % 2u == 0u && i == pc.n - 1u) ? 7.0 : (isnan(v) ? v : max(v, 0.0)); }";

gen::generation_record hand_record(const problem& p, const std::string& glsl, const std::string& name) {
  gen::generation_record r;
  r.status = "correct";
  r.prob = p;
  r.extracted_glsl = glsl;
  r.source_spec = gen::default_source_spec(p);
  r.source_hash = gen::spec_hash(p, r.source_spec);
  r.path = (kgt::test_cache() / name).string();
  return r;
}

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace

TEST_CASE("bucket shapes: both corners and a uniform draw, every one a valid problem of the bucket") {
  const problem g = make("gemm", "37x29x35");
  const auto gs = gen::bucket_problems(g, 42);
  REQUIRE(gs.size() == 3);
  CHECK(gs[0].dims == shape{33, 32, 33});  // bottom, top, bottom of (32, 64], (16, 32], (32, 64]
  CHECK(gs[1].dims == shape{64, 17, 64});
  for (const auto& q : gs) {
    CHECK(gen::in_bucket(g, q));
    CHECK(q.dims != g.dims);
    CHECK(gen::bucket_key(q) == "gemm f32 64x32x64" + family_of(g).record_params(g));
  }
  CHECK(gs[2].dims != gs[0].dims);
  // A broadcast operand keeps following the shape it broadcasts against.
  const problem add = make("add", "7x33", "33");
  const auto as = gen::bucket_problems(add, 7);
  REQUIRE(as.size() >= 2);
  for (const auto& q : as) {
    CHECK(gen::in_bucket(add, q));
    CHECK(q.dims[1] == q.dims2[0]);
    CHECK_NOTHROW((void)operands(q));
  }
  // Outside the bucket: another octave, another parameter, another dtype.
  problem other = g;
  other.dims[0] = 65;
  CHECK_FALSE(gen::in_bucket(g, other));
  other = g;
  other.alpha = 0.5f;
  CHECK_FALSE(gen::in_bucket(g, other));
  other = g;
  other.type = dtype::f16;
  CHECK_FALSE(gen::in_bucket(g, other));
  other = g;
  other.dims = shape{40, 20, 60};
  CHECK(gen::in_bucket(g, other));
}

TEST_CASE("a kernel right on the gate's shapes and wrong on part of its bucket is not proven for the bucket") {
  KGT_NEED_VULKAN();
  const problem p = make("relu", "3x7x19");
  // The prompt's shape and the gate's held-out draws have odd extents only.
  auto bad = hand_record(p, relu_kernel(odd_only_relu), "c_relu_bad.json");
  gen::prove_bucket(bad);
  INFO(bad.bucket_reason);
  CHECK(bad.bucket == "relu f32 4x8x32");
  CHECK_FALSE(bad.bucket_proven);
  CHECK(bad.bucket_reason.find("validation") != std::string::npos);
  CHECK(bad.bucket_shapes.size() == 3);

  auto good = hand_record(p, relu_kernel(good_relu), "c_relu_good.json");
  gen::prove_bucket(good);
  INFO(good.bucket_reason);
  CHECK(good.bucket_proven);
  // The proof survives the record's JSON.
  const auto back = gen::generation_record::from_json(good.to_json(), good.path);
  CHECK(back.bucket_proven);
  CHECK(back.bucket == good.bucket);
  CHECK(back.bucket_shapes == good.bucket_shapes);

  // A verdict on one even-sized shape: failed, cached, read back failed.
  const problem even = make("relu", "4x7x18");
  const auto v1 = gen::verdict_for(bad, even, "test-device");
  CHECK_FALSE(v1.passed);
  CHECK_FALSE(v1.cached);
  CHECK(std::filesystem::exists(v1.file));
  const auto v2 = gen::verdict_for(bad, even, "test-device");
  CHECK_FALSE(v2.passed);
  CHECK(v2.cached);
  // Another device, another verdict.
  CHECK_FALSE(gen::verdict_for(bad, even, "other-device").cached);
}

TEST_CASE("policy::generated serves a proven bucket: a new shape validated once in the sandbox, other buckets refused") {
  KGT_NEED_VULKAN();
  problem p = make("softmax", "5x37");
  const auto res = kgt::generate_offline(p);
  REQUIRE(res.best_record() != nullptr);
  const auto rec = gen::load_record(res.best_record()->path);
  INFO(rec.bucket_reason);
  REQUIRE(rec.bucket_proven);
  CHECK(rec.bucket == "softmax f32 8x64" + family_of(p).record_params(p));
  CHECK(rec.bucket_shapes.size() == 3);

  // 7x50: same bucket, never generated for.
  row_matrix x = row_matrix::Random(7, 50), y(7, 50), ref(7, 50);
  run<policy::generated>(op::softmax<float>{}, x, y);
  run<policy::eigen>(op::softmax<float>{}, x, ref);
  CHECK((y - ref).cwiseAbs().maxCoeff() < 1e-5f);
  const problem q = make("softmax", "7x50");
  const std::string dev = gen::verdict_device(vulkan::default_context());
  const auto v = gen::verdict_for(rec, q, dev);
  CHECK(v.passed);
  CHECK(v.cached);  // written by the call above

  // 9x37: another bucket (16x64), nothing proven there.
  row_matrix x2 = row_matrix::Random(9, 37), y2(9, 37);
  CHECK_THROWS_AS(run<policy::generated>(op::softmax<float>{}, x2, y2), unsupported_error);

  // A failed verdict refuses the shape, naming the verdict.
  const problem q3 = make("softmax", "6x40");
  {
    json_writer w;
    w.begin_object().field("record", std::filesystem::path(rec.path).filename().string());
    w.field("kernel_hash", gen::hash_hex(rec.extracted_glsl)).field("device", dev).key("problem").raw(gen::problem_json(q3));
    w.field("passed", false).field("stage", "validation").field("reason", "planted by the test").end_object();
    gen::write_atomic(gen::verdict_path(rec, q3, dev), w.str());
  }
  row_matrix x3 = row_matrix::Random(6, 40), y3(6, 40);
  try {
    run<policy::generated>(op::softmax<float>{}, x3, y3);
    FAIL("a failed verdict must refuse the shape");
  } catch (const unsupported_error& e) {
    CHECK(std::string(e.what()).find("planted by the test") != std::string::npos);
  }

  // A damaged verdict is checked again and replaced.
  const problem q4 = make("softmax", "6x41");
  { std::ofstream(gen::verdict_path(rec, q4, dev)) << "{ not json"; }
  row_matrix x4 = row_matrix::Random(6, 41), y4(6, 41), ref4(6, 41);
  run<policy::generated>(op::softmax<float>{}, x4, y4);
  run<policy::eigen>(op::softmax<float>{}, x4, ref4);
  CHECK((y4 - ref4).cwiseAbs().maxCoeff() < 1e-5f);
  CHECK(gen::verdict_for(rec, q4, dev).cached);
}

TEST_CASE("policy::autotune on device tensors runs a cached generated gemm winner on a shape of its proven bucket") {
  KGT_NEED_VULKAN();
  namespace vk = kforge::vulkan;
  problem p = make("gemm", "37x29x35");
  p.epilogue = "bias_relu";
  p.alpha = 0.75f;
  const auto res = kgt::generate_offline(p);
  REQUIRE(res.best_record() != nullptr);
  REQUIRE(res.best_record()->bucket_proven);
  const std::string file = std::filesystem::path(res.best_record()->path).filename().string();

  vk::context& ctx = vk::default_context();
  const tune::device_identity id = tune::vulkan_identity(ctx);
  const auto space = tune::vulkan_gemm_candidates(ctx, p);
  const tune::candidate* fallback = nullptr;  // a config of the space other than the default
  for (const auto& c : space)
    if (!c.is_default && c.name.find("/tiled/") != std::string::npos) fallback = &c;
  REQUIRE(fallback);
  {
    tune::tuning_cache cache;
    tune::cache_entry e;
    e.key = tune::key_for(p, id);
    e.candidate = "generated:" + file;
    e.family = "generated";
    e.cfg = tune::with_fallback({{"policy", "generated"}, {"record", file}}, fallback->name, fallback->cfg);
    e.shape = "37x29x35";
    cache.store({e});
  }
  tune::forget_resolutions();
  auto call = [&](index_t m, index_t n, index_t k) {
    row_matrix a = row_matrix::Random(m, k), b = row_matrix::Random(k, n), ref(m, n);
    Eigen::VectorXf bias = Eigen::VectorXf::Random(n);
    op::gemm<float, epilogue::bias_relu> g;
    g.alpha = 0.75f;
    const auto va = make_view(a.data(), {m, k});
    const auto vb = make_view(b.data(), {k, n});
    const auto vbias = make_view(bias.data(), {n});
    run<policy::eigen>(g, va, vb, vbias, make_view(ref.data(), {m, n}));
    auto da = vk::device_tensor<float>::from_host(ctx, va);
    auto db = vk::device_tensor<float>::from_host(ctx, vb);
    auto dbias = vk::device_tensor<float>::from_host(ctx, vbias);
    vk::device_tensor<float> dc(ctx, {m, n});
    run<policy::autotune>(g, da, db, dbias, dc);
    const auto out = dc.to_vector();
    float err = 0;
    for (index_t i = 0; i < m * n; ++i) err = std::max(err, std::abs(out[static_cast<std::size_t>(i)] - ref.data()[i]));
    CHECK(err < 1e-4f);
    return tune::last_resolution();
  };
  // A shape of the bucket (64x32x64) the kernel was never generated for: the generated kernel runs.
  auto r = call(50, 20, 40);
  INFO(r.source);
  CHECK(r.candidate == "generated:" + file);
  CHECK(std::filesystem::exists(gen::verdict_path(gen::load_record(res.best_record()->path), [] {
    problem q = make("gemm", "50x20x40");
    q.epilogue = "bias_relu";
    q.alpha = 0.75f;
    return q;
  }(), gen::verdict_device(ctx))));
  // Its own shape runs it without a verdict.
  CHECK(call(37, 29, 35).candidate == "generated:" + file);
  // Another epilogue and alpha is another problem, outside the kernel's bucket: the fallback
  // stored with the winner runs (same shape bucket, same cache entry).
  {
    row_matrix a = row_matrix::Random(40, 40), b = row_matrix::Random(40, 20), ref(40, 20);
    op::gemm<float> g;
    auto da = vk::device_tensor<float>::from_host(ctx, make_view(a.data(), {40, 40}));
    auto db = vk::device_tensor<float>::from_host(ctx, make_view(b.data(), {40, 20}));
    vk::device_tensor<float> dc(ctx, {40, 20});
    run<policy::autotune>(g, da, db, dc);
    CHECK(tune::last_resolution().candidate == tune::vulkan_config_name(*tune::vulkan_config_of(fallback->cfg)));
    run<policy::eigen>(g, make_view(a.data(), {40, 40}), make_view(b.data(), {40, 20}), make_view(ref.data(), {40, 20}));
    const auto out = dc.to_vector();
    for (index_t i = 0; i < 40 * 20; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == doctest::Approx(ref.data()[i]).epsilon(1e-4).scale(1));
  }
}
