#pragma once

#include <vector>

#include <Eigen/Dense>

namespace stagecut {

/// The minimizer of a strictly convex quadratic over a box, and which of its coordinates the
/// box holds.
struct BoxedMinimum {
  Eigen::VectorXd point;
  /// Per coordinate: true where the minimum sits on `lower` or `upper` (exactly).
  std::vector<bool> at_bound;
};

/// Minimizes ½ xᵀ H x − bᵀ x over lower <= x_i <= upper, H symmetric positive definite (a ridge
/// problem's normal matrix, so the minimum is unique). Exact: the unconstrained solution where
/// it lies in the box; otherwise projected coordinate descent finds the coordinates the box
/// holds, and the others are solved exactly from the normal equations with those fixed, once the
/// result meets the optimality conditions.
BoxedMinimum minimizeBoxedQuadratic(const Eigen::MatrixXd& hessian, const Eigen::VectorXd& linear, double lower,
                                    double upper);

}  // namespace stagecut
