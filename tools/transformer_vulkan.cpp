// tools/transformer_vulkan.cpp — `kforge transformer --policy vulkan`: the
// model's Vulkan session (weights and cache on the device, one stream per
// step), verified against the Eigen reference and timed with GPU timestamps
// per stage; or an environment error when kforge was built without Vulkan.
#include "cli.hpp"
#include "transformer.hpp"

#if defined(KFORGE_HAS_VULKAN)
#include <kforge/model/vulkan.hpp>
#endif

namespace kforge::tool {

#if defined(KFORGE_HAS_VULKAN)
namespace {

template <class T>
transformer_result run_vulkan(const transformer_request& r) {
  vulkan::context& ctx = vulkan::default_context();
  transformer_result out;
  out.policy = r.policy;
  out.device = ctx.info().name;
  out.knobs = "policy::vulkan<> (gemm configs and attention kernels per stage: chosen per shape)";
  out.timing = ctx.info().timestamps ? "gpu" : "none";
  const auto w = make_weights<T>(r);
  if (r.verify) {
    const index_t vd = std::min(r.decode, r.verify_decode);
    model::vulkan_session<T> vs(ctx, r.cfg, w, r.prefill + vd);
    out.v = model::verify<T>(r.cfg, w, vs, r.prefill, vd, r.policy + " on " + ctx.info().name);
    out.verified = true;
  }
  model::vulkan_session<T> s(ctx, r.cfg, w, r.prefill + r.decode);
  s.submit_in_parts(r.in_parts);
  time_session<T>(s, r.cfg, r, out);
  out.bytes = model::bytes_of(w, sizeof(typename model::vulkan_session<T>::D));
  return out;
}

}  // namespace

transformer_result run_transformer_vulkan(const transformer_request& r) {
  if (const std::string why = vulkan_problem(); !why.empty()) throw environment_error("policy vulkan is unavailable: " + why);
  switch (r.type) {
    case dtype::f16: return run_vulkan<half>(r);
    case dtype::bf16: return run_vulkan<bfloat16>(r);
    default: return run_vulkan<float>(r);
  }
}
#else
transformer_result run_transformer_vulkan(const transformer_request&) {
  throw environment_error("policy vulkan is unavailable: " + vulkan_problem());
}
#endif

}  // namespace kforge::tool
