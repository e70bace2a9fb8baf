#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "core/profile_json.h"
#include "partitioner/cost_model.h"
#include "partitioner/partition_options.h"
#include "partitioner/profile_partitioner.h"
#include "prediction/memory_prediction.h"
#include "prediction/pipeline_prediction.h"
#include "schedule/generators.h"
#include "test_support.h"

using stagecut::LayerMemoryTerms;
using stagecut::MemoryState;
using stagecut::PipelinePrediction;
using stagecut::PredictionOptions;
using stagecut::Profile;
using stagecut::ScheduleKind;
using stagecut::StageMemoryRules;
using stagecut::StageMemoryTerms;

using stagecut::testing::kExampleGptProfile;

namespace {


// A chain whose layers hold only what a test sets: no weights, no transients.
Profile bareChain(int layers) {
  Profile profile = stagecut::testing::makeProfile(layers);
  for (auto& layer : profile.layers) {
    layer.params = 0;
    layer.param_bytes = 0;
    layer.activation_bytes = 0;
    layer.output_bytes = 0;
    layer.gradient_bytes = 0;
    layer.largest_parameter_bytes = 0;
    layer.forward_transient_bytes = 0;
    layer.backward_transient_bytes = 0;
    layer.input_kept_bytes = 0;
    layer.weight_pending_bytes = 0;
  }
  return profile;
}

PipelinePrediction predict(const Profile& profile, const std::vector<int>& split, ScheduleKind kind, int microbatches,
                           const std::string& optimizer = "sgd") {
  PredictionOptions options;
  options.schedule = kind;
  options.microbatches = microbatches;
  options.optimizer = stagecut::optimizerMemory(optimizer);
  return stagecut::predictPipeline(profile, stagecut::testing::makePartition(split), options, "test");
}

// An independent reading of docs/metrics.md's stage terms, layer by layer: the oracle of the
// prefix tables.
StageMemoryTerms bruteForceTerms(const std::vector<LayerMemoryTerms>& layers, int first, int last, bool split,
                                 const std::vector<char>& recomputed, const stagecut::OptimizerMemory& optimizer) {
  StageMemoryTerms terms;
  const bool full = !recomputed.empty() && std::all_of(recomputed.begin(), recomputed.end(), [](char c) { return c; });
  const auto again = [&](int i) { return !recomputed.empty() && recomputed[static_cast<std::size_t>(i)]; };
  double kept = 0, held = 0, recomputed_sum = 0, recomputed_largest = 0, largest_parameter = 0, pending = 0;
  for (int i = first; i <= last; ++i) {
    const LayerMemoryTerms& layer = layers[static_cast<std::size_t>(i)];
    terms.weights += layer.weights;
    terms.gradients += layer.gradients;
    terms.optimizer += std::max(0.0, optimizer.bytes_per_param * layer.params - layer.weights - layer.gradients);
    largest_parameter = std::max(largest_parameter, layer.largest_parameter);
    if (!again(i)) kept += layer.kept;
    else if (i == first || !again(i - 1)) kept += layer.input;
    if (again(i)) {
      recomputed_sum += layer.kept - (i == first ? layer.input_kept : 0.0);
      recomputed_largest = std::max(recomputed_largest, layer.kept);
    }
    if (i < last) held += std::max(0.0, layer.output - layers[static_cast<std::size_t>(i + 1)].input_kept);
    pending += layer.weight_pending + layer.output;
    if (layer.weights > 0) terms.weight_transient = std::max(terms.weight_transient, layer.backward_transient);
  }
  const LayerMemoryTerms& front = layers[static_cast<std::size_t>(first)];
  const LayerMemoryTerms& back = layers[static_cast<std::size_t>(last)];
  terms.kept = kept + (again(first) ? 0.0 : front.input - front.input_kept) + back.output;
  terms.recomputed = full ? recomputed_sum + (split ? held : 0.0) : recomputed_largest;
  if (split && !full) terms.kept += held;
  if (split) terms.pending = pending + terms.recomputed;
  // The walks, step by step.
  double activations_total = 0;
  for (int i = first; i <= last; ++i) activations_total += layers[static_cast<std::size_t>(i)].kept;
  double forward = 0, backward = 0, before = 0;
  for (int i = first; i <= last; ++i) {
    const LayerMemoryTerms& layer = layers[static_cast<std::size_t>(i)];
    before += layer.kept;
    const double input_alive = i == first ? 0.0 : std::max(0.0, layer.input - layer.input_kept);
    forward = std::max(forward, layer.forward_transient + input_alive + layer.output + before -
                                    activations_total - back.output);
    const double upstream = i == last ? 0.0 : layer.output;
    backward = std::max(backward, layer.backward_transient + upstream + before - activations_total);
  }
  if (full) {
    forward = 0;
    for (int i = first; i <= last; ++i) forward = std::max(forward, layers[static_cast<std::size_t>(i)].forward_transient);
  }
  if (split) {
    backward = front.backward_transient;
    for (int i = first + 1; i <= last; ++i) {
      const LayerMemoryTerms& layer = layers[static_cast<std::size_t>(i)];
      backward = std::max(backward, layer.backward_transient - layer.input);
    }
  }
  terms.forward_transient = std::max(0.0, forward);
  terms.backward_transient = std::max(0.0, backward);
  terms.received_gradient = back.output;
  terms.sent_gradient = front.input;
  terms.allreduce_transient = terms.gradients;
  terms.optimizer_transient = optimizer.step_temporaries * largest_parameter;
  return terms;
}

void checkTermsEqual(const StageMemoryTerms& got, const StageMemoryTerms& want) {
  CHECK(got.weights == Approx(want.weights));
  CHECK(got.gradients == Approx(want.gradients));
  CHECK(got.optimizer == Approx(want.optimizer));
  CHECK(got.kept == Approx(want.kept));
  CHECK(got.pending == Approx(want.pending));
  CHECK(got.recomputed == Approx(want.recomputed));
  CHECK(got.received_gradient == Approx(want.received_gradient));
  CHECK(got.sent_gradient == Approx(want.sent_gradient));
  CHECK(got.forward_transient == Approx(want.forward_transient).margin(1e-6));
  CHECK(got.backward_transient == Approx(want.backward_transient).margin(1e-6));
  CHECK(got.weight_transient == Approx(want.weight_transient));
  CHECK(got.allreduce_transient == Approx(want.allreduce_transient));
  CHECK(got.optimizer_transient == Approx(want.optimizer_transient));
}

std::vector<LayerMemoryTerms> randomLayers(int count, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> bytes(0, 1000);
  std::vector<LayerMemoryTerms> layers(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    LayerMemoryTerms& layer = layers[i];
    layer.params = bytes(random) % 3 == 0 ? 0.0 : bytes(random);
    layer.weights = 4 * layer.params;
    layer.gradients = layer.weights;
    layer.largest_parameter = layer.weights / 2;
    layer.output = i + 1 < layers.size() ? bytes(random) : 0.0;
    layer.input = i > 0 ? layers[i - 1].output : 0.0;
    layer.input_kept = bytes(random) % 2 ? layer.input : 0.0;
    layer.kept = layer.input_kept + bytes(random);
    layer.forward_transient = bytes(random);
    layer.backward_transient = bytes(random) * 2;
    layer.weight_pending = layer.weights > 0 ? bytes(random) : 0.0;
  }
  return layers;
}

}  // namespace

