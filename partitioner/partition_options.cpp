#include "partitioner/partition_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"
#include "schedule/data_parallel.h"
#include "schedule/in_flight.h"
#include "schedule/profile_costs.h"

namespace stagecut {

namespace {

constexpr double kMinStageSpeed = 1e-3;

// The most bytes stagecut reports (uint64 with room): memory beyond it is a wrong input.
constexpr double kMaxMemoryBytes = 9.2e18;

}  // namespace

SplitRules resolvedSplitRules(const Profile& profile, const PartitionOptions& options) {
  return options.rules ? splitRules(*options.rules, profile) : frameworkRules(profile);
}

PredictionOptions predictionOptions(const PartitionOptions& options) {
  PredictionOptions prediction;
  prediction.schedule = options.schedule;
  prediction.microbatches = options.microbatches;
  prediction.placement = options.placement;
  prediction.stage_speed = options.stage_speed;
  prediction.data_parallel = options.data_parallel;
  prediction.link = BoundaryLink{options.bandwidth_bytes_per_s, options.latency_ms};
  prediction.dp_link = BoundaryLink{options.dp_bandwidth_bytes_per_s, options.dp_latency_ms};
  prediction.optimizer = options.optimizerMemory();
  return prediction;
}

std::vector<double> parseStageSpeeds(const std::string& text, int stages) {
  const std::vector<std::string> parts = splitCommaList(text);
  std::vector<double> speeds;
  for (const std::string& part : parts) {
    char* end = nullptr;
    const double speed = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(speed > 0) || !std::isfinite(speed)) {
      throw Error("--stage-speed " + text + ": \"" + part + "\" is not a speed > 0; use " +
                  "relative speeds, one per stage, e.g. 1,1,0.5,1");
    }
    // Devices a thousand times apart do not share a pipeline; tighter bounds also keep
    // cost / speed finite for any finite cost.
    if (speed < kMinStageSpeed || speed > 1.0 / kMinStageSpeed) {
      throw Error("--stage-speed " + text + ": \"" + part + "\" is out of range; relative " +
                  "speeds go from 0.001 to 1000, e.g. 1,1,0.5,1");
    }
    speeds.push_back(speed);
  }
  if (static_cast<int>(speeds.size()) != stages) {
    std::string example;
    for (int s = 0; s < stages; ++s) example += s ? ",1" : "1";
    throw Error("--stage-speed " + text + ": " + std::to_string(speeds.size()) + " values for " +
                std::to_string(stages) + " stages; give one per stage, e.g. --stage-speed " + example);
  }
  return speeds;
}

std::vector<std::uint64_t> parseMemoryCaps(const std::string& text, int stages) {
  std::vector<std::uint64_t> caps;
  for (const std::string& part : splitCommaList(text)) caps.push_back(parseBytes(part, "--memory-cap"));
  if (caps.size() != 1 && static_cast<int>(caps.size()) != stages) {
    throw Error("--memory-cap " + text + ": " + std::to_string(caps.size()) + " caps for " +
                std::to_string(stages) + " stages; give one for all stages or one per stage");
  }
  return caps;
}

double stageCapBytes(const PartitionOptions& options, int stage) {
  const std::vector<std::uint64_t>& caps = options.memory_cap_bytes;
  if (caps.empty()) return std::numeric_limits<double>::infinity();
  if (caps.size() != 1 && static_cast<int>(caps.size()) != options.placement.ranks) {
    throw Error("--memory-cap: " + std::to_string(caps.size()) + " caps for " + std::to_string(options.placement.ranks) +
                " stages; give one for all stages or one per stage");
  }
  return static_cast<double>(caps.size() == 1 ? caps[0] : caps[static_cast<std::size_t>(stage)]);
}

void checkStageCount(int stages, std::size_t layers) {
  if (stages < 1) {
    throw Error("--stages " + std::to_string(stages) + ": a pipeline needs at least 1 stage");
  }
  if (static_cast<std::size_t>(stages) > layers) {
    throw Error("--stages " + std::to_string(stages) + ": the profile has " + std::to_string(layers) +
                (layers == 1 ? " layer" : " layers") + "; use --stages " + std::to_string(layers) +
                " or fewer");
  }
}

