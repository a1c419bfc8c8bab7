// tests/vulkan_spirv.cpp — the SPIR-V kforge emits itself (vulkan/spirv/):
// the builder's core encoding, validated by SPIRV-Tools and run on the
// device; the structural checker, on every coopmat2 gemm variant and on
// broken modules it must refuse; the coopmat2 configs and defaults on a
// device that lists workgroup-scope matrices (an H100's properties, since
// lavapipe has none; the kernel itself runs in vulkan_gemm on such a device).
#include <algorithm>
#include <spirv-tools/libspirv.hpp>

#include <limits>
#include <map>
#include <set>

#include "vulkan_common.hpp"

using namespace kforge;
namespace sp = kforge::vulkan::spirv;

namespace {

/// SPIRV-Tools' validator for Vulkan 1.3; its messages go into `log`.
bool spirv_tools_valid(const std::vector<std::uint32_t>& words, std::string& log) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_3);
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& p, const char* m) {
    log += "word " + std::to_string(p.index) + ": " + m + "\n";
  });
  return tools.Validate(words);
}

/// A kernel with the builder's core features only (push constants, spec
/// constants with LocalSizeId, storage buffers, a function call, a loop, an
/// if, GLSL.std.450): y[i] = act(alpha·x[i] + b[i % n]) over a grid-stride
/// loop, with act the gemm epilogue's activation (spirv::detail::fmath).
std::vector<std::uint32_t> core_kernel(fn act) {
  sp::module_builder mb;
  mb.capability(sp::cap::shader);
  mb.memory_model_vulkan();
  mb.capability(sp::cap::vulkan_memory_model);
  const sp::id u32 = mb.type_uint(), f32 = mb.type_float(32), v3u = mb.type_vector(u32, 3), b = mb.type_bool();
  auto buffer = [&](std::uint32_t binding, bool readonly) {
    const sp::id st = mb.type_struct({mb.type_runtime_array(f32, 4)});
    mb.decorate(st, sp::decoration::block);
    mb.member_decorate(st, 0, sp::decoration::offset, {0});
    if (readonly) mb.member_decorate(st, 0, sp::decoration::non_writable);
    const sp::id v = mb.global(sp::storage::storage_buffer, st);
    mb.decorate(v, sp::decoration::descriptor_set, {0});
    mb.decorate(v, sp::decoration::binding, {binding});
    return v;
  };
  const sp::id x = buffer(0, true), bias = buffer(1, true), y = buffer(2, false);
  const sp::id push_t = mb.type_struct({u32, u32, f32, f32});
  mb.decorate(push_t, sp::decoration::block);
  for (std::uint32_t i = 0; i < 4; ++i) mb.member_decorate(push_t, i, sp::decoration::offset, {4 * i});
  const sp::id push = mb.global(sp::storage::push_constant, push_t);
  const sp::id gid = mb.builtin_input(sp::builtin::global_invocation_id, v3u);
  const sp::id nwg = mb.builtin_input(sp::builtin::num_workgroups, v3u);
  const sp::id wg_x = mb.spec_uint(0, 64);
  const sp::id zero = mb.const_uint(0), one = mb.const_uint(1);

  // The activation as a function of (x, slope).
  const sp::id act_fn = mb.begin_function(f32, mb.type_function(f32, {f32, f32}));
  const sp::id av = mb.param(f32), as = mb.param(f32);
  mb.label(mb.new_label());
  mb.inst_void(sp::op::return_value, {sp::detail::fmath{mb}.activation(act, av, as)});
  mb.end_function();

  const sp::id main_fn = mb.begin_function(mb.type_void(), mb.type_function(mb.type_void(), {}));
  mb.label(mb.new_label());
  const sp::id i = mb.local(u32);
  const sp::id pu = mb.type_pointer(sp::storage::push_constant, u32), pf = mb.type_pointer(sp::storage::push_constant, f32);
  const sp::id n = mb.load(u32, mb.access(pu, push, {mb.const_uint(0)}));
  const sp::id count = mb.load(u32, mb.access(pu, push, {mb.const_uint(1)}));
  const sp::id alpha = mb.load(f32, mb.access(pf, push, {mb.const_uint(2)}));
  const sp::id slope = mb.load(f32, mb.access(pf, push, {mb.const_uint(3)}));
  const sp::id first = mb.inst(sp::op::composite_extract, u32, {mb.load(v3u, gid), 0});
  const sp::id total = mb.inst(sp::op::i_mul, u32, {mb.inst(sp::op::composite_extract, u32, {mb.load(v3u, nwg), 0}), wg_x});
  const sp::id psb = mb.type_pointer(sp::storage::storage_buffer, f32);
  mb.for_loop(i, first, count, total, [&] {
    const sp::id e = mb.load(u32, i);
    const sp::id xv = mb.load(f32, mb.access(psb, x, {zero, e}));
    const sp::id bv = mb.load(f32, mb.access(psb, bias, {zero, mb.inst(sp::op::u_mod, u32, {e, n})}));
    const sp::id v = mb.inst(sp::op::f_add, f32, {mb.inst(sp::op::f_mul, f32, {alpha, xv}), bv});
    const sp::id out = mb.inst(sp::op::function_call, f32, {act_fn, v, slope});
    // Elements past the first n·4 keep act(v); the others pass through an if.
    const sp::id small = mb.inst(sp::op::u_less_than, b, {e, mb.inst(sp::op::i_mul, u32, {n, mb.const_uint(4)})});
    mb.if_then(small, [&] { mb.store(mb.access(psb, y, {zero, e}), out); },
               [&] { mb.store(mb.access(psb, y, {zero, e}), out); });
  });
  mb.ret();
  mb.end_function();
  mb.entry_point(main_fn, mb.interface());
  mb.execution_mode_id(main_fn, 38, {wg_x, one, one});
  return mb.words(0x00010600u);
}