TEST_CASE("1F1B keeps N - s microbatches on stage s, GPipe all M, each counted with its kept bytes",
          "[prediction][memory]") {
  Profile profile = bareChain(4);
  for (auto& layer : profile.layers) layer.activation_bytes = 1000;
  const int microbatches = 6;
  const PipelinePrediction one_f_one_b = predict(profile, {1, 1, 1, 1}, ScheduleKind::kOneFOneB, microbatches);
  const PipelinePrediction gpipe = predict(profile, {1, 1, 1, 1}, ScheduleKind::kGpipe, microbatches);
  for (int s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(one_f_one_b.memory.ranks[s].peak_bytes == Approx(1000.0 * std::min(4 - s, microbatches)));
    CHECK(gpipe.memory.ranks[s].peak_bytes == Approx(1000.0 * microbatches));
  }
}

TEST_CASE("an op's temporaries count once, on top of every microbatch in flight", "[prediction][memory]") {
  Profile profile = bareChain(2);
  profile.layers[0].activation_bytes = 1000;
  profile.layers[1].activation_bytes = 1000;
  profile.layers[1].backward_transient_bytes = 50000;
  const PipelinePrediction predicted = predict(profile, {2}, ScheduleKind::kGpipe, 8);
  // GPipe's first B holds all 8 microbatches; layer 1 runs its backward first, with nothing freed.
  CHECK(predicted.memory.ranks[0].peak_bytes == Approx(8 * 2000.0 + 50000.0));
  CHECK(predicted.memory.ranks[0].peak_parts.transient == Approx(50000.0));
  // Layer 0's temporaries come after layer 1 freed its activations: 1000 less on top.
  profile.layers[1].backward_transient_bytes = 0;
  profile.layers[0].backward_transient_bytes = 50000;
  CHECK(predict(profile, {2}, ScheduleKind::kGpipe, 8).memory.ranks[0].peak_bytes ==
        Approx(8 * 2000.0 + 50000.0 - 1000.0));
}

