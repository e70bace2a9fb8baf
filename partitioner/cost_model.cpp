#include "partitioner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"
#include "prediction/memory_prediction.h"

namespace stagecut {

namespace {

void checkSize(const std::vector<double>& values, std::size_t expected, const char* what) {
  if (values.size() != expected) {
    throw Error(std::string("cost model: ") + what + " has " + std::to_string(values.size()) +
                " entries, expected " + std::to_string(expected));
  }
}

void checkNonNegative(const std::vector<double>& values, const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] >= 0) || !std::isfinite(values[i])) {
      throw Error(std::string("cost model: ") + what + "[" + std::to_string(i) +
                  "] must be a finite number >= 0");
    }
  }
}

std::vector<double> prefixSums(const std::vector<double>& values) {
  std::vector<double> prefix(values.size() + 1, 0.0);
  for (std::size_t i = 0; i < values.size(); ++i) prefix[i + 1] = prefix[i] + values[i];
  return prefix;
}

}  // namespace

namespace {

// Every per-layer and per-stage vector of `costs` has its length, and every figure its range.
void checkChainCosts(const ChainCosts& costs) {
  const std::size_t layers = costs.compute_ms.size();
  const std::size_t stages = costs.stage_speed.size();
  if (layers == 0) throw Error("cost model: the chain has no layers");
  if (stages == 0) throw Error("cost model: there are no stages");
  checkSize(costs.state_bytes, layers, "state_bytes");
  checkSize(costs.activation_bytes, layers, "activation_bytes");
  checkSize(costs.input_bytes, layers, "input_bytes");
  if (!costs.boundary_comm_ms.empty()) checkSize(costs.boundary_comm_ms, layers - 1, "boundary_comm_ms");
  if (costs.in_flight.size() != stages) throw Error("cost model: in_flight needs one entry per stage");
  if (!costs.memory_cap_bytes.empty()) checkSize(costs.memory_cap_bytes, stages, "memory_cap_bytes");
  checkNonNegative(costs.compute_ms, "compute_ms");
  checkNonNegative(costs.boundary_comm_ms, "boundary_comm_ms");
  checkNonNegative(costs.state_bytes, "state_bytes");
  checkNonNegative(costs.activation_bytes, "activation_bytes");
  checkNonNegative(costs.input_bytes, "input_bytes");
  for (double speed : costs.stage_speed) {
    if (!(speed > 0) || !std::isfinite(speed)) throw Error("cost model: stage speeds must be > 0");
  }
  for (double count : costs.in_flight) {
    if (!(count >= 0) || !std::isfinite(count)) throw Error("cost model: in_flight counts must be finite and >= 0");
  }
  for (double cap : costs.memory_cap_bytes) {
    if (!(cap > 0)) throw Error("cost model: memory caps must be > 0");
  }
  if (!costs.cut_allowed.empty() && costs.cut_allowed.size() != layers - 1) {
    throw Error("cost model: cut_allowed needs one entry per boundary (" + std::to_string(layers - 1) + ")");
  }
  if (!costs.layer_memory.empty()) {
    if (costs.layer_memory.size() != layers) throw Error("cost model: layer_memory needs one entry per layer");
    if (costs.peak_states.size() != stages) throw Error("cost model: peak_states needs one entry per stage");
  }
  if (costs.gradient_bytes.empty()) return;
  checkSize(costs.gradient_bytes, layers, "gradient_bytes");
  checkSize(costs.backward_ms, layers, "backward_ms");
  checkNonNegative(costs.gradient_bytes, "gradient_bytes");
  checkNonNegative(costs.backward_ms, "backward_ms");
  if (!costs.allreduce_overlap.empty() && costs.allreduce_overlap.size() != stages) {
    throw Error("cost model: allreduce_overlap needs one entry per stage");
  }
  if (!(costs.allreduce_fixed_ms >= 0) || !(costs.allreduce_ms_per_byte >= 0) || !std::isfinite(costs.allreduce_fixed_ms) ||
      !std::isfinite(costs.allreduce_ms_per_byte) || !(costs.allreduce_slots >= 1) || !std::isfinite(costs.allreduce_slots)) {
    throw Error("cost model: all-reduce times must be finite and >= 0, slots >= 1");
  }
}

}  // namespace

