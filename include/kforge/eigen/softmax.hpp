// kforge/eigen/softmax.hpp — reference softmax, layer_norm and rms_norm over
// the last axis: rows gathered into a float matrix, computed row-wise (the
// norms' statistics and outputs in double, rounded once).
#pragma once

#include <cmath>
#include <limits>

#include "kforge/eigen/common.hpp"
#include "kforge/ops/norm.hpp"
#include "kforge/ops/softmax.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::eigen {

/// The rows of a last-axis op as a dense rows × cols float matrix.
template <class T>
array_rm gather_rows(const rows_args<T>& g) {
  const Eigen::ArrayXf flat = gather(g.x);
  return Eigen::Map<const array_rm>(flat.data(), g.rows, g.cols);
}

inline void softmax_rows(array_rm& m) {
  for (index_t r = 0; r < m.rows(); ++r) {
    auto row = m.row(r);
    const float mx = row.template maxCoeff<Eigen::PropagateNaN>();
    row = (row - mx).exp();
    row /= row.sum();
  }
}

}  // namespace kforge::eigen

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::softmax<T>> : softmax_entry<impl<policy::eigen, op::softmax<T>>, op::softmax<T>> {
  static void compute(const op::softmax<T>&, const rows_args<T>& g) {
    if (g.rows * g.cols == 0) return;
    eigen::array_rm m = eigen::gather_rows(g);
    eigen::softmax_rows(m);
    eigen::scatter(Eigen::Map<const Eigen::ArrayXf>(m.data(), m.size()), g.y);
  }
};

template <class T>
struct impl<policy::eigen, op::layer_norm<T>> : norm_entry<impl<policy::eigen, op::layer_norm<T>>, op::layer_norm<T>> {
  static void compute(const op::layer_norm<T>& op, const norm_args<T>& g) {
    if (g.rows * g.cols == 0) return;
    eigen::array_rm m = eigen::gather_rows(g);
    const Eigen::ArrayXf gamma = eigen::gather(g.gamma), beta = eigen::gather(g.beta);
    for (index_t r = 0; r < m.rows(); ++r) {
      // Mean and variance in double: rows whose mean dwarfs their spread
      // (the suite's offset_rows) would otherwise carry the reference's own
      // f32 rounding of the mean into every output.
      auto row = m.row(r);
      const Eigen::ArrayXd rd = row.transpose().template cast<double>();
      const double mean = rd.mean();
      const double var = (rd - mean).square().mean();
      const Eigen::ArrayXd y = (rd - mean) / std::sqrt(var + static_cast<double>(op.epsilon)) *
                                   gamma.template cast<double>() + beta.template cast<double>();
      row = y.transpose().template cast<float>();
    }
    eigen::scatter(Eigen::Map<const Eigen::ArrayXf>(m.data(), m.size()), g.y);
  }
};

template <class T>
struct impl<policy::eigen, op::rms_norm<T>> : norm_entry<impl<policy::eigen, op::rms_norm<T>>, op::rms_norm<T>> {
  static void compute(const op::rms_norm<T>& op, const norm_args<T>& g) {
    if (g.rows * g.cols == 0) return;
    eigen::array_rm m = eigen::gather_rows(g);
    const Eigen::ArrayXf gamma = eigen::gather(g.gamma);
    for (index_t r = 0; r < m.rows(); ++r) {
      auto row = m.row(r);
      const Eigen::ArrayXd rd = row.transpose().template cast<double>();
      const double ms = rd.square().mean();
      row = (rd / std::sqrt(ms + static_cast<double>(op.epsilon)) * gamma.template cast<double>()).transpose().template cast<float>();
    }
    eigen::scatter(Eigen::Map<const Eigen::ArrayXf>(m.data(), m.size()), g.y);
  }
};
}  // namespace kforge::detail
