// kforge/gen/runner.hpp — runs a contract-conforming GLSL kernel on a
// kforge::vulkan context: compile (glslang), check the interface against the
// contract (SPIRV-Cross), create the pipeline, and dispatch it on host
// tensors with guard regions around every buffer.
//
// Guards: every operand lives in one device buffer laid out as
// [front guard | data | back guard], each guard >= 256 elements (and a
// multiple of the storage-offset alignment), filled with a NaN pattern for
// inputs and a finite sentinel for the output (see fill_pattern). The
// descriptor covers data + back guard, so a kernel that reads past the end
// of an input reads NaN (and its results show it) and one that writes past
// the end of any buffer changes the guard, which is checked bit for bit after
// every run. The front guard catches writes that spill from a neighbouring
// buffer. Inputs are also checked to be unchanged.
//
// This is an adapter over the backend's public pieces (context::get_pipeline,
// stream::dispatch, memory pools); it adds nothing to include/kforge/vulkan/.
// It runs on whatever context it is given. The sandbox's worker gives it one
// with robust buffer access (context_options::robust_buffer_access) for
// untrusted kernels: then a write past the descriptor's range (beyond the
// back guard, or before the data's start) cannot leave the pool block's
// VkBuffer — with robustBufferAccess2 it is discarded and such a read returns
// zero; with robustBufferAccess alone it may land in another tensor of the
// same block (all of them the worker's own) — so the guards see only what
// lands inside data + back guard. That is why the gate re-runs a kernel that
// passed on a plain context too (gate.hpp), the way policy::generated runs it.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <cstring>
#include <string>
#include <vector>

#include "kforge/gen/contract.hpp"
#include "kforge/gen/static_rules.hpp"
#include "kforge/vulkan.hpp"

