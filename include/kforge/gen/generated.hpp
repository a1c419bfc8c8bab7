// kforge/gen/generated.hpp — policy::generated: run an op with the kernel
// kforge::gen admitted for exactly that problem.
//
//   kforge::run<kforge::policy::generated>(op::gemm<float>{}, A, B, C);
//
// At run time the call is described as a problem (op, dtype, shapes,
// parameters), the generation cache is searched for the fastest accepted
// record of that problem (record.hpp lookup), and its kernel runs in this
// process on the default Vulkan context through the same guarded runner the
// gate used (admitted kernels are trusted; the guards stay on anyway). No
// accepted record is an unsupported_error that says which `kforge gen` to run.
// Operands may have any strides; they are packed to the dense row-major
// layout the contract uses.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "kforge/eigen/common.hpp"
#include "kforge/gen/generate.hpp"
#include "kforge/gen/runner.hpp"

namespace kforge::gen {

/// Runs p on host tensors with its accepted generated kernel.
inline void execute_generated(const problem& p, std::vector<host_tensor>& ts) {
  const auto rec = lookup(p, default_source_spec(p));
  if (!rec)
    throw unsupported_error("kforge::policy::generated: no accepted generated kernel for " + describe(p) + " in " +
                            records_dir().string() + " (run: kforge gen --op " + p.op + " ...)");
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<kernel_runner>> runners;  // by record file, per process
  std::lock_guard lock(mu);
  vulkan::context& ctx = vulkan::default_context();
  auto& slot = runners[rec->path + "@" + std::to_string(reinterpret_cast<std::uintptr_t>(&ctx))];
  if (!slot) slot = std::make_unique<kernel_runner>(ctx, p, "generated_" + p.op, rec->extracted_glsl);
  slot->run(p, ts);
}

/// A generated kernel as a candidate the tuner can time next to its own
/// (tune/generated_space.hpp turns it into a tune::candidate).
struct generated_candidate {
  std::string name;    ///< "generated:<record file>"
  std::string record;  ///< the record's file name in records_dir()
  executor execute;    ///< runs the kernel on the default Vulkan context (guarded runner)
  /// GPU timestamp seconds of the last execute()'s dispatch, or -1 without timestamps.
  std::function<double()> device_seconds;
};

/// A candidate running a contract kernel (`glsl`, dispatched as `label`)
/// through the guarded runner on the default Vulkan context. The runner is
/// made on first use (for the problem it is first run on) and shared by
/// copies of the candidate.
inline generated_candidate contract_candidate(std::string name, std::string record, std::string label, std::string glsl) {
  auto runner = std::make_shared<std::unique_ptr<kernel_runner>>();
  generated_candidate c;
  c.name = std::move(name);
  c.record = std::move(record);
  c.execute = [label = std::move(label), glsl = std::move(glsl), runner](const problem& q, std::vector<host_tensor>& ts) {
    if (!*runner) *runner = std::make_unique<kernel_runner>(vulkan::default_context(), q, label, glsl);
    (*runner)->run(q, ts);
  };
  c.device_seconds = [runner] {
    const double ms = *runner ? (*runner)->last_device_ms() : -1.0;
    return ms >= 0 ? ms * 1e-3 : -1.0;
  };
  return c;
}

/// The candidate of one accepted record ("generated:<record file>").
inline generated_candidate candidate_from_record(const generation_record& r) {
  const std::string file = std::filesystem::path(r.path).filename().string();
  return contract_candidate("generated:" + file, file, "generated_" + r.prob.op, r.extracted_glsl);
}

/// One candidate per accepted record of exactly problem p (whatever source
/// spec it was generated from), newest first.
inline std::vector<generated_candidate> tuner_candidates(const problem& p) {
  std::vector<generated_candidate> out;
  const std::string prefix = record_prefix(true, p) + "_h";
  for (const auto& r : list_records('c')) {
    if (std::filesystem::path(r.path).filename().string().rfind(prefix, 0) != 0 || !r.correct() ||
        r.extracted_glsl.empty())
      continue;
    out.push_back(candidate_from_record(r));
  }
  return out;
}

namespace detail {
/// Ops whose kernels kforge gen can generate: every op a family's traits
/// describe (gemm with f32 accumulation only).
template <class Op>
concept generatable = requires { typename traits_of_t<Op>; } && (!requires { typename Op::acc_type; } ||
                                                                  std::is_same_v<typename Op::acc_type, float>);

template <class Op, class... V>
void run_generated(const Op& op, const V&... views) {
  const problem p = traits_of_t<Op>::problem_of(op, views...);
  std::vector<host_tensor> ts = allocate(p);
  if (ts.size() != sizeof...(V))
    throw argument_error("kforge::" + std::string(Op::name) + ": policy generated expected " + std::to_string(ts.size()) +
                         " tensors, got " + std::to_string(sizeof...(V)));
  std::size_t i = 0;
  auto pack = [&](const auto& v) {
    host_tensor& h = ts[i++];
    expect_shape(Op::name, "operand " + std::to_string(i), h.dims, v.dims);
    using E = std::remove_const_t<typename std::remove_cvref_t<decltype(v)>::element_type>;
    const tensor_view<E> dense = h.template view<E>();  // the operand's own type: ids and indices stay exact
    eigen::for_each_offset(v.dims, v.strides, [&](index_t e, index_t off) { dense.data[e] = v.data[off]; });
  };
  (pack(views), ...);
  // The output is read when gemm has beta != 0; it was packed above like the inputs.
  execute_generated(p, ts);
  i = 0;
  auto unpack = [&](const auto& v) {
    const host_tensor& h = ts[i++];
    using E = typename std::remove_cvref_t<decltype(v)>::element_type;
    if constexpr (!std::is_const_v<E>) {
      const tensor_view<const E> dense = h.template view<E>();
      eigen::for_each_offset(v.dims, v.strides, [&](index_t e, index_t off) { v.data[off] = dense.data[e]; });
    }
  };
  (unpack(views), ...);  // the outputs: every mutable view
}

}  // namespace detail
}  // namespace kforge::gen

namespace kforge::detail {
template <class Op>
  requires gen::detail::generatable<Op>
struct impl<policy::generated, Op> {
  static constexpr bool available = true;
  template <class... V>
  static void run(const Op& op, const V&... views) {
    gen::detail::run_generated(op, views...);
  }
};
}  // namespace kforge::detail