TEST_CASE("weights, gradients and optimizer state count once per rank, and the step's temporaries after it",
          "[prediction][memory]") {
  Profile profile = bareChain(2);
  profile.layers[0].params = 1000;
  profile.layers[0].param_bytes = 4000;
  profile.layers[0].gradient_bytes = 4000;
  profile.layers[0].largest_parameter_bytes = 3000;
  profile.layers[0].activation_bytes = 10;
  const PipelinePrediction adam = predict(profile, {2}, ScheduleKind::kOneFOneB, 4, "adam");
  // Adam: 16 bytes per parameter, weights 4 + gradients 4 + moments 8; its step builds two
  // temporaries of the largest tensor once every microbatch is done.
  CHECK(adam.memory.ranks[0].peak_bytes == Approx(16000.0 + 2 * 3000.0));
  CHECK(adam.memory.ranks[0].peak_op == static_cast<int>(adam.schedule.ranks[0].size()));
  CHECK(adam.memory.ranks[0].peak_parts.optimizer == Approx(8000.0));
  const PipelinePrediction sgd = predict(profile, {2}, ScheduleKind::kOneFOneB, 4, "sgd");
  CHECK(sgd.memory.ranks[0].peak_bytes == Approx(8000.0 + 10.0));
  CHECK(sgd.memory.ranks[0].peak_parts.gradients == Approx(4000.0));
}

TEST_CASE("ZB-H1 holds what B leaves for W from each B to its W", "[prediction][memory]") {
  Profile profile = bareChain(4);
  for (auto& layer : profile.layers) {
    layer.weight_pending_bytes = 700;
  }
  const int microbatches = 8;
  const PipelinePrediction predicted = predict(profile, {1, 1, 1, 1}, ScheduleKind::kZeroBubbleH1, microbatches);
  const stagecut::Schedule& schedule = predicted.schedule;
  REQUIRE(schedule.splits_backward);
  for (int r = 0; r < 4; ++r) {
    // The oracle: most microbatches whose B has started and whose W has not ended.
    int open = 0, most = 0;
    for (const auto& op : schedule.ranks[r]) {
      if (op.kind == stagecut::OpKind::kBackward) most = std::max(most, ++open);
      if (op.kind == stagecut::OpKind::kWeight) --open;
    }
    INFO("rank " << r);
    CHECK(most >= 1);
    CHECK(predicted.memory.ranks[r].peak_bytes == Approx(700.0 * most));
  }
}