float activation_ref(fn act, float v, float slope) {
  switch (act) {
    case fn::relu: return math::apply<fn::relu>(v, slope);
    case fn::leaky_relu: return math::apply<fn::leaky_relu>(v, slope);
    case fn::gelu_tanh: return math::apply<fn::gelu_tanh>(v, slope);
    case fn::gelu_erf: return math::apply<fn::gelu_erf>(v, slope);
    case fn::silu: return math::apply<fn::silu>(v, slope);
    default: return v;
  }
}

/// The words of `w` with instruction number `which` (0-based, after the header) removed.
std::vector<std::uint32_t> without_instruction(const std::vector<std::uint32_t>& w, std::uint16_t opcode, std::uint32_t operand0) {
  std::vector<std::uint32_t> out(w.begin(), w.begin() + 5);
  bool removed = false;
  for (std::size_t i = 5; i < w.size();) {
    const std::uint32_t wc = w[i] >> 16;
    const bool match = !removed && (w[i] & 0xffffu) == opcode && wc > 1 && w[i + 1] == operand0;
    if (!match) out.insert(out.end(), w.begin() + static_cast<std::ptrdiff_t>(i), w.begin() + static_cast<std::ptrdiff_t>(i + wc));
    removed = removed || match;
    i += wc;
  }
  REQUIRE(removed);
  return out;
}

/// The word offset of the first instruction with `opcode`.
std::size_t find_instruction(const std::vector<std::uint32_t>& w, std::uint16_t opcode) {
  for (std::size_t i = 5; i < w.size(); i += w[i] >> 16)
    if ((w[i] & 0xffffu) == opcode) return i;
  FAIL("opcode " << opcode << " not found");
  return 0;
}

/// Whether module w declares a cooperative-matrix type of bfloat16 components and use accumulator
/// (a type NVIDIA's drivers do not list; the validation layer reports it, VUID ...-10165).
bool declares_bf16_accumulator(const std::vector<std::uint32_t>& w) {
  std::set<std::uint32_t> bf16;
  std::map<std::uint32_t, std::uint32_t> constants;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> matrices;  // component type id, use id
  for (std::size_t i = 5; i < w.size() && (w[i] >> 16); i += w[i] >> 16) {
    const std::uint32_t opcode = w[i] & 0xffffu, count = w[i] >> 16;
    if (opcode == 22 && count == 4 && w[i + 2] == 16) bf16.insert(w[i + 1]);  // OpTypeFloat 16 BFloat16KHR
    if (opcode == 43 && count == 4) constants[w[i + 2]] = w[i + 3];           // OpConstant
    if (opcode == 4456) matrices.emplace_back(w[i + 2], w[i + 6]);            // OpTypeCooperativeMatrixKHR
  }
  for (const auto& [comp, use] : matrices)
    if (bf16.count(comp) && constants.count(use) && constants[use] == 2) return true;
  return false;
}

