#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.h"

namespace stagecut {

/// What one rank of `validate` saw of its machine: whether the run measured the split or the
/// contention around it.
struct RankEnvironment {
  int rank = 0;
  std::string host;
  int usable_cores = 0;  ///< CPUs the rank may run on (its affinity mask)
  int threads = 0;       ///< LibTorch intra-op threads
  /// Where its stage ran: "cpu", or "cuda:K" (GPU K as the rank's process saw it).
  std::string device = "cpu";
  /// How its stage's tensors travelled: "gloo" (host tensors), "gloo-host-copies" (a GPU
  /// stage's, copied to and from the host) or "nccl" (between GPUs).
  std::string transport = "gloo";
  /// The reference kernel (profiler/reference_kernel.h), timed on every rank at once before the
  /// warm-up and after the measured steps, ms; 0: not timed.
  double reference_before_ms = 0.0;
  double reference_after_ms = 0.0;
  /// The reference kernel again before each measured step (before its barrier, so outside its
  /// clock), ms: this VM slows down in phases of tens of seconds, and a phase that starts after
  /// the first kernel and ends before the last one shows only here. Empty in runs from before
  /// it was timed.
  std::vector<double> reference_between_steps_ms;
  /// Wall time from before the first reference kernel to after the last, around the link
  /// probe, the warm-up and the measured steps.
  double window_s = 0.0;
  double own_cpu_s = 0.0;       ///< this process's CPU time over it, all its threads
  double host_busy_cpu_s = -1.0;  ///< every process's CPU time on the host over it; < 0: unknown

  /// The median of reference_between_steps_ms; 0 without them.
  double referenceBetweenStepsMs() const;

  bool operator==(const RankEnvironment& other) const;
};

nlohmann::json rankEnvironmentToJson(const RankEnvironment& environment);
/// Reads what rankEnvironmentToJson wrote (`source` names it in messages).
RankEnvironment rankEnvironmentFromJson(const nlohmann::json& document, const std::string& source);

/// When a run stops measuring the split: the thresholds of assessEnvironment().
struct TrustThresholds {
  double other_load_cores = 0.3;   ///< other processes' busy cores, averaged over the steps
  /// The reference kernel's change against the profile's, or during the run. On this project's
  /// VM the fastest of 15 timings repeats within about 5% in one process (3.20-3.32 ms in three
  /// profiles); a rank sometimes lands on a vCPU 20-33% slower for a whole run.
  double reference_drift = 0.25;
  /// Shorter windows than this leave the load unknown: /proc/stat counts in 10 ms ticks.
  double shortest_window_s = 0.2;
  /// The slowest measured step against the fastest, less 1. Quiet runs of the small GPT
  /// (2 stages, 1F1B, 5 steps of about 700 ms) spread 3-9%; a run whose first three steps fell in
  /// a slow phase of the VM spread 40% while the reference kernel before and after was normal.
  double step_spread = 0.25;
  /// Steps shorter than this are not judged by their spread: one preemption of the scheduler
  /// (a few ms) is already a large part of them, and their median is what validate reports.
  double shortest_spread_step_ms = 50.0;
};

/// The machine a validate run ran on, per host, and what makes its figures untrustworthy.
struct RunEnvironment {
  std::optional<double> profile_reference_ms;  ///< the reference kernel at profile time
  std::vector<RankEnvironment> ranks;
  int usable_cores = 0;        ///< the fewest of any host
  int ranks_on_host = 0;       ///< the most on any host
  int threads = 0;             ///< per rank (the most)
  double other_load_cores = 0.0;  ///< the most of any host; 0 when no host could tell
  bool other_load_known = false;
  /// The reference kernel's largest slowdown on any rank against the profile's (NaN without
  /// one), and its largest change between before and after the steps.
  double reference_drift = 0.0;
  double reference_change = 0.0;
  /// The slowest measured step against the fastest, less 1 (assessStepSpread); 0: not judged.
  double step_spread = 0.0;
  /// One line each, e.g. "oversubscribed: 2 ranks x 2 threads on 2 usable cores of host1".
  std::vector<std::string> warnings;
  /// Facts that weaken no figure but say what could not be checked.
  std::vector<std::string> notes;

  bool trusted() const { return warnings.empty(); }
};

/// The reference kernel's time recorded in a profile (device "reference_kernel_ms"), if any.
std::optional<double> profileReferenceKernelMs(const Profile& profile);

/// Assesses the ranks' environments: oversubscription (ranks x threads above the usable cores
/// of a host), other processes' load (a host's busy CPU minus its ranks' own, per second of the
/// steps) and the reference kernel's drift against the profile and during the run.
/// `profile_threads`: the threads the profile was measured with (0: not known); ranks running
/// another count run other kernels than the ones timed. `profile_device_kind` ("cpu" or "cuda";
/// anything else, e.g. an importer's kind, is not checked): ranks on another kind of device run
/// other kernels too. Ranks sharing one GPU
/// take turns on it, as ranks on too few cores do.
RunEnvironment assessEnvironment(std::optional<double> profile_reference_ms, int profile_threads,
                                 std::vector<RankEnvironment> ranks, const TrustThresholds& thresholds = {},
                                 const std::string& profile_device_kind = "");

/// Adds the steps' spread to `environment`, and a warning when it is above the threshold: the
/// machine's pace changed during the steps, whatever the reference kernel saw. `step_ms`: the
/// measured steps, in order (fewer than 3 are not judged).
void assessStepSpread(RunEnvironment& environment, const std::vector<double>& step_ms,
                      const TrustThresholds& thresholds = {});

/// The validation document's "environment" block, and its reader (`source` names it).
nlohmann::json runEnvironmentToJson(const RunEnvironment& environment);
RunEnvironment runEnvironmentFromJson(const nlohmann::json& document, const std::string& source);

}  // namespace stagecut
