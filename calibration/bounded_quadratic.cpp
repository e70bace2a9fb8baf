#include "calibration/bounded_quadratic.h"

#include <algorithm>
#include <cmath>

namespace stagecut {

namespace {

bool insideBox(const Eigen::VectorXd& x, double lower, double upper) {
  return (x.array() >= lower).all() && (x.array() <= upper).all();
}

// Solves for the coordinates not in `fixed`, the fixed ones held at their values in `x`; then
// checks the Karush-Kuhn-Tucker conditions: the free ones inside the box, and the objective's
// gradient pointing out of the box at each fixed one (so moving it inward cannot help).
bool solveFreeCoordinates(const Eigen::MatrixXd& hessian, const Eigen::VectorXd& linear, double lower, double upper,
                          const std::vector<bool>& fixed, Eigen::VectorXd& x) {
  const Eigen::Index n = x.size();
  std::vector<Eigen::Index> free;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!fixed[static_cast<std::size_t>(i)]) free.push_back(i);
  }
  Eigen::VectorXd candidate = x;
  if (!free.empty()) {
    const auto count = static_cast<Eigen::Index>(free.size());
    Eigen::MatrixXd reduced(count, count);
    Eigen::VectorXd right(count);
    for (Eigen::Index a = 0; a < count; ++a) {
      right(a) = linear(free[static_cast<std::size_t>(a)]);
      for (Eigen::Index j = 0; j < n; ++j) {
        if (fixed[static_cast<std::size_t>(j)]) right(a) -= hessian(free[static_cast<std::size_t>(a)], j) * x(j);
      }
      for (Eigen::Index b = 0; b < count; ++b) {
        reduced(a, b) = hessian(free[static_cast<std::size_t>(a)], free[static_cast<std::size_t>(b)]);
      }
    }
    const Eigen::VectorXd solved = reduced.ldlt().solve(right);
    for (Eigen::Index a = 0; a < count; ++a) candidate(free[static_cast<std::size_t>(a)]) = solved(a);
    if (!insideBox(candidate, lower, upper)) return false;
  }
  const Eigen::VectorXd gradient = hessian * candidate - linear;
  const double tolerance = 1e-9 * (1.0 + linear.cwiseAbs().maxCoeff());
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!fixed[static_cast<std::size_t>(i)]) continue;
    const bool at_lower = candidate(i) == lower;
    if ((at_lower && gradient(i) < -tolerance) || (!at_lower && gradient(i) > tolerance)) return false;
  }
  x = candidate;
  return true;
}

}  // namespace

BoxedMinimum minimizeBoxedQuadratic(const Eigen::MatrixXd& hessian, const Eigen::VectorXd& linear, double lower,
                                    double upper) {
  const Eigen::Index n = linear.size();
  BoxedMinimum result;
  result.at_bound.assign(static_cast<std::size_t>(n), false);
  result.point = hessian.ldlt().solve(linear);
  if (n == 0 || insideBox(result.point, lower, upper)) return result;

  // Projected Gauss-Seidel: each coordinate in turn set to its exact minimizer given the others,
  // clipped to the box. It converges for any positive definite H; every so often the coordinates
  // it holds at a bound are tried as the active set of the exact solution.
  Eigen::VectorXd x = result.point.cwiseMax(lower).cwiseMin(upper);
  constexpr int kMaxSweeps = 200000;
  constexpr int kSweepsPerTry = 50;
  for (int sweep = 1; sweep <= kMaxSweeps; ++sweep) {
    double largest_step = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double rest = hessian.row(i).dot(x) - hessian(i, i) * x(i);
      const double next = std::clamp((linear(i) - rest) / hessian(i, i), lower, upper);
      largest_step = std::max(largest_step, std::abs(next - x(i)));
      x(i) = next;
    }
    if (sweep % kSweepsPerTry == 0 || largest_step == 0.0 || sweep == kMaxSweeps) {
      std::vector<bool> fixed(static_cast<std::size_t>(n));
      for (Eigen::Index i = 0; i < n; ++i) fixed[static_cast<std::size_t>(i)] = x(i) == lower || x(i) == upper;
      Eigen::VectorXd exact = x;
      if (solveFreeCoordinates(hessian, linear, lower, upper, fixed, exact)) {
        result.point = exact;
        result.at_bound = fixed;
        return result;
      }
    }
  }
  // Not reached for a positive definite H; the descent's point is within its last step of the minimum.
  result.point = x;
  for (Eigen::Index i = 0; i < n; ++i) result.at_bound[static_cast<std::size_t>(i)] = x(i) == lower || x(i) == upper;
  return result;
}

}  // namespace stagecut