namespace kforge::gen {

/// A kernel wrote outside its output, or into an input.
class out_of_bounds_error : public error {
 public:
  using error::error;
};
/// Two runs on the same inputs gave different bits.
class nondeterminism_error : public error {
 public:
  using error::error;
};

/// What reflection found in a kernel that passed the contract check.
struct kernel_reflection {
  std::uint32_t local_size = 0;
  std::uint32_t tile_m = 0, tile_n = 0, tile = 0;  ///< 0 where not declared
  std::vector<std::uint32_t> spec_ids, spec_defaults;
  std::uint32_t bindings = 0, push_bytes = 0;
  std::string to_json() const {
    json_writer w;
    w.begin_object().field("local_size", local_size).field("tile_m", tile_m).field("tile_n", tile_n);
    w.field("tile", tile).field("bindings", bindings).field("push_bytes", push_bytes).key("spec_constants").begin_array();
    for (std::size_t i = 0; i < spec_ids.size(); ++i)
      w.begin_object().field("id", spec_ids[i]).field("default", spec_defaults[i]).end_object();
    w.end_array().end_object();
    return w.str();
  }
};

/// GLSL → SPIR-V with glslang (Vulkan 1.1, SPIR-V 1.3, as the backend);
/// throws vulkan::shader_error with the compiler's log. debug_info: with
/// OpLine, so that checks can name source lines (the race check).
inline std::vector<std::uint32_t> compile_glsl(const std::string& name, const std::string& source, bool debug_info = false) {
  return vulkan::shader_compiler::compile(vulkan::shader_variant{name, source, {}}, debug_info);
}

/// What a device allows a kernel (VkPhysicalDeviceLimits), for the contract
/// check; a limit of 0 is not checked.
struct device_limits {
  std::uint32_t max_shared_memory = 0;               ///< maxComputeSharedMemorySize, bytes
  std::uint32_t max_invocations = 0;                 ///< maxComputeWorkGroupInvocations
  std::array<std::uint32_t, 3> max_workgroup_size{};  ///< maxComputeWorkGroupSize
  std::uint32_t max_push_constants = 0;              ///< maxPushConstantsSize, bytes
  std::string device;                                ///< the device's name, for reasons
};

inline device_limits limits_of(const vulkan::device_info& d) {
  return {d.max_shared_memory, d.max_workgroup_invocations, d.max_workgroup_size, d.max_push_constants, d.name};
}

/// Checks a module against the contract for p and the device's limits; throws
/// vulkan::interface_error naming what the kernel declares and what the
/// contract (or the device) allows. Before the bindings: what the contract's
/// promise of identical bits rules out (float atomics, RelaxedPrecision:
/// static_rules.hpp) and the Workgroup memory the kernel declares
/// against maxComputeSharedMemorySize; then the push-constant block against
/// maxPushConstantsSize and the local size against maxComputeWorkGroupSize
/// and maxComputeWorkGroupInvocations, each named with the declared amount
/// and the limit.
inline kernel_reflection check_contract(const problem& p, const std::vector<std::uint32_t>& spirv,
                                        const device_limits& lim) {
  const kernel_contract c = contract_for(p);
  const std::string on = lim.device.empty() ? std::string("the device") : "the device ('" + lim.device + "')";
  for (const std::string& why : static_refusals(spirv))
    throw vulkan::interface_error("kforge::gen: kernel for " + p.op + " refused: " + why);
  if (lim.max_shared_memory) {
    std::uint64_t total = 0;
    std::string each;
    for (const auto& v : shared_memory_use(spirv)) {
      total += v.bytes;
      if (v.known) each += (each.empty() ? "" : ", ") + ("'" + v.name + "' " + std::to_string(v.bytes) + " bytes");
    }
    if (total > lim.max_shared_memory)
      throw vulkan::interface_error("kforge::gen: kernel for " + p.op +
                                    " exceeds the device's maxComputeSharedMemorySize: it declares " +
                                    std::to_string(total) + " bytes of shared memory (" + each + "); " + on + " allows " +
                                    std::to_string(lim.max_shared_memory) + " bytes");
  }
  spirv_cross::Compiler comp(spirv);
  const auto res = comp.get_shader_resources();
  auto fail = [&](const std::string& what, const std::string& kernel, const std::string& contract) {
    throw vulkan::interface_error("kforge::gen: kernel does not follow the contract for " + p.op + ": " + what +
                                  ": kernel declares " + kernel + ", contract requires " + contract);
  };
  const std::uint32_t n = static_cast<std::uint32_t>(c.bindings.size());
  const auto specs = operands(p);
  if (specs.size() != n)
    throw error("kforge::gen: internal: " + p.op + " has " + std::to_string(specs.size()) + " operands and " +
                std::to_string(n) + " contract bindings");
  std::vector<bool> seen(n, false);
  const bool f16 = is_f16_device(p.type);
  for (const auto& sb : res.storage_buffers) {
    const auto set = comp.get_decoration(sb.id, spv::DecorationDescriptorSet);
    const auto b = comp.get_decoration(sb.id, spv::DecorationBinding);
    if (set != 0 || b >= n || seen[b])
      fail("storage buffer '" + sb.name + "'", "set " + std::to_string(set) + " binding " + std::to_string(b),
           "set 0, bindings 0.." + std::to_string(n - 1) + " each once");
    seen[b] = true;
    const bool readonly = comp.get_buffer_block_flags(sb.id).get(spv::DecorationNonWritable);
    const bool is_output = specs[b].is_output;
    if (is_output && readonly) fail("binding " + std::to_string(b) + " (" + c.bindings[b] + ")", "readonly", "writable (it is an output)");
    if (!is_output && !readonly)
      fail("binding " + std::to_string(b) + " (" + c.bindings[b] + ")", "a writable buffer", "readonly (it is an input)");
    const auto& block = comp.get_type(sb.base_type_id);
    const bool integer = operand_type(p, specs[b]) == dtype::i32;
    bool elem_ok = false;
    if (block.member_types.size() == 1) {
      const auto& m = comp.get_type(block.member_types[0]);
      elem_ok = m.array.size() == 1 && m.array[0] == 0 &&
                (integer ? ((m.basetype == spirv_cross::SPIRType::Int || m.basetype == spirv_cross::SPIRType::UInt) && m.width == 32)
                 : f16   ? (m.basetype == spirv_cross::SPIRType::Half && m.width == 16)
                         : (m.basetype == spirv_cross::SPIRType::Float && m.width == 32));
    }
    if (!elem_ok)
      fail("binding " + std::to_string(b) + " (" + c.bindings[b] + ")", "another block layout",
           "exactly one member, a runtime array of " + glsl_storage_type(operand_type(p, specs[b])));
  }
  for (std::uint32_t b = 0; b < n; ++b)
    if (!seen[b])
      fail("storage buffers", std::to_string(res.storage_buffers.size()) + " (binding " + std::to_string(b) + " missing)",
           std::to_string(n) + " (" + [&] {
             std::string s;
             for (const auto& x : c.bindings) s += (s.empty() ? "" : ", ") + x;
             return s;
           }() + ")");
  const std::size_t other = res.uniform_buffers.size() + res.sampled_images.size() + res.storage_images.size() +
                            res.separate_images.size() + res.separate_samplers.size() + res.atomic_counters.size();
  if (other) fail("descriptors", std::to_string(other) + " non-storage-buffer resources", "storage buffers only");
  std::uint32_t push = 0;
  if (!res.push_constant_buffers.empty()) {
    const auto& t = comp.get_type(res.push_constant_buffers[0].base_type_id);
    push = static_cast<std::uint32_t>(comp.get_declared_struct_size(t));
    if (lim.max_push_constants && push > lim.max_push_constants)
      throw vulkan::interface_error("kforge::gen: kernel for " + p.op +
                                    " exceeds the device's maxPushConstantsSize: its push-constant block '" +
                                    res.push_constant_buffers[0].name + "' is " + std::to_string(push) + " bytes; " + on +
                                    " allows " + std::to_string(lim.max_push_constants) + " bytes");
    if (t.member_types.size() != c.push.size())
      fail("push constants", std::to_string(t.member_types.size()) + " members", std::to_string(c.push.size()) + " members");
    for (std::size_t i = 0; i < c.push.size(); ++i) {
      const auto& m = comp.get_type(t.member_types[i]);
      const std::string want = c.push[i].type;
      const bool ok = (want == "uint" && m.basetype == spirv_cross::SPIRType::UInt) ||
                      (want == "int" && m.basetype == spirv_cross::SPIRType::Int) ||
                      (want == "float" && m.basetype == spirv_cross::SPIRType::Float);
      const bool array_ok = c.push[i].name.find("[6]") != std::string::npos ? (m.array.size() == 1 && m.array[0] == 6)
                                                                             : m.array.empty();
      if (!ok || !array_ok || m.width != 32)
        fail("push constant member " + std::to_string(i), "another type", want + " " + c.push[i].name);
    }
  }
  if (push != c.push_bytes) fail("push constants", std::to_string(push) + " bytes", std::to_string(c.push_bytes) + " bytes");

  kernel_reflection r;
  r.bindings = n;
  r.push_bytes = push;
  spirv_cross::SpecializationConstant wx, wy, wz;
  comp.get_work_group_size_specialization_constants(wx, wy, wz);
  const std::uint32_t ly = comp.get_execution_mode_argument(spv::ExecutionModeLocalSize, 1);
  const std::uint32_t lz = comp.get_execution_mode_argument(spv::ExecutionModeLocalSize, 2);
  if (wx.id == 0 || wx.constant_id != 0 || wy.id != 0 || wz.id != 0 || ly != 1 || lz != 1)
    fail("local size", wx.id ? "local_size_x_id = " + std::to_string(wx.constant_id) : std::string("a literal local size"),
         "layout(local_size_x_id = 0) in; with a literal default local_size_x and y = z = 1");
  r.local_size = comp.get_constant(wx.id).scalar();
  if (lim.max_workgroup_size[0] && r.local_size > lim.max_workgroup_size[0])
    throw vulkan::interface_error("kforge::gen: kernel for " + p.op +
                                  " exceeds the device's maxComputeWorkGroupSize: local size x is " +
                                  std::to_string(r.local_size) + "; " + on + " allows " +
                                  std::to_string(lim.max_workgroup_size[0]));
  if (lim.max_invocations && r.local_size > lim.max_invocations)
    throw vulkan::interface_error("kforge::gen: kernel for " + p.op +
                                  " exceeds the device's maxComputeWorkGroupInvocations: its workgroup has " +
                                  std::to_string(r.local_size) + " invocations; " + on + " allows " +
                                  std::to_string(lim.max_invocations));
  if (r.local_size == 0)
    fail("local size", "0", "1.." + std::to_string(lim.max_invocations ? lim.max_invocations : 1024));
  for (const auto& sc : comp.get_specialization_constants()) {
    r.spec_ids.push_back(sc.constant_id);
    const auto& k = comp.get_constant(sc.id);
    const auto& t = comp.get_type(k.constant_type);
    if (t.basetype != spirv_cross::SPIRType::UInt && t.basetype != spirv_cross::SPIRType::Int &&
        t.basetype != spirv_cross::SPIRType::Boolean)
      fail("specialization constant " + std::to_string(sc.constant_id), "a non-integer constant", "uint/int/bool constants");
    r.spec_defaults.push_back(k.scalar());
    if (sc.constant_id == 1) (c.tile_2d ? r.tile_m : r.tile) = k.scalar();
    if (sc.constant_id == 2 && c.tile_2d) r.tile_n = k.scalar();
  }
  if (c.tile_2d && (r.tile_m == 0 || r.tile_n == 0))
    fail("output tile", "tile " + std::to_string(r.tile_m) + "x" + std::to_string(r.tile_n),
         "layout(constant_id = 1) const uint TILE_M = <m>; layout(constant_id = 2) const uint TILE_N = <n>; both > 0");
  for (auto id : r.spec_ids)
    if (id == 2 && !c.tile_2d) fail("specialization constant 2", "declared", "ids 0, 1 (optional TILE) or >= 3 for this op");
  return r;
}

/// The contract check with only a workgroup-size limit (0: none).
inline kernel_reflection check_contract(const problem& p, const std::vector<std::uint32_t>& spirv,
                                        std::uint32_t max_invocations = 0) {
  device_limits lim;
  lim.max_invocations = max_invocations;
  return check_contract(p, spirv, lim);
}

/// Element size of an operand's buffer on the device (bf16 travels as f32).
inline std::size_t device_elem_size(dtype t) { return is_f16_device(t) ? 2 : 4; }

/// A compiled, checked kernel ready to run on one context.
class kernel_runner {
 public:
  kernel_runner(vulkan::context& ctx, const problem& family_problem, std::string name, std::string glsl)
      : ctx_(&ctx), name_(std::move(name)), glsl_(std::move(glsl)) {
    spirv_ = compile_glsl(name_, glsl_);
    refl_ = check_contract(family_problem, spirv_, limits_of(ctx.info()));
    if (is_f16_device(family_problem.type) && !ctx.info().storage_16bit)
      throw unsupported_error("kforge::gen: device '" + ctx.info().name + "' lacks 16-bit storage; f16 kernels cannot run");
    vulkan::kernel_interface iface{refl_.bindings, refl_.push_bytes, refl_.spec_ids};
    pipe_ = &ctx.get_pipeline(vulkan::shader_variant{name_, glsl_, {}}, iface, refl_.spec_defaults);
  }

