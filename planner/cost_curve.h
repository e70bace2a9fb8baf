#pragma once

#include <vector>

namespace stagecut {

/// A least-squares line y = intercept + slope * x through measured points, and how well it fits.
struct LinearFit {
  double intercept = 0.0;  ///< fixed cost per microbatch (launch, overhead)
  double slope = 0.0;      ///< cost per sample
  /// Largest |measured - fitted| over the points, relative to the largest measured value; 0 for
  /// two points or fewer (a line always passes through them).
  double max_relative_residual = 0.0;

  double at(double x) const { return intercept + slope * x; }
};

/// Fits y = a + c x by least squares (Eigen). Needs at least one point; with one point the line
/// is flat (a = y). Throws Error (input) for no points or mismatched sizes.
LinearFit fitLine(const std::vector<double>& x, const std::vector<double>& y);

/// One measured quantity of one layer over microbatch sizes: the points, their line and whether
/// the planner may use the line (residual within tolerance) or must interpolate between points.
class CostCurve {
 public:
  CostCurve() = default;
  /// `sizes` ascending and distinct, one value per size; `tolerance` the largest relative
  /// residual a line may have and still be used.
  CostCurve(std::vector<double> sizes, std::vector<double> values, double tolerance);

  const LinearFit& fit() const { return fit_; }
  bool fitsLine() const { return fits_line_; }
  /// The value at microbatch size `size`: the measurement at a measured size; the line between
  /// and beyond measured sizes when it fits; else linear interpolation between the two nearest
  /// measured sizes. Never below 0.
  double at(double size) const;
  /// Whether at(size) may be trusted: inside the measured sizes, or outside them with a line
  /// that fits through two or more sizes (extrapolation of a curve a line does not fit is
  /// refused).
  bool covers(double size) const;

 private:
  std::vector<double> sizes_;
  std::vector<double> values_;
  LinearFit fit_;
  bool fits_line_ = true;
};

}  // namespace stagecut
