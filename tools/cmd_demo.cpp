// tools/cmd_demo.cpp — `kforge demo`: the default problem set on every
// available policy, each result validated with the 16-case suite.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <kforge/core/json.hpp>

#include "cli.hpp"

namespace kforge::tool {
namespace {

std::vector<problem> demo_problems(bool quick) {
  std::vector<problem> ps;
  auto add = [&](const char* op, const char* shp, auto&& tweak) {
    problem p;
    p.op = op;
    set_shape(p, shp);
    tweak(p);
    ps.push_back(p);
  };
  auto none = [](problem&) {};
  add("gemm", quick ? "128x128x128" : "512x512x512", none);
  add("gemm", quick ? "100x96x130" : "257x1000x300", [](problem& p) { p.epilogue = "bias_gelu"; });
  add("conv2d", quick ? "1x16x14x14,16x16x3x3" : "1x64x28x28,64x64x3x3", [](problem& p) { p.pad[0] = p.pad[1] = 1; });
  add("softmax", quick ? "64x1000" : "512x4096", none);
  add("layer_norm", quick ? "64x1000" : "512x4096", none);
  add("attention", quick ? "1x2x64x32" : "1x8x256x64", [](problem& p) { p.causal = true; });
  return ps;
}

}  // namespace

int cmd_demo(const args& a) {
  const bool quick = a.has("quick");
  const bool json = a.has("json");
  // --policy LIST: those policies (autotune included); default: every registered one.
  std::vector<std::string> names;
  if (auto l = a.get("policy")) names = policy_list(*l);
  else
    for (const policy_entry& e : policies()) names.push_back(e.name);
  json_writer w;
  w.begin_object().key("rows").begin_array();
  bool all_ok = true;
  if (!json) {
    std::cout << "kforge demo: every op on every available policy, validated against Eigen (16 cases each)\n"
                 "(CPU rows: a call on host data; vulkan rows: the kernels on device-resident tensors, GPU timestamps,\n"
                 " with the transfers and the whole host-view call on the line below)\n\n";
    std::printf("%-34s %-9s %10s %18s %9s %10s %8s\n", "problem", "policy", "time ms", "throughput", "vs eigen", "max rel err", "valid");
  }
  for (const problem& p : demo_problems(quick)) {
    double eigen_s = 0;
    for (const std::string& name : names) {
      chosen_policy chosen;
      std::string why;
      if (name == "autotune" || name == "auto") {
        chosen = choose_policy(name, p);
      } else {
        chosen.entry = find_policy(name);
        why = chosen.entry.unavailable();
      }
      const policy_entry& e = chosen.entry;
      if (why.empty()) try {  // a problem this machine cannot hold is a skipped row, said before allocating
          require_host_memory(p, run_bytes(p), run_bytes_what);
          require_device_memory(p, e);
        } catch (const memory_error& x) {
          why = one_line(x.what()).substr(8);
          why.pop_back();
        }
      if (!why.empty()) {
        if (!json) std::printf("%-34s %-9s   skipped: %s\n", describe(p).c_str(), e.name.c_str(), why.c_str());
        w.begin_object().field("problem", describe(p)).field("policy", e.name).field("skipped", why).end_object();
        continue;
      }
      try {  // a policy need not implement every (op, dtype): say so instead of failing
        std::vector<host_tensor> probe = allocate(p);
        e.execute(p, probe);
      } catch (const unsupported_error& x) {
        if (!json) std::printf("%-34s %-9s   not implemented: %s\n", describe(p).c_str(), e.name.c_str(), x.what());
        w.begin_object().field("problem", describe(p)).field("policy", e.name).field("skipped", x.what()).end_object();
        continue;
      }
      const report r = validate(p, e.execute);
      const int reps = quick ? 2 : 5;
      std::optional<gpu_times> g;
      timing t;
      if (e.time_resident) {
        std::vector<host_tensor> ts = allocate(p);
        generate_inputs(p, input_case::normal, suite_options{}.seed, ts);
        g = time_gpu(e, p, ts, reps);
        t = g->host_view;
      } else {
        t = time_policy(e, p, allocate(p), reps);
      }
      const double seconds = g ? g->resident.kernel_s : t.median_s;  // a Vulkan row: its kernels
      if (e.name == "eigen") eigen_s = seconds;
      double tp = 0;
      std::string unit;
      throughput(p, seconds, &tp, &unit);
      const bool passed = r.all_passed && (!g || g->resident.within_tolerance);
      all_ok = all_ok && passed;
      const double speedup = eigen_s > 0 ? eigen_s / seconds : 0;
      if (!json) {
        std::printf("%-34s %-9s %10.3f %11.2f %-7s %8.2fx %10.2g %5d/%d%s\n", describe(p).c_str(), e.name.c_str(),
                    seconds * 1e3, tp, unit.c_str(), speedup, r.max_rel_err, r.num_passed, r.num_total,
                    passed ? "" : "  FAILED");
        if (g) std::printf("%-34s   %s\n", "", transfer_text(*g).c_str());
        if (chosen.autotune) std::printf("%-34s   %s\n", "", chosen.autotune->text().c_str());
      }
      w.begin_object().field("problem", describe(p)).field("policy", e.name).field("detail", e.detail);
      w.field("median_ms", seconds * 1e3).field("throughput", tp).field("unit", unit).field("speedup_vs_eigen", speedup);
      w.field("time", g ? (g->resident.gpu_timestamps ? "gpu_kernels_device_resident" : "wall_per_call_device_resident")
                        : "wall");
      if (g) {
        w.field("host_view_ms", g->host_view.median_s * 1e3).field("upload_ms", g->resident.upload_s * 1e3);
        w.field("download_ms", g->resident.download_s * 1e3).field("device_resident_within_tolerance", g->resident.within_tolerance);
      }
      if (chosen.autotune) w.key("autotune").raw(chosen.autotune->json());
      w.field("max_rel_err", r.max_rel_err).field("cases_passed", r.num_passed).field("cases_total", r.num_total);
      w.field("validated", passed).end_object();
    }
  }
  w.end_array().field("all_validated", all_ok).end_object();
  if (json) std::cout << w.str() << "\n";
  else std::cout << "\n" << (all_ok ? "all results validated against Eigen" : "SOME RESULTS FAILED VALIDATION") << "\n";
  return all_ok ? ok : failed;
}

}  // namespace kforge::tool
