#include "core/partition_json.h"

#include <limits>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"

namespace stagecut {

namespace {

using nlohmann::json;

json stageToJson(const StageCost& stage) {
  json item = {{"first", stage.first},         {"last", stage.last},
               {"forward_ms", stage.forward_ms}, {"backward_ms", stage.backward_ms},
               {"comm_ms", stage.comm_ms},     {"cost_ms", stage.cost_ms},
               {"params", stage.params},       {"memory_bytes", stage.memory_bytes}};
  if (stage.memory_parts) item["memory_parts"] = memoryPartsToJson(*stage.memory_parts);
  if (stage.recompute) item["recompute"] = *stage.recompute;
  if (stage.recompute_ms) item["recompute_ms"] = *stage.recompute_ms;
  if (stage.allreduce_ms) item["allreduce_ms"] = *stage.allreduce_ms;
  if (stage.exposed_allreduce_ms) item["exposed_allreduce_ms"] = *stage.exposed_allreduce_ms;
  return item;
}

StageCost stageFromJson(const json& item, std::size_t position, const std::string& source) {
  const JsonFields fields(item, source + ": stage " + std::to_string(position));
  // One below int's maximum, so that "last + 1" (the next stage's first layer) stays an int.
  constexpr int kMaxLayer = std::numeric_limits<int>::max() - 1;
  StageCost stage;
  stage.first = fields.integer("first", 0, kMaxLayer);
  stage.last = fields.integer("last", 0, kMaxLayer);
  if (stage.last < stage.first) {
    fields.fail("last", "is " + std::to_string(stage.last) + ", before \"first\" " +
                            std::to_string(stage.first) + "; every stage needs at least one layer");
  }
  stage.forward_ms = fields.nonNegative("forward_ms");
  stage.backward_ms = fields.nonNegative("backward_ms");
  stage.comm_ms = fields.optionalNonNegative("comm_ms").value_or(0.0);
  stage.cost_ms = fields.nonNegative("cost_ms");
  stage.params = fields.count("params");
  stage.memory_bytes = fields.count("memory_bytes");
  if (fields.has("memory_parts")) stage.memory_parts = memoryPartsFromJson(fields.object("memory_parts"));
  if (fields.has("recompute")) {
    if (!item["recompute"].is_string()) {
      fields.fail("recompute", "must be a string such as \"full\"; rewrite the file with 'stagecut partition ... --recompute'");
    }
    stage.recompute = item["recompute"].get<std::string>();
  }
  stage.recompute_ms = fields.optionalNonNegative("recompute_ms");
  stage.allreduce_ms = fields.optionalNonNegative("allreduce_ms");
  stage.exposed_allreduce_ms = fields.optionalNonNegative("exposed_allreduce_ms");
  return stage;
}

Placement placementFromJson(const JsonFields& fields, std::size_t stage_count) {
  Placement placement;
  placement.ranks = fields.integer("ranks", 1, std::numeric_limits<int>::max());
  placement.chunks_per_rank = fields.integer("chunks_per_rank", 1, std::numeric_limits<int>::max());
  const std::string style = fields.string("style");
  if (style != placementStyleName(Placement::Style::kLoop) && style != placementStyleName(Placement::Style::kV)) {
    fields.fail("style", "is \"" + style + "\"; use \"loop\" (chunk c on rank c mod N) or \"v\"");
  }
  placement.style = style == "v" ? Placement::Style::kV : Placement::Style::kLoop;
  if (placement.style == Placement::Style::kV && placement.chunks_per_rank != 2) {
    fields.fail("chunks_per_rank", "is " + std::to_string(placement.chunks_per_rank) +
                                       "; a V placement holds 2 chunks per rank");
  }
  if (static_cast<std::size_t>(placement.ranks) * static_cast<std::size_t>(placement.chunks_per_rank) != stage_count) {
    fields.fail("ranks", std::to_string(placement.ranks) + " ranks x " + std::to_string(placement.chunks_per_rank) +
                             " chunks per rank is not the " + std::to_string(stage_count) +
                             " stages of the file; write the placement of its stages");
  }
  return placement;
}

}  // namespace

json partitionToJson(const Partition& partition, const FrameworkOutputs& framework_outputs) {
  json stages = json::array();
  for (const auto& stage : partition.stages) stages.push_back(stageToJson(stage));
  json outputs = json::object();
  for (const auto& [name, text] : framework_outputs) outputs[name] = text;
  json document = {{"format", kPartitionFormat},
                   {"method", partition.method},
                   {"stages", std::move(stages)},
                   {"bottleneck_ms", partition.bottleneck_ms},
                   {"lower_bound_ms", partition.lower_bound_ms},
                   {"predicted_step_ms", partition.predicted_step_ms},
                   {"predicted_bubble", partition.predicted_bubble},
                   {"outputs", std::move(outputs)}};
  if (partition.placement) {
    document["placement"] = {{"ranks", partition.placement->ranks},
                             {"chunks_per_rank", partition.placement->chunks_per_rank},
                             {"style", placementStyleName(partition.placement->style)}};
  }
  return document;
}

PartitionDocument partitionDocumentFromJson(const json& document, const std::string& source) {
  const std::string format = documentFormat(document, source);
  if (format != kPartitionFormat) {
    throw Error(source + ": format " + json(format).dump() + " is not a partition this stagecut reads; " +
                "expected \"" + kPartitionFormat + "\"");
  }
  const JsonFields top(document, source);
  PartitionDocument result;
  Partition& partition = result.partition;
  partition.method = top.string("method");
  const json& stages = top.array("stages");
  if (stages.empty()) {
    throw Error(source + ": field \"stages\" is empty; a partition needs at least one stage");
  }
  for (std::size_t i = 0; i < stages.size(); ++i) {
    StageCost stage = stageFromJson(stages[i], i, source);
    const int expected_first = i == 0 ? 0 : partition.stages.back().last + 1;
    if (stage.first != expected_first) {
      throw Error(source + ": stage " + std::to_string(i) + ": field \"first\" is " +
                  std::to_string(stage.first) + ", expected " + std::to_string(expected_first) +
                  "; stages must be contiguous, start at layer 0 and not overlap");
    }
    partition.stages.push_back(stage);
  }
  if (top.has("placement")) partition.placement = placementFromJson(top.object("placement"), partition.stages.size());
  partition.bottleneck_ms = top.nonNegative("bottleneck_ms");
  partition.lower_bound_ms = top.nonNegative("lower_bound_ms");
  partition.predicted_step_ms = top.nonNegative("predicted_step_ms");
  partition.predicted_bubble = top.fraction("predicted_bubble");
  if (top.has("outputs")) {
    const JsonFields outputs = top.object("outputs");
    for (const auto& [name, text] : outputs.json().items()) {
      if (!text.is_string()) {
        outputs.fail(name.c_str(), "must be a string, got " + describeJsonValue(text));
      }
      result.outputs[name] = text.get<std::string>();
    }
  }
  return result;
}

Partition partitionFromJson(const json& document, const std::string& source) {
  return partitionDocumentFromJson(document, source).partition;
}

Partition readPartitionFile(const std::string& path) {
  return partitionFromJson(parseJsonDocument(readTextFile(path), path), path);
}

void writePartitionFile(const OutputPath& output, const Partition& partition, const FrameworkOutputs& outputs) {
  writeOutputFile(output, toJsonText(partitionToJson(partition, outputs)));
}

namespace {

json scheduleComparisonToJson(const ScheduleComparison& entry) {
  json item = {{"schedule", entry.schedule}, {"chunks", entry.placement.chunks_per_rank}};
  if (!entry.split) {
    item["left_out"] = entry.left_out;
    return item;
  }
  item["exact"] = entry.exact;
  item["step_ms"] = entry.step_ms;
  item["bubble"] = entry.bubble;
  item["peak_memory_bytes"] = entry.peak_bytes;
  item["split"] = partitionToJson(entry.split->partition, entry.split->outputs);
  return item;
}

ScheduleComparison scheduleComparisonFromJson(const json& item, const std::string& where, int ranks) {
  const JsonFields fields(item, where);
  ScheduleComparison entry;
  entry.schedule = fields.string("schedule");
  const int chunks = fields.integer("chunks", 1, std::numeric_limits<int>::max());
  entry.placement = Placement::loop(ranks, chunks);
  if (!fields.has("split")) {
    entry.left_out = fields.string("left_out");
    if (entry.left_out.empty()) fields.fail("left_out", "is empty; an entry without a split says why");
    return entry;
  }
  entry.split = partitionDocumentFromJson(item.at("split"), where + " split");
  entry.placement = entry.split->partition.rankPlacement();
  if (entry.placement.chunks_per_rank != chunks) {
    fields.fail("chunks", "is " + std::to_string(chunks) + " but its split places " +
                              std::to_string(entry.split->partition.rankPlacement().chunks_per_rank) + " chunks per rank");
  }
  entry.exact = fields.boolean("exact");
  entry.step_ms = fields.nonNegative("step_ms");
  entry.bubble = fields.fraction("bubble");
  entry.peak_bytes = fields.nonNegative("peak_memory_bytes");
  return entry;
}

}  // namespace

json comparisonToJson(const ComparisonDocument& comparison) {
  json list = json::array();
  for (const PartitionDocument& split : comparison.splits) list.push_back(partitionToJson(split.partition, split.outputs));
  json document = {{"format", kComparisonFormat}, {"splits", std::move(list)}};
  if (!comparison.profile_fingerprint.empty()) document["profile_fingerprint"] = comparison.profile_fingerprint;
  if (!comparison.schedules.empty()) {
    json schedules = json::array();
    for (const ScheduleComparison& entry : comparison.schedules) schedules.push_back(scheduleComparisonToJson(entry));
    document["schedules"] = std::move(schedules);
  }
  return document;
}

ComparisonDocument comparisonFromJson(const json& document, const std::string& source) {
  requireDocumentFormat(document, source, kComparisonFormat, "stagecut compare PROFILE --stages N -o FILE");
  if (!document.contains("splits") || !document["splits"].is_array()) {
    throw Error(source + ": field \"splits\" is missing or not a list");
  }
  ComparisonDocument comparison;
  comparison.profile_fingerprint = JsonFields(document, source).optionalString("profile_fingerprint");
  for (std::size_t i = 0; i < document["splits"].size(); ++i) {
    comparison.splits.push_back(
        partitionDocumentFromJson(document["splits"][i], source + " split " + std::to_string(i)));
  }
  if (document.contains("schedules")) {
    const json& schedules = JsonFields(document, source).array("schedules");
    // The comparison's N-stage splits say its ranks (an entry left out has no split of its own).
    const int ranks = comparison.splits.empty() ? 0 : comparison.splits.front().partition.rankPlacement().ranks;
    for (std::size_t i = 0; i < schedules.size(); ++i) {
      comparison.schedules.push_back(
          scheduleComparisonFromJson(schedules[i], source + " schedules[" + std::to_string(i) + "]", ranks));
    }
  }
  return comparison;
}

void checkPartitionCoversLayers(const Partition& partition, std::size_t layer_count,
                                const std::string& source) {
  const int last = partition.stages.empty() ? -1 : partition.stages.back().last;
  if (static_cast<std::size_t>(last + 1) != layer_count) {
    throw Error(source + ": the partition covers layers 0.." + std::to_string(last) +
                " but the profile has " + std::to_string(layer_count) +
                (layer_count == 1 ? " layer" : " layers") + "; make the partition from this profile");
  }
}

std::vector<int> Partition::layersPerStage() const {
  std::vector<int> counts;
  counts.reserve(stages.size());
  for (const auto& stage : stages) counts.push_back(stage.layerCount());
  return counts;
}

bool StageCost::operator==(const StageCost& other) const {
  return first == other.first && last == other.last && forward_ms == other.forward_ms &&
         backward_ms == other.backward_ms && comm_ms == other.comm_ms &&
         cost_ms == other.cost_ms && params == other.params && memory_bytes == other.memory_bytes &&
         recompute == other.recompute && recompute_ms == other.recompute_ms &&
         allreduce_ms == other.allreduce_ms && exposed_allreduce_ms == other.exposed_allreduce_ms &&
         memory_parts == other.memory_parts;
}

bool Partition::operator==(const Partition& other) const {
  return method == other.method && stages == other.stages && placement == other.placement &&
         bottleneck_ms == other.bottleneck_ms && lower_bound_ms == other.lower_bound_ms &&
         predicted_step_ms == other.predicted_step_ms &&
         predicted_bubble == other.predicted_bubble;
}

}  // namespace stagecut