TEST_CASE("a stage receives its input and gradient, and holds its sent gradients to the step's end",
          "[prediction][memory]") {
  Profile profile = bareChain(2);
  profile.layers[0].output_bytes = 100;
  const PipelinePrediction predicted = predict(profile, {1, 1}, ScheduleKind::kGpipe, 3);
  // Rank 0 keeps each sent output until its B; its first B holds all 3, the gradient it received
  // and the receive posted for the next B's.
  CHECK(predicted.memory.ranks[0].peak_bytes == Approx(3 * 100.0 + 100.0 + 100.0));
  CHECK(predicted.memory.ranks[0].peak_parts.buffers == Approx(200.0));
  // Rank 1 keeps each received input until B and each sent gradient until the step ends.
  CHECK(predicted.memory.ranks[1].peak_bytes == Approx(3 * 100.0));
  CHECK(predicted.memory.ranks[1].terms[0].sent_gradient == Approx(100.0));
  CHECK(predicted.memory.ranks[1].terms[0].kept == Approx(100.0));
}

TEST_CASE("the memory tables give every range's terms as the layer-by-layer rules do", "[prediction][memory]") {
  for (unsigned seed = 1; seed <= 6; ++seed) {
    const std::vector<LayerMemoryTerms> layers = randomLayers(9, seed);
    std::vector<std::vector<char>> recompute_choices = {{}, std::vector<char>(9, 1), {0, 1, 1, 0, 1, 0, 0, 1, 1}};
    for (const auto& recomputed : recompute_choices) {
      for (bool split : {false, true}) {
        stagecut::RecomputeOption option{"test", recomputed, {}};
        StageMemoryRules rules;
        rules.splits_backward = split;
        rules.recompute = recomputed.empty() ? nullptr : &option;
        rules.optimizer = stagecut::optimizerMemory("adam");
        const stagecut::StageMemoryTable table(layers, rules);
        for (int first = 0; first < 9; ++first) {
          for (int last = first; last < 9; ++last) {
            INFO("seed " << seed << " recompute " << recomputed.size() << " split " << split << " layers " << first
                         << ".." << last);
            checkTermsEqual(table.terms(first, last),
                            bruteForceTerms(layers, first, last, split, recomputed, rules.optimizer));
          }
        }
      }
    }
  }
}

TEST_CASE("the partitioner's memory is the memory timeline's peak for every schedule", "[prediction][partitioner]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  for (ScheduleKind kind : stagecut::allScheduleKinds()) {
    for (const char* recompute : {"none", "full"}) {
      stagecut::PartitionOptions options;
      options.microbatches = 6;
      options.schedule = kind;
      // An N-stage split under a chunked schedule: each rank's stage divided evenly into its chunks.
      options.placement = stagecut::schedulePlacement(kind, 3, stagecut::choosesChunks(kind) ? std::optional(2) : std::nullopt);
      options.recompute = stagecut::parseRecomputePolicy(recompute, profile);
      const stagecut::Partition split = stagecut::partitionProfile(profile, options, "p", stagecut::SplitMethod::kCompute);
      PredictionOptions prediction = stagecut::predictionOptions(options);
      const PipelinePrediction predicted = stagecut::predictPipeline(profile, split, prediction, "p");
      for (std::size_t s = 0; s < split.stages.size(); ++s) {
        INFO(stagecut::scheduleName(kind) << " --recompute " << recompute << " stage " << s);
        CHECK(static_cast<double>(split.stages[s].memory_bytes) == Approx(predicted.memory.ranks[s].peak_bytes).margin(1));
        REQUIRE(split.stages[s].memory_parts);
        CHECK(split.stages[s].memory_parts->total() == Approx(predicted.memory.ranks[s].peak_bytes).margin(8));
      }
    }
  }
}

