// tools/cmd_demo.cpp — `kforge demo`: the default problem set on every
// available policy, each result validated with the 10-case suite.
#include <algorithm>
#include <cstdio>
#include <iostream>
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
  json_writer w;
  w.begin_object().key("rows").begin_array();
  bool all_ok = true;
  if (!a.has("json")) {
    std::cout << "kforge demo: every op on every available policy, validated against Eigen (10 cases each)\n\n";
    std::printf("%-34s %-9s %10s %18s %9s %10s %8s\n", "problem", "policy", "time ms", "throughput", "vs eigen", "max rel err", "valid");
  }
  for (const problem& p : demo_problems(quick)) {
    double eigen_s = 0;
    for (const policy_entry& e : policies()) {
      const std::string why = e.unavailable();
      if (!why.empty()) {
        if (!a.has("json")) std::printf("%-34s %-9s   skipped: %s\n", describe(p).c_str(), e.name.c_str(), why.c_str());
        w.begin_object().field("problem", describe(p)).field("policy", e.name).field("skipped", why).end_object();
        continue;
      }
      try {  // a policy need not implement every (op, dtype): say so instead of failing
        std::vector<host_tensor> probe = allocate(p);
        e.execute(p, probe);
      } catch (const unsupported_error& x) {
        if (!a.has("json")) std::printf("%-34s %-9s   not implemented: %s\n", describe(p).c_str(), e.name.c_str(), x.what());
        w.begin_object().field("problem", describe(p)).field("policy", e.name).field("skipped", x.what()).end_object();
        continue;
      }
      const report r = validate(p, e.execute);
      const timing t = time_policy(e, p, allocate(p), quick ? 2 : 5);
      if (e.name == "eigen") eigen_s = t.median_s;
      double tp = 0;
      std::string unit;
      throughput(p, t.median_s, &tp, &unit);
      all_ok = all_ok && r.all_passed;
      const double speedup = eigen_s > 0 ? eigen_s / t.median_s : 0;
      if (!a.has("json"))
        std::printf("%-34s %-9s %10.3f %11.2f %-7s %8.2fx %10.2g %5d/%d%s\n", describe(p).c_str(), e.name.c_str(),
                    t.median_s * 1e3, tp, unit.c_str(), speedup, r.max_rel_err, r.num_passed, r.num_total,
                    r.all_passed ? "" : "  FAILED");
      w.begin_object().field("problem", describe(p)).field("policy", e.name).field("detail", e.detail);
      w.field("median_ms", t.median_s * 1e3).field("throughput", tp).field("unit", unit).field("speedup_vs_eigen", speedup);
      w.field("max_rel_err", r.max_rel_err).field("cases_passed", r.num_passed).field("cases_total", r.num_total);
      w.field("validated", r.all_passed).end_object();
    }
  }
  w.end_array().field("all_validated", all_ok).end_object();
  if (a.has("json")) std::cout << w.str() << "\n";
  else std::cout << "\n" << (all_ok ? "all results validated against Eigen" : "SOME RESULTS FAILED VALIDATION") << "\n";
  return all_ok ? ok : failed;
}

}  // namespace kforge::tool
