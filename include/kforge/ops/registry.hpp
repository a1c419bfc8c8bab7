// kforge/ops/registry.hpp — every op family kforge knows, and the run-time
// table through which problems, the suite, the generation module and the tool
// reach a family's traits by op name.
//
// Adding an op family: its descriptor (ops/<op>.hpp), its traits
// (ops/<op>_traits.hpp, core/op_traits.hpp says what they hold), and one
// entry in `op_families` below; then its Eigen reference and one
// implementation per backend. Nothing else names it.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kforge/ops/attention_traits.hpp"
#include "kforge/ops/conv2d_traits.hpp"
#include "kforge/ops/elementwise_traits.hpp"
#include "kforge/ops/embedding_traits.hpp"
#include "kforge/ops/gated_traits.hpp"
#include "kforge/ops/gemm_traits.hpp"
#include "kforge/ops/kv_append_traits.hpp"
#include "kforge/ops/norm_traits.hpp"
#include "kforge/ops/reduce_traits.hpp"
#include "kforge/ops/rope_traits.hpp"
#include "kforge/ops/topk_traits.hpp"

namespace kforge {

template <class... F>
struct type_list {};

/// Every op family, in the order the tool lists their ops.
using op_families = type_list<gemm_traits, unary_traits, binary_traits, reduce_traits, softmax_traits, norm_traits,
                              conv2d_traits, attention_traits, rope_traits, gated_traits,
                              kv_append_traits, embedding_traits, topk_traits>;

/// A family's traits as run-time function pointers (the typed members,
/// with_op and problem_of, are reached through visit_family / traits_of).
struct family_table {
  std::string_view family, shape_syntax;
  bool compute_bound, inf_inputs;
  std::span<const op_name> (*ops)();
  bool (*shape_ok)(const problem&);
  std::vector<operand_spec> (*operands)(const problem&);
  std::span<const cli_option> (*options)();
  std::string (*describe)(const problem&);
  double (*flops)(const problem&);
  double (*bytes)(const problem&);
  case_magnitudes (*magnitudes)(const problem&);
  std::vector<double> (*error_scale)(const problem&, const std::vector<host_tensor>&, const host_tensor&,
                                     const linear_scale_fn&);
  tolerance (*tolerance_of)(const problem&);
  kernel_contract (*contract)(const problem&);
  launch (*launch_of)(const problem&, const launch_tiles&);
  std::string (*semantics)(const problem&);
  std::string (*source_spec)(const problem&);
  std::string (*record_params)(const problem&);
  problem (*held_out)(const problem&, held_out_draw&);
  problem (*mutation_problem)(const std::string&);
  bool (*prepare_case)(const problem&, input_case, std::vector<host_tensor>&, std::uint64_t);
  const void* id;  ///< identifies the traits type (is_family)
};

namespace detail {
template <class F>
inline constexpr char family_id = 0;

template <class F>
const family_table& table_of() {
  static const family_table t{F::family,        F::shape_syntax,  F::compute_bound,  F::inf_inputs,   &F::ops,
                              &F::shape_ok,     &F::operands,     &F::options,       &F::describe,    &F::flops,
                              &F::bytes,        &F::magnitudes,   &F::error_scale,   &F::tolerance_of, &F::contract,
                              &F::launch_of,    &F::semantics,    &F::source_spec,   &F::record_params, &F::held_out,
                              &F::mutation_problem, &F::prepare_case, &family_id<F>};
  return t;
}
template <class... F>
std::vector<const family_table*> tables(type_list<F...>) {
  return {&table_of<F>()...};
}
}  // namespace detail

/// Every family's table, in op_families order.
inline const std::vector<const family_table*>& all_families() {
  static const std::vector<const family_table*> t = detail::tables(op_families{});
  return t;
}

/// One op name, its SHAPE syntax and its family.
struct op_info {
  std::string_view name;
  std::string_view shape_help;
  const family_table* family;
};

/// Every op the library knows.
inline const std::vector<op_info>& all_ops() {
  static const std::vector<op_info> ops = [] {
    std::vector<op_info> v;
    for (const family_table* f : all_families())
      for (const op_name& o : f->ops()) v.push_back({o.name, o.shape_help, f});
    return v;
  }();
  return ops;
}

inline const op_info& find_op(std::string_view name) {
  for (const auto& o : all_ops())
    if (o.name == name) return o;
  std::string known;
  for (const auto& o : all_ops()) known += (known.empty() ? "" : ", ") + std::string(o.name);
  throw argument_error("kforge: unknown op '" + std::string(name) + "' (known: " + known + ")");
}

/// The traits table of p's op.
inline const family_table& family_of(const problem& p) { return *find_op(p.op).family; }

/// Whether p's op belongs to the family of traits F.
template <class F>
bool is_family(const problem& p) {
  return family_of(p).id == &detail::family_id<F>;
}

/// Calls f.template operator()<F>() with the traits F of p's op family.
template <class Fn>
void visit_family(const problem& p, Fn&& f) {
  const void* id = family_of(p).id;
  [&]<class... F>(type_list<F...>) {
    (void)((id == &detail::family_id<F> ? (f.template operator()<F>(), true) : false) || ...);
  }(op_families{});
}

/// The traits of a typed descriptor: traits_of_t<op::rms_norm<float>> is norm_traits.
template <class Op, class L = op_families>
struct traits_of {};
template <class Op, class F, class... R>
struct traits_of<Op, type_list<F, R...>>
    : std::conditional_t<requires(const Op& o) { F::problem_of(o); }, std::type_identity<F>, traits_of<Op, type_list<R...>>> {};
template <class Op>
using traits_of_t = typename traits_of<Op>::type;

}  // namespace kforge