TEST_CASE("the cost model's memory of every range is the peak over the schedule's op states",
          "[prediction][partitioner]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  for (ScheduleKind kind :
       {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kZeroBubbleH1, ScheduleKind::kZeroBubbleV}) {
    stagecut::PartitionOptions options;
    options.placement = stagecut::schedulePlacement(kind, 3);
    options.microbatches = 5;
    options.schedule = kind;
    const stagecut::CostModel model = stagecut::buildCostModel(profile, options, "p");
    const stagecut::Schedule schedule = stagecut::pipelineSchedule(kind, stagecut::schedulePlacement(kind, 3), 5, 1);
    StageMemoryRules rules;
    rules.splits_backward = schedule.splits_backward;
    rules.optimizer = stagecut::optimizerMemory("adam");
    const stagecut::StageMemoryTable table(stagecut::layerMemoryTerms(profile), rules);
    const int layers = static_cast<int>(profile.layerCount());
    for (int s = 0; s < 3; ++s) {
      // Every op's state, not only the candidates the cost model keeps.
      const std::vector<MemoryState> states =
          stagecut::rankMemoryStates(schedule.ranks[s], schedule.placement, s, schedule.splits_backward, true);
      for (int first = 0; first < layers; ++first) {
        for (int last = first; last < layers; ++last) {
          INFO(stagecut::scheduleName(kind) << " stage " << s << " layers " << first << ".." << last);
          CHECK(model.memoryBytes(s, first, last) == Approx(stagecut::peakMemoryBytes(states, table.terms(first, last))));
          CHECK(model.growingMemoryBytes(s, first, last) <= model.memoryBytes(s, first, last));
          if (last + 1 < layers) {
            CHECK(model.growingMemoryBytes(s, first, last) <= model.growingMemoryBytes(s, first, last + 1));
          }
        }
      }
    }
  }
}

TEST_CASE("a profile without the memory fields says which terms its prediction lacks", "[prediction][memory]") {
  const Profile profile = stagecut::readProfileFile(kExampleGptProfile);
  const std::vector<std::string> missing = stagecut::missingMemoryFields(profile);
  CHECK(std::find(missing.begin(), missing.end(), "forward_transient_bytes") != missing.end());
  CHECK(std::find(missing.begin(), missing.end(), "weight_pending_bytes") != missing.end());
  Profile measured = bareChain(3);
  CHECK(stagecut::missingMemoryFields(measured).empty());
  measured.layers[1].backward_transient_bytes.reset();
  CHECK(stagecut::missingMemoryFields(measured) == std::vector<std::string>{"backward_transient_bytes"});
}

TEST_CASE("a bfloat16 profile's gradients are float32, and adam-mixed's 18 bytes a parameter are all held",
          "[prediction][memory][mixed-precision]") {
  stagecut::Profile profile = stagecut::testing::makeProfile(4);
  for (auto& layer : profile.layers) {
    layer.param_bytes = 2 * static_cast<std::uint64_t>(layer.params);     // bfloat16 weights
    layer.gradient_bytes = 2 * static_cast<std::uint64_t>(layer.params);  // what the profile's .grad held
  }
  profile.run.dtype = "bfloat16";
  const auto half = stagecut::layerMemoryTerms(profile);
  profile.run.dtype = "float32";
  const auto plain = stagecut::layerMemoryTerms(profile);
  stagecut::StageMemoryRules rules;
  rules.optimizer = stagecut::optimizerMemory("adam-mixed");
  const stagecut::StageMemoryTable table(half, rules);
  const stagecut::StageMemoryTerms terms = table.terms(0, 3);
  double params = 0.0;
  for (std::size_t i = 0; i < half.size(); ++i) {
    CHECK(half[i].gradients == 4.0 * half[i].params);
    CHECK(plain[i].gradients == 2.0 * plain[i].params);
    CHECK(half[i].weights == plain[i].weights);
    params += half[i].params;
  }
  REQUIRE(params > 0);
  // Megatron's --bf16 with its distributed optimizer: 2 + 4 + 4 (master) + 8 (moments).
  CHECK(terms.weights == Approx(2.0 * params));
  CHECK(terms.gradients == Approx(4.0 * params));
  CHECK(terms.optimizer == Approx(12.0 * params));
}

