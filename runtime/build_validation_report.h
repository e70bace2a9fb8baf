#pragma once

#include <cstdint>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"
#include "prediction/pipeline_prediction.h"
#include "runtime/validation_types.h"
#include "validation/validation_report.h"

namespace stagecut {

/// How validate predicts a run of `request`: its schedule, microbatches, replicas and optimizer,
/// `link` between the stages and `replica_link` between the replicas (zero before they are
/// measured: memory does not depend on them).
PredictionOptions validationPredictionOptions(const ValidateRequest& request, const BoundaryLink& link,
                                              const BoundaryLink& replica_link);

/// The prediction validate holds its plain steps to: every stage without recomputation,
/// whatever the partition chose.
PipelinePrediction predictValidationSteps(const ValidateRequest& request, const Profile& profile,
                                          const Partition& partition, const PredictionOptions& options);

/// Builds the report from every rank's outcome: prediction from the profile's medians plus the
/// measured links, on the same op lists.
ValidationReport buildValidationReport(const ValidateRequest& request, const Profile& profile,
                                       const Partition& partition, const std::vector<RankOutcome>& outcomes);

}  // namespace stagecut
