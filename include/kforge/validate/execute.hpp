// kforge/validate/execute.hpp — execute<Policy>(problem, tensors): the typed
// run<Policy>(op, ...) call a run-time problem stands for. The dtype is
// switched over here and the op by its family's traits (with_op), so that the
// CLI, the suite and the tuner never spell out the op types themselves. A
// (policy, op, dtype) the policy does not implement throws unsupported_error.
#pragma once

#include <utility>
#include <vector>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/ops.hpp"
#include "kforge/policy/policy.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge {
namespace detail {

/// Operand I of Op from its host tensor: a const view of an input, a
/// mutable view of an output, of the operand's own element type.
template <class Op, std::size_t I>
auto operand_view(host_tensor& h) {
  using E = op_operand_t<Op, I>;
  if constexpr (I < static_cast<std::size_t>(Op::arity)) return std::as_const(h).template view<E>();
  else return h.template view<E>();
}

template <class Policy, class T, class Op, std::size_t... I>
void run_tensors(const Op& op, std::vector<host_tensor>& ts, std::index_sequence<I...>) {
  if constexpr (supports<Policy, Op>) {
    run<Policy>(op, operand_view<Op, I>(ts[I])...);
  } else {
    throw unsupported_error("kforge::" + std::string(Op::name) + ": policy " + Policy::name() +
                            " has no implementation for dtype " + std::string(to_string(dtype_of<T>())));
  }
}

template <class Policy, class T, class Op>
void run_tensors(const Op& op, std::vector<host_tensor>& ts) {
  constexpr std::size_t n = static_cast<std::size_t>(Op::arity + op_outputs_v<Op>);
  if (ts.size() != n)
    throw argument_error("kforge::" + std::string(Op::name) + ": expected " + std::to_string(n) + " tensors, got " +
                         std::to_string(ts.size()));
  run_tensors<Policy, T>(op, ts, std::make_index_sequence<n>{});
}

template <class Policy, class T>
void execute_typed(const problem& p, std::vector<host_tensor>& ts) {
  visit_family(p, [&]<class F>() { F::template with_op<T>(p, [&](const auto& o) { run_tensors<Policy, T>(o, ts); }); });
}

}  // namespace detail

/// Runs problem p under Policy on host tensors (inputs in call order, then the outputs).
template <class Policy>
void execute(const problem& p, std::vector<host_tensor>& ts) {
  switch (p.type) {
    case dtype::f32: detail::execute_typed<Policy, float>(p, ts); break;
    case dtype::f16: detail::execute_typed<Policy, half>(p, ts); break;
    case dtype::bf16: detail::execute_typed<Policy, bfloat16>(p, ts); break;
    case dtype::f64:
    case dtype::i32:
      throw unsupported_error("kforge::" + p.op + ": " + std::string(to_string(p.type)) +
                              " is not a kernel dtype (f32, f16, bf16)");
  }
}

}  // namespace kforge

// kforge's own executables (tests, tool, benchmarks) compile the typed
// executors once, in the kforge_instances library (instances/), and every
// other translation unit only declares them: KFORGE_EXTERN_INSTANCES, set by
// linking that library, never by a consumer of the headers. Each of these is
// the whole op catalogue in one dtype under one policy (3 MB of code in a
// test that validates against Eigen, half of its compile time).
#define KFORGE_EXECUTE_INSTANCES(EXTERN, P)                                                   \
  EXTERN template void execute_typed<P, float>(const problem&, std::vector<host_tensor>&);    \
  EXTERN template void execute_typed<P, half>(const problem&, std::vector<host_tensor>&);     \
  EXTERN template void execute_typed<P, bfloat16>(const problem&, std::vector<host_tensor>&);
#if defined(KFORGE_EXTERN_INSTANCES)
namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(extern, policy::eigen)
KFORGE_EXECUTE_INSTANCES(extern, policy::blocked<>)
KFORGE_EXECUTE_INSTANCES(extern, policy::threaded<>)
#if defined(KFORGE_HAS_VULKAN)
KFORGE_EXECUTE_INSTANCES(extern, policy::vulkan<>)
#endif
#if defined(KFORGE_HAS_TUNE)
KFORGE_EXECUTE_INSTANCES(extern, policy::autotune)
#endif
}  // namespace kforge::detail
#endif
