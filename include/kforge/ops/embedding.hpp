// kforge/ops/embedding.hpp — embedding lookup: rows of a table gathered by id.
//
//   table [V, D] (T), ids [...] (std::int32_t, any shape) → out [..., D] (T):
//   out[i, :] = table[ids[i], :]
//
// A copy: exact in every dtype (NaN and Inf rows copied as they are). The
// ids are an operand of their own element type (op_operand_t: std::int32_t,
// as torch.nn.functional.embedding takes int32 or int64 ids).
//
// Ids out of range. Every id must be in [0, V); one that is not throws
// argument_error naming the op, the id, its position in ids (row-major) and
// V. Where the backend sees the ids — the CPU policies, and policy::vulkan
// called with host views — they are checked before anything runs, so nothing
// is written. Ids in a vulkan::device_tensor are checked on the device: the
// kernel never reads outside the table (a bad id's row is written as zeros),
// records the lowest position of a bad id, and the check after the
// submission throws the same argument_error — from run() on device tensors
// right after the call, and from stream::wait() for a call recorded into a
// stream with vulkan::record.
//
// A quantized table (core/quant.hpp's quantized_matrix, V rows of D, or a
// vulkan::quantized_tensor): out[i, :] = T(dequantize_row(table, ids[i])),
// each value as the format defines it, rounded once to T — what a GGUF
// model's token_embd.weight in q8_0/q4_0 gives; the same id checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "kforge/core/dispatch.hpp"
#include "kforge/core/quant.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct embedding {
  using value_type = T;
  using operand_types = std::tuple<T, std::int32_t, T>;  ///< table, ids, out
  static constexpr std::string_view name = "embedding";
  static constexpr int arity = 2;
};

}  // namespace op

/// Checked operands of one embedding call. Position i (row-major in ids) is
/// read at element_offset(ids, i) and written to row i of out (row_offset).
template <class T>
struct embedding_args {
  tensor_view<const T> table;           ///< [V, D]
  tensor_view<const std::int32_t> ids;  ///< [...]
  tensor_view<T> out;                   ///< [..., D]
  index_t v = 0, d = 0, n = 0;          ///< n = ids.numel()
};

/// The message of an id out of range (every backend throws the same words).
inline std::string embedding_bad_id(std::int64_t id, index_t position, const shape& ids, index_t v) {
  return "kforge::embedding: id " + std::to_string(id) + " at position " + std::to_string(position) + " of ids " +
         ids.str() + " is out of range for a table of V = " + std::to_string(v) + " rows (ids must be in [0, " +
         std::to_string(v) + "))";
}

/// Checked operands of an embedding call whose table is a quantized matrix
/// (core/quant.hpp: V rows of D, each quantized along D as a GGUF
/// token_embd.weight is): out[i, :] = T(dequantize_row(table, ids[i])).
template <class T>
struct embedding_qargs {
  const quantized_matrix* table = nullptr;
  tensor_view<const std::int32_t> ids;
  tensor_view<T> out;
  index_t v = 0, d = 0, n = 0;
};

namespace detail {
/// Shape checks shared by the dense and the quantized table: ids' rank, out = ids.dims + [D].
inline void check_embedding_shapes(const shape& ids, index_t d, const shape& out) {
  if (ids.rank() >= max_rank)
    throw shape_error("kforge::embedding: ids have shape " + ids.str() + ", rank at most " + std::to_string(max_rank - 1) +
                      " (out adds D)");
  shape want = ids;
  want.push_back(d);
  expect_shape("embedding", "out", want, out);
}
/// Host ids are checked before anything runs; device tensors' (data == nullptr) on the device.
inline void check_host_ids(const tensor_view<const std::int32_t>& ids, index_t v) {
  if (!ids.data) return;
  for (index_t i = 0, n = ids.numel(); i < n; ++i) {
    const std::int32_t id = ids.data[element_offset(ids, i)];
    if (id < 0 || id >= v) throw argument_error(embedding_bad_id(id, i, ids.dims, v));
  }
}

template <class Derived, class Op>
struct embedding_entry;
template <class Derived, class T>
struct embedding_entry<Derived, op::embedding<T>> {
  static constexpr bool available = true;
  static void run(const op::embedding<T>& op, tensor_view<const T> table, tensor_view<const std::int32_t> ids,
                  tensor_view<T> out) {
    if (table.rank() != 2)
      throw shape_error("kforge::embedding: table has shape " + table.dims.str() + ", expected [V, D]");
    check_embedding_shapes(ids.dims, table.size(1), out.dims);
    const index_t v = table.size(0), n = ids.numel();
    check_host_ids(ids, v);
    Derived::compute(op, embedding_args<T>{table, ids, out, v, table.size(1), n});
  }
  /// A quantized table: Derived::compute_quantized(op, embedding_qargs).
  static void run(const op::embedding<T>& op, const quantized_matrix& table, tensor_view<const std::int32_t> ids,
                  tensor_view<T> out) {
    if (table.rows() == 0) throw argument_error("kforge::embedding: the quantized table is empty (a default-constructed quantized_matrix)");
    check_embedding_shapes(ids.dims, table.cols(), out.dims);
    check_host_ids(ids, table.rows());
    Derived::compute_quantized(op, embedding_qargs<T>{&table, ids, out, table.rows(), table.cols(), ids.numel()});
  }
};
}  // namespace detail

/// A copy: exact in every dtype (NaN stays NaN).
inline tolerance embedding_tolerance() { return {0, 0, 0}; }

}  // namespace kforge

KFORGE_REFUSE(embedding, (class T), (T))
