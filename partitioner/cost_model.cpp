#include "partitioner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"

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

CostModel::CostModel(ChainCosts costs) : costs_(std::move(costs)) {
  const std::size_t layers = costs_.compute_ms.size();
  const std::size_t stages = costs_.stage_speed.size();
  if (layers == 0) throw Error("cost model: the chain has no layers");
  if (stages == 0) throw Error("cost model: there are no stages");
  checkSize(costs_.state_bytes, layers, "state_bytes");
  checkSize(costs_.activation_bytes, layers, "activation_bytes");
  checkSize(costs_.input_bytes, layers, "input_bytes");
  if (!costs_.boundary_comm_ms.empty()) checkSize(costs_.boundary_comm_ms, layers - 1, "boundary_comm_ms");
  if (costs_.in_flight.size() != stages) throw Error("cost model: in_flight needs one entry per stage");
  if (!costs_.memory_cap_bytes.empty()) checkSize(costs_.memory_cap_bytes, stages, "memory_cap_bytes");
  checkNonNegative(costs_.compute_ms, "compute_ms");
  checkNonNegative(costs_.boundary_comm_ms, "boundary_comm_ms");
  checkNonNegative(costs_.state_bytes, "state_bytes");
  checkNonNegative(costs_.activation_bytes, "activation_bytes");
  checkNonNegative(costs_.input_bytes, "input_bytes");
  for (double speed : costs_.stage_speed) {
    if (!(speed > 0) || !std::isfinite(speed)) throw Error("cost model: stage speeds must be > 0");
  }
  for (int count : costs_.in_flight) {
    if (count < 0) throw Error("cost model: in_flight counts must be >= 0");
  }
  for (double cap : costs_.memory_cap_bytes) {
    if (!(cap > 0)) throw Error("cost model: memory caps must be > 0");
  }
  has_comm_ = std::any_of(costs_.boundary_comm_ms.begin(), costs_.boundary_comm_ms.end(),
                          [](double ms) { return ms > 0; });
  uniform_speed_ = std::all_of(costs_.stage_speed.begin(), costs_.stage_speed.end(),
                               [&](double speed) { return speed == costs_.stage_speed.front(); });
  compute_prefix_ = prefixSums(costs_.compute_ms);
  state_prefix_ = prefixSums(costs_.state_bytes);
  activation_prefix_ = prefixSums(costs_.activation_bytes);
  if (costs_.recompute) {
    // A bottom-up segment tree: 2L doubles, where a sparse table would need L log L.
    activation_max_tree_.assign(2 * layers, 0.0);
    for (std::size_t i = 0; i < layers; ++i) activation_max_tree_[layers + i] = costs_.activation_bytes[i];
    for (std::size_t i = layers - 1; i > 0; --i) {
      activation_max_tree_[i] = std::max(activation_max_tree_[2 * i], activation_max_tree_[2 * i + 1]);
    }
  }
}

double CostModel::largestActivationBytes(int first, int last) const {
  double largest = 0.0;
  std::size_t lo = static_cast<std::size_t>(first) + costs_.compute_ms.size();
  std::size_t hi = static_cast<std::size_t>(last) + 1 + costs_.compute_ms.size();
  for (; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) largest = std::max(largest, activation_max_tree_[lo++]);
    if (hi & 1) largest = std::max(largest, activation_max_tree_[--hi]);
  }
  return largest;
}

double CostModel::growingMemoryBytes(int stage, int first, int last) const {
  const double state = state_prefix_[last + 1] - state_prefix_[first];
  if (costs_.recompute) return state + largestActivationBytes(first, last);
  return state + costs_.in_flight[stage] * (activation_prefix_[last + 1] - activation_prefix_[first]);
}

double CostModel::memoryBytes(int stage, int first, int last) const {
  double bytes = growingMemoryBytes(stage, first, last);
  if (costs_.recompute) bytes += costs_.in_flight[stage] * costs_.input_bytes[first];
  return bytes;
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
  return CostModel(std::move(mirror));
}

}  // namespace stagecut
