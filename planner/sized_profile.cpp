#include "planner/sized_profile.h"

#include <cmath>
#include <utility>

#include "core/error.h"

namespace stagecut {

namespace {

// The costs of every measured size, from the format 2 table or the single measured size.
std::vector<MicrobatchSizeCosts> sizeTable(const Profile& profile, const std::string& source) {
  if (!profile.microbatch_sizes.empty()) return profile.microbatch_sizes;
  if (profile.run.microbatch_size < 1) {
    throw Error(source + ": the profile does not say its microbatch size (run.microbatch_size); planning needs " +
                "it: profile with stagecut profile --microbatch 1,2,4,8");
  }
  MicrobatchSizeCosts only;
  only.microbatch_size = profile.run.microbatch_size;
  only.layers = profile.layers;
  only.whole_model = profile.whole_model;
  return {only};
}

TimeStatsMs estimated(double median_ms) { return TimeStatsMs::exactly(median_ms); }

std::uint64_t bytesAt(const CostCurve& curve, double size) {
  return static_cast<std::uint64_t>(std::llround(curve.at(size)));
}

}  // namespace

WorstFit LayerFitReport::worstFit() const {
  WorstFit worst{"forward", forward.max_relative_residual};
  for (const auto& [line, fit] : {std::pair<const char*, const LinearFit&>{"backward", backward},
                                  {"activation", activation}}) {
    if (fit.max_relative_residual > worst.residual) worst = {line, fit.max_relative_residual};
  }
  return worst;
}

SizedProfile::SizedProfile(const Profile& profile, double tolerance, std::string source)
    : base_(profile), source_(std::move(source)) {
  const std::vector<MicrobatchSizeCosts> table = sizeTable(profile, source_);
  std::vector<double> x;
  for (const auto& entry : table) {
    sizes_.push_back(entry.microbatch_size);
    x.push_back(entry.microbatch_size);
  }
  const std::size_t layer_count = profile.layers.size();
  for (std::size_t i = 0; i < layer_count; ++i) {
    std::vector<double> forward, backward, input, weight, recompute, activation, output;
    bool has_split = true, has_recompute = true;
    for (const auto& entry : table) {
      const LayerCost& layer = entry.layers[i];
      forward.push_back(layer.forward_ms.median);
      backward.push_back(layer.backward_ms.median);
      has_split = has_split && layer.backward_input_ms && layer.backward_weight_ms;
      input.push_back(layer.backward_input_ms ? layer.backward_input_ms->median : 0.0);
      weight.push_back(layer.backward_weight_ms ? layer.backward_weight_ms->median : 0.0);
      has_recompute = has_recompute && layer.recompute_ms;
      recompute.push_back(layer.recomputeMedianMs());
      activation.push_back(static_cast<double>(layer.activation_bytes));
      output.push_back(static_cast<double>(layer.output_bytes));
    }
    LayerCurves curves{CostCurve(x, forward, tolerance),    CostCurve(x, backward, tolerance),
                       CostCurve(x, input, tolerance),      CostCurve(x, weight, tolerance),
                       CostCurve(x, recompute, tolerance),  CostCurve(x, activation, tolerance),
                       CostCurve(x, output, tolerance),     has_split, has_recompute};
    LayerFitReport report;
    report.index = static_cast<int>(i);
    report.name = profile.layers[i].name;
    report.forward = curves.forward.fit();
    report.backward = curves.backward.fit();
    report.activation = curves.activation.fit();
    // Every curve the planner uses decides: a layer is a line only if all of them are.
    report.fits_line = curves.forward.fitsLine() && curves.backward.fitsLine() && curves.activation.fitsLine() &&
                       curves.output.fitsLine() && (!has_split || (curves.backward_input.fitsLine() &&
                                                                   curves.backward_weight.fitsLine())) &&
                       (!has_recompute || curves.recompute.fitsLine());
    // One flag per layer: a layer is interpolated as a whole when any of its times or bytes is.
    if (!report.fits_line) {
      curves = LayerCurves{CostCurve(x, forward, -1),    CostCurve(x, backward, -1), CostCurve(x, input, -1),
                           CostCurve(x, weight, -1),     CostCurve(x, recompute, -1), CostCurve(x, activation, -1),
                           CostCurve(x, output, -1),     has_split,                   has_recompute};
    }
    curves_.push_back(std::move(curves));
    reports_.push_back(report);
  }
}

bool SizedProfile::covers(int size) const { return notCoveredReason(size).empty(); }

std::string SizedProfile::notCoveredReason(int size) const {
  const std::string range = "the measured sizes " + std::to_string(sizes_.front()) + ".." + std::to_string(sizes_.back());
  if (sizes_.size() == 1 && size != sizes_.front()) {
    return "the profile was measured at microbatch size " + std::to_string(sizes_.front()) + " only";
  }
  if (size > 2 * sizes_.back()) return "beyond twice the largest measured size (" + std::to_string(sizes_.back()) + ")";
  if (2 * size < sizes_.front()) return "below half the smallest measured size (" + std::to_string(sizes_.front()) + ")";
  for (std::size_t i = 0; i < curves_.size(); ++i) {
    if (!curves_[i].forward.covers(size)) {
      return "outside " + range + ", and layer " + reports_[i].name + "'s costs do not follow a line";
    }
  }
  return "";
}

Profile SizedProfile::at(int size) const {
  for (std::size_t position = 0; position < sizes_.size(); ++position) {
    if (sizes_[position] == size) {
      return base_.microbatch_sizes.empty() ? base_ : profileAtMicrobatchSize(base_, size, source_);
    }
  }
  const std::string reason = notCoveredReason(size);
  if (!reason.empty()) {
    throw Error(source_ + ": microbatch size " + std::to_string(size) + " is not planned: " + reason +
                "; profile that size too (stagecut profile --microbatch ...)");
  }
  Profile profile = base_;
  profile.microbatch_sizes.clear();
  profile.whole_model.reset();
  profile.run.microbatch_size = size;
  profile.run.extra["estimated_from_sizes"] = sizes_;
  for (std::size_t i = 0; i < curves_.size(); ++i) {
    const LayerCurves& curves = curves_[i];
    LayerCost& layer = profile.layers[i];
    layer.forward_ms = estimated(curves.forward.at(size));
    layer.backward_ms = estimated(curves.backward.at(size));
    layer.backward_input_ms.reset();
    layer.backward_weight_ms.reset();
    if (curves.has_split) {
      layer.backward_input_ms = estimated(curves.backward_input.at(size));
      layer.backward_weight_ms = estimated(curves.backward_weight.at(size));
    }
    layer.recompute_ms.reset();
    if (curves.has_recompute) layer.recompute_ms = estimated(curves.recompute.at(size));
    layer.activation_bytes = bytesAt(curves.activation, size);
    layer.output_bytes = bytesAt(curves.output, size);
    if (layer.output_shape && !layer.output_shape->empty() && base_.run.microbatch_size > 0 &&
        (*layer.output_shape)[0] == base_.run.microbatch_size) {
      (*layer.output_shape)[0] = size;
    } else {
      layer.output_shape.reset();
    }
  }
  return profile;
}

}  // namespace stagecut