bool declares_capability(const std::vector<std::uint32_t>& w, std::uint32_t cap) {
  for (std::size_t i = 5; i < w.size() && (w[i] >> 16); i += w[i] >> 16)
    if ((w[i] & 0xffffu) == 17 && w[i + 1] == cap) return true;
  return false;
}

/// What the H100's driver lists for workgroup-scope matrices (docs/bench/h100-2026-11-24-coopmat2/).
vulkan::device_info h100_like() {
  vulkan::device_info h100;
  h100.name = "H100-like";
  h100.nv_cooperative_matrix2 = h100.storage_16bit = h100.fp16_arithmetic = h100.bf16_cooperative_matrix = true;
  h100.coopmat2_conversions = true;
  h100.coopmat2_max_workgroup = 256, h100.coopmat2_max_dimension = 1024;
  for (dtype t : {dtype::f16, dtype::bf16})
    for (vulkan::coopmat2_shape sh : {vulkan::coopmat2_shape{16, 16, 16, t, 32}, {16, 16, 16, t, 64}, {32, 16, 16, t, 128},
                                      {32, 32, 16, t, 256}})
      h100.coopmat2_shapes.push_back(sh);
  h100.max_workgroup_invocations = 1024, h100.max_shared_memory = 49152, h100.subgroup_size = 32;
  return h100;
}

std::vector<sp::gemm_coopmat2_spec> all_variants() {
  std::vector<sp::gemm_coopmat2_spec> v;
  for (bool bf16 : {false, true}) {
    v.push_back({bf16, false, fn::identity, false, true});
    sp::gemm_coopmat2_spec e{bf16, true, fn::relu, true, false};  // the experiments' options
    e.vec_pointers = true, e.b_kmajor = true, e.unroll = 2;
    v.push_back(e);
    e.fast_path = false, e.vec_pointers = false;
    v.push_back(e);
    for (bool bias : {false, true})
      for (bool read_c : {false, true})
        for (fn act : {fn::identity, fn::relu, fn::leaky_relu, fn::gelu_tanh, fn::gelu_erf, fn::silu})
          v.push_back({bf16, bias, act, read_c, false});
  }
  return v;
}

}  // namespace

TEST_CASE("spirv builder: core modules pass SPIRV-Tools' validator") {
  for (fn act : {fn::identity, fn::relu, fn::leaky_relu, fn::gelu_tanh, fn::gelu_erf, fn::silu}) {
    const auto w = core_kernel(act);
    std::string log;
    CHECK_MESSAGE(spirv_tools_valid(w, log), to_string(act) << ": " << log);
    CHECK_NOTHROW(sp::check_module("core", w));
  }
  // The validator is not a rubber stamp: a module without its memory model fails it.
  std::string log;
  CHECK_FALSE(spirv_tools_valid(without_instruction(core_kernel(fn::relu), 14, 0), log));
}

