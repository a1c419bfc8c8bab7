// tests/tune_roofline_vulkan.cpp — the roofline cache (include/kforge/tune/roofline.hpp:
// hits, misses, remeasure, other devices kept, corrupt files set aside) with a
// counting probe, and the Vulkan probes (include/kforge/tune/vulkan_roofline.hpp)
// measured on the test device (lavapipe in CI) with the validation layer on;
// the Vulkan cases skip, and say so, where no device exists.
#include "vulkan_common.hpp"

#include <kforge/tune/vulkan_roofline.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace kforge;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("kforge-roofline-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<fs::path> set_aside_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("roofline.json.corrupt-", 0) == 0) out.push_back(e.path());
  return out;
}

tune::roofline_peaks fake(double bw, double fl) {
  tune::roofline_peaks p;
  p.bandwidth_Bps = bw;
  p.flops = fl;
  p.method = "fake";
  return p;
}

}  // namespace

TEST_CASE("roofline cache: miss probes, hit reads, remeasure probes, other devices kept") {
  const fs::path dir = fresh_dir("cache");
  int probes = 0;
  const tune::device_identity a{"vulkan A [1:2]", "driver 1"}, a2{"vulkan A [1:2]", "driver 2"}, b{"cpu B", ""};
  auto probe = [&](double bw) {
    return [&probes, bw] {
      ++probes;
      return fake(bw, 2 * bw);
    };
  };
  const auto pa = tune::cached_roofline(dir, a, false, probe(10));
  CHECK(probes == 1);
  CHECK(pa.device == a.device);
  CHECK(pa.driver == a.driver);
  CHECK(!pa.measured_at.empty());
  const auto pa_hit = tune::cached_roofline(dir, a, false, probe(99));
  CHECK(probes == 1);
  CHECK(pa_hit.bandwidth_Bps == 10);
  CHECK(pa_hit.flops == 20);
  CHECK(pa_hit.method == "fake");
  // Another driver of the same device is another identity.
  CHECK(tune::cached_roofline(dir, a2, false, probe(30)).bandwidth_Bps == 30);
  CHECK(probes == 2);
  CHECK(tune::cached_roofline(dir, b, false, probe(40)).bandwidth_Bps == 40);
  CHECK(probes == 3);
  // remeasure replaces this identity's entry and keeps the others.
  CHECK(tune::cached_roofline(dir, a, true, probe(11)).bandwidth_Bps == 11);
  CHECK(probes == 4);
  CHECK(tune::cached_roofline(dir, a, false, probe(99)).bandwidth_Bps == 11);
  CHECK(tune::cached_roofline(dir, a2, false, probe(99)).bandwidth_Bps == 30);
  CHECK(tune::cached_roofline(dir, b, false, probe(99)).bandwidth_Bps == 40);
  CHECK(probes == 4);
  bool corrupt = true;
  CHECK(tune::detail::parse_rooflines(slurp(dir / "roofline.json"), corrupt).size() == 3);
  CHECK_FALSE(corrupt);
  fs::remove_all(dir);
}

TEST_CASE("roofline cache: a corrupt or truncated file is reported, set aside and replaced") {
  const fs::path dir = fresh_dir("corrupt");
  int probes = 0;
  const tune::device_identity id{"vulkan C [3:4]", "d"};
  auto probe = [&] {
    ++probes;
    return fake(5, 6);
  };
  for (const std::string& junk : {std::string("{\"format\":\"kforge-roofline\",\"devices\":[{\"device\": trunc"),
                                 std::string("not json at all"), std::string("{\"format\":\"something else\"}")}) {
    CAPTURE(junk);
    fs::create_directories(dir);
    std::ofstream(dir / "roofline.json") << junk;
    std::vector<std::string> warnings;
    const auto before = set_aside_files(dir).size();
    const auto r = tune::cached_roofline(dir, id, false, probe, [&](const std::string& w) { warnings.push_back(w); });
    CHECK(r.bandwidth_Bps == 5);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("corrupt") != std::string::npos);
    CHECK(warnings[0].find("moved to") != std::string::npos);
    const auto aside = set_aside_files(dir);
    REQUIRE(aside.size() == before + 1);
    bool found = false;
    for (const auto& f : aside) found = found || slurp(f) == junk;
    CHECK(found);  // the damaged file is kept, not overwritten
    bool corrupt = true;
    CHECK(tune::detail::parse_rooflines(slurp(dir / "roofline.json"), corrupt).size() == 1);
    CHECK_FALSE(corrupt);
    fs::remove(dir / "roofline.json");
  }
  CHECK(probes == 3);
  fs::remove_all(dir);
}

TEST_CASE("roofline chart: one SVG with each device's roof and points") {
  tune::roofline_series cpu{fake(20e9, 100e9), "CPU", {{"threaded", 8, 50e9}}};
  cpu.peaks.device = "cpu X";
  tune::roofline_series gpu{fake(3e12, 60e12), "Vulkan", {{"vulkan", 8, 5e12}}};
  gpu.peaks.device = "vulkan Y <1:2>";
  gpu.peaks.flops_f16 = 120e12;
  const std::string svg = tune::roofline_svg({cpu, gpu}, "gemm 64x64x64 f32");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("class=\"point roof-0\"") != std::string::npos);
  CHECK(svg.find("class=\"point roof-1\"") != std::string::npos);
  CHECK(svg.find(">vulkan</text>") != std::string::npos);
  CHECK(svg.find("stroke-dasharray") != std::string::npos);  // the f16 roof
  CHECK(svg.find("vulkan Y &lt;1:2&gt;") != std::string::npos);
}

