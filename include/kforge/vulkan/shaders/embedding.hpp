// kforge/vulkan/shaders/embedding.hpp — embedding lookup, and the report of
// ids out of range in device tensors.
//
// Tiling: one output element per invocation, grid-stride loop over a 2-D
// grid of workgroups; bounds by the loop (q < n·D). Element q = (i, c) reads
// ids[i] and table[ids[i], c]: neighbouring invocations read neighbouring
// columns of one row, so table loads and out stores coalesce. An id outside
// [0, V) is never used as a row: its output row is written as zeros, and with
// KF_STATUS 1 (device-tensor ids the host has not checked) the invocation of
// column 0 records its position with atomicMin in status[0] (the host fills
// it with 0xffffffff first); embedding_report then copies that position's id
// into status[1] for the host's message. The kernel follows the generation
// contract with KF_STATUS 0 (bindings table, ids, out; push V, D, n), which
// its contract form uses.
#pragma once

#include "kforge/ops/embedding_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* embedding = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufTable { T table_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufIds { int ids_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufOut { T out_[]; };
#if KF_STATUS
layout(std430, set = 0, binding = 3) buffer BufStatus { uint status_[]; };
#endif
layout(push_constant) uniform Push { uint V, D, n; } pc;

void main() {
  uint total = pc.n * pc.D;
  uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  for (uint q = kf_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; q < total; q += stride) {
    uint i = q / pc.D, c = q % pc.D;
    int id = ids_[i];
    bool bad = id < 0 || uint(id) >= pc.V;
#if KF_STATUS
    if (bad && c == 0u) atomicMin(status_[0], i);
#endif
    if (bad) out_[q] = T(0.0);
    else out_[q] = table_[uint(id) * pc.D + c];
  }
}
)glsl";

/// One invocation: status[1] = ids[status[0]] when a bad id was recorded.
inline constexpr const char* embedding_report = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufIds { int ids_[]; };
layout(std430, set = 0, binding = 1) buffer BufStatus { uint status_[]; };

void main() {
  if (gl_GlobalInvocationID.x == 0u && status_[0] != 0xffffffffu) status_[1] = uint(ids_[status_[0]]);
}
)glsl";

template <>
struct contract_form<embedding_traits> {
  static contract_kernel kernel(const problem&, const template_knobs& k) { return {embedding, {{"KF_STATUS", "0"}}, k.wg}; }
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
    };
  }
};

}  // namespace kforge::vulkan::shaders