TEST_CASE("spirv builder: a core module runs on the device and matches the epilogue's activations") {
  KFT_NEED_DEVICE();
  if (!ctx->info().maintenance4 || !ctx->info().vulkan_memory_model) {
    MESSAGE("skipped: device lacks maintenance4 (LocalSizeId) or the Vulkan memory model");
    return;
  }
  const std::uint32_t n = 37, count = 1000;
  std::vector<float> x = kft::random_floats(count, 7, -6.0f, 6.0f), bias = kft::random_floats(n, 8, -1.0f, 1.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[5] = 80.0f, x[6] = -80.0f;  // saturating tanh/exp
  auto dx = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(x.data(), shape{count}));
  auto db = vulkan::device_tensor<float>::from_host(*ctx, tensor_view<const float>(bias.data(), shape{n}));
  for (fn act : {fn::identity, fn::relu, fn::leaky_relu, fn::gelu_tanh, fn::gelu_erf, fn::silu}) {
    vulkan::device_tensor<float> dy(*ctx, shape{count});
    vulkan::shader_variant v;
    v.name = "spirv_core_" + std::string(to_string(act));
    v.spirv = core_kernel(act);
    const auto& p = ctx->get_pipeline(v, {3, 16, {0}}, {64});
    struct {
      std::uint32_t n, count;
      float alpha, slope;
    } pc{n, count, 0.75f, 0.1f};
    vulkan::stream s(*ctx);
    s.dispatch(p, {{dx.ref()}, {db.ref()}, {dy.ref(), true}}, &pc, sizeof pc, {5, 1, 1}, v.name);
    s.run();
    const auto y = dy.to_vector();
    int bad = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      const float v0 = 0.75f * x[i] + bias[i % n], want = activation_ref(act, v0, 0.1f);
      const bool ok = std::isnan(want) ? std::isnan(y[i])
                                       : std::fabs(y[i] - want) <= 2e-6f * (1.0f + std::fabs(v0)) + 1e-6f * std::fabs(want);
      if (!ok && bad++ < 5) FAIL_CHECK(to_string(act) << " element " << i << " of " << v0 << ": " << y[i] << " vs " << want);
    }
    CHECK(bad == 0);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("spirv checker: every coopmat2 gemm variant is well formed and has gemm's interface") {
  for (const auto& spec : all_variants()) {
    const auto w = sp::gemm_coopmat2(spec);
    CHECK_NOTHROW(sp::check_module(spec.name(), w));
    CHECK_NOTHROW(vulkan::detail::check_interface_by_decorations(spec.name(), w, {4, 24, {0, 1, 2, 3, 4}}));
    CHECK(vulkan::detail::uses_coopmat(w));
    // No bf16 accumulator matrix (NVIDIA lists none): bf16 C leaves through a matrix of use A,
    // converted from the f32 accumulator, which needs CooperativeMatrixConversionsNV (5431).
    CHECK_MESSAGE(!declares_bf16_accumulator(w), spec.name());
    CHECK(declares_capability(w, 5431) == (spec.bf16 && !spec.split));
    // Debian's SPIRV-Tools cannot read it (the reason the checker exists).
    std::string log;
    CHECK_FALSE(spirv_tools_valid(w, log));
  }
  // Variants differ where they should: names, and the words.
  CHECK(sp::gemm_coopmat2({false, true, fn::gelu_erf, false, false}).size() >
        sp::gemm_coopmat2({false, false, fn::identity, false, false}).size());
  CHECK(sp::gemm_coopmat2({true, false, fn::identity, false, false}) != sp::gemm_coopmat2({false, false, fn::identity, false, false}));
}

TEST_CASE("spirv checker: every coopmat2 attention variant is well formed and has attention's interface") {
  std::vector<std::vector<std::uint32_t>> all;
  for (bool bf16 : {false, true})
    for (bool causal : {false, true}) {
      const sp::attention_coopmat2_spec spec{bf16, causal};
      const auto w = sp::attention_coopmat2(spec);
      CHECK_NOTHROW(sp::check_module(spec.name(), w));
      // bindings Q, K, V, O; push constants BH, S, L, D, Dv, scale, causal, H, G, bshd; spec constants
      // local size, Br, Bc, D, Dv
      CHECK_NOTHROW(vulkan::detail::check_interface_by_decorations(spec.name(), w, {4, 40, {0, 1, 2, 3, 4}}));
      CHECK(vulkan::detail::uses_coopmat(w));
      CHECK(find_instruction(w, 5366) < w.size());  // the row reductions
      // Its bf16 variants keep P and O in bf16 accumulators (why its check refuses bf16): the
      // scan that the gemm variants pass above finds them.
      CHECK(declares_bf16_accumulator(w) == bf16);
      // The causal variants carry the masked-V fix-up (a workgroup barrier); the others have none.
      bool barrier = false;
      for (std::size_t i = 5; i < w.size(); i += w[i] >> 16) barrier = barrier || (w[i] & 0xffffu) == 224;
      CHECK(barrier == causal);
      for (const auto& other : all) CHECK(other != w);
      all.push_back(w);
    }
  // Probe variants (timing experiments) are modules of their own, as well formed.
  for (std::uint32_t probe = 1; probe <= 4; ++probe) {
    const sp::attention_coopmat2_spec spec{false, true, probe};
    CHECK(spec.name().find("probe") != std::string::npos);
    CHECK_NOTHROW(sp::check_module(spec.name(), sp::attention_coopmat2(spec)));
  }
  // Its configurations are checked against the device's workgroup-scope shapes (an H100-like
  // listing, below), and no policy picks the kernel: it is asked for by tiling only.
  vulkan::device_info h100 = h100_like();
  h100.coopmat2_reductions = h100.nv_coopmat_f16_16x16x16 = true;
  for (index_t d : {16, 64, 80, 128, 256})
    for (dtype t : {dtype::f16, dtype::bf16}) {
      // bf16 is refused: its P and output are bf16 accumulator matrices, which NVIDIA does not list.
      const std::string why = vulkan::attention_coopmat2_check(h100, t, d, d, vulkan::attention_coopmat2_default(d, d));
      if (t == dtype::f16) CHECK_MESSAGE(why.empty(), d);
      else CHECK_MESSAGE(why.find("bf16 accumulator") != std::string::npos, d);
      const vulkan::attention_dims prefill{1, 8, 8, 512, 512, d, d, true, false};
      CHECK(vulkan::attention_kernel_for(h100, t, prefill) != vulkan::attention_kernel::coopmat2);
      CHECK(vulkan::attention_kernel_for(h100, t, prefill, 1) != vulkan::attention_kernel::coopmat2);
    }
  CHECK(vulkan::attention_coopmat2_check(h100, dtype::f32, 64, 64, {}).find("lacks") != std::string::npos);
  CHECK(vulkan::attention_coopmat2_check(h100, dtype::f16, 72, 72, {}).find("multiples of 16") != std::string::npos);
  CHECK(vulkan::attention_coopmat2_check(h100, dtype::f16, 64, 64, {128, 64, 24}).find("tiling") != std::string::npos);
  CHECK(vulkan::attention_coopmat2_check(h100, dtype::f16, 64, 64, {96, 64, 64}).find("no workgroup-scope shape") != std::string::npos);
  CHECK(vulkan::attention_coopmat2_check(h100, dtype::f16, 256, 256, {128, 128, 64}).find("registers") != std::string::npos);
  vulkan::device_info no_reductions = h100;
  no_reductions.coopmat2_reductions = false;
  CHECK_FALSE(vulkan::attention_coopmat2_check(no_reductions, dtype::f16, 64, 64, {}).empty());
  const auto good = sp::attention_coopmat2({false, true});
  auto refuses = [](const std::vector<std::uint32_t>& w, const std::string& what) {
    CHECK_THROWS_AS_MESSAGE(sp::check_module("broken", w), vulkan::shader_error, what);
  };
  refuses(without_instruction(good, 17, sp::cap::cooperative_matrix_reductions_nv), "no reductions capability");
  refuses(without_instruction(good, 17, sp::cap::cooperative_matrix_conversions_nv), "no conversions capability");
  {  // a reduction whose combining function is the per-element exp2 (row, col, x)
    auto w = good;
    const std::size_t at = find_instruction(w, 5366), pe = find_instruction(w, 5369);
    w[at + 5] = w[pe + 4];
    refuses(w, "a reduction combining with a per-element function");
  }
}

TEST_CASE("spirv checker: refuses broken modules, saying what is wrong") {
  const auto good = sp::gemm_coopmat2({false, true, fn::gelu_erf, true, false});
  auto refuses = [](const std::vector<std::uint32_t>& w, const std::string& what) {
    try {
      sp::check_module("broken", w);
      FAIL_CHECK("accepted a module with " << what);
    } catch (const vulkan::shader_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find("'broken'") != std::string::npos, e.what());
    }
  };
  refuses(without_instruction(good, 17, sp::cap::cooperative_matrix_khr), "no CooperativeMatrixKHR capability");
  refuses(without_instruction(good, 17, sp::cap::cooperative_matrix_per_element_nv), "no per-element capability");
  // bf16 C converted from the f32 accumulator to a matrix of use A: a use change needs the capability.
  refuses(without_instruction(sp::gemm_coopmat2({true, false, fn::identity, false, false}), 17,
                              sp::cap::cooperative_matrix_conversions_nv),
          "a use-changing conversion without CooperativeMatrixConversionsNV");
  {  // A and B swapped in the MulAdd
    auto w = good;
    const std::size_t at = find_instruction(w, 4459);
    std::swap(w[at + 3], w[at + 4]);
    refuses(w, "MulAdd's A and B swapped");
  }
  {  // the entry point's interface loses its last variable
    auto w = good;
    const std::size_t at = find_instruction(w, 15);
    const std::uint32_t wc = w[at] >> 16;
    w.erase(w.begin() + static_cast<std::ptrdiff_t>(at + wc - 1));
    w[at] -= 1u << 16;
    refuses(w, "a global missing from the entry point");
  }
  {  // a word count running past the end
    auto w = good;
    w.back() = (200u << 16) | 56u;
    refuses(w, "an overrunning instruction");
  }
  {  // an id used before its definition: the tensor load's Object replaced by a later id
    auto w = good;
    const std::size_t at = find_instruction(w, 5367);
    w[at + 4] = w[3] - 1;
    refuses(w, "a use before definition");
  }
  {  // an opcode the builder never emits
    auto w = good;
    w.push_back((1u << 16) | 5000u);
    refuses(w, "an unknown opcode");
  }
  refuses(std::vector<std::uint32_t>(good.begin(), good.begin() + 3), "no header");
}

