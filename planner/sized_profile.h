#pragma once

#include <string>
#include <vector>

#include "core/profile.h"
#include "planner/cost_curve.h"

namespace stagecut {

/// The one of a layer's three lines that is furthest off its measured points.
struct WorstFit {
  const char* name = "forward";  ///< "forward", "backward" or "activation"
  double residual = 0.0;         ///< its max_relative_residual
};

/// How well a line describes one layer's costs over the measured microbatch sizes: what
/// stagecut.plan/1 lists per layer.
struct LayerFitReport {
  int index = 0;
  std::string name;
  LinearFit forward;     ///< forward_ms over sizes
  LinearFit backward;    ///< backward_ms over sizes
  LinearFit activation;  ///< activation_bytes over sizes
  bool fits_line = true;     ///< all three within the tolerance
  /// The line with the largest residual; the first of forward, backward, activation on a tie.
  WorstFit worstFit() const;
};

/// A profile's costs as functions of the microbatch size: fitted lines per layer (time(b) =
/// a + c b, activation and output bytes likewise), with measured values at measured sizes and
/// interpolation between them for layers a line does not fit.
class SizedProfile {
 public:
  /// `tolerance`: the largest relative residual (of the largest measured value) a layer's line
  /// may have before the layer is flagged. `source` names the profile in messages.
  SizedProfile(const Profile& profile, double tolerance, std::string source);

  const std::vector<int>& measuredSizes() const { return sizes_; }
  const std::vector<LayerFitReport>& fits() const { return reports_; }
  /// Whether costs at `size` are measured or safely estimated: inside the measured sizes, or
  /// from half the smallest to twice the largest measured size when every layer's line fits.
  bool covers(int size) const;
  /// Why `size` is not covered, as a phrase for a message ("" when it is covered).
  std::string notCoveredReason(int size) const;
  /// The profile at microbatch size `size` (single-size, run.microbatch_size = size): measured
  /// costs at a measured size, else the curves'. Throws Error (input) when !covers(size).
  Profile at(int size) const;

 private:
  struct LayerCurves {
    CostCurve forward, backward, backward_input, backward_weight, recompute, activation, output;
    bool has_split = false;
    bool has_recompute = false;
  };
  Profile base_;
  std::string source_;
  std::vector<int> sizes_;
  std::vector<LayerCurves> curves_;
  std::vector<LayerFitReport> reports_;
};

}  // namespace stagecut
