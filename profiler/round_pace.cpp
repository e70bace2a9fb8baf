#include "profiler/round_pace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "core/units.h"

namespace stagecut {

namespace {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Erases position `index` from each of the log's sample lists that holds one there (recompute is
// empty unless --recompute; an in-chain unit has forward and backward only).
void eraseSample(UnitSampleLog& log, std::size_t index) {
  for (std::vector<double>* list : {&log.forward, &log.backward, &log.backward_input, &log.backward_weight,
                                    &log.recompute}) {
    if (index < list->size()) list->erase(list->begin() + static_cast<std::ptrdiff_t>(index));
  }
}

}  // namespace

RoundPace::RoundPace(PaceOptions options) : options_(std::move(options)) {}

void RoundPace::probe(int before_round) {
  probes_.push_back({before_round, options_.probe_ms()});
  last_probe_at_s_ = nowSeconds();
}

void RoundPace::beforeRound(int round) {
  if (!enabled()) return;
  if (probes_.empty() || nowSeconds() - last_probe_at_s_ >= options_.probe_every_s) {
    if (probes_.empty() || probes_.back().before_round != round) probe(round);
  }
}

void RoundPace::afterRounds(int next_round) {
  if (!enabled() || probes_.empty() || probes_.back().before_round == next_round) return;
  probe(next_round);
}

double RoundPace::medianMs() const {
  std::vector<double> values;
  for (const auto& one : probes_) values.push_back(one.ms);
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

bool RoundPace::isOdd(const Probe& probe, double median) const {
  return median > 0 && std::abs(probe.ms / median - 1.0) > options_.tolerance;
}

std::set<int> RoundPace::oddRounds() const {
  std::set<int> rounds;
  if (probes_.size() < 3) return rounds;
  const double median = medianMs();
  // Probe k brackets the rounds from its own to the next probe's, and the ones before it.
  for (std::size_t k = 0; k < probes_.size(); ++k) {
    if (!isOdd(probes_[k], median)) continue;
    const int first = k > 0 ? probes_[k - 1].before_round : probes_[k].before_round;
    const int end = k + 1 < probes_.size() ? probes_[k + 1].before_round : probes_[k].before_round;
    for (int round = first; round < end; ++round) {
      if (dropped_.count(round) == 0 && kept_odd_.count(round) == 0) rounds.insert(round);
    }
  }
  return rounds;
}

void RoundPace::noteDropped(const std::set<int>& rounds) { dropped_.insert(rounds.begin(), rounds.end()); }

void RoundPace::noteKept(const std::set<int>& rounds) { kept_odd_.insert(rounds.begin(), rounds.end()); }

std::string RoundPace::oddPhaseText(const std::set<int>& rounds) const {
  const double median = medianMs();
  const Probe* furthest = nullptr;
  for (const auto& one : probes_) {
    if (furthest == nullptr || std::abs(one.ms - median) > std::abs(furthest->ms - median)) furthest = &one;
  }
  std::ostringstream text;
  text << "the machine's pace moved during the profile: the reference kernel took " << formatMs(furthest->ms)
       << " ms before round " << furthest->before_round + 1 << " against " << formatMs(median) << " ms, the median of "
       << probes_.size() << " probes (" << formatSignedPercent(furthest->ms / median - 1.0) << ", more than "
       << formatPercent(options_.tolerance) << "), touching " << rounds.size() << " round(s)";
  return text.str();
}

nlohmann::json RoundPace::json() const {
  if (!enabled() || probes_.empty()) return nullptr;
  nlohmann::json probes = nlohmann::json::array();
  for (const auto& one : probes_) probes.push_back({{"before_round", one.before_round}, {"ms", one.ms}});
  return {{"probe", "reference kernel"},
          {"tolerance", options_.tolerance},
          {"median_ms", medianMs()},
          {"probes", probes},
          {"retimed_rounds", std::vector<int>(dropped_.begin(), dropped_.end())},
          {"odd_rounds_kept", std::vector<int>(kept_odd_.begin(), kept_odd_.end())}};
}

void tagNewSamples(const UnitSampleLog& log, std::vector<int>& tags, int round) {
  if (tags.size() < log.forward.size()) tags.resize(log.forward.size(), round);
}

void dropRoundSamples(UnitSampleLog& log, std::vector<int>& tags, const std::set<int>& rounds) {
  const std::size_t before = tags.size();
  for (std::size_t k = tags.size(); k-- > 0;) {
    if (rounds.count(tags[k]) == 0) continue;
    eraseSample(log, k);
    tags.erase(tags.begin() + static_cast<std::ptrdiff_t>(k));
  }
  if (before > 0 && tags.size() < before) log.spent_s *= static_cast<double>(tags.size()) / static_cast<double>(before);
}

}  // namespace stagecut
