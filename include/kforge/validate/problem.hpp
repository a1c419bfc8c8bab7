// kforge/validate/problem.hpp — kforge::problem (core/problem.hpp) read
// through the op registry: the SHAPE syntax, the operands, the work and a
// description of any problem, whatever its op. execute.hpp turns a problem
// back into a typed run<Policy>(op, ...) call.
#pragma once

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

/// The operands of a problem: inputs in call order, then the output.
inline std::vector<operand_spec> operands(const problem& p) {
  std::vector<operand_spec> ops = family_of(p).operands(p);
  ops.back().is_output = true;
  return ops;
}

/// Allocates host tensors for every operand of p (contents zero).
inline std::vector<host_tensor> allocate(const problem& p) {
  std::vector<host_tensor> ts;
  for (const auto& o : operands(p)) ts.emplace_back(p.type, o.dims, o.strides);
  return ts;
}

/// Floating-point operations of one call (multiply-add = 2), for GFLOP/s.
inline double flops(const problem& p) { return family_of(p).flops(p); }

/// Bytes a call must move at least once (each operand read or written once).
inline double min_bytes(const problem& p) {
  double b = 0;
  for (const auto& o : operands(p)) b += static_cast<double>(o.dims.numel()) * static_cast<double>(size_of(p.type));
  return b;
}

/// True when the op is usually limited by compute rather than memory.
inline bool compute_bound(const problem& p) { return family_of(p).compute_bound; }

/// "gemm 64x48x40 f32 epilogue=bias_relu" — for messages and reports.
inline std::string describe(const problem& p) {
  std::string s = p.op + " " + p.dims.str();
  if (p.dims2.rank()) s += "," + p.dims2.str();
  return s + " " + std::string(to_string(p.type)) + family_of(p).describe(p);
}

}  // namespace kforge
