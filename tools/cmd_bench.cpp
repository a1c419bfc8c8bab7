// tools/cmd_bench.cpp — `kforge bench`: one problem on several policies,
// medians and ratios against a peer, and (with kforge::tune) each row's place
// on its device's roofline.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <kforge/core/json.hpp>

#include "cli.hpp"

#if defined(KFORGE_TOOL_HAS_TUNE)
#include "cmd_roofline.hpp"
#endif

namespace kforge::tool {

int cmd_bench(const args& a) {
  const problem p = problem_from(a);
  const std::string vs = a.get("vs").value_or("eigen");
  std::vector<std::string> names = split(a.get("policy").value_or(default_policy()));
  if (std::find(names.begin(), names.end(), vs) == names.end()) names.insert(names.begin(), vs);
  const int reps = a.get("reps") ? std::max(1, to_int("reps", *a.get("reps"))) : 10;
  struct row {
    std::string name, detail;
    timing t;
    double tp;
    std::string unit;
    single_check c;
  };
  std::vector<row> rows;
  for (const auto& n : names) {
    const policy_entry& e = find_policy(n);
    require_available(e);
    std::vector<host_tensor> ts = allocate(p);
    row r{e.name, e.detail, {}, 0, "", check_once(e, p, ts)};
    r.t = time_policy(e, p, ts, reps);
    throughput(p, r.t.median_s, &r.tp, &r.unit);
    rows.push_back(r);
  }
  const double peer = rows.front().t.median_s;
  bool all_ok = true;
#if defined(KFORGE_TOOL_HAS_TUNE)
  // The roofline of each device the policies ran on (probed once, cached):
  // intensity, bound, fraction. A Vulkan row's fraction uses the kernels' GPU
  // time where the device has timestamps (its median_ms is wall time and
  // includes the uploads and downloads), else the wall time.
  std::vector<tool::roofline_report> roofs;
  roofs.reserve(2);  // one per target: references into it stay valid
  auto roof_of = [&](const std::string& policy) -> const tool::roofline_report& {
    const std::string target = tool::roofline_target(policy);
    for (const auto& r : roofs)
      if (r.target == target) return r;
    roofs.push_back(tool::roofline_for(p, target, a.has("remeasure-roofline")));
    return roofs.back();
  };
  for (const auto& r : rows) (void)roof_of(r.name);
  auto roof_seconds = [](const row& r) { return r.t.device_median_s >= 0 ? r.t.device_median_s : r.t.median_s; };
#endif
  json_writer w;
  w.begin_object().field("problem", describe(p)).field("vs", vs).field("reps", reps).key("results").begin_array();
  if (!a.has("json")) std::printf("%s, median of %d runs\n%-10s %12s %16s %10s %12s\n", describe(p).c_str(), reps, "policy", "median ms", "throughput", "vs " , "max rel err");
  for (const auto& r : rows) {
    all_ok = all_ok && r.c.passed;
    const double ratio = peer / r.t.median_s;
    w.begin_object().field("policy", r.name).field("detail", r.detail).field("median_ms", r.t.median_s * 1e3);
    if (r.t.device_median_s >= 0) w.field("gpu_median_ms", r.t.device_median_s * 1e3);
    w.field("throughput", r.tp).field("unit", r.unit).field("ratio_vs_peer", ratio).field("max_rel_err", r.c.max_rel_err);
    w.field("within_tolerance", r.c.passed);
#if defined(KFORGE_TOOL_HAS_TUNE)
    const auto& roof = roof_of(r.name);
    if (const double f = tool::roofline_fraction(roof, p, roof_seconds(r)); f >= 0)
      w.field("roofline_device", roof.device).field("arithmetic_intensity", roof.intensity)
          .field("attainable_gflops", roof.bound_flops / 1e9).field("fraction_of_roofline", f)
          .field("roofline_time", r.t.device_median_s >= 0 ? "gpu" : "wall");
#endif
    w.end_object();
    if (!a.has("json"))
      std::printf("%-10s %12.4f %11.2f %-7s %8.2fx %12.3g%s\n", r.name.c_str(), r.t.median_s * 1e3, r.tp, r.unit.c_str(), ratio,
                  r.c.max_rel_err, r.c.passed ? "" : "  OUTSIDE TOLERANCE");
  }
  w.end_array();
#if defined(KFORGE_TOOL_HAS_TUNE)
  w.key("rooflines").begin_array();
  for (const auto& roof : roofs) {
    if (!roof.available) {
      w.begin_object().field("target", roof.target).field("unavailable", roof.why).end_object();
      if (!a.has("json")) std::printf("roofline %s: unavailable (%s)\n", roof.target.c_str(), roof.why.c_str());
      continue;
    }
    w.begin_object().field("target", roof.target).field("device", roof.device).field("bandwidth_gbs", roof.bandwidth / 1e9);
    w.field("peak_gflops", roof.peak / 1e9);
    if (roof.peak_f16 > 0) w.field("peak_f16_gflops", roof.peak_f16 / 1e9);
    w.field("measured_at", roof.measured_at).field("method", roof.method).field("arithmetic_intensity", roof.intensity);
    w.field("attainable_gflops", roof.bound_flops / 1e9).field("f16_roof", roof.f16_roof).end_object();
    if (a.has("json")) continue;
    std::printf("roofline %s: %.1f GB/s, %.1f GFLOP/s", roof.device.c_str(), roof.bandwidth / 1e9, roof.peak / 1e9);
    if (roof.peak_f16 > 0) std::printf(" (f16 %.1f)", roof.peak_f16 / 1e9);
    std::printf(" (kforge probes, %s); intensity %.3g flop/B, attainable %.2f GFLOP/s%s\n", roof.measured_at.c_str(),
                roof.intensity, roof.bound_flops / 1e9, roof.f16_roof ? " (f16 roof)" : "");
    for (const auto& r : rows) {
      if (tool::roofline_target(r.name) != roof.target) continue;
      const double f = tool::roofline_fraction(roof, p, roof_seconds(r));
      if (f < 0) continue;
      if (r.t.device_median_s >= 0)
        std::printf("  %-10s %6.1f%% of attainable (GPU time of the kernels, %.4f ms median; wall %.4f ms includes transfers)\n",
                    r.name.c_str(), 100 * f, r.t.device_median_s * 1e3, r.t.median_s * 1e3);
      else
        std::printf("  %-10s %6.1f%% of attainable (%s time)\n", r.name.c_str(), 100 * f,
                    roof.target == "cpu" ? "wall" : "wall, with transfers: no GPU timestamps");
    }
  }
  w.end_array();
  if (auto svg = a.get("roofline")) {
    std::vector<tool::roofline_case> cases;
    for (const auto& r : rows) cases.push_back({r.name, roof_seconds(r)});
    try {
      tool::write_roofline_svg(roofs, p, cases, *svg);
    } catch (const error& e) {
      throw environment_error(e.what());
    }
    if (!a.has("json")) std::printf("roofline chart: %s\n", svg->c_str());
  }
#endif
  w.end_object();
  if (a.has("json")) std::cout << w.str() << "\n";
  return all_ok ? ok : failed;
}

}  // namespace kforge::tool
