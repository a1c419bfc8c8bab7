// kforge/vulkan/problem.hpp — a run-time problem (validate/problem.hpp) on
// device tensors: the typed vulkan::record call it stands for, for tools and
// benchmarks that time kernels on device-resident data. Include it on its own
// (it includes <kforge/vulkan.hpp> and the problem registry).
//
//   std::vector<vulkan::device_operand> ts = vulkan::make_operands(ctx, p);  // operands(p) order
//   vulkan::record_problem(stream, p, ts);
//
// Each operand is a device tensor of its own element type: D, the device
// element type of p.type (float, half or bfloat16; float for a bf16 problem
// on a device without 16-bit storage, device_dtype), or std::int32_t for ids
// and indices; the op is recorded as op<D>. record_problem also takes a
// vector of device_tensor<D> for problems whose operands are all of type D. A
// (problem, dtype) policy::vulkan<> does not implement throws unsupported_error.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kforge/validate/problem.hpp"
#include "kforge/vulkan.hpp"

namespace kforge::vulkan {

/// One operand of a problem on the device, whatever its element type.
using device_operand =
    std::variant<device_tensor<float>, device_tensor<half>, device_tensor<bfloat16>, device_tensor<std::int32_t>>;

/// Device tensors (contents undefined) for every operand of p, each of its
/// element type as ctx's device stores it (device_dtype).
inline std::vector<device_operand> make_operands(context& ctx, const problem& p) {
  std::vector<device_operand> ts;
  for (const operand_spec& o : operands(p)) {
    switch (device_dtype(ctx.info(), operand_type(p, o))) {
      case dtype::f16: ts.emplace_back(std::in_place_type<device_tensor<half>>, ctx, o.dims); break;
      case dtype::bf16: ts.emplace_back(std::in_place_type<device_tensor<bfloat16>>, ctx, o.dims); break;
      case dtype::i32: ts.emplace_back(std::in_place_type<device_tensor<std::int32_t>>, ctx, o.dims); break;
      case dtype::f32: ts.emplace_back(std::in_place_type<device_tensor<float>>, ctx, o.dims); break;
      case dtype::f64: throw unsupported_error("kforge::vulkan::make_operands: f64 is not a kernel dtype");
    }
  }
  return ts;
}

namespace detail {
/// ts[i] as the device tensor type operand I of Op needs.
template <class Op, std::size_t I>
auto& operand_as(const problem& p, std::vector<device_operand>& ts) {
  using E = op_operand_t<Op, I>;
  auto* t = std::get_if<device_tensor<E>>(&ts[I]);
  if (!t)
    throw argument_error("kforge::vulkan::record_problem: " + p.op + "'s operand " + std::to_string(I) +
                         " must be a device_tensor of " + std::string(to_string(dtype_of<E>())));
  return *t;
}
template <class Op, std::size_t I, class D>
auto& operand_as(const problem&, std::vector<device_tensor<D>>& ts) {
  return ts[I];
}
/// Whether the operands of Op can be taken from V (sizeof...(I) of them):
/// any types from a vector of device_operand, type D only from a vector of
/// device_tensor<D>.
template <class Op, class V, std::size_t... I>
constexpr bool operands_fit(std::index_sequence<I...>) {
  if constexpr (Op::arity + op_outputs_v<Op> != sizeof...(I)) return false;
  else if constexpr (std::is_same_v<V, std::vector<device_operand>>) return true;
  else return (std::is_same_v<op_operand_t<Op, I>, typename V::value_type::value_type> && ...);
}

/// D: the element type the op is instantiated for (its descriptor's T).
template <class Policy, class D, class V, std::size_t... I>
void record_problem_n(stream& s, const problem& p, V& ts, std::index_sequence<I...>) {
  visit_family(p, [&]<class F>() {
    F::template with_op<D>(p, [&](const auto& op) {
      using Op = std::remove_cvref_t<decltype(op)>;
      if constexpr (supports<Policy, Op> && operands_fit<Op, V>(std::index_sequence<I...>{})) {
        record<Policy>(s, op, operand_as<Op, I>(p, ts)...);
      } else {
        throw unsupported_error("kforge::vulkan::record_problem: " + p.op + " with " + std::to_string(sizeof...(I)) +
                                " device tensors of these types has no policy::vulkan implementation");
      }
    });
  });
}

template <class Policy, class D, class V>
void record_problem_any(stream& s, const problem& p, V& ts) {
  if (ts.size() != operands(p).size())
    throw argument_error("kforge::vulkan::record_problem: " + p.op + " takes " + std::to_string(operands(p).size()) +
                         " tensors, got " + std::to_string(ts.size()));
  switch (ts.size()) {
    case 2: record_problem_n<Policy, D>(s, p, ts, std::make_index_sequence<2>{}); break;
    case 3: record_problem_n<Policy, D>(s, p, ts, std::make_index_sequence<3>{}); break;
    case 4: record_problem_n<Policy, D>(s, p, ts, std::make_index_sequence<4>{}); break;
    case 5: record_problem_n<Policy, D>(s, p, ts, std::make_index_sequence<5>{}); break;
    default: throw unsupported_error("kforge::vulkan::record_problem: " + std::to_string(ts.size()) + " operands");
  }
}
}  // namespace detail

/// Records problem p on device tensors `ts` (its operands in order, as
/// make_operands gives them) into s.
template <class Policy = policy::vulkan<>>
void record_problem(stream& s, const problem& p, std::vector<device_operand>& ts) {
  switch (device_dtype(s.ctx().info(), p.type)) {
    case dtype::f16: detail::record_problem_any<Policy, half>(s, p, ts); break;
    case dtype::bf16: detail::record_problem_any<Policy, bfloat16>(s, p, ts); break;
    default: detail::record_problem_any<Policy, float>(s, p, ts); break;  // f32, and bf16 widened
  }
}
/// The same with every operand a device_tensor<D> (the op computed as D).
template <class Policy = policy::vulkan<>, class D>
void record_problem(stream& s, const problem& p, std::vector<device_tensor<D>>& ts) {
  detail::record_problem_any<Policy, D>(s, p, ts);
}

// kforge's own executables (the tool's resident timings, bench/vk_models)
// compile the recording of every op in each dtype once, in kforge_instances
// (see kforge/validate/execute.hpp): on operands of any type, and on operands
// all of one type.
#define KFORGE_VULKAN_PROBLEM_INSTANCES(EXTERN, P)                                                                 \
  EXTERN template void record_problem_any<P, float>(stream&, const problem&, std::vector<device_operand>&);       \
  EXTERN template void record_problem_any<P, half>(stream&, const problem&, std::vector<device_operand>&);        \
  EXTERN template void record_problem_any<P, bfloat16>(stream&, const problem&, std::vector<device_operand>&);    \
  EXTERN template void record_problem_any<P, float>(stream&, const problem&, std::vector<device_tensor<float>>&); \
  EXTERN template void record_problem_any<P, half>(stream&, const problem&, std::vector<device_tensor<half>>&);   \
  EXTERN template void record_problem_any<P, bfloat16>(stream&, const problem&,                                  \
                                                       std::vector<device_tensor<bfloat16>>&);
#if defined(KFORGE_EXTERN_INSTANCES)
namespace detail {
KFORGE_VULKAN_PROBLEM_INSTANCES(extern, policy::vulkan<>)
}  // namespace detail
#endif

}  // namespace kforge::vulkan
