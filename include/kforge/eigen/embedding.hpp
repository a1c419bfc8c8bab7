// kforge/eigen/embedding.hpp — the reference embedding lookup: row ids[i] of
// the table read as floats into row i of the output (only the rows named:
// a 128k-row table is not copied whole), scattered back (a float holds every
// f16/bf16 value exactly).
#pragma once

#include "kforge/eigen/common.hpp"
#include "kforge/ops/embedding.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::embedding<T>> : embedding_entry<impl<policy::eigen, op::embedding<T>>, op::embedding<T>> {
  static void compute(const op::embedding<T>&, const embedding_args<T>& g) {
    Eigen::ArrayXf out(g.n * g.d);
    eigen::for_each_offset(g.ids.dims, g.ids.strides, [&](index_t i, index_t off) {
      const T* row = g.table.data + static_cast<index_t>(g.ids.data[off]) * g.table.stride(0);
      for (index_t j = 0; j < g.d; ++j) out[i * g.d + j] = static_cast<float>(row[j * g.table.stride(1)]);
    });
    eigen::scatter(out, g.out);
  }
  /// The meaning of a quantized table: each named row dequantized as its format defines it.
  static void compute_quantized(const op::embedding<T>&, const embedding_qargs<T>& g) {
    Eigen::ArrayXf out(g.n * g.d);
    eigen::for_each_offset(g.ids.dims, g.ids.strides, [&](index_t i, index_t off) {
      g.table->dequantize_row(static_cast<index_t>(g.ids.data[off]), out.data() + i * g.d);
    });
    eigen::scatter(out, g.out);
  }
};
}  // namespace kforge::detail