TEST_CASE("a chunked split's memory counts each chunk's own activations, as the simulator does",
          "[prediction][memory][chunks]") {
  // Only activations: no weights, no buffers, no temporaries. Then a rank's predicted peak is
  // the most kept bytes alive at once, which the event simulator tracks by its own walk.
  Profile profile = stagecut::testing::makeProfile(8);
  for (auto& layer : profile.layers) {
    layer.params = 0;
    layer.param_bytes = 0;
    layer.output_bytes = 0;
    layer.output_shape.reset();
  }
  for (const stagecut::Placement placement : {stagecut::Placement::loop(2, 2), stagecut::Placement::loop(2, 3)}) {
    for (const int microbatches : {2, 4, 6}) {
      // Uneven chunks, so that which chunk a microbatch holds matters.
      stagecut::Partition partition = stagecut::testing::makePartition(
          placement.chunks_per_rank == 2 ? std::vector<int>{1, 3, 2, 2} : std::vector<int>{2, 1, 1, 1, 2, 1});
      partition.placement = placement;
      PredictionOptions options;
      options.schedule = ScheduleKind::kInterleavedOneFOneB;
      options.microbatches = microbatches;
      options.optimizer = stagecut::optimizerMemory("none");
      const PipelinePrediction predicted = stagecut::predictPipeline(profile, partition, options, "chunked");
      for (int r = 0; r < placement.ranks; ++r) {
        INFO("v " << placement.chunks_per_rank << ", M " << microbatches << ", rank " << r);
        CHECK(predicted.memory.ranks[r].peak_bytes ==
              Approx(static_cast<double>(predicted.simulated.ranks[r].peak_activation_bytes)));
        CHECK(predicted.simulated.ranks[r].peak_activation_bytes > 0);
        CHECK(predicted.memory.ranks[r].terms.size() == static_cast<std::size_t>(placement.chunks_per_rank));
      }
    }
  }
}

TEST_CASE("at a V's turn the boundary is handed over in memory: no receive posted, no gradient held to the end",
          "[prediction][memory][chunks]") {
  // ZB-V on 2 ranks: rank 1 holds chunks 1 and 2, and chunk 1 hands its output to chunk 2 on
  // the same rank, as the runtime does (runtime/stage_executor.cpp, send and receive to itself).
  for (const int microbatches : {3, 4, 6}) {
    const stagecut::Schedule schedule =
        stagecut::pipelineSchedule(ScheduleKind::kZeroBubbleV, stagecut::schedulePlacement(ScheduleKind::kZeroBubbleV, 2), microbatches, 1);
    const stagecut::Placement placement = schedule.placement;
    REQUIRE(placement.rankOf(1) == 1);
    REQUIRE(placement.rankOf(2) == 1);
    const stagecut::RankOps& ops = schedule.ranks[1];
    const auto states = stagecut::rankChunkMemoryStates(ops, placement, 1, schedule.splits_backward, false);
    REQUIRE(states.size() == ops.size() + 1);
    const int turn_from = placement.localOf(1);  // chunk 1 on rank 1
    const int turn_to = placement.localOf(2);    // chunk 2 on rank 1
    // Walked independently: a gradient chunk 2's B makes is alive until chunk 1's B of the
    // same microbatch takes it (B runs microbatches in order on each chunk).
    int made = 0, taken = 0, sent_to_rank_0 = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      INFO("M " << microbatches << ", op " << i);
      const stagecut::PipelineOp& op = ops[i];
      const bool takes = op.kind == stagecut::OpKind::kBackward && op.chunk == turn_from;
      if (takes) ++taken;
      CHECK(states[i][turn_to].posted_input == 0.0);
      CHECK(states[i][turn_from].posted_gradient == 0.0);
      CHECK(states[i][turn_to].sent == Approx(made - taken));
      if (takes) CHECK(states[i][turn_from].received);
      // Chunk 1's own input gradient goes to rank 0 by message: held to the step's end.
      CHECK(states[i][turn_from].sent == Approx(sent_to_rank_0));
      if (op.kind == stagecut::OpKind::kBackward && op.chunk == turn_to) ++made;
      if (takes) ++sent_to_rank_0;
    }
    CHECK(made == microbatches);
    CHECK(taken == microbatches);
  }
}
