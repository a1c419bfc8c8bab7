// kforge/validate/execute.hpp — execute<Policy>(problem, tensors): the typed
// run<Policy>(op, ...) call a run-time problem stands for. Dtype, op and
// epilogue names are switched over here, once, so that the CLI, the suite and
// the tuner never spell out the op types themselves. A (policy, op, dtype)
// the policy does not implement throws unsupported_error.
#pragma once

#include <utility>
#include <vector>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/ops.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge {
namespace detail {

template <class Policy, class T, class Op, std::size_t... I>
void run_tensors(const Op& op, std::vector<host_tensor>& ts, std::index_sequence<I...>) {
  if constexpr (supports<Policy, Op>) {
    run<Policy>(op, std::as_const(ts[I]).template view<T>()..., ts.back().template view<T>());
  } else {
    throw unsupported_error("kforge::" + std::string(Op::name) + ": policy " + Policy::name() +
                            " has no implementation for dtype " + std::string(to_string(dtype_of<T>())));
  }
}

template <class Policy, class T, class Op>
void run_tensors(const Op& op, std::vector<host_tensor>& ts) {
  if (ts.size() != static_cast<std::size_t>(Op::arity) + 1)
    throw argument_error("kforge::" + std::string(Op::name) + ": expected " + std::to_string(Op::arity + 1) +
                         " tensors, got " + std::to_string(ts.size()));
  run_tensors<Policy, T>(op, ts, std::make_index_sequence<Op::arity>{});
}

/// Calls f(epilogue-type{}) for an epilogue name.
template <class F>
void with_epilogue(std::string_view e, F&& f) {
  if (e == "none") f(epilogue::none{});
  else if (e == "bias") f(epilogue::bias{});
  else if (e == "relu") f(epilogue::relu{});
  else if (e == "bias_relu") f(epilogue::bias_relu{});
  else if (e == "leaky_relu") f(epilogue::leaky_relu{});
  else if (e == "bias_leaky_relu") f(epilogue::bias_leaky_relu{});
  else if (e == "gelu_tanh") f(epilogue::gelu_tanh{});
  else if (e == "bias_gelu_tanh") f(epilogue::bias_gelu_tanh{});
  else if (e == "gelu" || e == "gelu_erf") f(epilogue::gelu{});
  else if (e == "bias_gelu" || e == "bias_gelu_erf") f(epilogue::bias_gelu{});
  else if (e == "silu") f(epilogue::silu{});
  else if (e == "bias_silu") f(epilogue::bias_silu{});
  else
    throw argument_error("kforge: unknown epilogue '" + std::string(e) +
                         "' (expected none, bias, relu, leaky_relu, gelu, gelu_tanh, silu, or bias_<activation>)");
}

template <class F>
void with_unary(std::string_view name, F&& f) {
  const auto g = parse_fn(name);
  if (!g || *g == fn::identity) throw argument_error("kforge: unknown unary op '" + std::string(name) + "'");
  switch (*g) {
    case fn::relu: f(std::integral_constant<fn, fn::relu>{}); break;
    case fn::leaky_relu: f(std::integral_constant<fn, fn::leaky_relu>{}); break;
    case fn::gelu_tanh: f(std::integral_constant<fn, fn::gelu_tanh>{}); break;
    case fn::gelu_erf: f(std::integral_constant<fn, fn::gelu_erf>{}); break;
    case fn::silu: f(std::integral_constant<fn, fn::silu>{}); break;
    case fn::exp: f(std::integral_constant<fn, fn::exp>{}); break;
    case fn::tanh: f(std::integral_constant<fn, fn::tanh>{}); break;
    case fn::sigmoid: f(std::integral_constant<fn, fn::sigmoid>{}); break;
    case fn::abs: f(std::integral_constant<fn, fn::abs>{}); break;
    case fn::neg: f(std::integral_constant<fn, fn::neg>{}); break;
    case fn::identity: break;
  }
}

template <class F>
void with_binop(std::string_view name, F&& f) {
  const auto g = parse_binop(name);
  if (!g) throw argument_error("kforge: unknown binary op '" + std::string(name) + "'");
  switch (*g) {
    case binop::add: f(std::integral_constant<binop, binop::add>{}); break;
    case binop::sub: f(std::integral_constant<binop, binop::sub>{}); break;
    case binop::mul: f(std::integral_constant<binop, binop::mul>{}); break;
    case binop::div: f(std::integral_constant<binop, binop::div>{}); break;
    case binop::max: f(std::integral_constant<binop, binop::max>{}); break;
    case binop::min: f(std::integral_constant<binop, binop::min>{}); break;
  }
}

template <class F>
void with_reduce(std::string_view name, F&& f) {
  const auto g = name.starts_with("reduce_") ? parse_reduce_fn(name.substr(7)) : std::nullopt;
  if (!g) throw argument_error("kforge: unknown reduction '" + std::string(name) + "'");
  switch (*g) {
    case reduce_fn::sum: f(std::integral_constant<reduce_fn, reduce_fn::sum>{}); break;
    case reduce_fn::mean: f(std::integral_constant<reduce_fn, reduce_fn::mean>{}); break;
    case reduce_fn::max: f(std::integral_constant<reduce_fn, reduce_fn::max>{}); break;
    case reduce_fn::min: f(std::integral_constant<reduce_fn, reduce_fn::min>{}); break;
  }
}

template <class Policy, class T>
void execute_typed(const problem& p, std::vector<host_tensor>& ts) {
  switch (find_op(p.op).family) {
    case op_family::gemm:
      with_epilogue(p.epilogue, [&](auto e) {
        op::gemm<T, decltype(e)> o;
        o.epilogue.slope = p.slope;
        o.alpha = p.alpha;
        o.beta = p.beta;
        run_tensors<Policy, T>(o, ts);
      });
      break;
    case op_family::unary:
      with_unary(p.op, [&](auto f) {
        op::unary<T, decltype(f)::value> o;
        o.slope = p.slope;
        run_tensors<Policy, T>(o, ts);
      });
      break;
    case op_family::binary:
      with_binop(p.op, [&](auto f) { run_tensors<Policy, T>(op::binary<T, decltype(f)::value>{}, ts); });
      break;
    case op_family::reduce:
      with_reduce(p.op, [&](auto f) {
        op::reduce<T, decltype(f)::value> o;
        o.axis = p.axis;
        run_tensors<Policy, T>(o, ts);
      });
      break;
    case op_family::softmax: run_tensors<Policy, T>(op::softmax<T>{}, ts); break;
    case op_family::layer_norm: {
      op::layer_norm<T> o;
      if (p.epsilon >= 0) o.epsilon = p.epsilon;
      run_tensors<Policy, T>(o, ts);
      break;
    }
    case op_family::rms_norm: {
      op::rms_norm<T> o;
      if (p.epsilon >= 0) o.epsilon = p.epsilon;
      run_tensors<Policy, T>(o, ts);
      break;
    }
    case op_family::conv2d:
      with_epilogue(p.epilogue, [&](auto e) {
        op::conv2d<T, decltype(e)> o;
        o.epilogue.slope = p.slope;
        o.stride_h = p.stride[0], o.stride_w = p.stride[1];
        o.pad_h = p.pad[0], o.pad_w = p.pad[1];
        o.dilation_h = p.dilation[0], o.dilation_w = p.dilation[1];
        o.groups = p.groups;
        run_tensors<Policy, T>(o, ts);
      });
      break;
    case op_family::attention: {
      op::attention<T> o;
      o.causal = p.causal;
      o.scale = p.scale;
      run_tensors<Policy, T>(o, ts);
      break;
    }
  }
}

}  // namespace detail

/// Runs problem p under Policy on host tensors (inputs in call order, output last).
template <class Policy>
void execute(const problem& p, std::vector<host_tensor>& ts) {
  switch (p.type) {
    case dtype::f32: detail::execute_typed<Policy, float>(p, ts); break;
    case dtype::f16: detail::execute_typed<Policy, half>(p, ts); break;
    case dtype::bf16: detail::execute_typed<Policy, bfloat16>(p, ts); break;
    case dtype::f64: throw unsupported_error("kforge::" + p.op + ": f64 is not a kernel dtype (f32, f16, bf16)");
  }
}

}  // namespace kforge
