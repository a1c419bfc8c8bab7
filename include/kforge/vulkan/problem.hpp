// kforge/vulkan/problem.hpp — a run-time problem (validate/problem.hpp) on
// device tensors: the typed vulkan::record call it stands for, for tools and
// benchmarks that time kernels on device-resident data. Include it on its own
// (it includes <kforge/vulkan.hpp> and the problem registry).
//
//   std::vector<vulkan::device_tensor<float>> ts = ...;   // operands(p) order: inputs, then the output
//   vulkan::record_problem(stream, p, ts);
//
// D is the device element type of p.type: float, half or bfloat16 (float for
// a bf16 problem on a device without 16-bit storage, device_dtype); the op is
// recorded as op<D>. A (problem, dtype) policy::vulkan<> does not implement
// throws unsupported_error.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kforge/validate/problem.hpp"
#include "kforge/vulkan.hpp"

namespace kforge::vulkan {

namespace detail {
template <class Policy, class D, std::size_t... I>
void record_problem_n(stream& s, const problem& p, std::vector<device_tensor<D>>& ts, std::index_sequence<I...>) {
  visit_family(p, [&]<class F>() {
    F::template with_op<D>(p, [&](const auto& op) {
      using Op = std::remove_cvref_t<decltype(op)>;
      if constexpr (Op::arity + 1 == sizeof...(I) && supports<Policy, Op>) {
        record<Policy>(s, op, ts[I]...);
      } else {
        throw unsupported_error("kforge::vulkan::record_problem: " + p.op + " with " + std::to_string(sizeof...(I)) +
                                " device tensors has no policy::vulkan implementation");
      }
    });
  });
}
}  // namespace detail

/// Records problem p on device tensors `ts` (its operands in order) into s.
template <class Policy = policy::vulkan<>, class D>
void record_problem(stream& s, const problem& p, std::vector<device_tensor<D>>& ts) {
  if (ts.size() != operands(p).size())
    throw argument_error("kforge::vulkan::record_problem: " + p.op + " takes " + std::to_string(operands(p).size()) +
                         " tensors, got " + std::to_string(ts.size()));
  switch (ts.size()) {
    case 2: detail::record_problem_n<Policy>(s, p, ts, std::make_index_sequence<2>{}); break;
    case 3: detail::record_problem_n<Policy>(s, p, ts, std::make_index_sequence<3>{}); break;
    case 4: detail::record_problem_n<Policy>(s, p, ts, std::make_index_sequence<4>{}); break;
    case 5: detail::record_problem_n<Policy>(s, p, ts, std::make_index_sequence<5>{}); break;
    default: throw unsupported_error("kforge::vulkan::record_problem: " + std::to_string(ts.size()) + " operands");
  }
}

}  // namespace kforge::vulkan
