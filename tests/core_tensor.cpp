// Tests of kforge/core: tensor views from Eigen (both storage orders), spans,
// vectors and raw pointers; shape errors that name the op and both shapes;
// int32 operands and ops with several outputs.
#include <doctest/doctest.h>

#include <kforge/kforge.hpp>
#include <kforge/validate/problem.hpp>

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

using namespace kforge;

TEST_CASE("views of Eigen matrices keep their storage order") {
  Eigen::MatrixXf cm(3, 4);  // column-major
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm(3, 4);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) cm(i, j) = rm(i, j) = static_cast<float>(10 * i + j);
  auto vc = as_view(cm);
  auto vr = as_view(rm);
  CHECK(vc.dims == shape{3, 4});
  CHECK(vc.strides == shape{1, 3});
  CHECK(vr.strides == shape{4, 1});
  CHECK(vc.cols_contiguous());
  CHECK(vr.rows_contiguous());
  CHECK(vr.is_contiguous());
  CHECK_FALSE(vc.is_contiguous());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      CHECK(vc(i, j) == cm(i, j));
      CHECK(vr(i, j) == rm(i, j));
    }
  // A block keeps the parent's strides.
  auto vb = as_view(cm.block(1, 1, 2, 2));
  CHECK(vb.dims == shape{2, 2});
  CHECK(vb(1, 1) == cm(2, 2));
  // Const objects give const views; vectors give rank-1 views.
  const Eigen::VectorXf v = Eigen::VectorXf::LinSpaced(5, 0, 4);
  auto vv = as_view(v);
  static_assert(std::is_same_v<decltype(vv), tensor_view<const float>>);
  CHECK(vv.rank() == 1);
  CHECK(vv(4) == 4.0f);
}

TEST_CASE("views of spans, vectors and pointers") {
  std::vector<float> buf(24);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
  auto v = make_view(buf, {2, 3, 4});
  CHECK(v.strides == shape{12, 4, 1});
  CHECK(v(1, 2, 3) == 23.0f);
  CHECK(as_view(std::span<float>(buf)).numel() == 24);
  auto t = make_view(buf.data(), {4, 3}, {1, 4});  // a transposed view
  CHECK(t(2, 1) == buf[2 + 4]);
  CHECK_THROWS_AS(make_view(buf, {5, 5}), shape_error);
  CHECK_THROWS_AS((tensor_view<float>(buf.data(), shape{2, 2}, shape{1})), shape_error);
  CHECK(v.reshaped({6, 4})(5, 3) == 23.0f);
  CHECK_THROWS_AS(t.reshaped({12}), shape_error);
}

TEST_CASE("shape errors name the op, the expected and the actual shape") {
  Eigen::MatrixXf a(4, 3), b(5, 2), c(4, 2);
  try {
    run<policy::eigen>(op::gemm<float>{}, a, b, c);
    FAIL("expected shape_error");
  } catch (const shape_error& e) {
    const std::string m = e.what();
    CHECK(m.find("kforge::gemm") != std::string::npos);
    CHECK(m.find("[5x2]") != std::string::npos);
    CHECK(m.find("[3x2]") != std::string::npos);
  }
  std::vector<float> x(12), y(10);
  CHECK_THROWS_AS(run<policy::eigen>(op::softmax<float>{}, make_view(x, {3, 4}), make_view(y, {2, 5})), shape_error);
  std::vector<float> bias(3);
  Eigen::MatrixXf b2(3, 2);
  CHECK_THROWS_AS(run<policy::eigen>(op::gemm<float, epilogue::bias>{}, a, b2, bias, c), shape_error);
  CHECK_THROWS_AS(run<policy::eigen>(op::binary<float, binop::add>{}, make_view(x, {3, 4}), make_view(y, {10}),
                                     make_view(x, {3, 4})),
                  shape_error);
  op::reduce<float, reduce_fn::sum> r;
  r.axis = 2;
  CHECK_THROWS_AS(run<policy::eigen>(r, make_view(x, {3, 4}), make_view(y.data(), {3})), argument_error);
  op::conv2d<float> cv;
  cv.groups = 2;
  std::vector<float> cx(3 * 5 * 5), cw(4 * 3 * 3 * 3), cy(4 * 3 * 3);
  CHECK_THROWS_AS(run<policy::eigen>(cv, make_view(cx, {1, 3, 5, 5}), make_view(cw, {4, 3, 3, 3}),
                                     make_view(cy, {1, 4, 3, 3})),
                  shape_error);
}

TEST_CASE("broadcast shapes follow NumPy") {
  CHECK(broadcast_shape("add", shape{7, 1, 33}, shape{17, 1}) == shape{7, 17, 33});
  CHECK(broadcast_shape("add", shape{3}, shape{2, 3}) == shape{2, 3});
  CHECK_THROWS_AS(broadcast_shape("add", shape{3, 4}, shape{3}), shape_error);
}

