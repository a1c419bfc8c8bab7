// tools/cmd_bench.cpp — `kforge bench`: one problem on several policies
// (--policy autotune,threaded,vulkan), medians and ratios against a peer, and
// (with kforge::tune) each row's place on its device's roofline.
//
// Every row is timed where its data lives when a program uses the policy
// well: a CPU row is a call on host data (wall time); a Vulkan row is the
// kernels on device-resident tensors (GPU timestamps, tools/registry.hpp's
// resident_timing), with the host-view call (upload + kernels + download) as
// a row of its own and the upload and download times beside it.
//
// --json follows Google Benchmark's format (context + benchmarks[]: name,
// run_name, run_type "aggregate" with aggregate_name "median", repetitions,
// iterations, real_time, cpu_time, time_unit, counters), so its tools can
// read it; kforge's own fields are prefixed kforge_.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <kforge/core/json.hpp>

#include "cli.hpp"

#if defined(KFORGE_TOOL_HAS_TUNE)
#include "cmd_roofline.hpp"
#endif

namespace kforge::tool {
namespace {

struct row {
  chosen_policy chosen;
  timing t;                                 // CPU rows: the call; Vulkan rows: the host-view call
  std::optional<resident_timing> resident;  // Vulkan rows: the kernels on device-resident tensors
  single_check c;
  const std::string& name() const { return chosen.entry.name; }
  /// The row's time: the kernels for a Vulkan row, the call for a CPU row.
  double seconds() const { return resident ? resident->kernel_s : t.median_s; }
  double cpu_seconds() const { return resident ? resident->cpu_s : t.cpu_median_s; }
  bool passed() const { return c.passed && (!resident || resident->within_tolerance); }
  double max_rel_err() const { return resident ? std::max(c.max_rel_err, resident->max_rel_err) : c.max_rel_err; }
};

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", std::gmtime(&now));
  return buf;
}

/// Google Benchmark's context block, with the problem and kforge's version.
void write_context(json_writer& w, const problem& p, const std::string& vs, int reps) {
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  double load[3] = {0, 0, 0};
  const int nload = ::getloadavg(load, 3);
  w.key("context").begin_object().field("date", utc_date()).field("host_name", std::string(host));
  w.field("executable", "kforge bench").field("num_cpus", static_cast<int>(std::thread::hardware_concurrency()));
  w.key("load_avg").begin_array();
  for (int i = 0; i < nload; ++i) w.value(load[i]);
  w.end_array();
#if defined(NDEBUG)
  w.field("library_build_type", "release");
#else
  w.field("library_build_type", "debug");
#endif
#if defined(KFORGE_VERSION_STRING)
  w.field("kforge_version", KFORGE_VERSION_STRING);
#endif
  w.field("kforge_problem", describe(p)).field("kforge_peer", vs).field("kforge_reps", reps);
  w.field("kforge_timing", "cpu rows: wall time of a call on host data; vulkan rows: GPU time of the kernels on "
                           "device-resident tensors (timestamps), the host-view call (upload + kernels + download, "
                           "wall) as its own :host_view row");
  w.end_object();
}

/// One benchmarks[] entry: the median of `reps` single calls.
void write_entry(json_writer& w, const problem& p, int index, const std::string& run_name, int reps, double real_s,
                 double cpu_s) {
  w.begin_object().field("name", run_name + "_median").field("family_index", index);
  w.field("per_family_instance_index", 0).field("run_name", run_name).field("run_type", "aggregate");
  w.field("repetitions", reps).field("threads", 1).field("aggregate_name", "median").field("aggregate_unit", "time");
  w.field("iterations", 1).field("real_time", real_s * 1e3).field("cpu_time", cpu_s * 1e3).field("time_unit", "ms");
  if (compute_bound(p)) w.field("GFLOPS", flops(p) / real_s / 1e9);
  w.field("bytes_per_second", min_bytes(p) / real_s);
}

}  // namespace

