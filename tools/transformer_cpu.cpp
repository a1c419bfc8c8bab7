// tools/transformer_cpu.cpp — `kforge transformer` on the CPU policies
// (eigen, blocked, threaded, autotune): the model's host session under each,
// in each dtype, verified against the Eigen reference and timed.
#include <thread>

#include <kforge/cpu/cpu.hpp>

#include "cli.hpp"
#include "transformer.hpp"

#if defined(KFORGE_TOOL_HAS_TUNE)
#include <kforge/tune.hpp>
#endif

namespace kforge::tool {
namespace {

#if defined(KFORGE_TOOL_HAS_TUNE)
/// What policy::autotune resolved each of the program's gemm shapes to, as
/// `kforge run --policy autotune` reports it: the candidate and whether it
/// came from the tuning cache.
std::string autotune_gemms(const transformer_request& r) {
  const model::config& c = r.cfg;
  std::string s;
  for (index_t t : {r.prefill, index_t{1}}) {
    const index_t shapes[][3] = {{t, c.q_dim(), c.hidden}, {t, c.kv_dim(), c.hidden}, {t, c.hidden, c.q_dim()},
                                 {t, c.up_dim(), c.hidden}, {t, c.hidden, c.mlp},     {1, c.vocab, c.hidden}};
    for (const auto& g : shapes) {
      tune::resolve_gemm(r.type, g[0], g[1], g[2]);
      const tune::resolution res = tune::last_resolution();
      const std::string item = "gemm " + std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) + ": " +
                               res.candidate + " (" + res.source + ")";
      if (s.find(item) == std::string::npos) s += (s.empty() ? "" : "; ") + item;
    }
  }
  return s + "; other ops: threaded " + cpu::microkernel_name<policy::threaded<>>();
}
#endif

template <class P>
std::string knobs_of(const transformer_request& r) {
  (void)r;
  if constexpr (std::is_same_v<P, policy::eigen>)
    return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
           std::to_string(EIGEN_MINOR_VERSION) + " (reference)";
#if defined(KFORGE_TOOL_HAS_TUNE)
  else if constexpr (std::is_same_v<P, policy::autotune>)
    return autotune_gemms(r);
#endif
  else
    return cpu::microkernel_name<P>();
}

template <class P, class T>
transformer_result run_cpu(const transformer_request& r) {
  transformer_result out;
  out.policy = r.policy;
  out.knobs = knobs_of<P>(r);
  out.device = "CPU: " + std::string(cpu::isa_name()) + ", " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads";
  out.timing = "wall";
  const auto w = make_weights<T>(r);
  if (r.verify) {
    const index_t vd = std::min(r.decode, r.verify_decode);
    model::host_session<T, P> vs(r.cfg, w, r.prefill + vd);
    out.v = model::verify<T>(r.cfg, w, vs, r.prefill, vd, r.policy + " [" + out.knobs + "]");
    out.verified = true;
  }
  model::host_session<T, P> s(r.cfg, w, r.prefill + r.decode);
  time_session<T>(s, r.cfg, r, out);
  out.bytes = model::bytes_of(w, sizeof(T));
#if defined(KFORGE_TOOL_HAS_TUNE)
  // What decode's weight streaming compares with: the copy bandwidth kforge's
  // roofline probe measures (cached in the cache dir, like `kforge bench --roofline`).
  const tune::roofline_peaks peaks = tune::cpu_roofline(tune::default_cache_dir(), r.remeasure_bandwidth);
  out.machine_Bps = peaks.bandwidth_Bps;
  out.bandwidth_method = peaks.method + ", measured " + peaks.measured_at;
#endif
  return out;
}

template <class P>
transformer_result by_type(const transformer_request& r) {
  switch (r.type) {
    case dtype::f16: return run_cpu<P, half>(r);
    case dtype::bf16: return run_cpu<P, bfloat16>(r);
    default: return run_cpu<P, float>(r);
  }
}

}  // namespace

transformer_result run_transformer_cpu(const transformer_request& r) {
  if (r.policy == "eigen") return by_type<policy::eigen>(r);
  if (r.policy == "blocked") return by_type<policy::blocked<>>(r);
  if (r.policy == "threaded") return by_type<policy::threaded<>>(r);
  if (r.policy == "autotune" || r.policy == "auto") {
#if defined(KFORGE_TOOL_HAS_TUNE)
    return by_type<policy::autotune>(r);
#else
    throw usage_error("--policy autotune needs kforge::tune (simdjson), and this kforge was built without it");
#endif
  }
  throw usage_error("unknown policy '" + r.policy + "' for transformer (eigen, blocked, threaded, autotune, vulkan)");
}

}  // namespace kforge::tool
