#include "profiler/measure_checkpoint.h"

#include <cmath>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"

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

[[noreturn]] void damaged(const std::string& source, const std::string& what) {
  throw Error(source + ": not a stagecut profile progress file (" + what +
              "); delete it and run the profile again without --resume");
}

std::vector<double> samplesOf(const json& unit, const char* key, const std::string& source) {
  std::vector<double> samples;
  if (!unit.contains(key)) return samples;
  const json& values = unit.at(key);
  if (!values.is_array()) damaged(source, std::string("\"") + key + "\" is not an array");
  for (const json& value : values) {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
      damaged(source, std::string("\"") + key + "\" holds " + describeJsonValue(value));
    }
    samples.push_back(value.get<double>());
  }
  return samples;
}

UnitSampleLog unitFromJson(const json& unit, const std::string& source) {
  if (!unit.is_object()) damaged(source, "a unit is not an object");
  UnitSampleLog log;
  log.forward = samplesOf(unit, "forward", source);
  log.backward = samplesOf(unit, "backward", source);
  log.backward_input = samplesOf(unit, "backward_input", source);
  log.backward_weight = samplesOf(unit, "backward_weight", source);
  log.recompute = samplesOf(unit, "recompute", source);
  const std::size_t repeats = log.forward.size();
  for (const auto* samples : {&log.backward, &log.backward_input, &log.backward_weight, &log.recompute}) {
    if (samples != &log.backward && samples->empty()) continue;
    if (samples->size() != repeats) damaged(source, "a unit's sample lists differ in length");
  }
  if (unit.contains("spent_s") && unit.at("spent_s").is_number()) log.spent_s = unit.at("spent_s").get<double>();
  return log;
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
  return {{"format", kMeasureCheckpointFormat}, {"request", checkpoint.request}, {"sizes", std::move(sizes)}};
}

MeasureCheckpoint measureCheckpointFromJson(const json& document, const std::string& source) {
  const auto format = document.is_object() ? document.find("format") : document.end();
  if (!document.is_object() || format == document.end() || !format->is_string() ||
      format->get<std::string>() != kMeasureCheckpointFormat) {
    damaged(source, std::string("no \"format\": \"") + kMeasureCheckpointFormat + "\"");
  }
  MeasureCheckpoint checkpoint;
  if (document.contains("request")) checkpoint.request = document.at("request");
  if (!document.contains("sizes") || !document.at("sizes").is_array()) damaged(source, "no \"sizes\" array");
  for (const json& item : document.at("sizes")) {
    if (!item.is_object() || !item.contains("microbatch_size") || !item.at("microbatch_size").is_number_integer() ||
        !item.contains("layers") || !item.at("layers").is_array() || !item.contains("whole_model")) {
      damaged(source, "a size entry lacks microbatch_size, layers or whole_model");
    }
    SizeCheckpoint size;
    const json& microbatch_size = item.at("microbatch_size");
    if (microbatch_size.get<std::int64_t>() < 1 || microbatch_size.get<std::int64_t>() > 999999999) {
      damaged(source, "microbatch_size " + microbatch_size.dump() + " is not a size");
    }
    size.microbatch_size = microbatch_size.get<int>();
    size.complete = item.contains("complete") && item.at("complete").is_boolean() && item.at("complete").get<bool>();
    size.whole = unitFromJson(item.at("whole_model"), source);
    for (const json& layer : item.at("layers")) size.layers.push_back(unitFromJson(layer, source));
    if (item.contains("layers_in_chain")) {
      const json& in_chain = item.at("layers_in_chain");
      if (!in_chain.is_array() || in_chain.size() != size.layers.size()) {
        damaged(source, "\"layers_in_chain\" does not list one entry per layer");
      }
      for (const json& layer : in_chain) size.in_chain.push_back(unitFromJson(layer, source));
    }
    // A finished size is used as it stands: every layer needs its samples, or it would read as 0 ms.
    if (size.complete) {
      if (size.layers.empty()) damaged(source, "a size marked complete has no layers");
      if (size.whole.repeats() == 0) damaged(source, "a size marked complete has no whole-model samples");
      for (std::size_t i = 0; i < size.layers.size(); ++i) {
        if (size.layers[i].repeats() == 0) {
          damaged(source, "a size marked complete has no samples for layer " + std::to_string(i));
        }
      }
    }
    checkpoint.sizes.push_back(std::move(size));
  }
  return checkpoint;
}

}  // namespace stagecut
