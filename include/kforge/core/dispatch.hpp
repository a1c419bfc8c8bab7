// kforge/core/dispatch.hpp — the one join point of ops and policies.
//
//   kforge::run<Policy>(op, inputs..., output);
//
// A backend specialises detail::impl<Policy, Op> (selected with `requires`),
// giving it `static constexpr bool available = true` and a static run() that
// takes tensor_view<const T> inputs and tensor_view<T> outputs. run() converts
// every argument to that canonical view first (core/tensor.hpp), so one
// instantiation serves Eigen matrices, maps, spans and raw views alike.
//
// An unsupported (policy, op) pair is a compile error: detail::refuse<Policy,
// Op> is specialised next to every op family with a static_assert whose
// message starts "kforge::<op>:", and the compiler prints both types in the
// instantiation that fails.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kforge/core/tensor.hpp"

namespace kforge {
namespace detail {

/// Implementation of Op under Policy. The primary template has none.
template <class Policy, class Op>
struct impl {
  static constexpr bool available = false;
};

template <class>
inline constexpr bool always_false = false;

/// The refusal. Op headers specialise it per op family (KFORGE_REFUSE).
template <class Policy, class Op>
struct refuse {
  static_assert(always_false<Policy>, "kforge: this op has no implementation for this policy (see refuse<Policy, Op> above)");
};

}  // namespace detail

/// True when Policy implements Op.
template <class Policy, class Op>
concept supports = detail::impl<Policy, Op>::available;

// An op's operands, as its descriptor declares them: `arity` inputs, then
// `outputs` outputs (1 unless it declares more: topk writes values and
// indices), all of its value_type unless it lists each operand's element type
// in `operand_types` (a std::tuple in call order: embedding's ids and topk's
// indices are std::int32_t).
namespace detail {
template <class Op>
constexpr int outputs_of() {
  if constexpr (requires { Op::outputs; }) return Op::outputs;
  else return 1;
}
template <class Op, std::size_t I>
struct operand_type_of {
  using type = typename Op::value_type;
};
template <class Op, std::size_t I>
  requires requires { typename Op::operand_types; }
struct operand_type_of<Op, I> {
  using type = std::tuple_element_t<I, typename Op::operand_types>;
};
}  // namespace detail

/// How many outputs Op writes (they follow its Op::arity inputs).
template <class Op>
inline constexpr int op_outputs_v = detail::outputs_of<Op>();
/// The element type of Op's operand I (inputs, then outputs).
template <class Op, std::size_t I>
using op_operand_t = typename detail::operand_type_of<Op, I>::type;

/// Runs op under Policy on the given tensors (inputs first, then the output(s)).
template <class Policy, class Op, class... Args>
void run(const Op& op, Args&&... args) {
  if constexpr (!supports<Policy, Op>) {
    [[maybe_unused]] detail::refuse<Policy, Op> refused;
  } else {
    detail::impl<Policy, Op>::run(op, detail::canonical(std::forward<Args>(args))...);
  }
}

}  // namespace kforge

/// Declares the refusal for one op family: `KFORGE_REFUSE(gemm, (class T, class E, class A), (T, E, A))`.
#define KFORGE_REFUSE(OPNAME, TPARAMS, TARGS)                                                           \
  namespace kforge::detail {                                                                            \
  template <class Policy, KFORGE_DETAIL_UNPAREN TPARAMS>                                                \
  struct refuse<Policy, ::kforge::op::OPNAME<KFORGE_DETAIL_UNPAREN TARGS>> {                            \
    static_assert(always_false<Policy>, "kforge::" #OPNAME                                              \
                                        ": this policy has no implementation of this op; both types "   \
                                        "are named in refuse<Policy, Op> above");                       \
  };                                                                                                    \
  }
#define KFORGE_DETAIL_UNPAREN(...) __VA_ARGS__
