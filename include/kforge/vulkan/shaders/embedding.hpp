// kforge/vulkan/shaders/embedding.hpp — embedding lookup, and the check of
// ids in device tensors.
//
// Tiling: one output element per invocation, grid-stride loop over a 2-D
// grid of workgroups; bounds by the loop (q < n·D). Element q = (i, c) reads
// ids[i] and table[ids[i], c]: neighbouring invocations read neighbouring
// columns of one row, so table loads and out stores coalesce (KF_VEC, where
// D % 4 == 0: four-element vectors, four per invocation, so more bytes are in
// flight; 0.68 TB/s for llama3's 2048 × 4096 f16 rows otherwise). An id outside
// [0, V) is never used as a row: its output row is written as zeros. For ids
// in device tensors, which the host has not checked, embedding_check (one
// workgroup) finds the lowest position of a bad id — each invocation the
// first in its strided share, then the workgroup's minimum — and writes it
// to status[0] (0xffffffff: none) and its id to status[1], for the host's
// message. It uses no atomics: a device-scope atomic would need
// vulkanMemoryModelDeviceScope wherever kforge enables the Vulkan memory
// model. The lookup kernel follows the generation contract (bindings table,
// ids, out; push V, D, n), and its contract form is that kernel.
#pragma once

#include "kforge/ops/embedding_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* embedding = R"glsl(
#if KF_VEC
// D % 4 == 0: four elements moved as their bits (EV: uvec2 for 16-bit types, uvec4 for f32), 4 per
// invocation at stride WG (pc.D counts them here).
#if KF_F16 || KF_BF16
#define EV uvec2
#else
#define EV uvec4
#endif
layout(std430, set = 0, binding = 0) readonly buffer BufTable { EV table_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufIds { int ids_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufOut { EV out_[]; };
layout(push_constant) uniform Push { uint V, D, n; } pc;

void main() {
  uint WG = gl_WorkGroupSize.x, total = pc.n * pc.D;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG * 4u;
  for (uint q0 = kf_group_id() * WG * 4u + gl_LocalInvocationID.x; q0 < total; q0 += stride) {
    EV v[4];
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      uint q = q0 + u * WG;
      if (q < total) {
        uint i = q / pc.D, c = q - i * pc.D;
        int id = ids_[i];
        v[u] = id < 0 || uint(id) >= pc.V ? EV(0) : table_[uint(id) * pc.D + c];
      }
    }
    [[unroll]] for (uint u = 0; u < 4; ++u)
      if (q0 + u * WG < total) out_[q0 + u * WG] = v[u];
  }
}
#else
layout(std430, set = 0, binding = 0) readonly buffer BufTable { T table_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufIds { int ids_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufOut { T out_[]; };
layout(push_constant) uniform Push { uint V, D, n; } pc;

void main() {
  uint total = pc.n * pc.D;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint q = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; q < total; q += stride) {
    uint i = q / pc.D, c = q % pc.D;
    int id = ids_[i];
    if (id < 0 || uint(id) >= pc.V) out_[q] = kf_st(0.0);
    else out_[q] = table_[uint(id) * pc.D + c];
  }
}
#endif
)glsl";

/// One workgroup: status[0] = the lowest position of an id outside [0, V)
/// (0xffffffff: none), status[1] = that id.
inline constexpr const char* embedding_check = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufIds { int ids_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufStatus { uint status_[]; };
layout(push_constant) uniform Push { uint V, n; } pc;
shared uint ec_first[gl_WorkGroupSize.x];  // each subgroup's lowest bad position

void main() {
  uint first = 0xffffffffu;
  for (uint i = gl_LocalInvocationID.x; i < pc.n; i += gl_WorkGroupSize.x) {
    int id = ids_[i];
    if (id < 0 || uint(id) >= pc.V) {
      first = i;
      break;
    }
  }
  first = subgroupMin(first);
  if (subgroupElect()) ec_first[gl_SubgroupID] = first;
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    for (uint s = 0u; s < gl_NumSubgroups; ++s) first = min(first, ec_first[s]);
    status_[0] = first;
    status_[1] = first != 0xffffffffu ? uint(ids_[first]) : 0u;
  }
}
)glsl";

template <>
struct contract_form<embedding_traits> {
  static contract_kernel kernel(const problem&, const template_knobs& k) { return {embedding, {}, k.wg}; }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "next_row", "each id reads the row after its own", "table_[uint(id) * pc.D + c]",
         "table_[(uint(id) + 1u) % pc.V * pc.D + c]"},
        {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are written",
         "q < total; q += stride)", "q < total / gl_WorkGroupSize.x * gl_WorkGroupSize.x; q += stride)"},
        {"wrong_index", "transposed_table", "the table is read as [D, V]", "table_[uint(id) * pc.D + c]",
         "table_[c * pc.V + uint(id)]"},
        {"dropped_scale", "row_of_position", "the row of the id's position is read, not the id's",
         "table_[uint(id) * pc.D + c]", "table_[i % pc.V * pc.D + c]"},
        {"partial_output", "first_id_only", "only the first id's row is written", "uint total = pc.n * pc.D;",
         "uint total = pc.D;"},
        {"read_past_end", "dense_stride_V", "rows are read V elements apart", "table_[uint(id) * pc.D + c]",
         "table_[min(uint(id) * pc.V + c, pc.V * pc.D - 1u)]"},
        // Issue 46's classes: a bad id read through a clamp; a copy that
        // "cleans" tiny values (loses -0 and subnormals).
        {"signed_specials", "clamps_bad_id", "an id outside [0, V) reads the nearest row instead of writing zeros",
         "if (id < 0 || uint(id) >= pc.V) out_[q] = kf_st(0.0);",
         "if (id < 0 || uint(id) >= pc.V) out_[q] = table_[uint(clamp(id, 0, int(pc.V) - 1)) * pc.D + c];"},
        {"subnormal", "flushes_tiny_values", "the row is copied with 0 for |x| < 1.2e-38 (FLT_MIN: a subnormal constant would be flushed itself on a flushing device)",
         "else out_[q] = table_[uint(id) * pc.D + c];",
         "else out_[q] = abs(kf_ld(table_[uint(id) * pc.D + c])) < 1.2e-38 ? kf_st(0.0) : table_[uint(id) * pc.D + c];"},
    };
  }
};

}  // namespace kforge::vulkan::shaders
