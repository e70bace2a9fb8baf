#include "profiler/measure_checkpoint.h"

#include <cmath>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"
#include "core/sha256.h"

namespace stagecut {

namespace {

using nlohmann::json;

json unitToJson(const UnitSampleLog& unit) {
  json out = {{"forward", unit.forward},
              {"backward", unit.backward},
              {"backward_input", unit.backward_input},
              {"backward_weight", unit.backward_weight},
              {"spent_s", unit.spent_s}};
  if (!unit.recompute.empty()) out["recompute"] = unit.recompute;
  return out;
}

const char* const kAdvice = "; delete it and run the profile again without --resume";

[[noreturn]] void damaged(const std::string& where, const std::string& what) { throw Error(where + ": " + what); }

std::vector<double> optionalSamples(const JsonFields& unit, const char* key) {
  return unit.has(key) ? unit.nonNegativeList(key) : std::vector<double>{};
}

UnitSampleLog unitFromJson(const JsonFields& unit) {
  unit.onlyFields({"forward", "backward", "backward_input", "backward_weight", "recompute", "spent_s"});
  UnitSampleLog log;
  log.forward = unit.nonNegativeList("forward");
  log.backward = unit.nonNegativeList("backward");
  log.backward_input = unit.nonNegativeList("backward_input");
  log.backward_weight = unit.nonNegativeList("backward_weight");
  log.recompute = optionalSamples(unit, "recompute");
  log.spent_s = unit.nonNegative("spent_s");
  const std::size_t repeats = log.forward.size();
  for (const auto* samples : {&log.backward, &log.backward_input, &log.backward_weight, &log.recompute}) {
    if (samples != &log.backward && samples->empty()) continue;
    if (samples->size() != repeats) damaged(unit.where(), "a unit's sample lists differ in length");
  }
  return log;
}

std::vector<UnitSampleLog> unitsFromJson(const JsonFields& size, const char* key) {
  std::vector<UnitSampleLog> units;
  const nlohmann::json& items = size.array(key);
  for (std::size_t i = 0; i < items.size(); ++i) {
    units.push_back(unitFromJson(JsonFields(items[i], size.where(), std::string(key) + "[" + std::to_string(i) + "].")));
  }
  return units;
}

SizeCheckpoint sizeFromJson(const JsonFields& item) {
  item.onlyFields({"microbatch_size", "complete", "whole_model", "layers", "layers_in_chain"});
  SizeCheckpoint size;
  size.microbatch_size = item.integer("microbatch_size", 1, 999999999);
  size.complete = item.boolean("complete");
  size.whole = unitFromJson(item.object("whole_model"));
  size.layers = unitsFromJson(item, "layers");
  if (item.has("layers_in_chain")) {
    size.in_chain = unitsFromJson(item, "layers_in_chain");
    if (size.in_chain.size() != size.layers.size()) {
      damaged(item.where(), "\"layers_in_chain\" does not list one entry per layer");
    }
  }
  // A finished size is used as it stands: every layer needs its samples, or it would read as 0 ms.
  if (size.complete) {
    if (size.layers.empty()) damaged(item.where(), "a size marked complete has no layers");
    if (size.whole.repeats() == 0) damaged(item.where(), "a size marked complete has no whole-model samples");
    for (std::size_t i = 0; i < size.layers.size(); ++i) {
      if (size.layers[i].repeats() == 0) {
        damaged(item.where(), "a size marked complete has no samples for layer " + std::to_string(i));
      }
    }
  }
  return size;
}

MeasureCheckpoint checkpointFromJson(const json& document, const std::string& source) {
  const auto found = document.is_object() ? document.find("format") : document.end();
  const std::string format = found != document.end() && found->is_string() ? found->get<std::string>() : "";
  if (format == kMeasureCheckpointFormatV1) {
    damaged(source, std::string("written by an older stagecut (") + kMeasureCheckpointFormatV1 + ", without a digest)");
  }
  if (format != kMeasureCheckpointFormat) {
    damaged(source, std::string("not a stagecut profile progress file (no \"format\": \"") + kMeasureCheckpointFormat +
                        "\")");
  }
  // The digest before the contents: an edited file is named as edited, whatever the edit was.
  const auto digest = document.find("digest");
  if (digest == document.end() || !digest->is_string() || digest->get<std::string>() != measureCheckpointDigest(document)) {
    damaged(source, "its digest does not match its contents, so it was changed after stagecut wrote it");
  }
  const JsonFields fields(document, source);
  fields.onlyFields({"format", "request", "sizes", "digest"});
  MeasureCheckpoint checkpoint;
  checkpoint.request = fields.object("request").json();
  const json& sizes = fields.array("sizes");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string where = source + ": sizes[" + std::to_string(i) + "]";
    SizeCheckpoint size = sizeFromJson(JsonFields(sizes[i], where));
    if (checkpoint.find(size.microbatch_size) != nullptr) {
      damaged(where, "microbatch size " + std::to_string(size.microbatch_size) + " is listed twice");
    }
    for (const auto& earlier : checkpoint.sizes) {
      if (!earlier.layers.empty() && !size.layers.empty() && earlier.layers.size() != size.layers.size()) {
        damaged(where, "lists " + std::to_string(size.layers.size()) + " layers, but microbatch size " +
                           std::to_string(earlier.microbatch_size) + " lists " + std::to_string(earlier.layers.size()));
      }
    }
    checkpoint.sizes.push_back(std::move(size));
  }
  return checkpoint;
}

}  // namespace

std::size_t SizeCheckpoint::sampleCount() const {
  std::size_t count = whole.repeats();
  for (const auto& layer : layers) count += layer.repeats();
  return count;
}

const SizeCheckpoint* MeasureCheckpoint::find(int microbatch_size) const {
  for (const auto& size : sizes) {
    if (size.microbatch_size == microbatch_size) return &size;
  }
  return nullptr;
}

json measureCheckpointToJson(const MeasureCheckpoint& checkpoint) {
  json sizes = json::array();
  for (const auto& size : checkpoint.sizes) {
    json layers = json::array();
    for (const auto& layer : size.layers) layers.push_back(unitToJson(layer));
    json item = {{"microbatch_size", size.microbatch_size},
                 {"complete", size.complete},
                 {"whole_model", unitToJson(size.whole)},
                 {"layers", std::move(layers)}};
    if (!size.in_chain.empty()) {
      json in_chain = json::array();
      for (const auto& layer : size.in_chain) in_chain.push_back(unitToJson(layer));
      item["layers_in_chain"] = std::move(in_chain);
    }
    sizes.push_back(std::move(item));
  }
  json document = {{"format", kMeasureCheckpointFormat}, {"request", checkpoint.request}, {"sizes", std::move(sizes)}};
  document["digest"] = measureCheckpointDigest(document);
  return document;
}

std::string measureCheckpointDigest(const json& document) {
  json content = document;
  if (content.is_object()) content.erase("digest");
  return "sha256:" + sha256Hex(content.dump());
}

MeasureCheckpoint measureCheckpointFromJson(const json& document, const std::string& source) {
  try {
    return checkpointFromJson(document, source);
  } catch (const Error& error) {
    throw Error(error.what() + std::string(kAdvice));
  }
}

}  // namespace stagecut
