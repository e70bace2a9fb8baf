#include "validation/run_environment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "core/json_fields.h"
#include "core/units.h"
#include "validation/rank_devices.h"

namespace stagecut {

namespace {

std::string cores(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

}  // namespace

double RankEnvironment::referenceBetweenStepsMs() const {
  if (reference_between_steps_ms.empty()) return 0.0;
  std::vector<double> sorted = reference_between_steps_ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t middle = sorted.size() / 2;
  return sorted.size() % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2.0;
}

bool RankEnvironment::operator==(const RankEnvironment& other) const {
  return rank == other.rank && host == other.host && usable_cores == other.usable_cores &&
         threads == other.threads && device == other.device && transport == other.transport && reference_before_ms == other.reference_before_ms &&
         reference_after_ms == other.reference_after_ms &&
         reference_between_steps_ms == other.reference_between_steps_ms && window_s == other.window_s &&
         own_cpu_s == other.own_cpu_s && host_busy_cpu_s == other.host_busy_cpu_s;
}

nlohmann::json rankEnvironmentToJson(const RankEnvironment& environment) {
  return {{"rank", environment.rank},
          {"host", environment.host},
          {"usable_cores", environment.usable_cores},
          {"threads", environment.threads},
          {"device", environment.device},
          {"transport", environment.transport},
          {"reference_before_ms", environment.reference_before_ms},
          {"reference_after_ms", environment.reference_after_ms},
          {"reference_between_steps_ms", environment.reference_between_steps_ms},
          {"window_s", environment.window_s},
          {"own_cpu_s", environment.own_cpu_s},
          {"host_busy_cpu_s", environment.host_busy_cpu_s}};
}

RankEnvironment rankEnvironmentFromJson(const nlohmann::json& document, const std::string& source) {
  const JsonFields fields(document, source);
  RankEnvironment environment;
  environment.rank = fields.integer("rank", 0, 1 << 20);
  environment.host = fields.string("host");
  environment.usable_cores = fields.integer("usable_cores", 0, 1 << 20);
  environment.threads = fields.integer("threads", 0, 1 << 20);
  // Runs from before validate ran on GPUs were all on the CPU.
  if (document.contains("device")) environment.device = fields.string("device");
  if (document.contains("transport")) environment.transport = fields.string("transport");
  environment.reference_before_ms = fields.nonNegative("reference_before_ms");
  environment.reference_after_ms = fields.nonNegative("reference_after_ms");
  // Runs from before it was timed have none.
  if (document.contains("reference_between_steps_ms")) {
    environment.reference_between_steps_ms = fields.nonNegativeList("reference_between_steps_ms");
  }
  environment.window_s = fields.nonNegative("window_s");
  environment.own_cpu_s = fields.nonNegative("own_cpu_s");
  environment.host_busy_cpu_s = fields.finite("host_busy_cpu_s");
  return environment;
}

std::optional<double> profileReferenceKernelMs(const Profile& profile) {
  const auto found = profile.device.extra.find("reference_kernel_ms");
  if (found == profile.device.extra.end() || !found->is_number()) return std::nullopt;
  const double ms = found->get<double>();
  if (!(ms > 0) || !std::isfinite(ms)) return std::nullopt;
  return ms;
}

namespace {

// One host's ranks: GPUs they share, cores they oversubscribe, and the load of other processes
// over the widest rank's window; the host's figures are folded into `result`.
void assessHost(const std::string& host, const std::vector<const RankEnvironment*>& members,
                const TrustThresholds& thresholds, RunEnvironment& result) {
  int usable = std::numeric_limits<int>::max(), threads = 0;
  double own_cpu = 0.0, host_busy = -1.0, window = 0.0;
  for (const RankEnvironment* rank : members) {
    if (rank->usable_cores > 0) usable = std::min(usable, rank->usable_cores);
    threads = std::max(threads, rank->threads);
    own_cpu += rank->own_cpu_s;
    // Each rank's window covers nearly the same steps; the widest sees every rank's CPU.
    if (rank->host_busy_cpu_s >= 0 && rank->window_s > window) {
      window = rank->window_s;
      host_busy = rank->host_busy_cpu_s;
    }
  }
  std::map<std::string, int> ranks_per_gpu;
  for (const RankEnvironment* rank : members) {
    if (deviceKind(rank->device) == "cuda") ++ranks_per_gpu[rank->device];
  }
  for (const auto& [gpu, count] : ranks_per_gpu) {
    if (count < 2) continue;
    result.warnings.push_back("shared GPU: " + std::to_string(count) + " ranks ran on " + gpu + " of " + host +
                              " and took turns on it, so the step measures their contention, not a pipeline with "
                              "a GPU per rank; give each rank its own GPU");
  }
  const int on_host = static_cast<int>(members.size());
  result.ranks_on_host = std::max(result.ranks_on_host, on_host);
  result.threads = std::max(result.threads, threads);
  if (usable != std::numeric_limits<int>::max()) {
    result.usable_cores = std::min(result.usable_cores, usable);
    if (on_host * std::max(threads, 1) > usable) {
      result.warnings.push_back("oversubscribed: " + std::to_string(on_host) + " rank(s) x " +
                                std::to_string(std::max(threads, 1)) + " thread(s) on " + std::to_string(usable) +
                                " usable core(s) of " + host +
                                ": the ranks take turns on the cores; use fewer --threads or fewer ranks per host");
    }
  }
  if (host_busy >= 0 && window >= thresholds.shortest_window_s) {
    const double other = std::max(0.0, (host_busy - own_cpu) / window);
    result.other_load_known = true;
    result.other_load_cores = std::max(result.other_load_cores, other);
    if (other >= thresholds.other_load_cores) {
      result.warnings.push_back("other processes kept " + cores(other) + " core(s) of " + host +
                                " busy during the run: the figures measure the contention, "
                                "not the split; rerun on a quiet machine");
    }
  }
}

void assessHosts(const TrustThresholds& thresholds, RunEnvironment& result) {
  std::map<std::string, std::vector<const RankEnvironment*>> hosts;
  for (const RankEnvironment& rank : result.ranks) hosts[rank.host].push_back(&rank);
  result.usable_cores = std::numeric_limits<int>::max();
  for (const auto& [host, members] : hosts) assessHost(host, members, thresholds, result);
  if (result.usable_cores == std::numeric_limits<int>::max()) result.usable_cores = 0;
  if (!result.other_load_known) {
    result.notes.push_back("other processes' load not known (no /proc/stat, or a run shorter than " +
                           formatMs(thresholds.shortest_window_s * 1000) + " ms)");
  }
}

// The ranks whose reference kernel ran slowest and fastest against the profile's, and the one
// whose kernel changed most during the run, with the times that made them so.
struct ReferenceExtremes {
  const RankEnvironment* slowest = nullptr;
  double slowest_ms = 0.0;
  const RankEnvironment* fastest = nullptr;
  double fastest_ms = 0.0;
  const RankEnvironment* changed = nullptr;
  double changed_ms = 0.0;
  double changed_weight = 0.0;
  bool sampled_between_steps = false;
};

// With the kernel timed between the steps, they and the one after the last step are the
// machine during the measured steps, judged by their median as the step is: the kernel before
// the warm-up then only says how far the machine moved since. Runs that timed it only before
// and after take the slower of the two, and their change.
ReferenceExtremes referenceExtremes(std::optional<double> profile_reference_ms, RunEnvironment& result) {
  result.reference_drift = profile_reference_ms ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  ReferenceExtremes extremes;
  for (const RankEnvironment& rank : result.ranks) {
    if (rank.reference_before_ms <= 0 || rank.reference_after_ms <= 0) continue;
    double during_ms = std::max(rank.reference_before_ms, rank.reference_after_ms);
    double later_ms = rank.reference_after_ms;
    if (!rank.reference_between_steps_ms.empty()) {
      extremes.sampled_between_steps = true;
      RankEnvironment steps = rank;
      steps.reference_between_steps_ms.push_back(rank.reference_after_ms);
      during_ms = later_ms = steps.referenceBetweenStepsMs();
    }
    // A machine faster during the steps than before the warm-up measured the steps as they are.
    const double change = later_ms / rank.reference_before_ms - 1.0;
    const double weight = rank.reference_between_steps_ms.empty() ? std::fabs(change) : change;
    if (!extremes.changed || weight > extremes.changed_weight) {
      result.reference_change = change;
      extremes.changed = &rank;
      extremes.changed_ms = later_ms;
      extremes.changed_weight = weight;
    }
    if (profile_reference_ms) {
      const double drift = during_ms / *profile_reference_ms - 1.0;
      if (drift > result.reference_drift) {
        result.reference_drift = drift;
        extremes.slowest = &rank;
        extremes.slowest_ms = during_ms;
      }
      if (!extremes.fastest || during_ms < extremes.fastest_ms) {
        extremes.fastest = &rank;
        extremes.fastest_ms = during_ms;
      }
    }
  }
  return extremes;
}

void assessReferenceKernel(std::optional<double> profile_reference_ms, const TrustThresholds& thresholds,
                           RunEnvironment& result) {
  const ReferenceExtremes e = referenceExtremes(profile_reference_ms, result);
  const std::string during = e.sampled_between_steps ? " during the steps" : "";
  // As far off the other way: 25% slower is a ratio of 1.25, so 1 / 1.25 (20% faster).
  if (e.fastest && e.fastest_ms * (1.0 + thresholds.reference_drift) < *profile_reference_ms) {
    result.warnings.push_back("the reference kernel ran " + formatPercent(1.0 - e.fastest_ms / *profile_reference_ms, 0) +
                              " faster on rank " + std::to_string(e.fastest->rank) + during +
                              " than when the model was profiled (" + formatMs(e.fastest_ms) + " ms against " +
                              formatMs(*profile_reference_ms) +
                              " ms): the profile was measured on a slower or busier machine than this run; profile "
                              "again on a quiet machine");
  }
  if (e.slowest && result.reference_drift > thresholds.reference_drift) {
    result.warnings.push_back("the reference kernel ran " + formatPercent(result.reference_drift, 0) + " slower on rank " +
                              std::to_string(e.slowest->rank) + during + " than when the model was profiled (" +
                              formatMs(e.slowest_ms) +
                              (e.sampled_between_steps ? " ms, the median of its timings between and after them,"
                                                       : " ms") +
                              " against " + formatMs(*profile_reference_ms) +
                              " ms): this machine is slower or busier now; rerun on a quiet machine or profile again");
  }
  if (e.changed && e.changed_weight > thresholds.reference_drift) {
    result.warnings.push_back(
        "the reference kernel changed " + formatPercent(result.reference_change, 0) + " on rank " +
        std::to_string(e.changed->rank) +
        (e.sampled_between_steps ? " from before the warm-up to the steps (" +
                                       formatMs(e.changed->reference_before_ms) + " ms, then a median of " +
                                       formatMs(e.changed_ms) + " ms between and after them)"
                                 : " between before and after the steps (" +
                                       formatMs(e.changed->reference_before_ms) + " ms, then " +
                                       formatMs(e.changed_ms) + " ms)") +
        ": the machine's load changed during the run");
  }
}

// Ranks that ran another thread count or another kind of device than the profile run other
// kernels than the ones it timed.
void assessProfileMatch(int profile_threads, const std::string& profile_device_kind, RunEnvironment& result) {
  if (profile_threads > 0 && result.threads > 0 && result.threads != profile_threads) {
    result.warnings.push_back("the ranks ran " + std::to_string(result.threads) + " thread(s) each, the profile was "
                              "measured with " + std::to_string(profile_threads) + ": its times are not theirs; "
                              "validate with --threads " + std::to_string(profile_threads));
  }
  if (profile_device_kind != "cpu" && profile_device_kind != "cuda") return;
  for (const RankEnvironment& rank : result.ranks) {
    const std::string kind = deviceKind(rank.device);
    if (kind == profile_device_kind) continue;
    result.warnings.push_back("the ranks ran on " + kind + " (rank " + std::to_string(rank.rank) + " on " +
                              rank.device + "), the profile was measured on " + profile_device_kind +
                              ": its times are not theirs; validate with --device " + profile_device_kind +
                              ", or profile with --device " + kind);
    break;
  }
}

}  // namespace

RunEnvironment assessEnvironment(std::optional<double> profile_reference_ms, int profile_threads,
                                 std::vector<RankEnvironment> ranks, const TrustThresholds& thresholds,
                                 const std::string& profile_device_kind) {
  RunEnvironment result;
  result.profile_reference_ms = profile_reference_ms;
  result.ranks = std::move(ranks);
  assessHosts(thresholds, result);
  assessReferenceKernel(profile_reference_ms, thresholds, result);
  assessProfileMatch(profile_threads, profile_device_kind, result);
  if (!profile_reference_ms) {
    result.notes.push_back("the profile has no reference kernel time (profiled before it was recorded): "
                           "profile again to check this machine against it");
  }
  return result;
}

void assessStepSpread(RunEnvironment& environment, const std::vector<double>& step_ms,
                      const TrustThresholds& thresholds) {
  if (step_ms.size() < 3) return;
  const auto [fastest, slowest] = std::minmax_element(step_ms.begin(), step_ms.end());
  if (!(*fastest >= thresholds.shortest_spread_step_ms)) return;
  environment.step_spread = *slowest / *fastest - 1.0;
  if (environment.step_spread > thresholds.step_spread) {
    environment.warnings.push_back("the measured steps took from " + formatMs(*fastest) + " ms to " +
                                   formatMs(*slowest) + " ms, " + formatPercent(environment.step_spread, 0) +
                                   " apart: the machine's pace changed during the steps; rerun on a quiet machine");
  }
}

nlohmann::json runEnvironmentToJson(const RunEnvironment& environment) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankEnvironment& rank : environment.ranks) ranks.push_back(rankEnvironmentToJson(rank));
  nlohmann::json document = {{"trusted", environment.trusted()},
                             {"warnings", environment.warnings},
                             {"notes", environment.notes},
                             {"usable_cores", environment.usable_cores},
                             {"ranks_on_host", environment.ranks_on_host},
                             {"threads", environment.threads},
                             {"other_load_cores", environment.other_load_known
                                                      ? nlohmann::json(environment.other_load_cores)
                                                      : nlohmann::json(nullptr)},
                             {"reference_kernel_change", environment.reference_change},
                             {"step_spread", environment.step_spread},
                             {"ranks", std::move(ranks)}};
  document["profile_reference_kernel_ms"] =
      environment.profile_reference_ms ? nlohmann::json(*environment.profile_reference_ms) : nlohmann::json(nullptr);
  document["reference_kernel_drift"] =
      std::isfinite(environment.reference_drift) ? nlohmann::json(environment.reference_drift) : nlohmann::json(nullptr);
  return document;
}

