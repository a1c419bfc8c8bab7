// tools/backends_vulkan.cpp — the Vulkan policy for the kforge tool (host-view
// calls, and its kernels timed on device-resident tensors for bench and
// demo), or nothing when kforge was built without kforge::vulkan.
#include "registry.hpp"

#if defined(KFORGE_HAS_VULKAN)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <variant>

#include <kforge/validate.hpp>
#include <kforge/vulkan.hpp>
#include <kforge/vulkan/problem.hpp>
#endif

namespace kforge::tool {

#if defined(KFORGE_HAS_VULKAN)
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Host view of ts[i] as the dtype it holds, for an upload or a download.
template <class F>
void with_view(host_tensor& t, F&& f) {
  switch (t.type) {
    case dtype::f32: return f(t.view<float>());
    case dtype::f16: return f(t.view<half>());
    case dtype::bf16: return f(t.view<bfloat16>());
    case dtype::i32: return f(t.view<std::int32_t>());
    case dtype::f64: throw unsupported_error("kforge: f64 is not a kernel dtype");
  }
}

/// The device-resident timing of resident_timing's comment: each operand a
/// device tensor of its own element type as the device stores it
/// (vulkan/problem.hpp, vulkan::device_dtype). Calls are recorded in batches
/// that fit the stream's timestamp queries; each batch is submitted twice and
/// the second submission is timed (the first warms pipelines, caches and
/// clocks), as bench/vk_models.cpp does.
resident_timing time_resident(const problem& p, const std::vector<host_tensor>& given, int reps) {
  vulkan::context& ctx = vulkan::default_context();
  const auto specs = operands(p);
  std::vector<host_tensor> ts = given;
  std::vector<vulkan::device_operand> dev = vulkan::make_operands(ctx, p);
  resident_timing r;
  auto upload_inputs = [&] {
    vulkan::stream s(ctx);
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!specs[i].is_output || specs[i].also_input)
        with_view(ts[i], [&](auto v) { std::visit([&](auto& d) { d.record_upload(s, v); }, dev[i]); });
    s.run();
  };
  upload_inputs();  // first upload: allocates staging and wakes the queue; the timed one follows
  auto t0 = std::chrono::steady_clock::now();
  upload_inputs();
  r.upload_s = since(t0);

  vulkan::stream s(ctx);
  s.time_dispatches(true);
  vulkan::record_problem(s, p, dev);
  const std::size_t per_call = std::max<std::size_t>(1, s.dispatch_count() + s.copy_count());
  r.dispatches = static_cast<int>(per_call);
  const int batch = std::max(1, static_cast<int>(vulkan::stream::max_timed / per_call));
  std::vector<double> kernel, cpu;
  r.gpu_timestamps = true;
  while (static_cast<int>(kernel.size()) < reps) {
    const int n = std::min(batch, reps - static_cast<int>(kernel.size()));
    s.reset();
    for (int i = 0; i < n; ++i) vulkan::record_problem(s, p, dev);
    s.run();  // warm-up submission of the same commands
    const double c0 = process_cpu_seconds();
    t0 = std::chrono::steady_clock::now();
    s.run();
    const double wall = since(t0), cpu_per_call = (process_cpu_seconds() - c0) / n;
    const auto t = s.timings();
    for (int call = 0; call < n; ++call) {
      double sum = 0;
      for (std::size_t d = 0; d < per_call; ++d) {
        const std::optional<double> ms = t[static_cast<std::size_t>(call) * per_call + d].ms;
        if (!ms) r.gpu_timestamps = false;
        sum += ms.value_or(0) * 1e-3;
      }
      kernel.push_back(sum);
      cpu.push_back(cpu_per_call);
    }
    if (!r.gpu_timestamps)  // no timestamps on this device: wall time per call of the timed submission
      std::fill(kernel.end() - n, kernel.end(), wall / n);
  }
  std::sort(kernel.begin(), kernel.end());
  std::sort(cpu.begin(), cpu.end());
  r.kernel_s = kernel[kernel.size() / 2];
  r.cpu_s = cpu[cpu.size() / 2];
  r.samples = static_cast<int>(kernel.size());

  // The outputs of one call from the initial operands, against the reference.
  if (specs.back().also_input) upload_inputs();
  s.reset();
  vulkan::record_problem(s, p, dev);
  s.run();
  t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].is_output) with_view(ts[i], [&](auto v) { std::visit([&](auto& d) { d.download(v); }, dev[i]); });
  r.download_s = since(t0);
  std::vector<host_tensor> ref = given;
  execute<policy::eigen>(p, ref);
  const std::vector<host_tensor> inputs(given.begin(), given.end());
  const case_result c = compare_all_outputs(p, ts, ref, inputs);
  r.within_tolerance = c.passed;
  r.max_rel_err = c.max_rel_err;
  return r;
}

}  // namespace

std::string vulkan_problem() {
  try {
    (void)vulkan::default_context();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}
void check_env_vulkan() { (void)vulkan::context::with_env({}); }
void register_vulkan(std::vector<policy_entry>& out) {
  policy_entry e;
  e.name = "vulkan";
  e.execute = &execute<policy::vulkan<>>;
  e.unavailable = [] { return vulkan_problem(); };
  e.device_seconds = [] { return vulkan::last_call_seconds(); };  // the kernels' GPU time, no transfers
  e.time_resident = &time_resident;
  e.device_memory = [] {
    std::uint64_t heap = 0;
    for (const auto& h : vulkan::default_context().info().heaps)
      if (h.device_local) heap = std::max(heap, h.size);
    return memory_limit{static_cast<double>(heap) / 2, "half of the device's largest device-local heap"};
  };
  try {
    e.detail = vulkan::default_context().info().name;
  } catch (const std::exception&) {
    e.detail = "no device";
  }
  out.push_back(std::move(e));
}
bool device_failure(const std::exception& e) {
  return dynamic_cast<const vulkan::device_lost*>(&e) != nullptr || dynamic_cast<const vulkan::out_of_memory*>(&e) != nullptr;
}
std::string vulkan_text() { return vulkan::devices_text(); }
std::string vulkan_json() { return vulkan::devices_json(); }
#else
std::string vulkan_problem() { return "kforge was built without Vulkan (kforge::vulkan)"; }
void register_vulkan(std::vector<policy_entry>&) {}
void check_env_vulkan() {}
bool device_failure(const std::exception&) { return false; }
std::string vulkan_text() { return ""; }
std::string vulkan_json() { return ""; }
#endif

}  // namespace kforge::tool
