#include "planner/cost_curve.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

#include "core/error.h"

namespace stagecut {

LinearFit fitLine(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.empty() || x.size() != y.size()) {
    throw Error("fitLine: needs one value per size and at least one size");
  }
  LinearFit fit;
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  const bool one_size = std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); });
  if (one_size) {
    double sum = 0;
    for (double v : y) sum += v;
    fit.intercept = sum / static_cast<double>(n);
  } else {
    Eigen::MatrixXd design(n, 2);
    Eigen::VectorXd target(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      design(i, 0) = 1.0;
      design(i, 1) = x[static_cast<std::size_t>(i)];
      target(i) = y[static_cast<std::size_t>(i)];
    }
    // QR keeps the solve stable when sizes span orders of magnitude (1 to 1024).
    const Eigen::Vector2d coefficients = design.colPivHouseholderQr().solve(target);
    fit.intercept = coefficients(0);
    fit.slope = coefficients(1);
  }
  double largest = 0, worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    largest = std::max(largest, std::abs(y[i]));
    worst = std::max(worst, std::abs(y[i] - fit.at(x[i])));
  }
  fit.max_relative_residual = largest > 0 ? worst / largest : 0.0;
  return fit;
}

CostCurve::CostCurve(std::vector<double> sizes, std::vector<double> values, double tolerance)
    : sizes_(std::move(sizes)), values_(std::move(values)), fit_(fitLine(sizes_, values_)) {
  fits_line_ = fit_.max_relative_residual <= tolerance;
}

bool CostCurve::covers(double size) const {
  // One measured size says nothing about the slope: only that size is known.
  const bool extrapolates = fits_line_ && sizes_.size() >= 2;
  return extrapolates || (size >= sizes_.front() && size <= sizes_.back());
}

double CostCurve::at(double size) const {
  const auto above = std::lower_bound(sizes_.begin(), sizes_.end(), size);
  if (above != sizes_.end() && *above == size) return values_[static_cast<std::size_t>(above - sizes_.begin())];
  double value = 0;
  if (fits_line_ || sizes_.size() == 1) {
    value = fit_.at(size);
  } else {
    // Between the two nearest measured sizes (or the end segment outside them).
    std::size_t hi = static_cast<std::size_t>(above - sizes_.begin());
    hi = std::clamp<std::size_t>(hi, 1, sizes_.size() - 1);
    const std::size_t lo = hi - 1;
    const double t = (size - sizes_[lo]) / (sizes_[hi] - sizes_[lo]);
    value = values_[lo] + t * (values_[hi] - values_[lo]);
  }
  return std::max(0.0, value);
}

}  // namespace stagecut
