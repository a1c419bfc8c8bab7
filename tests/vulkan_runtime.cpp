// tests/vulkan_runtime.cpp — the Vulkan runtime: device listing, typed errors,
// SPIR-V and pipeline caches across contexts, streams (one submission, barriers
// only where data flows, replay, timestamps), device tensors, and recovery
// from a shader that never finishes (run in a child process so a hung queue
// can never hang the test run).
#include "vulkan_common.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

extern char** environ;

using namespace kforge;
using kft::check_close;
using kft::random_floats;

TEST_CASE("vulkan devices are listed as text and JSON") {
  KFT_NEED_DEVICE();
  const std::string j = vulkan::devices_json(), t = vulkan::devices_text();
  CHECK(j.find("\"name\": \"" + ctx->info().name) != std::string::npos);
  CHECK(j.find("\"storage_16bit\"") != std::string::npos);
  CHECK(j.find("\"timestamp_period_ns\"") != std::string::npos);
  CHECK(t.find(ctx->info().name) != std::string::npos);
  CHECK(ctx->info().subgroup_size > 0);
  CHECK(!ctx->info().heaps.empty());
  // Selection by name substring picks the same device.
  vulkan::context by_name({.device_name = ctx->info().name.substr(0, 4), .validation = ctx->validation_enabled() ? 1 : 0,
                           .cache_dir = kft::test_cache_dir()});
  CHECK(by_name.info().name.substr(0, 4) == ctx->info().name.substr(0, 4));
  CHECK_THROWS_AS(vulkan::context({.device_name = "no such device 1234", .validation = 0}), vulkan::no_device);
  CHECK_THROWS_AS(vulkan::context({.device_index = 999, .validation = 0}), vulkan::no_device);
  CHECK(by_name.validation_message_count() == 0);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan GLSL errors and interface mismatches are typed errors naming both sides") {
  KFT_NEED_DEVICE();
  vulkan::shader_variant bad{"broken", std::string(vulkan::shaders::common) + "void main() { undeclared_x = 1; }", {{"KF_F16", "0"}}};
  try {
    vulkan::shader_compiler::compile(bad);
    FAIL("compiled broken GLSL");
  } catch (const vulkan::shader_error& e) {
    CHECK(std::string(e.what()).find("broken") != std::string::npos);
    CHECK(std::string(e.what()).find("undeclared_x") != std::string::npos);
  }
  vulkan::shader_variant unary{"unary", std::string(vulkan::shaders::common) + vulkan::shaders::unary,
                               {{"KF_F16", "0"}, {"KF_FN", "1"}}};
  try {
    ctx->get_pipeline(unary, {3, 8, {0}}, {64});  // host expects 3 bindings, shader has 2
    FAIL("interface mismatch not detected");
  } catch (const vulkan::interface_error& e) {
    const std::string w = e.what();
    CHECK(w.find("unary") != std::string::npos);
    CHECK(w.find("shader declares") != std::string::npos);
    CHECK(w.find("host expects 3 bindings") != std::string::npos);
  }
  CHECK_THROWS_AS(ctx->get_pipeline(unary, {2, 16, {0}}, {64}), vulkan::interface_error);     // push size
  CHECK_THROWS_AS(ctx->get_pipeline(unary, {2, 8, {0, 1}}, {64, 1}), vulkan::interface_error);  // spec ids
  CHECK_NOTHROW(ctx->get_pipeline(unary, {2, 8, {0}}, {64}));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan allocations beyond maxStorageBufferRange fail naming the sizes; pools sub-allocate") {
  KFT_NEED_DEVICE();
  const auto range = ctx->info().max_storage_buffer_range;
  const auto elems = range / 4 + 1;  // the smallest f32 tensor over the range
  try {
    vulkan::device_tensor<float> t(*ctx, shape{static_cast<index_t>(elems)});
    FAIL("oversized tensor allocated");
  } catch (const vulkan::out_of_memory& e) {
    CHECK(std::string(e.what()).find(std::to_string(range)) != std::string::npos);
    CHECK(std::string(e.what()).find(std::to_string(elems * 4)) != std::string::npos);
  }
  const auto before = ctx->device_memory().stats();
  {
    std::vector<vulkan::device_tensor<float>> ts;
    for (int i = 0; i < 50; ++i) ts.emplace_back(*ctx, shape{1000 + i});
    const auto during = ctx->device_memory().stats();
    CHECK(during.blocks <= before.blocks + 1);  // 50 tensors, at most one new block
    CHECK(during.live_bytes >= before.live_bytes + 50 * 4000);
  }
  CHECK(ctx->device_memory().stats().live_bytes == before.live_bytes);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan second context with the same cache compiles nothing") {
  KFT_NEED_DEVICE();
  const auto dir = std::filesystem::temp_directory_path() / ("kforge-vk-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const int val = ctx->validation_enabled() ? 1 : 0;
  auto run_chain = [&](vulkan::context& c) {
    vulkan::device_tensor<float> a(c, {5, 7}), b(c, {7, 3}), y(c, {5, 3}), z(c, {5, 3});
    a.upload(make_view(random_floats(35, 1), {5, 7}));
    b.upload(make_view(random_floats(21, 2), {7, 3}));
    vulkan::stream s(c);
    vulkan::record(s, op::gemm<float>{}, a, b, y);
    vulkan::record(s, op::softmax<float>{}, y, z);
    s.run();
    return z.to_vector();
  };
  std::vector<float> first, second;
  {
    vulkan::context c1({.validation = val, .cache_dir = dir.string()});
    first = run_chain(c1);
    CHECK(c1.compiler().stats().compiles == 2);
    CHECK(c1.compiler().stats().disk_hits == 0);
    CHECK_FALSE(c1.pipelines_stats().cache_loaded);
    CHECK(c1.validation_message_count() == 0);
  }  // saves the pipeline cache
  CHECK(std::filesystem::exists(dir / "pipeline"));
  {
    vulkan::context c2({.validation = val, .cache_dir = dir.string()});
    CHECK(c2.pipelines_stats().cache_loaded);
    second = run_chain(c2);
    CHECK(c2.compiler().stats().compiles == 0);  // everything from the SPIR-V cache
    CHECK(c2.compiler().stats().disk_hits == 2);
    CHECK(c2.validation_message_count() == 0);
    MESSAGE("driver-reported pipeline cache hits: " << c2.pipelines_stats().driver_cache_hits);
  }
  CHECK(first == second);
  // A pipeline cache written for another device/driver is rejected, not used.
  for (auto& f : std::filesystem::directory_iterator(dir / "pipeline")) {
    std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(6);
    io.put('\x7f');  // corrupts the vendor id in our header
  }
  {
    vulkan::context c3({.validation = val, .cache_dir = dir.string()});
    CHECK(c3.pipelines_stats().cache_rejected);
    CHECK_FALSE(c3.pipelines_stats().cache_loaded);
  }
  std::filesystem::remove_all(dir);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan robust buffer access: on when asked, reported, kernels still validate, its own pipeline cache file") {
  KFT_NEED_DEVICE();
  CHECK(vulkan::devices_json().find("\"robust_buffer_access\": ") != std::string::npos);
  CHECK(vulkan::devices_text().find("robust buffer access") != std::string::npos);
  CHECK_FALSE(ctx->robust_buffer_access());
  if (!ctx->info().robust_buffer_access) {
    CHECK_THROWS_AS(vulkan::context({.validation = 0, .robust_buffer_access = true}), vulkan::no_device);
    MESSAGE("skipped the rest: '" << ctx->info().name << "' lacks robustBufferAccess");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("kforge-vk-robust-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const int val = ctx->validation_enabled() ? 1 : 0;
  const auto a = random_floats(35, 11), b = random_floats(21, 12);
  Eigen::Matrix<float, 5, 7, Eigen::RowMajor> ea = Eigen::Map<const Eigen::Matrix<float, 5, 7, Eigen::RowMajor>>(a.data());
  Eigen::Matrix<float, 7, 3, Eigen::RowMajor> eb = Eigen::Map<const Eigen::Matrix<float, 7, 3, Eigen::RowMajor>>(b.data());
  Eigen::Matrix<float, 5, 3, Eigen::RowMajor> ey, ez;
  run<policy::eigen>(op::gemm<float>{}, ea, eb, ey);
  run<policy::eigen>(op::softmax<float>{}, ey, ez);
  const std::vector<float> ref(ez.data(), ez.data() + 15);
  std::filesystem::path robust_file;
  {
    vulkan::context rc({.validation = val, .cache_dir = dir.string(), .robust_buffer_access = true});
    CHECK(rc.robust_buffer_access());
    CHECK(rc.robust_buffer_access2() == rc.info().robust_buffer_access2);
    MESSAGE(rc.info().name << ": robustBufferAccess2 " << std::string(rc.robust_buffer_access2() ? "on" : "not offered"));
    vulkan::device_tensor<float> da(rc, {5, 7}), db(rc, {7, 3}), dy(rc, {5, 3}), dz(rc, {5, 3});
    da.upload(make_view(a, {5, 7}));
    db.upload(make_view(b, {7, 3}));
    vulkan::stream s(rc);
    vulkan::record(s, op::gemm<float>{}, da, db, dy);
    vulkan::record(s, op::softmax<float>{}, dy, dz);
    s.run();
    check_close("robust gemm -> softmax", dz.to_vector(), ref, {1.0f}, softmax_tolerance(dtype::f32, 3));
    for (const auto& m : rc.validation_messages()) FAIL_CHECK(m);
    CHECK(rc.validation_message_count() == 0);
    robust_file = rc.pipeline_cache_path();
  }  // saves its pipeline cache
  CHECK(std::filesystem::exists(robust_file));
  {
    // A plain context on the same cache directory keeps a file of its own.
    vulkan::context pc({.validation = val, .cache_dir = dir.string()});
    CHECK_FALSE(pc.robust_buffer_access());
    CHECK_FALSE(pc.robust_buffer_access2());
    CHECK(pc.pipeline_cache_path() != robust_file);
    CHECK_FALSE(pc.pipelines_stats().cache_loaded);
  }
  {
    vulkan::context rc2({.validation = val, .cache_dir = dir.string(), .robust_buffer_access = true});
    CHECK(rc2.pipelines_stats().cache_loaded);
  }
  std::filesystem::remove_all(dir);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan stream: gemm -> gelu -> layer_norm in one submission, barriers only where data flows, replay") {
  KFT_NEED_DEVICE();
  const index_t m = 17, k = 33, n = 7;
  auto af = random_floats(m * k, 1), bf = random_floats(k * n, 2), gf = random_floats(n, 3, 0.5f, 1.5f),
       betaf = random_floats(n, 4);
  vulkan::device_tensor<float> a(*ctx, {m, k}), b(*ctx, {k, n}), g(*ctx, {n}), be(*ctx, {n}), h(*ctx, {m, n}),
      h2(*ctx, {m, n}), y(*ctx, {m, n}), a2(*ctx, {m, k}), other(*ctx, {m, k});
  vulkan::stream s(*ctx);
  s.time_dispatches(true);
  a.record_upload(s, make_view(af, {m, k}));
  b.record_upload(s, make_view(bf, {k, n}));
  g.record_upload(s, make_view(gf, {n}));
  be.record_upload(s, make_view(betaf, {n}));
  const auto barriers_after_uploads = s.barrier_count();
  CHECK(barriers_after_uploads == 0);  // four copies to distinct tensors
  vulkan::record(s, op::gemm<float>{}, a, b, h);
  vulkan::record(s, op::unary<float, fn::gelu_erf>{}, h, h2);
  vulkan::record(s, op::layer_norm<float>{}, h2, g, be, y);
  CHECK(s.barrier_count() == 3);  // uploads->gemm, gemm->gelu, gelu->layer_norm
  vulkan::record(s, op::unary<float, fn::abs>{}, a, a2);  // reads only what is already visible
  CHECK(s.barrier_count() == 3);
  vulkan::record(s, op::unary<float, fn::neg>{}, a, other);  // independent of the previous one
  CHECK(s.barrier_count() == 3);
  s.run();
  CHECK(s.submit_count() == 1);
  CHECK(s.dispatch_count() == 5);

  std::vector<float> ref_h(m * n), ref_h2(m * n), ref_y(m * n);
  run<policy::eigen>(op::gemm<float>{}, make_view(af, {m, k}), make_view(bf, {k, n}), make_view(ref_h, {m, n}));
  run<policy::eigen>(op::unary<float, fn::gelu_erf>{}, make_view(ref_h, {m, n}), make_view(ref_h2, {m, n}));
  run<policy::eigen>(op::layer_norm<float>{}, make_view(ref_h2, {m, n}), make_view(gf, {n}), make_view(betaf, {n}),
                     make_view(ref_y, {m, n}));
  std::vector<float> scale(ref_y.size());
  for (std::size_t i = 0; i < scale.size(); ++i) scale[i] = 2 + std::fabs(ref_y[i]);
  check_close("chain", y.to_vector(), ref_y, scale, norm_tolerance(dtype::f32, n));
  if (ctx->info().timestamps) {
    const auto t = s.timings();
    REQUIRE(t.size() == 9);  // 4 uploads, then 5 dispatches
    CHECK(t[0].label.rfind("copy", 0) == 0);
    CHECK(t[4].label.rfind("gemm", 0) == 0);
    for (const auto& d : t) CHECK((d.ms && *d.ms >= 0));
  }
  // Replay: the same recording again, on new input uploaded in between.
  const auto y1 = y.to_vector();
  s.run();
  CHECK(s.submit_count() == 2);
  CHECK(y.to_vector() == y1);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan stream: flush() submits parts while recording goes on; results, timings and replay as one part") {
  KFT_NEED_DEVICE();
  const index_t n = 4099;
  auto xf = random_floats(n, 11, -3, 3);
  vulkan::device_tensor<float> x(*ctx, {n}), y(*ctx, {n}), z(*ctx, {n}), w(*ctx, {n});
  vulkan::stream s(*ctx);
  s.time_dispatches(true);
  s.flush();  // nothing recorded: nothing submitted
  CHECK(s.part_count() == 0);
  x.record_upload(s, make_view(xf, {n}));
  vulkan::record(s, op::unary<float, fn::neg>{}, x, y);
  CHECK(s.part_commands() == 2);
  s.flush();  // the upload and the neg run while the rest is recorded
  CHECK(s.part_count() == 2);
  CHECK(s.part_commands() == 0);
  s.flush();  // an empty part is not submitted
  CHECK(s.part_count() == 2);
  vulkan::record(s, op::unary<float, fn::abs>{}, y, z);  // reads what the first part wrote: a barrier in this part
  CHECK(s.barrier_count() == 2);
  s.flush();
  vulkan::record(s, op::binary<float, binop::add>{}, z, x, w);
  const void* got = w.record_download(s);
  s.run();
  CHECK(s.part_count() == 3);
  CHECK(s.flush_count() == 2);
  CHECK(s.submit_count() == 1);
  auto expect = [&](const float* v) {
    int wrong = 0;
    for (index_t i = 0; i < n; ++i) wrong += v[i] != std::fabs(xf[static_cast<std::size_t>(i)]) + xf[static_cast<std::size_t>(i)];
    return wrong;
  };
  CHECK(expect(static_cast<const float*>(got)) == 0);
  if (ctx->info().timestamps) {
    const auto t = s.timings();
    REQUIRE(t.size() == 5);  // upload, neg, abs, add, download
    double longest = 0;
    for (const auto& d : t) {
      REQUIRE(d.ms);
      CHECK(*d.ms >= 0);
      longest = std::max(longest, *d.ms);
    }
    REQUIRE(s.gpu_span_ms());
    CHECK(*s.gpu_span_ms() >= longest);  // the span, first command to last, holds each timed one
  } else {
    CHECK(!s.gpu_span_ms());  // no timestamps: no value, never a number
  }
  CHECK_THROWS_AS(s.flush(), argument_error);  // submitted: reset() first
  // Replay: every part again (the recorded upload included), in one submission; w cleared in between.
  const std::vector<float> cleared(static_cast<std::size_t>(n), -1.0f);
  w.upload(make_view(cleared, {n}));
  s.run();
  CHECK(s.submit_count() == 2);
  std::vector<float> again = w.to_vector();
  CHECK(expect(again.data()) == 0);
  // reset() waits for flushed parts of an abandoned recording and records anew.
  s.reset();
  vulkan::record(s, op::unary<float, fn::neg>{}, x, y);
  s.flush();
  s.reset();
  CHECK(s.part_count() == 0);
  vulkan::record(s, op::unary<float, fn::abs>{}, x, y);
  s.run();
  const auto ya = y.to_vector();
  for (index_t i = 0; i < n; ++i) CHECK(ya[static_cast<std::size_t>(i)] == std::fabs(xf[static_cast<std::size_t>(i)]));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan waits that poll before sleeping (spin_us) give the same results; KFORGE_VK_SPIN_US is checked") {
  KFT_NEED_DEVICE();
  CHECK((ctx->info().type == "cpu" ? ctx->spin().count() == 0 : ctx->spin().count() == 20000));
  vulkan::context_options o;
  o.validation = ctx->validation_enabled() ? 1 : 0;
  o.cache_dir = kft::test_cache_dir();
  o.spin_us = 200000;
  vulkan::context c(o);
  CHECK(c.spin().count() == 200000);
  const index_t n = 5000;
  auto xf = random_floats(n, 13, -3, 3);
  auto x = vulkan::device_tensor<float>::from_host(c, make_view(xf, {n}));
  vulkan::device_tensor<float> y(c, {n});
  for (int rep = 0; rep < 3; ++rep) {
    vulkan::stream s(c);
    vulkan::record(s, op::unary<float, fn::neg>{}, x, y);
    s.flush();
    vulkan::record(s, op::unary<float, fn::abs>{}, y, y);
    s.run();
    const auto got = y.to_vector();
    int wrong = 0;
    for (index_t i = 0; i < n; ++i) wrong += got[static_cast<std::size_t>(i)] != std::fabs(xf[static_cast<std::size_t>(i)]);
    CHECK(wrong == 0);
  }
  c.set_spin(std::chrono::microseconds(0));
  CHECK(c.spin().count() == 0);
  CHECK(c.validation_message_count() == 0);
  o.spin_us = -1;
  ::setenv("KFORGE_VK_SPIN_US", "soon", 1);
  CHECK_THROWS_AS(vulkan::context{o}, argument_error);
  ::setenv("KFORGE_VK_SPIN_US", "7", 1);
  CHECK(vulkan::context{o}.spin().count() == 7);
  ::unsetenv("KFORGE_VK_SPIN_US");
}

TEST_CASE("vulkan stream: dispatches are untimed by default; those recorded after time_dispatches(true) are timed") {
  KFT_NEED_DEVICE();
  const index_t n = 1000;
  auto xf = random_floats(n, 7);
  vulkan::device_tensor<float> x(*ctx, {n}), y(*ctx, {n}), z(*ctx, {n});
  x.upload(make_view(xf, {n}));
  vulkan::stream s(*ctx);
  vulkan::record(s, op::unary<float, fn::neg>{}, x, y);
  s.time_dispatches(true);
  vulkan::record(s, op::unary<float, fn::abs>{}, y, z);
  s.time_dispatches(false);
  vulkan::record(s, op::unary<float, fn::neg>{}, z, y);
  s.run();
  const auto t = s.timings();
  REQUIRE(t.size() == 3);
  CHECK(!t[0].ms);  // untimed: the default, no value
  CHECK(!t[2].ms);  // untimed again
  if (ctx->info().timestamps) CHECK((t[1].ms && *t[1].ms >= 0));
  else CHECK(!t[1].ms);
  const auto got = y.to_vector();
  for (index_t i = 0; i < n; ++i) CHECK(got[static_cast<std::size_t>(i)] == -std::fabs(xf[static_cast<std::size_t>(i)]));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan context_options::block_mib sets the device pool's block size") {
  KFT_NEED_DEVICE();
  vulkan::context_options o;
  o.block_mib = 2;
  o.validation = ctx->validation_enabled() ? 1 : 0;
  o.cache_dir = kft::test_cache_dir();
  vulkan::context c(o);
  std::vector<vulkan::device_tensor<float>> ts;
  for (int i = 0; i < 3; ++i) ts.emplace_back(c, shape{300 * 1024});  // 1.2 MB each: one per 2 MiB block
  CHECK(c.device_memory().stats().blocks == 3);
  CHECK(c.device_memory().stats().block_bytes == 3 * (std::uint64_t{2} << 20));
  CHECK(c.validation_message_count() == 0);
  ::setenv("KFORGE_VK_BLOCK_MIB", "lots", 1);
  o.block_mib = 0;  // from the environment
  CHECK_THROWS_AS(vulkan::context{o}, argument_error);
  ::unsetenv("KFORGE_VK_BLOCK_MIB");
}

TEST_CASE_TEMPLATE("vulkan run() on device tensors keeps data on the device", T, float, half, bfloat16) {
  KFT_NEED_DEVICE();
  if (sizeof(T) == 2 && !ctx->info().storage_16bit) {
    CHECK_THROWS_AS(vulkan::device_tensor<T>(*ctx, {3, 33}), unsupported_error);
    return;
  }
  auto xf = random_floats(3 * 33, 5, -3, 3);
  std::vector<T> x = kft::convert<T>(xf), ref(x.size());
  auto dx = vulkan::device_tensor<T>::from_host(*ctx, make_view(x, {3, 33}));
  vulkan::device_tensor<T> dy(*ctx, {3, 33});
  run<policy::vulkan<>>(op::softmax<T>{}, dx, dy);
  run<policy::eigen>(op::softmax<T>{}, make_view(x, {3, 33}), make_view(ref, {3, 33}));
  check_close("softmax on device tensors", dy.to_vector(), ref, {1.0f}, softmax_tolerance(dtype_of<T>(), 33));
  vulkan::device_tensor<T> wrong(*ctx, {3, 32});
  CHECK_THROWS_AS(run<policy::vulkan<>>(op::softmax<T>{}, dx, wrong), shape_error);
  KFT_NO_VALIDATION_MESSAGES();
}

// ---- device loss ---------------------------------------------------------------
// The child: a context with a 1 s timeout runs a shader that never ends, must
// see device_lost, then builds a fresh context and computes correctly on it.
// It leaves with _exit so no destructor touches the abandoned device.
TEST_CASE("vulkan device loss child" * doctest::skip(std::getenv("KFORGE_VK_HANG_CHILD") == nullptr)) {
  int code = 10;
  try {
    vulkan::context hung({.validation = 0, .timeout = std::chrono::milliseconds(1000), .cache_dir = kft::test_cache_dir()});
    vulkan::device_tensor<float> buf(hung, {4});
    buf.upload(make_view(std::vector<float>(4, 0.0f), {4}));
    vulkan::stream s(hung);
    vulkan::shader_variant spin{"spin", std::string(vulkan::shaders::common) + vulkan::shaders::spin, {{"KF_F16", "0"}}};
    const auto& p = hung.get_pipeline(spin, {1, 4, {0}}, {1});
    const std::uint32_t forever = 1;
    s.dispatch(p, {{buf.ref(), true}}, &forever, 4, {65535, 65535, 1}, "spin");
    try {
      s.run();
      code = 11;
    } catch (const vulkan::device_lost& e) {
      std::printf("child: device_lost: %s\n", e.what());
      code = hung.lost() ? 0 : 12;
      CHECK_THROWS_AS(vulkan::stream{hung}, vulkan::device_lost);
    }
    if (code == 0) {
      vulkan::context fresh({.validation = 0, .cache_dir = kft::test_cache_dir()});
      std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c(4);
      auto da = vulkan::device_tensor<float>::from_host(fresh, make_view(a, {2, 2}));
      auto db = vulkan::device_tensor<float>::from_host(fresh, make_view(b, {2, 2}));
      vulkan::device_tensor<float> dc(fresh, {2, 2});
      run<policy::vulkan<>>(op::gemm<float>{}, da, db, dc);
      dc.download(make_view(c, {2, 2}));
      code = (c == std::vector<float>{19, 22, 43, 50}) ? 0 : 13;
      std::printf("child: rebuilt context computed %s\n", code == 0 ? "correctly" : "WRONG");
    }
  } catch (const std::exception& e) {
    std::printf("child: unexpected %s\n", e.what());
    code = 14;
  }
  std::fflush(stdout);
  std::error_code ec;
  std::filesystem::remove_all(kft::test_cache_dir(), ec);  // _exit skips the directory's own cleanup
  _exit(code);
}

TEST_CASE("vulkan a shader that never ends raises device_lost and the caller recovers") {
  KFT_NEED_DEVICE();
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(len > 0);
  self[len] = 0;
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.push_back(*e);
  env_s.push_back("KFORGE_VK_HANG_CHILD=1");
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string tc = "--test-case=vulkan device loss child";
  char* argv[] = {self, tc.data(), nullptr};
  pid_t pid;
  REQUIRE(posix_spawn(&pid, self, nullptr, nullptr, argv, envp.data()) == 0);
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  bool done = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      done = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL("the child did not finish within 120 s: a wait without timeout?");
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