int cmd_bench(const args& a) {
  const problem p = problem_from(a);
  const std::string vs = a.get("vs").value_or("eigen");
  std::vector<std::string> names = policy_list(a.get("policy").value_or(default_policy()));
  if (std::find(names.begin(), names.end(), vs) == names.end()) names.insert(names.begin(), vs);
  const int reps = static_cast<int>(number_option(a.values, "reps", option_ranges::reps, 10));
  const bool json = a.has("json");
  require_host_memory(p, run_bytes(p), run_bytes_what);  // one policy at a time
  std::vector<row> rows;
  for (const auto& n : names) {
    row r{choose_policy(n, p), {}, std::nullopt, {}};
    require_device_memory(p, r.chosen.entry);
    std::vector<host_tensor> ts = allocate(p);
    r.c = check_once(r.chosen.entry, p, ts);
    if (r.chosen.entry.time_resident) {
      const gpu_times g = time_gpu(r.chosen.entry, p, ts, reps);
      r.t = g.host_view;
      r.resident = g.resident;
    } else {
      r.t = time_policy(r.chosen.entry, p, ts, reps);
    }
    rows.push_back(std::move(r));
  }
  const row* peer_row = &rows.front();
  for (const auto& r : rows)
    if (r.name() == vs) peer_row = &r;
  const double peer = peer_row->seconds();
  bool all_ok = true;
  for (const auto& r : rows) all_ok = all_ok && r.passed();

#if defined(KFORGE_TOOL_HAS_TUNE)
  // The roofline of each device the policies ran on (probed once, cached).
  // A Vulkan row's fraction uses its kernels' time on device-resident data;
  // the host-view call's fraction is given beside it.
  std::vector<tool::roofline_report> roofs;
  roofs.reserve(2);  // one per target: references into it stay valid
  auto roof_of = [&](const std::string& policy) -> const tool::roofline_report& {
    const std::string target = tool::roofline_target(policy);
    for (const auto& r : roofs)
      if (r.target == target) return r;
    roofs.push_back(tool::roofline_for(p, target, a.has("remeasure-roofline")));
    return roofs.back();
  };
  for (const auto& r : rows) (void)roof_of(r.name());
#endif

  json_writer w;
  w.begin_object();
  write_context(w, p, vs, reps);
  w.key("benchmarks").begin_array();
  if (!json)
    std::printf("%s, median of %d runs after a warm-up\n"
                "(CPU rows: a call on host data; vulkan: the kernels on device-resident tensors, GPU timestamps;\n"
                " vulkan:host_view: the whole call on host data, upload + kernels + download)\n"
                "%-18s %12s %18s %10s %12s\n",
                describe(p).c_str(), reps, "policy", "median ms", "throughput", ("vs " + vs).c_str(), "max rel err");
  const std::string base = [&] {  // "gemm [64x48x40] f32" -> "gemm/64x48x40/f32"
    std::string s = describe(p);
    std::erase_if(s, [](char ch) { return ch == '[' || ch == ']'; });
    std::replace(s.begin(), s.end(), ' ', '/');
    return s;
  }();
  int index = 0;
  auto text_row = [&](const std::string& label, double seconds, const row& r) {
    double tp = 0;
    std::string unit;
    throughput(p, seconds, &tp, &unit);
    std::printf("%-18s %12.4f %10.2f %-7s %9.2fx %12.3g%s\n", label.c_str(), seconds * 1e3, tp, unit.c_str(),
                peer / seconds, r.max_rel_err(), r.passed() ? "" : "  OUTSIDE TOLERANCE");
  };
  for (const auto& r : rows) {
    write_entry(w, p, index, "bench/" + base + "/" + r.name(), reps, r.seconds(), r.cpu_seconds());
    w.field("kforge_policy", r.name()).field("kforge_detail", r.chosen.entry.detail);
    w.field("kforge_time", r.resident ? (r.resident->gpu_timestamps ? "gpu_kernels_device_resident"
                                                                    : "wall_per_call_device_resident")
                                      : "wall");
    w.field("kforge_ratio_vs_peer", peer / r.seconds()).field("kforge_max_rel_err", r.max_rel_err());
    w.field("kforge_within_tolerance", r.passed());
    if (r.resident) {
      w.field("kforge_upload_ms", r.resident->upload_s * 1e3).field("kforge_download_ms", r.resident->download_s * 1e3);
      w.field("kforge_host_view_ms", r.t.median_s * 1e3).field("kforge_dispatches_per_call", r.resident->dispatches);
    }
    if (r.chosen.autotune) w.key("kforge_autotune").raw(r.chosen.autotune->json());
#if defined(KFORGE_TOOL_HAS_TUNE)
    const auto& roof = roof_of(r.name());
    if (const double f = tool::roofline_fraction(roof, p, r.seconds()); f >= 0)
      w.field("kforge_roofline_device", roof.device).field("kforge_arithmetic_intensity", roof.intensity)
          .field("kforge_attainable_gflops", roof.bound_flops / 1e9).field("kforge_fraction_of_roofline", f);
#endif
    w.end_object();
    if (!json) text_row(r.name(), r.seconds(), r);
    ++index;
    if (!r.resident) continue;
    // The same policy called on host views: what a program without device tensors gets.
    write_entry(w, p, index, "bench/" + base + "/" + r.name() + ":host_view", reps, r.t.median_s, r.t.cpu_median_s);
    w.field("kforge_policy", r.name()).field("kforge_time", "wall_host_view_call");
    w.field("kforge_ratio_vs_peer", peer / r.t.median_s).field("kforge_max_rel_err", r.c.max_rel_err);
    w.field("kforge_within_tolerance", r.c.passed);
#if defined(KFORGE_TOOL_HAS_TUNE)
    if (const double f = tool::roofline_fraction(roof, p, r.t.median_s); f >= 0)
      w.field("kforge_fraction_of_roofline", f);
#endif
    w.end_object();
    ++index;
    if (json) continue;
    text_row(r.name() + ":host_view", r.t.median_s, r);
    std::printf("  %s transfers: upload %.4f ms, download %.4f ms (wall, each one submission); %d dispatch%s per call\n",
                r.name().c_str(), r.resident->upload_s * 1e3, r.resident->download_s * 1e3, r.resident->dispatches,
                r.resident->dispatches == 1 ? "" : "es");
  }
  w.end_array();
  if (!json)
    for (const auto& r : rows)
      if (r.chosen.autotune) std::printf("%s\n", r.chosen.autotune->text().c_str());
  for (const auto& r : rows)
    if (r.chosen.autotune) {
      w.key("kforge_autotune").raw(r.chosen.autotune->json());
      break;
    }
#if defined(KFORGE_TOOL_HAS_TUNE)
  w.key("kforge_rooflines").begin_array();
  for (const auto& roof : roofs) {
    if (!roof.available) {
      w.begin_object().field("target", roof.target).field("unavailable", roof.why).end_object();
      if (!json) std::printf("roofline %s: unavailable (%s)\n", roof.target.c_str(), roof.why.c_str());
      continue;
    }
    w.begin_object().field("target", roof.target).field("device", roof.device).field("bandwidth_gbs", roof.bandwidth / 1e9);
    w.field("peak_gflops", roof.peak / 1e9);
    if (roof.peak_f16 > 0) w.field("peak_f16_gflops", roof.peak_f16 / 1e9);
    w.field("measured_at", roof.measured_at).field("method", roof.method).field("arithmetic_intensity", roof.intensity);
    w.field("attainable_gflops", roof.bound_flops / 1e9).field("f16_roof", roof.f16_roof).end_object();
    if (json) continue;
    std::printf("roofline %s: %.1f GB/s, %.1f GFLOP/s", roof.device.c_str(), roof.bandwidth / 1e9, roof.peak / 1e9);
    if (roof.peak_f16 > 0) std::printf(" (f16 %.1f)", roof.peak_f16 / 1e9);
    std::printf(" (kforge probes, %s); intensity %.3g flop/B, attainable %.2f GFLOP/s%s\n", roof.measured_at.c_str(),
                roof.intensity, roof.bound_flops / 1e9, roof.f16_roof ? " (f16 roof)" : "");
    for (const auto& r : rows) {
      if (tool::roofline_target(r.name()) != roof.target) continue;
      const double f = tool::roofline_fraction(roof, p, r.seconds());
      if (f < 0) continue;
      if (r.resident)
        std::printf("  %-10s %6.1f%% of attainable (kernels on device-resident data, %s, %.4f ms); host-view call "
                    "%.1f%% (%.4f ms, with transfers)\n",
                    r.name().c_str(), 100 * f, r.resident->gpu_timestamps ? "GPU timestamps" : "wall: no timestamps",
                    r.seconds() * 1e3, 100 * tool::roofline_fraction(roof, p, r.t.median_s), r.t.median_s * 1e3);
      else
        std::printf("  %-10s %6.1f%% of attainable (wall time)\n", r.name().c_str(), 100 * f);
    }
  }
  w.end_array();
  if (auto svg = a.get("roofline")) {
    std::vector<tool::roofline_case> cases;
    for (const auto& r : rows) cases.push_back({r.name(), r.seconds()});
    try {
      tool::write_roofline_svg(roofs, p, cases, *svg);
    } catch (const error& e) {
      throw environment_error(e.what());
    }
    if (!json) std::printf("roofline chart: %s\n", svg->c_str());
  }
#endif
  w.end_object();
  if (json) std::cout << w.str() << "\n";
  return all_ok ? ok : failed;
}

}  // namespace kforge::tool