namespace {

void checkCostOptions(const Profile& profile, const PartitionOptions& options) {
  const int stages = options.placement.ranks;
  checkStageCount(stages, profile.layerCount());
  if (options.microbatches < 1) {
    throw Error("--microbatches " + std::to_string(options.microbatches) + ": a step needs at least 1 microbatch");
  }
  if (!options.stage_speed.empty() && static_cast<int>(options.stage_speed.size()) != stages) {
    throw Error("--stage-speed: " + std::to_string(options.stage_speed.size()) + " values for " +
                std::to_string(stages) + " stages; give one per stage");
  }
  stageCapBytes(options, 0);  // one cap, or one per stage
  if (!(options.bytes_per_param >= 0) || !std::isfinite(options.bytes_per_param)) {
    throw Error("--bytes-per-param: must be a finite number >= 0");
  }
  if (options.data_parallel < 1) {
    throw Error("--data-parallel " + std::to_string(options.data_parallel) +
                ": each stage needs at least 1 replica; use --data-parallel 1 for a plain pipeline");
  }
}

// Each layer's compute, state and activation bytes and input, and the sum a double must hold.
double chargeLayers(const Profile& profile, const PartitionOptions& options, const std::string& source, ChainCosts* costs) {
  const int layers = static_cast<int>(profile.layerCount());
  costs->recompute_options = recomputeOptions(profile, options.recompute);
  // A rank's weights, gradients and optimizer state, as the memory timeline counts them.
  const std::vector<LayerMemoryTerms> memory = layerMemoryTerms(profile);
  const OptimizerMemory optimizer = options.optimizerMemory();
  double total_ms = 0.0;
  for (int k = 0; k < layers; ++k) {
    const LayerCost& layer = profile.layers[k];
    const double compute_ms = layer.forward_ms.median + layer.backward_ms.median;
    costs->compute_ms.push_back(compute_ms);
    // The worst case for the finiteness check below: every layer recomputed.
    total_ms += compute_ms + layer.recomputeMedianMs();
    const LayerMemoryTerms& terms = memory[static_cast<std::size_t>(k)];
    const double state = std::max(0.0, optimizer.bytes_per_param * terms.params - terms.weights - terms.gradients);
    costs->state_bytes.push_back(terms.weights * optimizer.sharding.weights + terms.gradients * optimizer.sharding.gradients +
                                 state * optimizer.sharding.state);
    costs->activation_bytes.push_back(static_cast<double>(layer.activation_bytes));
    costs->input_bytes.push_back(k > 0 ? static_cast<double>(profile.layers[k - 1].output_bytes) : 0.0);
  }
  if (!std::isfinite((total_ms + total_ms) / kMinStageSpeed)) {
    // With room for what the cost model does next: add communication, divide by a speed.
    throw Error(source + ": the layers' forward_ms and backward_ms add up to more than stagecut "
                "can compute with; check the profile's times (ms per microbatch)");
  }
  if (!(total_ms > 0)) {
    throw Error(source + ": all " + std::to_string(layers) + " layers take 0 ms; there is no time " +
                "to balance; measure the model with 'stagecut profile' or fix the imported times");
  }
  return total_ms;
}

// One message each way at every boundary: the activation forward, its gradient backward.
void chargeBoundaries(const Profile& profile, const PartitionOptions& options, double total_ms, ChainCosts* costs) {
  if (!options.modelsCommunication()) return;
  const BoundaryLink link{options.bandwidth_bytes_per_s, options.latency_ms};
  double comm_total_ms = 0.0;
  for (std::size_t b = 0; b + 1 < profile.layerCount(); ++b) {
    costs->boundary_comm_ms.push_back(2 * link.transferMs(profile.layers[b].output_bytes));
    comm_total_ms += costs->boundary_comm_ms.back();
  }
  if (!std::isfinite((comm_total_ms + total_ms) / kMinStageSpeed)) {
    throw Error("--bandwidth, --latency: sending the layers' outputs takes longer than stagecut "
                "can compute with; give the link's bandwidth and latency in their units, e.g. "
                "25GB/s and 10us");
  }
}

// The schedule's activations in flight, the memory timeline's states per rank and the caps.
void chargeMemory(const Profile& profile, const PartitionOptions& options, const std::string& source, ChainCosts* costs) {
  const int stages = options.placement.ranks;
  const std::vector<double> in_flight = inFlightActivationShare(options.schedule, options.placement, options.microbatches);
  const double most_in_flight = *std::max_element(in_flight.begin(), in_flight.end());
  double most_bytes = 0.0;  // every stage's memory is below: all state + all activations in flight
  for (std::size_t k = 0; k < profile.layerCount(); ++k) {
    most_bytes += costs->state_bytes[k] + most_in_flight * (costs->activation_bytes[k] + costs->input_bytes[k]) +
                  costs->activation_bytes[k];
  }
  if (!(most_bytes < kMaxMemoryBytes)) {
    throw Error(source + ": the model's memory could exceed 8 EiB (params x bytes per parameter + " +
                "activation_bytes x " + std::to_string(static_cast<long long>(std::ceil(most_in_flight))) +
                " microbatches in flight); check the profile's " +
                "params and activation_bytes, --bytes-per-param and --microbatches");
  }
  costs->stage_speed = options.stage_speed.empty() ? std::vector<double>(stages, 1.0) : options.stage_speed;
  costs->in_flight = in_flight;
  // The predicted peak: the same terms and op lists as predictPipeline()'s memory timeline.
  const Schedule schedule = pipelineSchedule(options.schedule, options.placement, options.microbatches, options.data_parallel);
  costs->layer_memory = layerMemoryTerms(profile);
  costs->splits_backward = schedule.splits_backward;
  costs->optimizer = options.optimizerMemory();
  for (int s = 0; s < stages; ++s) {
    costs->peak_states.push_back(peakCandidates(
        rankMemoryStates(schedule.ranks[static_cast<std::size_t>(s)], schedule.placement, s, schedule.splits_backward, true)));
  }
  for (int s = 0; s < stages && !options.memory_cap_bytes.empty(); ++s) {
    costs->memory_cap_bytes.push_back(stageCapBytes(options, s));
  }
}

// GPipe and 1F1B: stage s's last backward is followed by those of stages s-1 .. 0, which hide
// that much of its gradient all-reduce.
void chargeAllReduce(const Profile& profile, const PartitionOptions& options, ChainCosts* costs) {
  if (options.data_parallel <= 1) return;
  const RingAllReduceCost ring =
      ringAllReduceCost(options.data_parallel, BoundaryLink{options.dp_bandwidth_bytes_per_s, options.dp_latency_ms});
  costs->allreduce_fixed_ms = ring.fixed_ms;
  costs->allreduce_ms_per_byte = ring.ms_per_byte;
  for (const LayerCost& layer : profile.layers) {
    costs->gradient_bytes.push_back(static_cast<double>(layer.param_bytes));
    costs->backward_ms.push_back(layer.backward_ms.median);
  }
  for (int s = 0; s < options.placement.ranks; ++s) costs->allreduce_overlap.push_back(s);
  costs->allreduce_slots = options.microbatches + options.placement.ranks - 1;
}

}  // namespace

CostModel buildCostModel(const Profile& profile, const PartitionOptions& options, const std::string& source) {
  checkCostOptions(profile, options);
  ChainCosts costs;
  const double total_ms = chargeLayers(profile, options, source, &costs);
  chargeBoundaries(profile, options, total_ms, &costs);
  chargeMemory(profile, options, source, &costs);
  costs.cut_allowed = resolvedSplitRules(profile, options).cut_allowed;
  chargeAllReduce(profile, options, &costs);
  return CostModel(std::move(costs));
}

}  // namespace stagecut