  const kernel_reflection& reflection() const { return refl_; }
  const std::vector<std::uint32_t>& spirv() const { return spirv_; }

  /// Runs the kernel on host tensors (inputs in call order, then the outputs;
  /// the outputs' current contents are uploaded too, so poison stays where
  /// the kernel does not write). Throws out_of_bounds_error, vulkan::device_lost.
  void run(const problem& p, std::vector<host_tensor>& ts) { run_impl(p, ts, 1, nullptr); }

  /// Median GPU (or wall) time in ms of `reps` back-to-back dispatches.
  double time_ms(const problem& p, std::vector<host_tensor> ts, int reps) {
    double ms = 0;
    run_impl(p, ts, std::max(1, reps), &ms);
    return ms;
  }

  /// Records one dispatch of the kernel for p into s on the caller's
  /// buffers (the operands in call order, dense row-major, each in the
  /// contract's device type: f16 as f16, f32 and bf16 as f32): no guards and
  /// no checks, for a kernel the gate admitted, as policy::autotune runs a
  /// generated gemm on device tensors. s must be on the runner's context.
  void record(vulkan::stream& s, const problem& p, const std::vector<vulkan::buffer_ref>& refs) const {
    const auto specs = operands(p);
    if (refs.size() != specs.size())
      throw argument_error("kforge::gen: " + p.op + " kernel needs " + std::to_string(specs.size()) + " buffers, got " +
                           std::to_string(refs.size()));
    if (&s.ctx() != ctx_) throw argument_error("kforge::gen: a kernel runner records only on its own context's streams");
    const launch l = make_launch(p, refl_.local_size, refl_.tile_m, refl_.tile_n, refl_.tile);
    if (l.grid[0] == 0 || l.grid[1] == 0 || l.grid[2] == 0) return;
    std::vector<vulkan::binding> binds;
    for (std::size_t i = 0; i < refs.size(); ++i) binds.push_back({refs[i], specs[i].is_output});
    s.dispatch(*pipe_, binds, l.push.data(), static_cast<std::uint32_t>(l.push.size()), l.grid, name_);
  }

