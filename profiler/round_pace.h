#pragma once

// The machine's pace across a profile's rounds. A probe (the reference kernel) is timed before the
// first round, between rounds every few seconds and after the last: a phase of the machine (a
// process beside it, the hypervisor, the CPU's clock) that moves the probe moves every layer timed
// in it, so the rounds timed in an odd phase are dropped and timed again (docs/profiler.md,
// "The machine's pace"). LibTorch-free: the probe is a function.

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/measure_checkpoint.h"

namespace stagecut {

struct PaceOptions {
  /// Times the probe once, ms; empty: no pace check (the GPU profile, whose clocks are warmed).
  std::function<double()> probe_ms;
  /// A probe further than this from the median of the run's probes marks an odd phase.
  double tolerance = 0.15;
  /// Seconds of rounds between two probes: the reference kernel's probe (about 45 ms on this
  /// project's CPU) then costs the run about 2%.
  double probe_every_s = 2.0;
  /// Times the odd rounds are dropped and timed again before what is left is only reported.
  int retime_passes = 2;
  /// An odd phase fails the profile (Error, run time) instead of being timed again.
  bool strict = false;
};

/// The rounds in which each sample of a unit was taken, parallel to its samples: resumed samples
/// (of an interrupted run) are round -1, never dropped.
struct SampleRounds {
  std::vector<int> whole;
  std::vector<std::vector<int>> in_chain, layers;
};

class RoundPace {
 public:
  explicit RoundPace(PaceOptions options);

  bool enabled() const { return static_cast<bool>(options_.probe_ms); }
  /// Called before each round, numbered from 0 across passes: probes before the first round and
  /// when probe_every_s have passed since the last probe.
  void beforeRound(int round);
  /// Called after the last round of a pass (next_round: the number the next round would have).
  void afterRounds(int next_round);
  /// Rounds timed in an odd phase and not dropped yet: those whose probe before or after is
  /// off the median. None while there are fewer than 3 probes (two cannot say which is odd).
  std::set<int> oddRounds() const;
  /// Notes `rounds` as dropped (their samples removed) or, on the last pass, kept as they are.
  void noteDropped(const std::set<int>& rounds);
  void noteKept(const std::set<int>& rounds);
  /// One line for --strict's refusal: the probe furthest off and the rounds it touched.
  std::string oddPhaseText(const std::set<int>& rounds) const;
  /// run.extra["pace"] of the profile (docs/formats.md); null when disabled.
  nlohmann::json json() const;

 private:
  struct Probe {
    int before_round = 0;  ///< taken before this round (after the round before it)
    double ms = 0.0;
  };
  void probe(int before_round);
  double medianMs() const;
  bool isOdd(const Probe& probe, double median) const;

  PaceOptions options_;
  std::vector<Probe> probes_;
  double last_probe_at_s_ = 0.0;
  std::set<int> dropped_, kept_odd_;
};

/// Tags `log`'s samples past those already tagged with `round`.
void tagNewSamples(const UnitSampleLog& log, std::vector<int>& tags, int round);

/// Removes from `log` every sample whose tag is in `rounds`, and their share of its seconds.
void dropRoundSamples(UnitSampleLog& log, std::vector<int>& tags, const std::set<int>& rounds);

}  // namespace stagecut
