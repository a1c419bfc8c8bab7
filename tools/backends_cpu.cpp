// tools/backends_cpu.cpp — the CPU policies for the kforge tool: the Eigen
// reference, blocked and threaded.
#include <thread>

#include <kforge/core/json.hpp>
#include <kforge/kforge.hpp>
#include <kforge/validate/execute.hpp>

#include "registry.hpp"

#include <kforge/cpu/cpu.hpp>

namespace kforge::tool {

void check_env_cpu() {
  (void)cpu::default_num_threads();
  (void)cpu::spin_before_sleep();
  (void)cpu::keep_workers_off_caller_cpu();
  (void)cpu::detail::gemm_parallel_min_flops();
}

void register_cpu(std::vector<policy_entry>& out) {
  auto add = [&](std::string name, std::string detail, auto run_fn) {
    policy_entry e;  // named members: the optional ones keep their defaults
    e.name = std::move(name);
    e.detail = std::move(detail);
    e.execute = run_fn;
    out.push_back(std::move(e));
  };
  add("eigen",
      "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
          std::to_string(EIGEN_MINOR_VERSION) + " (reference)",
      &execute<policy::eigen>);
  add("blocked", "micro-kernel " + cpu::microkernel_name<policy::blocked<>>() + ", 1 thread", &execute<policy::blocked<>>);
  add("threaded", "micro-kernel " + cpu::microkernel_name<policy::blocked<>>() + ", thread pool",
      &execute<policy::threaded<>>);
}

namespace {
struct cpu_features {
  std::vector<std::pair<const char*, bool>> flags;
  unsigned cores;
};
cpu_features detect() {
  __builtin_cpu_init();
  return {{{"sse4.2", __builtin_cpu_supports("sse4.2")},
           {"avx", __builtin_cpu_supports("avx")},
           {"avx2", __builtin_cpu_supports("avx2")},
           {"fma", __builtin_cpu_supports("fma")},
           {"avx512f", __builtin_cpu_supports("avx512f")},
           {"avx512bw", __builtin_cpu_supports("avx512bw")},
           {"avx512vl", __builtin_cpu_supports("avx512vl")},
           {"avx512bf16", __builtin_cpu_supports("avx512bf16")},
           {"f16c", __builtin_cpu_supports("f16c")}},
          std::thread::hardware_concurrency()};
}
}  // namespace

std::string cpu_text() {
  const cpu_features f = detect();
  std::string s = "CPU: " + std::to_string(f.cores) + " hardware threads\n  features:";
  for (auto& [name, on] : f.flags)
    if (on) s += std::string(" ") + name;
  s += "\n  compiled for: " + std::string(cpu::isa_name());
  s += "\n  blocked micro-kernel: " + cpu::microkernel_name<policy::blocked<>>();
  return s + "\n";
}

std::string cpu_json() {
  const cpu_features f = detect();
  json_writer w;
  w.begin_object().field("hardware_threads", f.cores).field("compiled_isa", std::string(cpu::isa_name()));
  w.key("features").begin_array();
  for (auto& [name, on] : f.flags)
    if (on) w.value(name);
  w.end_array();
  w.field("microkernel", cpu::microkernel_name<policy::blocked<>>());
  w.end_object();
  return w.str();
}

}  // namespace kforge::tool
