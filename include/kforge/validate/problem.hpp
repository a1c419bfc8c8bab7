// kforge/validate/problem.hpp — kforge::problem (core/problem.hpp) read
// through the op registry: the SHAPE syntax, the operands, the work and a
// description of any problem, whatever its op. execute.hpp turns a problem
// back into a typed run<Policy>(op, ...) call.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/problem.hpp"
#include "kforge/ops/registry.hpp"

namespace kforge {

/// Sets p.dims and p.dims2 from a SHAPE string ("DIMS[,DIMS2]") for p.op,
/// checking the ranks its family needs.
inline void set_shape(problem& p, std::string_view shape_text) {
  const family_table& f = *find_op(p.op).family;
  const std::size_t comma = shape_text.find(',');
  p.dims = parse_dims(shape_text.substr(0, comma));
  p.dims2 = comma == std::string_view::npos ? shape{} : parse_dims(shape_text.substr(comma + 1));
  if (!f.shape_ok(p))
    throw argument_error("kforge: " + std::string(p.op) + " takes SHAPE " + std::string(f.shape_syntax) + ", got '" +
                         std::string(shape_text) + "'");
}

/// The operands of a problem: inputs in call order, then the outputs (one,
/// the last, unless the family marks several: they must be the trailing ones).
inline std::vector<operand_spec> operands(const problem& p) {
  std::vector<operand_spec> ops = family_of(p).operands(p);
  if (std::none_of(ops.begin(), ops.end(), [](const operand_spec& o) { return o.is_output; })) ops.back().is_output = true;
  for (std::size_t i = 1; i < ops.size(); ++i)
    if (ops[i - 1].is_output && !ops[i].is_output)
      throw error("kforge: internal: " + p.op + "'s operand " + ops[i].name + " is an input listed after an output");
  return ops;
}

/// How many of p's operands are outputs (the trailing ones).
inline std::size_t output_count(const std::vector<operand_spec>& specs) {
  return static_cast<std::size_t>(std::count_if(specs.begin(), specs.end(), [](const operand_spec& o) { return o.is_output; }));
}

/// Allocates host tensors for every operand of p (contents zero), each of
/// its own element type.
inline std::vector<host_tensor> allocate(const problem& p) {
  std::vector<host_tensor> ts;
  for (const auto& o : operands(p)) ts.emplace_back(operand_type(p, o), o.dims, o.strides);
  return ts;
}

/// Floating-point operations of one call (multiply-add = 2), for GFLOP/s.
inline double flops(const problem& p) { return family_of(p).flops(p); }

/// Bytes a call must move at least once (by default each operand read or
/// written once; embedding reads only the rows it gathers).
inline double min_bytes(const problem& p) { return family_of(p).bytes(p); }

/// True when the op is usually limited by compute rather than memory.
inline bool compute_bound(const problem& p) { return family_of(p).compute_bound; }

/// "gemm 64x48x40 f32 epilogue=bias_relu" — for messages and reports.
inline std::string describe(const problem& p) {
  std::string s = p.op + " " + p.dims.str();
  if (p.dims2.rank()) s += "," + p.dims2.str();
  return s + " " + std::string(to_string(p.type)) + family_of(p).describe(p);
}

}  // namespace kforge