CostModel::OptionTables CostModel::optionTables(RecomputeOption& option) const {
  const std::size_t layers = costs_.compute_ms.size();
  if (option.recomputed.empty()) option.recomputed.assign(layers, 0);
  if (option.extra_ms.empty()) option.extra_ms.assign(layers, 0.0);
  if (option.recomputed.size() != layers || option.extra_ms.size() != layers) {
    throw Error("cost model: recompute option '" + option.name + "' needs one entry per layer");
  }
  checkNonNegative(option.extra_ms, "extra_ms");
  OptionTables tables;
  std::vector<double> kept(layers), run_inputs(layers), extra(layers);
  for (std::size_t i = 0; i < layers; ++i) {
    const bool recomputed = option.recomputed[i] != 0;
    tables.any_recomputed = tables.any_recomputed || recomputed;
    // keptBytesOfLayer in prefix form: inside a run nothing, at a run's start its input
    // (the stage's first layer always starts one: optionMemoryBytes adds it).
    kept[i] = keptBytesOfLayer(recomputed, false, costs_.activation_bytes[i], costs_.input_bytes[i]);
    const bool run_starts = i == 0 || !option.recomputed[i - 1];
    run_inputs[i] = recomputed && run_starts ? keptBytesOfLayer(true, true, 0.0, costs_.input_bytes[i]) : 0.0;
    extra[i] = recomputed ? option.extra_ms[i] : 0.0;
  }
  tables.extra_prefix = prefixSums(extra);
  tables.kept_prefix = prefixSums(kept);
  tables.run_input_prefix = prefixSums(run_inputs);
  if (tables.any_recomputed) {
    // A bottom-up segment tree: 2L doubles, where a sparse table would need L log L.
    tables.max_tree.assign(2 * layers, 0.0);
    for (std::size_t i = 0; i < layers; ++i) {
      tables.max_tree[layers + i] = option.recomputed[i] ? costs_.activation_bytes[i] : 0.0;
    }
    for (std::size_t i = layers - 1; i > 0; --i) {
      tables.max_tree[i] = std::max(tables.max_tree[2 * i], tables.max_tree[2 * i + 1]);
    }
  }
  return tables;
}

CostModel::CostModel(ChainCosts costs) : costs_(std::move(costs)) {
  checkChainCosts(costs_);
  const std::size_t layers = costs_.compute_ms.size();
  restricts_cuts_ = std::any_of(costs_.cut_allowed.begin(), costs_.cut_allowed.end(), [](char c) { return c == 0; });
  has_comm_ = std::any_of(costs_.boundary_comm_ms.begin(), costs_.boundary_comm_ms.end(),
                          [](double ms) { return ms > 0; });
  uniform_speed_ = std::all_of(costs_.stage_speed.begin(), costs_.stage_speed.end(),
                               [&](double speed) { return speed == costs_.stage_speed.front(); });
  compute_prefix_ = prefixSums(costs_.compute_ms);
  state_prefix_ = prefixSums(costs_.state_bytes);

  options_ = costs_.recompute_options;
  if (options_.empty()) options_.push_back(RecomputeOption{"none", {}, {}});
  for (RecomputeOption& option : options_) {
    tables_.push_back(optionTables(option));
    any_recomputed_ = any_recomputed_ || tables_.back().any_recomputed;
  }
  if (!costs_.layer_memory.empty()) {
    for (const RecomputeOption& option : options_) {
      StageMemoryRules rules;
      rules.splits_backward = costs_.splits_backward;
      rules.recompute = &option;
      rules.optimizer = costs_.optimizer;
      memory_tables_.emplace_back(costs_.layer_memory, rules);
    }
  }
  if (options_.size() == 1) {
    // One option: its extra forward is plain compute, so prefix-sum shortcuts stay exact.
    for (std::size_t i = 0; i <= layers; ++i) compute_prefix_[i] += tables_[0].extra_prefix[i];
  }
  if (!costs_.gradient_bytes.empty()) {
    gradient_prefix_ = prefixSums(costs_.gradient_bytes);
    backward_prefix_ = prefixSums(costs_.backward_ms);
    has_allreduce_ = costs_.allreduce_fixed_ms > 0 || costs_.allreduce_ms_per_byte > 0;
  }
}