TEST_CASE("vulkan roofline: probes measure, the cache round-trips, remeasure probes again") {
  KFT_NEED_DEVICE();
  const fs::path dir = fresh_dir("vulkan");
  const auto id = tune::vulkan_identity(*ctx);
  const auto t0 = std::chrono::steady_clock::now();
  const tune::roofline_peaks r = tune::vulkan_roofline(*ctx, dir);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(id.device << ": " << r.bandwidth_Bps / 1e9 << " GB/s, " << r.flops / 1e9 << " GFLOP/s f32, "
                    << r.flops_f16 / 1e9 << " GFLOP/s f16 (" << r.method << "), measured in " << took << " s");
  CHECK(r.device == id.device);
  CHECK(r.driver == id.driver);
  CHECK(r.bandwidth_Bps > 0);
  CHECK(std::isfinite(r.bandwidth_Bps));
  CHECK(r.flops > 0);
  CHECK(std::isfinite(r.flops));
  if (ctx->info().fp16_arithmetic) {
    CHECK(r.flops_f16 > 0);
    CHECK(std::isfinite(r.flops_f16));
  } else {
    CHECK(r.flops_f16 == 0);
  }
  CHECK(r.method.find(ctx->info().timestamps ? "GPU timestamps" : "host clock") != std::string::npos);
  REQUIRE(fs::exists(dir / "roofline.json"));

  // A second call reads the file: the stored numbers (JSON keeps 9 digits),
  // the same measurement time.
  const auto hit = tune::vulkan_roofline(*ctx, dir);
  CHECK(hit.bandwidth_Bps == doctest::Approx(r.bandwidth_Bps).epsilon(1e-8));
  CHECK(hit.flops == doctest::Approx(r.flops).epsilon(1e-8));
  CHECK(hit.flops_f16 == doctest::Approx(r.flops_f16).epsilon(1e-8));
  CHECK(hit.measured_at == r.measured_at);
  CHECK(hit.method == r.method);

  // Plant a number no probe would measure: a plain call returns it (it comes
  // from the cache); remeasure replaces it with a measurement.
  tune::roofline_peaks planted = r;
  planted.bandwidth_Bps = 1.0;
  std::ofstream(dir / "roofline.json") << tune::detail::rooflines_json({planted});
  CHECK(tune::vulkan_roofline(*ctx, dir).bandwidth_Bps == 1.0);
  const auto again = tune::vulkan_roofline(*ctx, dir, true);
  CHECK(again.bandwidth_Bps > 1.0);
  CHECK(tune::vulkan_roofline(*ctx, dir).bandwidth_Bps == doctest::Approx(again.bandwidth_Bps).epsilon(1e-8));

  // A corrupt file: reported, set aside, measured again; no crash.
  std::ofstream(dir / "roofline.json") << "{\"format\":\"kforge-roofline\",\"devices\":[{\"dev";
  std::vector<std::string> warnings;
  const auto fresh = tune::vulkan_roofline(*ctx, dir, false, [&](const std::string& w) { warnings.push_back(w); });
  CHECK(fresh.bandwidth_Bps > 0);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("corrupt") != std::string::npos);
  CHECK(set_aside_files(dir).size() == 1);
  KFT_NO_VALIDATION_MESSAGES();
  fs::remove_all(dir);
}

TEST_CASE("vulkan: last_call_seconds is the GPU time of a host call's kernels, without its transfers") {
  KFT_NEED_DEVICE();
  if (!ctx->info().timestamps) {
    MESSAGE("skipped: the queue has no timestamps");
    return;
  }
  const shape s{256, 1024};
  std::vector<float> x = kft::random_floats(static_cast<std::size_t>(s.numel()), 7), y(x.size());
  const auto t0 = std::chrono::steady_clock::now();
  run<policy::vulkan<>>(op::unary<float, fn::relu>{}, tensor_view<const float>(x.data(), s), tensor_view<float>(y.data(), s));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::optional<double> dev = vulkan::last_call_seconds();
  REQUIRE(dev);
  const double gpu = *dev;
  MESSAGE("relu 256x1024: GPU " << gpu * 1e3 << " ms, wall " << wall * 1e3 << " ms");
  CHECK(gpu > 0);
  CHECK(gpu < wall);
  // The stream marks its copies (uploads, downloads) as transfers, dispatches not.
  auto a = ctx->device_memory().allocate(4096), b = ctx->device_memory().allocate(4096);
  vulkan::stream st(*ctx);
  st.time_dispatches(true);
  st.copy(a.ref(), b.ref(), 4096);
  st.run();
  const auto ts = st.timings();
  REQUIRE(ts.size() == 1);
  CHECK(ts[0].transfer);
  KFT_NO_VALIDATION_MESSAGES();
}
