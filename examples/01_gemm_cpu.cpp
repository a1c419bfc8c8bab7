// 01_gemm_cpu.cpp — the first kforge program: a gemm on Eigen matrices with a
// fused bias + GELU epilogue, on the reference policy.
//
//   build/examples/01_gemm_cpu
//
// Tensors are non-owning views: Eigen matrices of either storage order, maps,
// spans or raw pointers with a shape all work, and nothing is transposed
// behind your back.
#include <kforge/kforge.hpp>

#include <iostream>

int main() {
  const int m = 64, n = 48, k = 40;
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(m, k);  // column-major
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> b =
      Eigen::MatrixXf::Random(k, n);                   // row-major
  Eigen::VectorXf bias = Eigen::VectorXf::Constant(n, 0.1f);
  Eigen::MatrixXf c(m, n);

  // C = gelu(A·B + bias), the epilogue fused into the kernel's write-back.
  kforge::run<kforge::policy::eigen>(kforge::op::gemm<float, kforge::epilogue::bias_gelu>{}, a, b, bias, c);

  // The same by hand, to show what was computed.
  Eigen::MatrixXf expect = ((a * b).rowwise() + bias.transpose())
                               .unaryExpr([](float x) { return kforge::math::gelu_erf(x); });
  std::cout << "C[0,0] = " << c(0, 0) << ", max |C - expected| = " << (c - expect).cwiseAbs().maxCoeff() << "\n";

  // Shapes are checked: a mismatch is a kforge::shape_error naming the op and both shapes.
  try {
    Eigen::MatrixXf wrong(k + 1, n);
    kforge::run<kforge::policy::eigen>(kforge::op::gemm<float>{}, a, wrong, c);
  } catch (const kforge::shape_error& e) {
    std::cout << "caught: " << e.what() << "\n";
  }
}
