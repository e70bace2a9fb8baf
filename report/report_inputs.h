#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/partition.h"
#include "core/profile.h"
#include "partitioner/partition_options.h"
#include "schedule/pipeline_schedule.h"
#include "schedule/profile_costs.h"
#include "schedule/schedule_kind.h"
#include "schedule/simulator.h"
#include "validation/validation_report.h"

namespace stagecut {

/// Where the report's numbers come from. Empty strings and zero counts mean "not known"; the
/// device, threads and LibTorch version default to the profile's own `device` block.
struct ReportProvenance {
  std::string device;            ///< e.g. "cpu: AMD EPYC 7B13"
  int threads = 0;
  std::string torch_version;     ///< the LibTorch that measured the profile
  std::string stagecut_version;  ///< e.g. "stagecut 0.1.0 (Release build, ...)"
  std::string command_line;      ///< the command that wrote the report
  std::string date;              ///< when the report was written, e.g. "2024-05-01 12:00 UTC"
};

/// One schedule simulated on the chosen split: its op lists and what the simulator made of them.
struct ReportSchedule {
  Schedule schedule;
  SimulationResult result;
};

/// A `stagecut.validation/1` document (a split run for real) and the file it came from.
struct ReportValidation {
  std::string source;
  ValidationReport report;
};

/// Everything the HTML report shows. Build it with buildReportInputs() or
/// reportInputsFromSplits(), then add validations, a memory cap and provenance.
struct ReportInputs {
  Profile profile;
  std::string profile_source;  ///< the profile's file name, as the page names it
  int microbatches = 0;        ///< M per step, as the splits and schedules assume
  /// The comparison, usually uniform, params and compute (stagecut.comparison/1's "splits").
  std::vector<Partition> splits;
  Partition chosen;  ///< the split the schedules were simulated on (usually "compute")
  std::vector<ReportSchedule> schedules;
  /// Each schedule on its own best split, the chunked ones cut into N x v chunks (compare's
  /// "schedules"): empty, the page leaves the table out.
  std::vector<ScheduleComparison> schedule_choices;
  std::vector<ReportValidation> validations;
  /// Memory cap in bytes: empty for none, one for every stage, or one per stage.
  std::vector<std::uint64_t> memory_cap_bytes;
  ReportProvenance provenance;
  /// One-line remarks shown under the schedules (e.g. a schedule that was skipped and why).
  std::vector<std::string> notes;
};

/// What to simulate on the chosen split.
struct ReportScheduleOptions {
  /// The schedules with their placements (placeSchedules), on the chosen split's ranks;
  /// interleaved-1f1b is skipped with a note when M is not a multiple of N. Empty: every
  /// schedule as schedulePlacement places it.
  std::vector<PlacedSchedule> runs;
  BoundaryLink link;  ///< transfer time between stages; free by default
  std::vector<double> stage_speed;  ///< per stage; empty: all 1
  int data_parallel = 1;            ///< D replicas, each rank's all-reduce drawn as A
  BoundaryLink dp_link;             ///< between replicas
};

/// Partitions `profile` by uniform, params and compute under `options` (as `stagecut compare`
/// does), chooses the compute split and simulates `schedules` on it, and finds each schedule's own
/// best split (bestSplitPerSchedule()). `source` names the profile in
/// messages and on the page. Throws Error (input) for options the partitioner rejects (stage
/// count, microbatches, caps no split fits) and shapes a schedule cannot run.
ReportInputs buildReportInputs(const Profile& profile, const PartitionOptions& options,
                               const std::string& source,
                               const ReportScheduleOptions& schedules = {});

/// The same from splits made earlier (`stagecut compare -o`): the chosen split is the one named
/// "compute", else the last. `microbatches` <= 0 means "as the chosen split's predicted step
/// implies" (sum of stage costs + (M - 1) x bottleneck), else 4 x stages. Throws Error (input)
/// naming `splits_source` when there are no splits, or one does not cover the profile's layers.
ReportInputs reportInputsFromSplits(const Profile& profile, const std::string& source,
                                    std::vector<Partition> splits, const std::string& splits_source,
                                    int microbatches, const ReportScheduleOptions& schedules = {});

/// The M a saved N-stage split was priced for, from its predicted step (sum of stage costs +
/// (M - 1) x bottleneck); 0 when the figures do not give a whole M.
int impliedMicrobatches(const Partition& split);

/// "2024-05-01 12:00 UTC": the current time, for ReportProvenance::date.
std::string currentUtcDate();

}  // namespace stagecut
