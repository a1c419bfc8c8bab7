// kforge/validate/problem.hpp — kforge::problem (core/problem.hpp) read
// through the op registry: the SHAPE syntax, the operands, the work and a
// description of any problem, whatever its op. execute.hpp turns a problem
// back into a typed run<Policy>(op, ...) call.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
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
  // A problem is work to validate, time, tune or generate a kernel for: the
  // typed ops take empty tensors (docs/OPS.md "Empty tensors"), but a
  // problem with one has nothing to compare or time, so it is refused by name.
  for (const operand_spec& o : ops)
    for (int d = 0; d < o.dims.rank(); ++d)
      if (o.dims[d] <= 0)
        throw shape_error("kforge: " + p.op + "'s " + o.name + " has shape " + o.dims.str() + ": an extent of " +
                          std::to_string(o.dims[d]) +
                          " (a problem needs every extent >= 1: an empty tensor leaves nothing to validate, time or tune)");
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

// ---- memory: what a problem needs, refused before anything is allocated ----

/// Bytes of p's operands, each at its element type (or at `as`) over the span
/// of its strides: what allocate(p) takes. In double, so no shape overflows it.
inline double tensor_bytes(const problem& p, std::optional<dtype> as = std::nullopt) {
  double b = 0;
  for (const operand_spec& o : operands(p)) {
    // As host_tensor sizes its storage: 1 + sum of (dim - 1) * stride; nothing when a dim is 0.
    double span = 1;
    for (int i = 0; i < o.dims.rank(); ++i) {
      if (o.dims[i] == 0) span = 0;
      if (span > 0) span += static_cast<double>(o.dims[i] - 1) * static_cast<double>(o.strides[i]);
    }
    const dtype t = as && is_float(operand_type(p, o)) ? *as : operand_type(p, o);
    b += span * static_cast<double>(size_of(t));
  }
  return b;
}

/// Bytes the validation suite (suite.hpp) holds at once for one case of p:
/// the reference's operands, the candidate's, the inputs as given (3 copies),
/// the inputs' magnitudes in f32 for the error scale, and per output element
/// its offset and scale (16 bytes).
inline double validation_bytes(const problem& p) {
  double out_elems = 0;
  for (const operand_spec& o : operands(p))
    if (o.is_output) {
      double n = 1;
      for (int i = 0; i < o.dims.rank(); ++i) n *= static_cast<double>(o.dims[i]);
      out_elems += n;
    }
  return 3 * tensor_bytes(p) + tensor_bytes(p, dtype::f32) + 16 * out_elems;
}

/// A memory limit and where it comes from ("half of available RAM").
struct memory_limit {
  double bytes = 0;
  std::string what;
};

/// Half of the host's available memory (MemAvailable in /proc/meminfo, else
/// the free physical pages): what one kforge command may hold, so that a
/// problem is refused rather than swapped into or killed half-way.
inline memory_limit host_memory_limit() {
  double avail = 0;
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
        avail = static_cast<double>(kb) * 1024;
        break;
      }
    std::fclose(f);
  }
  if (avail <= 0) avail = static_cast<double>(::sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  return {avail / 2, "half of available RAM"};
}

/// "160.0 GB", "3.2 MB"
inline std::string bytes_text(double b) {
  char buf[32];
  if (b >= 1e9) std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  else if (b >= 1e6) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  return buf;
}

/// Throws memory_error when `bytes` (what a command would hold for p, said
/// by `what`, e.g. "validation: reference, candidate and inputs ...") is more
/// than `limit`: one line naming the problem, the bytes and the limit.
inline void require_memory(const problem& p, double bytes, std::string_view what, const memory_limit& limit) {
  if (bytes <= limit.bytes) return;
  throw memory_error("kforge: " + describe(p) + " needs " + bytes_text(bytes) + " (" + std::string(what) + "; its tensors are " +
                     bytes_text(tensor_bytes(p)) + "), more than the " + bytes_text(limit.bytes) + " limit (" + limit.what + ")");
}

}  // namespace kforge
