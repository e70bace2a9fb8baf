#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/stage_executor.h"

namespace stagecut {

/// What `stagecut validate` runs: a profile's model, split by a partition, under a schedule.
struct ValidateRequest {
  std::string profile_path;
  std::string partition_path;
  std::string schedule = "1f1b";
  int microbatches = 8;
  int steps = 5;
  int warmup_steps = 1;
  int threads = 1;
  double timeout_s = 120.0;
  double grad_tolerance = 1e-4;  ///< largest accepted relative gradient difference
  std::uint64_t batch_seed = 1234;
};

/// One rank's measurements, sent to rank 0 at the end.
struct RankOutcome {
  int rank = 0;
  int first_layer = 0;
  int last_layer = 0;
  std::vector<std::vector<OpRecord>> steps;  ///< the measured steps' op records
  std::int64_t peak_bytes = 0;               ///< most bytes allocated during a step, beyond its start
  double grad_max_rel_diff = 0.0;            ///< against the full-batch gradient of the same layers
  std::string worst_parameter;
  double loss_pipeline = std::numeric_limits<double>::quiet_NaN();   ///< last rank only
  double loss_reference = std::numeric_limits<double>::quiet_NaN();  ///< last rank only
  double link_latency_ms = 0.0;              ///< to the next rank; 0 on the last
  double link_bandwidth_bytes_per_s = 0.0;
};

nlohmann::json rankOutcomeToJson(const RankOutcome& outcome);
RankOutcome rankOutcomeFromJson(const nlohmann::json& document);

}  // namespace stagecut