  /// GPU timestamp time in ms of the last run()'s dispatch (transfers and
  /// guard checks not counted); none where the queue has no timestamps.
  std::optional<double> last_device_ms() const { return last_device_ms_; }

 private:
  struct guarded {
    vulkan::buffer_slice dev, staging;
    std::size_t guard = 0, body = 0;  // bytes
    std::vector<std::uint8_t> written;
  };

  /// Input guards hold a quiet NaN whose payload names the buffer, so a read
  /// past the end poisons results (in an i32 buffer the same bits are an id
  /// far out of range); outputs' guards hold a finite sentinel instead, so
  /// that even a kernel that copies an input's guard (NaN in, NaN out) into
  /// an output's guard changes its bits.
  static void fill_pattern(std::uint8_t* p, std::size_t bytes, bool f16, bool output, std::size_t index) {
    const std::uint32_t f = output ? 0x4b5a5a5au : 0x7fc0a500u | static_cast<std::uint32_t>(index & 0xff);
    const std::uint16_t h = output ? std::uint16_t(0x5a5a) : static_cast<std::uint16_t>(0x7e00u | (index & 0xff));
    for (std::size_t i = 0; i + (f16 ? 2 : 4) <= bytes; i += f16 ? 2 : 4) std::memcpy(p + i, f16 ? (const void*)&h : (const void*)&f, f16 ? 2 : 4);
  }