TEST_CASE("coopmat2 configs: checked against the device's workgroup-scope shapes; default for f16 and bf16") {
  vulkan::device_info h100 = h100_like();
  h100.subgroup_ops = VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  using vulkan::gemm_config;
  using vulkan::gemm_kernel;
  const gemm_config ok{gemm_kernel::coopmat2, 128, 128, 32, 4, 0, 8, 0, 8, 1};
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, ok).empty());
  CHECK(vulkan::gemm_config_check(h100, dtype::bf16, ok).empty());
  CHECK_FALSE(vulkan::gemm_config_check(h100, dtype::f32, ok).empty());
  gemm_config odd_wg = ok;
  odd_wg.warps = 3;  // 96 invocations: not listed
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, odd_wg).find("96 invocations") != std::string::npos);
  gemm_config odd_tile = ok;
  odd_tile.bk = 24;
  CHECK_FALSE(vulkan::gemm_config_check(h100, dtype::f16, odd_tile).empty());
  gemm_config too_big = ok;
  too_big.bn = 2048;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, too_big).find("largest matrix dimension") != std::string::npos);
  gemm_config too_many_registers = ok;
  too_many_registers.bn = 256;  // 128x256 f32 over 256 invocations: 128 each is the limit
  too_many_registers.warps = 4;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, too_many_registers).find("registers") != std::string::npos);
  gemm_config no_group = ok;
  no_group.group_m = 0;
  CHECK_FALSE(vulkan::gemm_config_check(h100, dtype::f16, no_group).empty());
  gemm_config odd_unroll = ok;
  odd_unroll.tm = 3;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, odd_unroll).find("unroll") != std::string::npos);
  // Defaults: coopmat2 for prefill-sized f16/bf16, gemv for decode rows; a device without it keeps the rest.
  CHECK(vulkan::gemm_default_config(h100, dtype::f16, 512, 4096, 4096).kernel == gemm_kernel::coopmat2);
  CHECK(vulkan::gemm_default_config(h100, dtype::bf16, 4096, 11008, 4096).kernel == gemm_kernel::coopmat2);
  CHECK(vulkan::gemm_default_config(h100, dtype::f16, 1, 4096, 4096).kernel == gemm_kernel::gemv);
  // The coopmat2 rule (measured on the H100): the wide tile on full grids, and from 256 rows on
  // thinner ones without edge tiles too, split along K towards 96 workgroups where K allows
  // (splits >= 1024 deep);
  // else smaller tiles unsplit where they reach 128 tiles, K splits only for thin grids.
  auto cfg = [&](std::uint64_t m, std::uint64_t n, std::uint64_t k) { return vulkan::gemm_default_config(h100, dtype::f16, m, n, k); };
  CHECK((cfg(4096, 4096, 4096).bn == 256 && cfg(4096, 4096, 4096).wg() == 256 && cfg(4096, 4096, 4096).splits == 1));
  CHECK((cfg(512, 14336, 4096).bn == 256 && cfg(512, 14336, 4096).splits == 1));
  CHECK((cfg(512, 4096, 4096).bm == 128 && cfg(512, 4096, 4096).bn == 256 && cfg(512, 4096, 4096).splits == 2));
  CHECK((cfg(512, 6144, 4096).bn == 256 && cfg(512, 6144, 4096).splits == 1));   // 96 tiles
  CHECK((cfg(256, 4096, 4096).bn == 256 && cfg(256, 4096, 4096).splits == 4));   // 32 tiles, 1024 deep
  CHECK((cfg(1024, 2304, 768).bn == 256 && cfg(1024, 2304, 768).splits == 1));   // too shallow to split
  CHECK((cfg(256, 1024, 1024).bn == 128 && cfg(256, 1024, 1024).bm <= 128));     // 8 wide tiles: too few
  CHECK(cfg(256, 6272, 2304).bn == 128);  // an edge column of wide tiles: the thin-grid rule stays off
  CHECK(cfg(1000, 4096, 4096).bn == 128);  // ... and an edge row
  CHECK((cfg(64, 4096, 4096).bm == 64 && cfg(64, 4096, 4096).splits == 8));
  CHECK((cfg(16, 4096, 4096).bm == 32 && cfg(16, 4096, 4096).splits == 8));  // 32 tiles towards 896, 512 deep
  CHECK((cfg(32, 14336, 4096).bm == 32 && cfg(32, 14336, 4096).splits == 8));  // 112 tiles: 896
  CHECK(cfg(32, 28672, 8192).splits == 4);                                      // 224 tiles: 896
  CHECK(cfg(32, 14336, 1024).splits == 2);                                      // K too short for more
  // A few rows on a wide N (8×128256, a vocabulary at decode): the 32-row tile, not the wide one
  // whose grid the vocabulary alone fills (0.48 ms against 1.92 on the H100).
  CHECK((cfg(8, 128256, 4096).bm == 32 && cfg(8, 128256, 4096).bn == 128 && cfg(8, 128256, 4096).splits == 1));
  CHECK(cfg(64, 128256, 4096).bm <= 64);
  CHECK(cfg(100, 33, 257).kernel == gemm_kernel::coopmat2);  // any shape: the kernel handles every edge
  CHECK(vulkan::gemm_default_config(h100, dtype::f16, 512, 4096, 4096, false).kernel != gemm_kernel::coopmat2);
  vulkan::device_info plain = h100;
  plain.nv_cooperative_matrix2 = false;
  CHECK(vulkan::gemm_default_config(plain, dtype::f16, 512, 4096, 4096).kernel != gemm_kernel::coopmat2);
  // Every coopmat2 candidate of the tuner passes the check; both workgroup sizes appear.
  int c2 = 0;
  std::set<std::uint32_t> wgs;
  for (const auto& c : vulkan::gemm_configs(h100, dtype::f16))
    if (c.kernel == gemm_kernel::coopmat2) ++c2, wgs.insert(c.wg());
  CHECK(c2 >= 20);
  CHECK(wgs == std::set<std::uint32_t>{128, 256});
}