double CostModel::largestRecomputedBytes(const OptionTables& tables, int first, int last) const {
  if (!tables.any_recomputed) return 0.0;
  double largest = 0.0;
  std::size_t lo = static_cast<std::size_t>(first) + costs_.compute_ms.size();
  std::size_t hi = static_cast<std::size_t>(last) + 1 + costs_.compute_ms.size();
  for (; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) largest = std::max(largest, tables.max_tree[lo++]);
    if (hi & 1) largest = std::max(largest, tables.max_tree[--hi]);
  }
  return largest;
}

double CostModel::allReduceMs(int first, int last) const {
  if (!has_allreduce_) return 0.0;
  return costs_.allreduce_fixed_ms +
         costs_.allreduce_ms_per_byte * (gradient_prefix_[last + 1] - gradient_prefix_[first]);
}

double CostModel::exposedAllReduceMs(int stage, int first, int last) const {
  if (!has_allreduce_) return 0.0;
  const int overlap = costs_.allreduce_overlap.empty() ? 0 : costs_.allreduce_overlap[stage];
  const double hidden_ms =
      overlap * (backward_prefix_[last + 1] - backward_prefix_[first]) / costs_.stage_speed[stage];
  return std::max(0.0, allReduceMs(first, last) - hidden_ms);
}

double CostModel::recomputeExtraMs(int option, int first, int last) const {
  const OptionTables& tables = tables_[static_cast<std::size_t>(option)];
  return tables.extra_prefix[last + 1] - tables.extra_prefix[first];
}

double CostModel::optionCostMs(int option, int stage, int first, int last) const {
  const double extra = options_.size() == 1 ? 0.0 : recomputeExtraMs(option, first, last);
  const double cost = (computeMs(first, last) + extra + commInMs(first) + commOutMs(last)) /
                      costs_.stage_speed[stage];
  return has_allreduce_ ? cost + exposedAllReduceMs(stage, first, last) / costs_.allreduce_slots : cost;
}

double CostModel::peakBytes(int option, int stage, int first, int last) const {
  return peakMemoryBytes(costs_.peak_states[static_cast<std::size_t>(stage)],
                         memory_tables_[static_cast<std::size_t>(option)].terms(first, last));
}

std::optional<MemoryParts> CostModel::memoryParts(int stage, int first, int last) const {
  if (memory_tables_.empty()) return std::nullopt;
  const int choice = std::max(0, recomputeChoice(stage, first, last));
  const std::vector<MemoryState>& states = costs_.peak_states[static_cast<std::size_t>(stage)];
  const StageMemoryTerms terms = memory_tables_[static_cast<std::size_t>(choice)].terms(first, last);
  int at = 0;
  peakMemoryBytes(states, terms, &at);
  return memoryStateParts(states[static_cast<std::size_t>(at)], terms);
}

double CostModel::optionMemoryBytes(int option, int stage, int first, int last) const {
  if (!memory_tables_.empty()) return peakBytes(option, stage, first, last);
  const OptionTables& tables = tables_[static_cast<std::size_t>(option)];
  const double kept = tables.kept_prefix[last + 1] - tables.kept_prefix[first];
  double inputs = tables.run_input_prefix[last + 1] - tables.run_input_prefix[first + 1];
  if (options_[static_cast<std::size_t>(option)].recomputed[first]) inputs += costs_.input_bytes[first];
  return stateBytes(first, last) + costs_.in_flight[stage] * (kept + inputs) +
         largestRecomputedBytes(tables, first, last);
}

int CostModel::recomputeChoice(int stage, int first, int last) const {
  const int count = recomputeOptionCount();
  if (count == 1) return !hasMemoryCaps() || optionMemoryBytes(0, stage, first, last) <= capBytes(stage) ? 0 : -1;
  int best = -1;
  double best_cost = 0.0;
  for (int option = 0; option < count; ++option) {
    if (hasMemoryCaps() && optionMemoryBytes(option, stage, first, last) > capBytes(stage)) continue;
    const double cost = optionCostMs(option, stage, first, last);
    if (best < 0 || cost < best_cost) {
      best = option;
      best_cost = cost;
    }
  }
  return best;
}