RunEnvironment runEnvironmentFromJson(const nlohmann::json& document, const std::string& source) {
  const JsonFields fields(document, source, "environment.");
  RunEnvironment environment;
  environment.warnings = fields.stringList("warnings");
  environment.notes = fields.stringList("notes");
  environment.usable_cores = fields.integer("usable_cores", 0, 1 << 20);
  environment.ranks_on_host = fields.integer("ranks_on_host", 0, 1 << 20);
  environment.threads = fields.integer("threads", 0, 1 << 20);
  environment.other_load_known = !fields.isNull("other_load_cores");
  if (environment.other_load_known) environment.other_load_cores = fields.nonNegative("other_load_cores");
  environment.reference_change = fields.finite("reference_kernel_change");
  if (document.contains("step_spread")) environment.step_spread = fields.nonNegative("step_spread");
  if (!fields.isNull("profile_reference_kernel_ms")) {
    environment.profile_reference_ms = fields.nonNegative("profile_reference_kernel_ms");
  }
  environment.reference_drift = fields.isNull("reference_kernel_drift") ? std::numeric_limits<double>::quiet_NaN()
                                                                        : fields.finite("reference_kernel_drift");
  const nlohmann::json& ranks = fields.array("ranks");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    environment.ranks.push_back(rankEnvironmentFromJson(ranks[r], source + ": environment.ranks[" + std::to_string(r) + "]"));
  }
  if (fields.boolean("trusted") != environment.warnings.empty()) {
    fields.fail("trusted", "disagrees with its warnings");
  }
  return environment;
}

}  // namespace stagecut