  void run_impl(const problem& p, std::vector<host_tensor>& ts, int reps, double* ms_out) {
    const kernel_contract c = contract_for(p);
    if (ts.size() != c.bindings.size())
      throw argument_error("kforge::gen: " + p.op + " kernel needs " + std::to_string(c.bindings.size()) + " tensors, got " +
                           std::to_string(ts.size()));
    if (p.a_col_major || p.b_col_major)
      throw unsupported_error("kforge::gen: generated kernels take dense row-major operands only");
    const auto specs = operands(p);
    const std::size_t align = std::max<std::size_t>(16, ctx_->info().min_storage_offset_alignment);
    const launch l = make_launch(p, refl_.local_size, refl_.tile_m, refl_.tile_n, refl_.tile);

    std::vector<guarded> bufs(ts.size());
    vulkan::stream s(*ctx_);
    s.time_dispatches(true);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      host_tensor& h = ts[i];
      if (h.span() != h.dims.numel())
        throw unsupported_error("kforge::gen: operand " + c.bindings[i] + " is not dense row-major");
      const bool f16 = is_f16_device(h.type);
      const std::size_t es = device_elem_size(h.type);
      guarded& g = bufs[i];
      g.guard = (256 * es + align - 1) / align * align;
      g.body = static_cast<std::size_t>(h.dims.numel()) * es;
      const std::size_t total = 2 * g.guard + (g.body + align - 1) / align * align;
      g.dev = ctx_->device_memory().allocate(total);
      g.staging = ctx_->staging_memory().allocate(total);
      auto* m = static_cast<std::uint8_t*>(g.staging.mapped());
      fill_pattern(m, total, f16, specs[i].is_output, i);
      if (h.type == dtype::bf16) {  // widened to f32 on the device
        for (index_t e = 0; e < h.dims.numel(); ++e) {
          const float v = h.get(e);
          std::memcpy(m + g.guard + static_cast<std::size_t>(e) * 4, &v, 4);
        }
      } else if (g.body) {  // f32, f16 and i32 travel as they are stored
        std::memcpy(m + g.guard, h.storage.data(), g.body);
      }
      g.written.assign(m, m + total);
      s.copy(g.staging.ref(), g.dev.ref(), total);
    }
    std::vector<vulkan::binding> binds;
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      const auto& r = bufs[i].dev.ref();
      binds.push_back({vulkan::buffer_ref{r.buffer, r.offset + bufs[i].guard, bufs[i].body + bufs[i].guard},
                       specs[i].is_output});
    }
    const bool empty = l.grid[0] == 0 || l.grid[1] == 0 || l.grid[2] == 0;
    if (!empty)
      for (int rep = 0; rep < reps; ++rep) s.dispatch(*pipe_, binds, l.push.data(), static_cast<std::uint32_t>(l.push.size()), l.grid, name_);
    for (auto& g : bufs) s.copy(g.dev.ref(), g.staging.ref(), g.written.size());
    const auto t0 = std::chrono::steady_clock::now();
    s.run();
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::vector<double> t;
    for (const auto& d : s.timings())
      if (d.label == name_ && d.ms) t.push_back(*d.ms);
    std::sort(t.begin(), t.end());
    last_device_ms_ = t.empty() ? std::nullopt : std::optional<double>(t[t.size() / 2]);
    if (ms_out) *ms_out = last_device_ms_.value_or(wall_ms / reps);  // no timestamps: wall time includes the copies
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      const guarded& g = bufs[i];
      const auto* m = static_cast<const std::uint8_t*>(g.staging.mapped());
      const bool is_out = specs[i].is_output;
      const std::size_t total = g.written.size(), guard = g.guard, es = device_elem_size(ts[i].type);
      for (std::size_t b = 0; b < total; ++b) {
        const bool in_body = b >= guard && b < guard + g.body;
        if (in_body && is_out) continue;
        if (m[b] != g.written[b]) {
          const long long elem = static_cast<long long>(b / es) - static_cast<long long>(guard / es);
          const std::string where = in_body ? "into the input itself (element " + std::to_string(elem) + ")"
                                   : b < guard ? std::to_string((guard - b + es - 1) / es) + " elements before its start"
                                               : std::to_string(elem - static_cast<long long>(g.body / es)) + " elements past its end";
          throw out_of_bounds_error("kforge::gen: kernel wrote outside its output: buffer '" + c.bindings[i] +
                                    "' (binding " + std::to_string(i) + ", " + std::to_string(g.body / es) +
                                    " elements) was written " + where);
        }
      }
    }
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      if (!specs[i].is_output) continue;
      host_tensor& out = ts[i];
      const auto* m = static_cast<const std::uint8_t*>(bufs[i].staging.mapped()) + bufs[i].guard;
      if (out.type == dtype::bf16) {
        for (index_t e = 0; e < out.dims.numel(); ++e) {
          float v;
          std::memcpy(&v, m + static_cast<std::size_t>(e) * 4, 4);
          out.set(e, v);
        }
      } else if (bufs[i].body) {
        std::memcpy(out.storage.data(), m, bufs[i].body);
      }
    }
  }

  vulkan::context* ctx_;
  std::string name_, glsl_;
  std::vector<std::uint32_t> spirv_;
  kernel_reflection refl_;
  const vulkan::pipeline* pipe_ = nullptr;
  std::optional<double> last_device_ms_;
};

/// FNV-1a of the SPIR-V words (the record's spirv_hash).
inline std::string spirv_hash(const std::vector<std::uint32_t>& words) {
  return hash_hex(std::string_view(reinterpret_cast<const char*>(words.data()), words.size() * 4));
}

}  // namespace kforge::gen