std::string CostModel::recomputeName(int option) const {
  return options_[static_cast<std::size_t>(option)].name;
}

double CostModel::stageCostMs(int stage, int first, int last) const {
  if (options_.size() == 1 && !has_allreduce_) {
    return (computeMs(first, last) + commInMs(first) + commOutMs(last)) / costs_.stage_speed[stage];
  }
  const int choice = recomputeChoice(stage, first, last);
  return optionCostMs(std::max(choice, 0), stage, first, last);
}

double CostModel::growingMemoryBytes(int stage, int first, int last) const {
  if (!memory_tables_.empty()) {
    // Every peak is at least the optimizer step's memory (weights, gradients, state and its
    // temporaries: sums and a range maximum), the same under every option.
    MemoryState step;
    step.gradients = true;
    step.transient = MemoryState::Transient::kOptimizer;
    return memoryStateBytes(step, memory_tables_.front().terms(first, last));
  }
  double least = std::numeric_limits<double>::infinity();
  for (const OptionTables& tables : tables_) {
    const double kept = tables.kept_prefix[last + 1] - tables.kept_prefix[first];
    least = std::min(least, costs_.in_flight[stage] * kept + largestRecomputedBytes(tables, first, last));
  }
  return stateBytes(first, last) + least;
}

double CostModel::memoryBytes(int stage, int first, int last) const {
  const int choice = recomputeChoice(stage, first, last);
  if (choice >= 0) return optionMemoryBytes(choice, stage, first, last);
  double least = std::numeric_limits<double>::infinity();
  for (int option = 0; option < recomputeOptionCount(); ++option) {
    least = std::min(least, optionMemoryBytes(option, stage, first, last));
  }
  return least;
}

double CostModel::stageCostUpperBoundMs() const {
  double comm = 0.0;
  for (double ms : costs_.boundary_comm_ms) comm = std::max(comm, ms);
  double extra = 0.0;
  for (const OptionTables& tables : tables_) extra = std::max(extra, tables.extra_prefix.back());
  if (options_.size() == 1) extra = 0.0;  // already in the compute prefix
  const double slowest = *std::min_element(costs_.stage_speed.begin(), costs_.stage_speed.end());
  return (totalComputeMs() + extra + 2 * comm) / slowest +
         allReduceMs(0, layerCount() - 1) / costs_.allreduce_slots;
}

double CostModel::capBytes(int stage) const {
  return hasMemoryCaps() ? costs_.memory_cap_bytes[stage] : std::numeric_limits<double>::infinity();
}

CostModel CostModel::reversed() const {
  ChainCosts mirror = costs_;
  std::reverse(mirror.compute_ms.begin(), mirror.compute_ms.end());
  std::reverse(mirror.boundary_comm_ms.begin(), mirror.boundary_comm_ms.end());
  std::reverse(mirror.state_bytes.begin(), mirror.state_bytes.end());
  std::reverse(mirror.activation_bytes.begin(), mirror.activation_bytes.end());
  std::reverse(mirror.input_bytes.begin(), mirror.input_bytes.end());
  std::reverse(mirror.stage_speed.begin(), mirror.stage_speed.end());
  std::reverse(mirror.in_flight.begin(), mirror.in_flight.end());
  std::reverse(mirror.memory_cap_bytes.begin(), mirror.memory_cap_bytes.end());
  for (RecomputeOption& option : mirror.recompute_options) {
    std::reverse(option.recomputed.begin(), option.recomputed.end());
    std::reverse(option.extra_ms.begin(), option.extra_ms.end());
  }
  std::reverse(mirror.gradient_bytes.begin(), mirror.gradient_bytes.end());
  std::reverse(mirror.backward_ms.begin(), mirror.backward_ms.end());
  std::reverse(mirror.allreduce_overlap.begin(), mirror.allreduce_overlap.end());
  std::reverse(mirror.cut_allowed.begin(), mirror.cut_allowed.end());
  // The predicted peak does not mirror (a stage receives its input and sends its output); a
  // reversed model serves searches without caps, where memory is not asked.
  mirror.layer_memory.clear();
  mirror.peak_states.clear();
  return CostModel(std::move(mirror));
}

}  // namespace stagecut
