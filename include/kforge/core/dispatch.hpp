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

/// Runs op under Policy on the given tensors (inputs first, output last).
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