TEST_CASE("gemv_coopmat configs: checked, and the default for f16 decode rows past gemv's where NV fragments run") {
  using vulkan::gemm_config;
  using vulkan::gemm_kernel;
  vulkan::device_info h100 = h100_like();
  h100.nv_coopmat_f16_16x16x16 = true;
  h100.subgroup_ops |= VK_SUBGROUP_FEATURE_SHUFFLE_BIT;  // gemv needs shuffles
  const gemm_config ok{gemm_kernel::gemv_coopmat, 16, 256, 16, 1, 0, 4, 0, 0, 4};
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, ok).empty());
  CHECK(vulkan::gemm_config_check(h100, dtype::f32, ok).find("f16") != std::string::npos);
  CHECK(vulkan::gemm_config_check(h100, dtype::bf16, ok).find("f16") != std::string::npos);
  gemm_config bad = ok;
  bad.bm = 32;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, bad).find("bm") != std::string::npos);
  bad = ok, bad.bk = 48;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, bad).find("bk") != std::string::npos);
  bad = ok, bad.tm = 3;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, bad).find("chunk") != std::string::npos);
  bad = ok, bad.tm = 4, bad.bn = 512;  // a 1024-column A chunk and 8 fragments' B blocks: past 48 KiB
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, bad).find("shared memory") != std::string::npos);
  bad = ok, bad.bn = 200;
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, bad).find("fragments") != std::string::npos);
  bad = ok, bad.bn = 512, bad.bk = 64;  // 8 column fragments × 4 fragment rows in flight
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, bad).find("registers") != std::string::npos);
  vulkan::device_info no_nv = h100;
  no_nv.nv_coopmat_f16_16x16x16 = false;
  CHECK(vulkan::gemm_config_check(no_nv, dtype::f16, ok).find("NV cooperative") != std::string::npos);
  // Defaults: gemv to 4 rows, gemv_coopmat from 5 to 16, 32-row tiles past that; bf16 and f32 keep theirs.
  auto cfg = [&](dtype dt, std::uint64_t m, std::uint64_t n, std::uint64_t k) { return vulkan::gemm_default_config(h100, dt, m, n, k); };
  CHECK(cfg(dtype::f16, 4, 14336, 4096).kernel == gemm_kernel::gemv);
  for (std::uint64_t m : {5u, 8u, 16u}) {
    CAPTURE(m);
    const gemm_config c = cfg(dtype::f16, m, 14336, 4096);
    CHECK(c.kernel == gemm_kernel::gemv_coopmat);
    CHECK(vulkan::gemm_config_check(h100, dtype::f16, c).empty());
    CHECK(c.splits == 4);  // 56 column blocks of 256 towards 200 workgroups: 224
  }
  CHECK(cfg(dtype::f16, 8, 28672, 8192).splits == 2);
  CHECK(cfg(dtype::f16, 8, 128256, 4096).splits == 1);
  CHECK(cfg(dtype::f16, 8, 64, 256).splits == 1);  // K of one chunk: no split
  // A thin grid (16 column blocks): 32 rows of B a step, 512-deep chunks, towards 128 workgroups.
  const gemm_config thin = cfg(dtype::f16, 8, 4096, 4096);
  CHECK(thin.kernel == gemm_kernel::gemv_coopmat);
  CHECK(thin.bk == 32);
  CHECK(thin.tm == 2);
  CHECK(thin.splits == 8);
  CHECK(vulkan::gemm_config_check(h100, dtype::f16, thin).empty());
  {  // The tuner's list holds the thin default (so its search starts from it), at 16 splits too.
    const auto list = vulkan::gemm_configs(h100, dtype::f16);
    gemm_config thin16 = thin;
    thin16.splits = 16;
    auto listed = [&](const gemm_config& c) {
      return std::any_of(list.begin(), list.end(), [&](const gemm_config& x) { return x.str() == c.str(); });
    };
    CHECK(listed(thin));
    CHECK(listed(thin16));
  }
  {  // A device whose shared memory does not take the thin config (~39 KiB) runs the rule before.
    vulkan::device_info small = h100;
    small.max_shared_memory = 32768;
    const gemm_config c = vulkan::gemm_default_config(small, dtype::f16, 8, 4096, 4096);
    CHECK(c.kernel == gemm_kernel::gemv_coopmat);
    CHECK(c.bk == 16);
    CHECK(c.tm == 1);
    CHECK(c.splits == 16);
  }
  CHECK(cfg(dtype::f16, 8, 4096, 1024).bk == 16);  // 512-deep splits reach 32 workgroups: the rule before
  CHECK(cfg(dtype::f16, 8, 4096, 1024).splits == 4);
  CHECK(cfg(dtype::f16, 8, 1024, 4096).bk == 16);
  CHECK(cfg(dtype::f16, 8, 1024, 4096).splits == 16);
  // One row splits K down to one lane step (32 rows of B) where K holds 8 steps; more rows keep 8.
  CHECK(cfg(dtype::f16, 1, 2304, 768).kernel == gemm_kernel::gemv);
  CHECK(cfg(dtype::f16, 1, 2304, 768).splits == 16);  // 9 column blocks towards 384 workgroups
  CHECK(cfg(dtype::f16, 1, 768, 3072).splits == 64);  // 2 column blocks of 512 towards 192
  CHECK(cfg(dtype::f16, 2, 2304, 768).splits == 2);
  CHECK(cfg(dtype::f16, 1, 4096, 128).splits == 1);  // K of 4 steps: not split
  CHECK(cfg(dtype::f32, 1, 4096, 4096).splits == 16);  // 16 column blocks: 256 workgroups, 8 steps deep as before
  CHECK(cfg(dtype::f16, 17, 14336, 4096).kernel == gemm_kernel::coopmat2);
  CHECK(cfg(dtype::bf16, 8, 14336, 4096).kernel == gemm_kernel::coopmat2);
  CHECK(cfg(dtype::bf16, 8, 14336, 4096).splits == 8);  // the 32-row tile's 112 columns towards 896 workgroups
  CHECK(cfg(dtype::f32, 8, 14336, 4096).kernel == gemm_kernel::gemv);
  CHECK(vulkan::gemm_default_config(h100, dtype::f16, 8, 14336, 4096, false).kernel == gemm_kernel::gemv);
  int n = 0;
  for (const auto& c : vulkan::gemm_configs(h100, dtype::f16)) n += c.kernel == gemm_kernel::gemv_coopmat;
  CHECK(n >= 15);
}
