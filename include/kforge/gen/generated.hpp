// kforge/gen/generated.hpp — policy::generated: run an op with the kernel
// kforge::gen admitted for that problem, or proven for its bucket.
//
//   kforge::run<kforge::policy::generated>(op::gemm<float>{}, A, B, C);
//
// At run time the call is described as a problem (op, dtype, shapes,
// parameters), the generation cache is searched for the fastest accepted
// record of that problem (record.hpp lookup), and its kernel runs in this
// process on the default Vulkan context through the same guarded runner the
// gate used (admitted kernels are trusted; the guards stay on anyway).
// Without a record of exactly that problem, a kernel proven for the
// problem's tuning bucket serves it once the sandbox has passed it on the
// exact shape (gen/bucket.hpp; the verdict is cached per record, shape and
// device). Neither is an unsupported_error that says which `kforge gen` to
// run, or which verdict failed. What a call resolved to is kept for the
// process (a record or verdict written later is seen by a new process).
// Operands may have any strides; they are packed to the dense row-major
// layout the contract uses.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <mutex>

#include "kforge/eigen/common.hpp"
#include "kforge/gen/generate.hpp"
#include "kforge/gen/runner.hpp"
#include "kforge/tune/generated_hook.hpp"

namespace kforge::gen {

/// The device a verdict is cached for: the context's device and driver.
inline std::string verdict_device(const vulkan::context& ctx) {
  const auto& d = ctx.info();
  return d.name + " (" + d.driver_name + " " + d.driver_info + ", " + std::to_string(d.driver_version) + ")";
}

/// The accepted kernel that runs p on ctx's device: an accepted record of
/// exactly p, else the fastest kernel proven for p's bucket whose verdict on
/// p passes (gen/bucket.hpp; the first use of a shape runs the sandbox).
/// Throws unsupported_error saying what was looked for and what failed.
inline generation_record resolve_generated(const problem& p, vulkan::context& ctx) {
  if (auto rec = lookup(p, default_source_spec(p))) return std::move(*rec);
  std::string why;
  if (auto rec = serve_from_bucket(p, verdict_device(ctx), why)) return std::move(*rec);
  throw unsupported_error("kforge::policy::generated: no accepted generated kernel for " + describe(p) + " in " +
                          records_dir().string() + ", and " + why + " (run: kforge gen --op " + p.op + " ...)");
}

/// Runs p on host tensors with its accepted generated kernel (resolve_generated).
inline void execute_generated(const problem& p, std::vector<host_tensor>& ts) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<kernel_runner>> runners;  // by record file, per process
  static std::map<std::string, std::string> served;  // problem@context -> its runner's key, once resolved
  std::lock_guard lock(mu);
  vulkan::context& ctx = vulkan::default_context();
  const std::string at = "@" + std::to_string(reinterpret_cast<std::uintptr_t>(&ctx));
  const std::string call = problem_json(p) + at;
  auto it = served.find(call);
  if (it == served.end()) {
    const generation_record rec = resolve_generated(p, ctx);
    auto& slot = runners[rec.path + at];
    if (!slot) slot = std::make_unique<kernel_runner>(ctx, p, "generated_" + p.op, rec.extracted_glsl);
    it = served.emplace(call, rec.path + at).first;
  }
  runners.at(it->second)->run(p, ts);
}

/// Records the accepted kernel of `record_file` (a file in records_dir())
/// for p into s on the caller's buffers (kernel_runner::record), where it
/// serves p: the record's own problem, or a shape of its proven bucket whose
/// sandboxed verdict on s's device passes (the first use of a shape runs the
/// sandbox). False, recording nothing, where it does not serve p (bf16,
/// whose contract buffers are f32; a missing, rejected or edited record; a
/// shape outside the bucket; a failed verdict; no sandbox worker): the
/// caller records its fallback. The answer is kept per process and context.
/// policy::autotune calls this (through tune/generated_hook.hpp) for a cached
/// generated gemm winner on device tensors.
inline bool record_generated(vulkan::stream& s, const std::string& record_file, const problem& p,
                             const std::vector<vulkan::buffer_ref>& refs) {
  if (p.type == dtype::bf16 || record_file.empty() || record_file.find('/') != std::string::npos) return false;
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const kernel_runner>> served;  // record|problem@context; null: does not serve
  vulkan::context& ctx = s.ctx();
  const std::string at = "@" + std::to_string(reinterpret_cast<std::uintptr_t>(&ctx));
  const std::string key = record_file + "|" + problem_json(p) + at;
  std::shared_ptr<const kernel_runner> runner;
  {
    std::lock_guard lock(mu);
    auto it = served.find(key);
    if (it == served.end()) {
      std::shared_ptr<const kernel_runner> made;
      try {
        const generation_record r = load_record(records_dir() / record_file);
        const bool own = problem_json(r.prob) == problem_json(p);
        if (r.correct() && !r.extracted_glsl.empty() && r.source_hash == spec_hash(r.prob, default_source_spec(r.prob)) &&
            (own || (r.bucket_proven && r.bucket == bucket_key(p) && in_bucket(r.prob, p) &&
                     verdict_for(r, p, verdict_device(ctx)).passed)))
          made = std::make_shared<const kernel_runner>(ctx, p, "generated_" + p.op, r.extracted_glsl);
      } catch (const std::exception&) {
        // Unreadable record, no sandbox worker, a kernel that no longer builds: the fallback runs.
      }
      it = served.emplace(key, std::move(made)).first;
    }
    runner = it->second;
  }
  if (!runner) return false;
  runner->record(s, p, refs);
  return true;
}

namespace detail {
/// Installs record_generated as policy::autotune's recorder of generated gemm
/// winners (tune/generated_hook.hpp) in every program that includes kforge/gen.hpp.
inline const bool generated_recorder_installed = [] {
  tune::generated_gemm_recorder().store(&record_generated);
  return true;
}();
}  // namespace detail

/// A generated kernel as a candidate the tuner can time next to its own
/// (tune/generated_space.hpp turns it into a tune::candidate).
struct generated_candidate {
  std::string name;    ///< "generated:<record file>"
  std::string record;  ///< the record's file name in records_dir()
  executor execute;    ///< runs the kernel on the default Vulkan context (guarded runner)
  /// GPU timestamp seconds of the last execute()'s dispatch; none without timestamps.
  std::function<std::optional<double>()> device_seconds;
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
  c.device_seconds = [runner]() -> std::optional<double> {
    const std::optional<double> ms = *runner ? (*runner)->last_device_ms() : std::nullopt;
    return ms ? std::optional<double>(*ms * 1e-3) : std::nullopt;
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