TEST_CASE("problem parsing rejects bad shapes and unknown ops") {
  problem p;
  p.op = "gemm";
  set_shape(p, "64x48x40");
  CHECK(p.dims == shape{64, 48, 40});
  CHECK_THROWS_AS(set_shape(p, "64x48"), argument_error);
  CHECK_THROWS_AS(set_shape(p, "64xx40"), argument_error);
  CHECK_THROWS_AS(set_shape(p, "64x-1x40"), argument_error);
  p.op = "conv2d";
  set_shape(p, "1x3x8x8,4x3x3x3");
  CHECK(p.dims2 == shape{4, 3, 3, 3});
  CHECK(operands(p).back().dims == shape{1, 4, 6, 6});
  p.op = "frobnicate";
  CHECK_THROWS_AS(set_shape(p, "3x3"), argument_error);
  CHECK_THROWS_AS(parse_dtype("f8"), argument_error);
}

TEST_CASE("supports<> is a concept over (policy, op)") {
  static_assert(supports<policy::eigen, op::gemm<float, epilogue::bias_gelu>>);
  static_assert(supports<policy::eigen, op::attention<half>>);
  struct nothing {};
  static_assert(!supports<nothing, op::gemm<float>>);
  CHECK(true == supports<policy::eigen, op::conv2d<bfloat16>>);
}

TEST_CASE("int32 operands: views, dtype, host tensors and descriptors' operand types") {
  static_assert(dtype_of<std::int32_t>() == dtype::i32);
  CHECK(to_string(dtype::i32) == "i32");
  CHECK(size_of(dtype::i32) == 4);
  CHECK_FALSE(is_float(dtype::i32));
  CHECK(is_float(dtype::bf16));
  std::vector<std::int32_t> ids{3, 1, 4, 1, 5, 9};
  auto v = as_view(ids);
  static_assert(std::is_same_v<decltype(v), tensor_view<std::int32_t>>);
  CHECK(make_view(ids, shape{2, 3})(1, 2) == 9);
  // Integers past float's 24 bits stay exact.
  host_tensor h(dtype::i32, shape{2, 2}, shape{2, 1});
  h.set_i32(3, (1 << 30) + 1);
  CHECK(h.get_i32(3) == (1 << 30) + 1);
  CHECK(h.view<std::int32_t>()(1, 1) == (1 << 30) + 1);
  CHECK_THROWS_AS(h.view<float>(), argument_error);
  host_tensor f(dtype::f32, shape{1}, shape{1});
  CHECK_THROWS_AS(f.get_i32(0), argument_error);
  // Descriptors that declare nothing: one output, every operand of value_type.
  static_assert(op_outputs_v<op::gemm<float>> == 1);
  static_assert(std::is_same_v<op_operand_t<op::gemm<half>, 2>, half>);
}

TEST_CASE("operands of other types and several outputs: embedding's ids, topk's values and indices") {
  static_assert(op_outputs_v<op::topk<float>> == 2);
  static_assert(std::is_same_v<op_operand_t<op::topk<half>, 1>, half>);
  static_assert(std::is_same_v<op_operand_t<op::topk<half>, 2>, std::int32_t>);
  static_assert(std::is_same_v<op_operand_t<op::embedding<bfloat16>, 1>, std::int32_t>);
  problem t;
  t.op = "topk";
  t.type = dtype::f16;
  set_shape(t, "3x100");
  t.attrs["k"] = 7;
  const auto ts = operands(t);
  REQUIRE(ts.size() == 3);
  CHECK_FALSE(ts[0].is_output);
  CHECK((ts[1].is_output && ts[2].is_output));
  CHECK(operand_type(t, ts[1]) == dtype::f16);
  CHECK(operand_type(t, ts[2]) == dtype::i32);
  CHECK(output_count(ts) == 2);
  const auto tt = allocate(t);
  CHECK(tt[2].type == dtype::i32);
  CHECK(tt[2].dims == shape{3, 7});
  CHECK(min_bytes(t) == 3 * 100 * 2 + 3 * 7 * 2 + 3 * 7 * 4);
  problem e;
  e.op = "embedding";
  set_shape(e, "32000x64,2x5");
  const auto es = operands(e);
  CHECK(operand_type(e, es[1]) == dtype::i32);
  CHECK(es[1].id_bound == 32000);
  CHECK(es.back().dims == shape{2, 5, 64});
  CHECK(min_bytes(e) == 10 * 4 + 2 * 10 * 64 * 4);  // the rows read, not the table
}
