// kforge/vulkan/shaders/kv_append.hpp — KV-cache append, in place.
//
// Tiling: one copied element per invocation, grid-stride loop over a 2-D
// grid of workgroups; bounds by the loop (q < B·N·HD). Element q of x
// [B, N·HD] goes to cache row b at element (pos·HD + q mod T·HD): a batch's
// new rows are contiguous in both, so loads and stores coalesce. Only those
// elements are written; the rest of the cache is not touched. The kernel
// follows the generation contract as it is (bindings x, cache; push
// constants B, N, HD, Lmax, pos; N is T, the new rows: T is the prelude's
// element type), so its contract form adds nothing.
#pragma once

#include "kforge/ops/kv_append_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* kv_append = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufC { T cache_[]; };
layout(push_constant) uniform Push { uint B, N, HD, Lmax, pos; } pc;

void main() {
  uint per_batch = pc.N * pc.HD, n = pc.B * per_batch;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint q = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; q < n; q += stride) {
    uint b = q / per_batch, e = q % per_batch;
    cache_[(b * pc.Lmax + pc.pos) * pc.HD + e] = x_[q];
  }
}
)glsl";

template <>
struct contract_form<kv_append_traits> {
  static contract_kernel kernel(const problem&, const template_knobs& k) { return {kv_append, {}, k.wg}; }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "row_late", "the new rows land one row late", "(b * pc.Lmax + pc.pos) * pc.HD + e]",
         "(b * pc.Lmax + pc.pos + 1u) * pc.HD + e]"},
        {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are copied",
         "q < n; q += stride)", "q < n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; q += stride)"},
        {"dropped_scale", "no_pos", "pos is ignored (rows written from row 0)", "(b * pc.Lmax + pc.pos) * pc.HD + e]",
         "(b * pc.Lmax) * pc.HD + e]", [](const problem& p) { return kv_append_traits::pos(p) != 0; }},
        {"read_past_end", "batch_stride_T", "batches are placed T rows apart instead of Lmax",
         "(b * pc.Lmax + pc.pos) * pc.HD + e]", "(b * pc.N + pc.pos) * pc.HD + e]"},
        {"partial_output", "first_batch_only", "only batch 0 is copied", "uint per_batch = pc.N * pc.HD, n = pc.B * per_batch;",
         "uint per_batch = pc.N * pc.HD, n = per_batch;"},
        {"wrong_init", "row_reversed", "the new rows are written in reverse order", "uint b = q / per_batch, e = q % per_batch;",
         "uint b = q / per_batch, e = per_batch - pc.HD - (q % per_batch) / pc.HD * pc.HD + q % pc.HD;"},
        // Issue 46's classes: a copy that "cleans" tiny values loses -0 and
        // subnormals. (x + 0.0 would too, but Vulkan lets a compiler fold it
        // to x without SignedZeroInfNanPreserve: lavapipe does.)
        {"subnormal", "flushes_tiny_values", "the copy writes 0 for |x| < 1.2e-38 (FLT_MIN: a subnormal constant would be flushed itself on a flushing device)",
         "cache_[(b * pc.Lmax + pc.pos) * pc.HD + e] = x_[q];",
         "cache_[(b * pc.Lmax + pc.pos) * pc.HD + e] = abs(kf_ld(x_[q])) < 1.2e-38 ? kf_st(0.0) : x_[q];"},
    };
  }
};

}  // namespace kforge::vulkan::shaders
