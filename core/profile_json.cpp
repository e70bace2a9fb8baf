#include "core/profile_json.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/json_document.h"
#include "core/json_fields.h"
#include "core/profile_shards.h"
#include "core/sha256.h"

namespace stagecut {

namespace {

using nlohmann::json;

json statsToJson(const TimeStatsMs& stats) {
  json out = {{"median", stats.median}, {"min", stats.min}, {"max", stats.max}, {"cv", stats.cv}};
  if (stats.repeats > 0) out["repeats"] = stats.repeats;
  return out;
}

// Known metadata fields are typed; anything else another tool wrote is kept as is.
json withExtra(json known, const json& extra) {
  for (const auto& [key, value] : extra.items()) {
    if (!known.contains(key)) known[key] = value;
  }
  return known;
}

json extraFields(const json& block, std::initializer_list<const char*> known_keys) {
  json extra = json::object();
  for (const auto& [key, value] : block.items()) {
    bool known = false;
    for (const char* known_key : known_keys) known = known || key == known_key;
    if (!known) extra[key] = value;
  }
  return extra;
}

json layerTimesToJson(const LayerTimes& times) {
  json out = {{"forward_ms", statsToJson(times.forward_ms)}, {"backward_ms", statsToJson(times.backward_ms)}};
  if (times.backward_input_ms) out["backward_input_ms"] = statsToJson(*times.backward_input_ms);
  if (times.backward_weight_ms) out["backward_weight_ms"] = statsToJson(*times.backward_weight_ms);
  if (times.recompute_ms) out["recompute_ms"] = statsToJson(*times.recompute_ms);
  return out;
}

// A time no run can have (kLongestOpMs) is refused by name: 1e308 ms would pass as a finite
// number and make a step of "inf ms".
void requireRunnableMs(const JsonFields& fields, const std::string& key, double ms) {
  if (ms <= kLongestOpMs) return;
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", ms);
  fields.fail(key, std::string("is ") + text + " ms, longer than a day, which no run takes (validate stops a step "
                   "at its longest --timeout, a day); measure the model again or correct the field");
}

// A timing field that timeStats has read (a number, or {median, min?, max?}), each value held
// to requireRunnableMs; a field that is absent passes.
void requireRunnableStats(const JsonFields& fields, const char* key) {
  if (!fields.has(key)) return;
  const json& value = fields.json().at(key);
  if (value.is_number()) {
    requireRunnableMs(fields, key, value.get<double>());
    return;
  }
  const JsonFields stats = fields.object(key);
  for (const char* stat : {"median", "min", "max"}) {
    if (stats.has(stat)) requireRunnableMs(stats, stat, stats.json().at(stat).get<double>());
  }
}

LayerTimes layerTimesFromJson(const JsonFields& fields) {
  LayerTimes times;
  times.forward_ms = fields.timeStats("forward_ms");
  times.backward_ms = fields.timeStats("backward_ms");
  times.backward_input_ms = fields.optionalTimeStats("backward_input_ms");
  times.backward_weight_ms = fields.optionalTimeStats("backward_weight_ms");
  times.recompute_ms = fields.optionalTimeStats("recompute_ms");
  for (const char* key : {"forward_ms", "backward_ms", "backward_input_ms", "backward_weight_ms", "recompute_ms"}) {
    requireRunnableStats(fields, key);
  }
  return times;
}

json calibrationToJson(const ProfileCalibration& calibration) {
  json factors = json::array();
  for (const auto& factor : calibration.factors) {
    factors.push_back({{"kind", factor.kind}, {"op", factor.op}, {"factor", factor.factor},
                       {"observations", factor.observations}, {"at_bound", factor.at_bound}});
  }
  json runs = json::array();
  for (const auto& run : calibration.runs) {
    runs.push_back({{"source", run.source}, {"schedule", run.schedule}, {"layers_per_stage", run.layers_per_stage},
                    {"microbatches", run.microbatches}, {"fitted", run.fitted},
                    {"measured_step_ms", run.measured_step_ms}, {"predicted_before_ms", run.predicted_before_ms},
                    {"predicted_after_ms", run.predicted_after_ms}});
  }
  return {{"method", calibration.method}, {"prior_weight", calibration.prior_weight},
          {"uncalibrated_fingerprint", calibration.uncalibrated_fingerprint}, {"factors", std::move(factors)},
          {"runs", std::move(runs)}};
}

ProfileCalibration calibrationFromJson(const JsonFields& fields) {
  ProfileCalibration calibration;
  calibration.method = fields.string("method");
  calibration.prior_weight = fields.nonNegative("prior_weight");
  calibration.uncalibrated_fingerprint = fields.optionalString("uncalibrated_fingerprint");
  const json& factors = fields.array("factors");
  for (std::size_t i = 0; i < factors.size(); ++i) {
    const JsonFields item(factors[i], fields.where() + ": calibration.factors[" + std::to_string(i) + "]");
    CalibrationFactor factor;
    factor.kind = item.string("kind");
    factor.op = item.string("op");
    factor.factor = item.nonNegative("factor");
    factor.observations = item.optionalInteger("observations", 0, std::numeric_limits<int>::max(), 0);
    factor.at_bound = item.has("at_bound") && item.boolean("at_bound");
    calibration.factors.push_back(factor);
  }
  const json& runs = fields.array("runs");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const JsonFields item(runs[i], fields.where() + ": calibration.runs[" + std::to_string(i) + "]");
    CalibrationRun run;
    run.source = item.string("source");
    run.schedule = item.string("schedule");
    run.layers_per_stage = item.integerList("layers_per_stage", 1, std::numeric_limits<int>::max());
    run.microbatches = item.integer("microbatches", 1, std::numeric_limits<int>::max());
    run.fitted = item.boolean("fitted");
    run.measured_step_ms = item.nonNegative("measured_step_ms");
    run.predicted_before_ms = item.nonNegative("predicted_before_ms");
    run.predicted_after_ms = item.nonNegative("predicted_after_ms");
    calibration.runs.push_back(run);
  }
  return calibration;
}

// The fields that change with the microbatch size: all of a layer's costs.
void addSizedFields(json& out, const LayerCost& layer) {
  out["forward_ms"] = statsToJson(layer.forward_ms);
  out["backward_ms"] = statsToJson(layer.backward_ms);
  if (layer.backward_input_ms) out["backward_input_ms"] = statsToJson(*layer.backward_input_ms);
  if (layer.backward_weight_ms) out["backward_weight_ms"] = statsToJson(*layer.backward_weight_ms);
  if (layer.recompute_ms) out["recompute_ms"] = statsToJson(*layer.recompute_ms);
  if (layer.forward_transient_bytes) out["forward_transient_bytes"] = *layer.forward_transient_bytes;
  if (layer.backward_transient_bytes) out["backward_transient_bytes"] = *layer.backward_transient_bytes;
  if (layer.input_kept_bytes) out["input_kept_bytes"] = *layer.input_kept_bytes;
  if (layer.weight_pending_bytes) out["weight_pending_bytes"] = *layer.weight_pending_bytes;
  if (layer.uncalibrated) out["uncalibrated"] = layerTimesToJson(*layer.uncalibrated);
}

json layerToJson(const LayerCost& layer) {
  json out = {{"index", layer.index}, {"name", layer.name}};
  if (!layer.kind.empty()) out["kind"] = layer.kind;
  addSizedFields(out, layer);
  out["params"] = layer.params;
  out["param_bytes"] = layer.param_bytes;
  if (layer.gradient_bytes) out["gradient_bytes"] = *layer.gradient_bytes;
  if (layer.largest_parameter_bytes) out["largest_parameter_bytes"] = *layer.largest_parameter_bytes;
  out["activation_bytes"] = layer.activation_bytes;
  out["output_bytes"] = layer.output_bytes;
  if (layer.output_shape) out["output_shape"] = *layer.output_shape;
  if (layer.times_from) out["times_from"] = *layer.times_from;
  if (layer.tp_collectives) {
    out["tp_collectives"] = {{"forward", layer.tp_collectives->forward},
                             {"backward", layer.tp_collectives->backward},
                             {"bytes", layer.tp_collectives->bytes}};
  }
  return out;
}

json sizedLayerToJson(const LayerCost& layer) {
  json out = {{"index", layer.index}};
  addSizedFields(out, layer);
  out["activation_bytes"] = layer.activation_bytes;
  out["output_bytes"] = layer.output_bytes;
  if (layer.output_shape) out["output_shape"] = *layer.output_shape;
  return out;
}

json wholeModelToJson(const WholeModelCost& whole) {
  json out = {{"forward_ms", whole.forward_ms},
              {"backward_ms", whole.backward_ms},
              {"sum_of_layers_vs_whole", whole.sum_of_layers_vs_whole}};
  if (!whole.in_chain_forward_ms.empty()) {
    out["in_chain_forward_ms"] = whole.in_chain_forward_ms;
    out["in_chain_backward_ms"] = whole.in_chain_backward_ms;
  }
  if (!whole.window.empty()) out["window"] = whole.window;
  return out;
}

WholeModelCost wholeModelFromJson(const JsonFields& whole, std::size_t layer_count) {
  WholeModelCost cost;
  cost.forward_ms = whole.nonNegative("forward_ms");
  cost.backward_ms = whole.nonNegative("backward_ms");
  requireRunnableMs(whole, "forward_ms", cost.forward_ms);
  requireRunnableMs(whole, "backward_ms", cost.backward_ms);
  cost.sum_of_layers_vs_whole =
      whole.has("sum_of_layers_vs_whole") ? whole.finite("sum_of_layers_vs_whole") : 0.0;
  if (whole.has("in_chain_forward_ms") || whole.has("in_chain_backward_ms")) {
    for (const char* key : {"in_chain_forward_ms", "in_chain_backward_ms"}) {
      whole.requireEntries(key, layer_count, "one per layer");
    }
    cost.in_chain_forward_ms = whole.nonNegativeList("in_chain_forward_ms");
    cost.in_chain_backward_ms = whole.nonNegativeList("in_chain_backward_ms");
    for (const auto& [key, list] : {std::pair{"in_chain_forward_ms", &cost.in_chain_forward_ms},
                                    std::pair{"in_chain_backward_ms", &cost.in_chain_backward_ms}}) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        requireRunnableMs(whole, std::string(key) + "[" + std::to_string(i) + "]", (*list)[i]);
      }
    }
  }
  if (whole.has("window")) {
    whole.requireEntries("window", 2, "its first and last layer");
    const std::vector<double> window = whole.nonNegativeList("window");
    if (window[0] != std::floor(window[0]) || window[1] != std::floor(window[1]) || window[0] > window[1] ||
        window[1] >= static_cast<double>(layer_count) || !cost.in_chain_forward_ms.empty()) {
      throw Error(whole.where() + ": \"window\" must be [first, last], two layer indices in order within the " +
                  std::to_string(layer_count) + " layers, and comes without in_chain_* lists");
    }
    cost.window = {static_cast<int>(window[0]), static_cast<int>(window[1])};
  }
  return cost;
}

int checkedIndex(const JsonFields& fields, std::size_t position, const std::string& where_list) {
  const int index = fields.integer("index", 0, std::numeric_limits<int>::max());
  if (static_cast<std::size_t>(index) != position) {
    throw Error(where_list + " at position " + std::to_string(position) + " has field \"index\" " +
                std::to_string(index) + "; layers must be listed in order 0, 1, 2, ... " +
                "with no gap or duplicate");
  }
  return index;
}

// Reads the size-dependent fields of one layer into `layer`.
void readSizedFields(const JsonFields& fields, LayerCost& layer) {
  const LayerTimes times = layerTimesFromJson(fields);
  layer.forward_ms = times.forward_ms;
  layer.backward_ms = times.backward_ms;
  layer.backward_input_ms = times.backward_input_ms;
  layer.backward_weight_ms = times.backward_weight_ms;
  layer.recompute_ms = times.recompute_ms;
  layer.forward_transient_bytes = fields.optionalCount("forward_transient_bytes");
  layer.backward_transient_bytes = fields.optionalCount("backward_transient_bytes");
  layer.input_kept_bytes = fields.optionalCount("input_kept_bytes");
  layer.weight_pending_bytes = fields.optionalCount("weight_pending_bytes");
  if (fields.has("uncalibrated")) {
    layer.uncalibrated = layerTimesFromJson(fields.object("uncalibrated"));
  } else {
    layer.uncalibrated.reset();
  }
  layer.activation_bytes = fields.count("activation_bytes");
  layer.output_bytes = fields.count("output_bytes");
  if (fields.has("output_shape")) {
    const auto& shape = fields.array("output_shape");
    std::vector<std::int64_t> dims;
    for (const auto& dim : shape) {
      if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) {
        fields.fail("output_shape", "must list whole numbers >= 0, got " + describeJsonValue(dim));
      }
      dims.push_back(dim.get<std::int64_t>());
    }
    layer.output_shape = std::move(dims);
  } else {
    layer.output_shape.reset();
  }
}

LayerCost layerFromJson(const json& item, std::size_t position, const std::string& source) {
  const JsonFields fields(item, source + ": layer " + std::to_string(position));
  LayerCost layer;
  layer.index = checkedIndex(fields, position, source + ": layer");
  layer.name = fields.string("name");
  layer.kind = fields.optionalString("kind");
  readSizedFields(fields, layer);
  layer.params = fields.count("params");
  layer.param_bytes = fields.count("param_bytes");
  layer.gradient_bytes = fields.optionalCount("gradient_bytes");
  layer.largest_parameter_bytes = fields.optionalCount("largest_parameter_bytes");
  if (layer.gradient_bytes && *layer.gradient_bytes > layer.param_bytes) {
    fields.fail("gradient_bytes", "is " + std::to_string(*layer.gradient_bytes) + ", more than param_bytes " +
                                      std::to_string(layer.param_bytes) + "; a gradient is at most its weights' size");
  }
  if (fields.has("times_from")) {
    std::vector<int> sources;
    for (const auto& index : fields.array("times_from")) {
      if (!index.is_number_integer() || index.get<std::int64_t>() < 0 ||
          index.get<std::int64_t>() > std::numeric_limits<int>::max()) {
        fields.fail("times_from", "must list layer indices, got " + describeJsonValue(index));
      }
      sources.push_back(index.get<int>());
    }
    if (sources.empty()) fields.fail("times_from", "is empty; list the timed layers, or leave the field out");
    layer.times_from = std::move(sources);
  }
  if (fields.has("tp_collectives")) {
    const JsonFields collectives = fields.object("tp_collectives");
    LayerCost::TensorParallelCollectives read;
    read.forward = collectives.integer("forward", 0, 64);
    read.backward = collectives.integer("backward", 0, 64);
    read.bytes = collectives.count("bytes");
    layer.tp_collectives = read;
  }
  return layer;
}

// A copied layer's sources are other layers of the profile that were timed themselves.
void checkTimesFrom(const std::vector<LayerCost>& layers, const std::string& source) {
  for (const LayerCost& layer : layers) {
    if (!layer.times_from) continue;
    for (int from : *layer.times_from) {
      const std::string where = source + ": layer " + std::to_string(layer.index) + ": field \"times_from\" ";
      if (from >= static_cast<int>(layers.size()) || from == layer.index) {
        throw Error(where + "names layer " + std::to_string(from) + ", which is " +
                    (from == layer.index ? "the layer itself" : "not in the profile") + "; list the timed layers");
      }
      if (layers[static_cast<std::size_t>(from)].times_from) {
        throw Error(where + "names layer " + std::to_string(from) +
                    ", whose own times are copied; list layers that were timed");
      }
    }
  }
}

// One entry of the `microbatch_sizes` table (format 2); names and parameters come from `layers`.
MicrobatchSizeCosts sizeCostsFromJson(const json& item, std::size_t position, const std::string& source,
                                      const std::vector<LayerCost>& layers) {
  const std::string where = source + ": microbatch_sizes[" + std::to_string(position) + "]";
  const JsonFields fields(item, where);
  MicrobatchSizeCosts costs;
  costs.microbatch_size = fields.integer("microbatch_size", 1, std::numeric_limits<int>::max());
  const json& items = fields.array("layers");
  if (items.size() != layers.size()) {
    fields.fail("layers", "has " + std::to_string(items.size()) + " layers but the profile has " +
                              std::to_string(layers.size()) + "; every size lists every layer");
  }
  costs.layers = layers;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const JsonFields layer_fields(items[i], where + " layer " + std::to_string(i));
    checkedIndex(layer_fields, i, where + " layer");
    readSizedFields(layer_fields, costs.layers[i]);
  }
  if (fields.has("whole_model")) costs.whole_model = wholeModelFromJson(fields.object("whole_model"), layers.size());
  return costs;
}

// A `microbatch_sizes` table (format 2 on): ascending sizes, one of them `run_size` with the same
// costs as `layers` (so a reader of version 1's fields and a planner see one truth). `where`
// names the table's owner: the file, or one of its shards.
std::vector<MicrobatchSizeCosts> sizeTableFromJson(const JsonFields& owner, const std::string& where, int run_size,
                                                   const std::vector<LayerCost>& layers) {
  const json& sizes = owner.array("microbatch_sizes");
  if (sizes.empty()) owner.fail("microbatch_sizes", "is empty; list at least one measured microbatch size");
  if (run_size == 0) {
    throw Error(where + ": field \"run.microbatch_size\" is missing; format 2 needs it to say which " +
                "entry of \"microbatch_sizes\" the layers hold");
  }
  std::vector<MicrobatchSizeCosts> table;
  bool has_run_size = false;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    MicrobatchSizeCosts entry = sizeCostsFromJson(sizes[i], i, where, layers);
    if (i > 0 && entry.microbatch_size <= table.back().microbatch_size) {
      throw Error(where + ": microbatch_sizes[" + std::to_string(i) + "] has microbatch_size " +
                  std::to_string(entry.microbatch_size) + " after " + std::to_string(table.back().microbatch_size) +
                  "; list each size once, ascending");
    }
    if (entry.microbatch_size == run_size) {
      has_run_size = true;
      if (entry.layers != layers) {
        throw Error(where + ": microbatch_sizes[" + std::to_string(i) + "] (size " +
                    std::to_string(entry.microbatch_size) + ") differs from \"layers\", which hold " +
                    "the same size; make them equal or set run.microbatch_size to the size of \"layers\"");
      }
    }
    table.push_back(std::move(entry));
  }
  if (!has_run_size) {
    throw Error(where + ": \"microbatch_sizes\" has no entry for run.microbatch_size " + std::to_string(run_size) +
                "; add it (it repeats \"layers\")");
  }
  return table;
}

void readSizeTable(const JsonFields& top, const std::string& format, const std::string& source, Profile& profile) {
  if (format == kProfileFormat) {
    if (top.has("microbatch_sizes")) {
      top.fail("microbatch_sizes", std::string("needs format \"") + kProfileFormatV2 + "\", not \"" +
                                       kProfileFormat + "\"; change the format field");
    }
    return;
  }
  // Version 3 holds the table only when it has several sizes: its reason to be is the degrees.
  if (format == kProfileFormatV3 && !top.has("microbatch_sizes")) return;
  profile.microbatch_sizes = sizeTableFromJson(top, source, profile.run.microbatch_size, profile.layers);
}

std::vector<LayerCost> layersFromJson(const JsonFields& owner, const std::string& where) {
  const json& items = owner.array("layers");
  if (items.empty()) throw Error(where + ": field \"layers\" is empty; a profile needs at least one layer");
  std::vector<LayerCost> layers;
  layers.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) layers.push_back(layerFromJson(items[i], i, where));
  checkTimesFrom(layers, where);
  return layers;
}

json sizeTableToJson(const std::vector<MicrobatchSizeCosts>& table) {
  json sizes = json::array();
  for (const auto& entry : table) {
    json size_layers = json::array();
    for (const auto& layer : entry.layers) size_layers.push_back(sizedLayerToJson(layer));
    json item = {{"microbatch_size", entry.microbatch_size}, {"layers", std::move(size_layers)}};
    if (entry.whole_model) item["whole_model"] = wholeModelToJson(*entry.whole_model);
    sizes.push_back(std::move(item));
  }
  return sizes;
}

json layersToJson(const std::vector<LayerCost>& layers) {
  json items = json::array();
  for (const auto& layer : layers) items.push_back(layerToJson(layer));
  return items;
}

// Format 3's `shards`: every measured degree but the one model.config records, whose layers are
// the profile's own and are not written twice.
json shardsToJson(const Profile& profile) {
  const ParallelDegrees own = readParallelDegrees(profile.model.config, "the profile's model.config");
  json shards = json::array();
  for (const ShardCosts& shard : profile.shards) {
    if (shard.degrees == own) continue;
    json degrees = json::object();
    writeParallelDegrees(shard.degrees, degrees);
    json item = {{"degrees", std::move(degrees)}, {"layers", layersToJson(shard.layers)}};
    if (shard.whole_model) item["whole_model"] = wholeModelToJson(*shard.whole_model);
    if (!shard.microbatch_sizes.empty()) item["microbatch_sizes"] = sizeTableToJson(shard.microbatch_sizes);
    shards.push_back(std::move(item));
  }
  return shards;
}

// One entry of `shards`: the same chain (layer count and names) at other degrees, with the same
// microbatch sizes as the profile's own.
ShardCosts shardFromJson(const json& item, std::size_t position, const std::string& source, const Profile& profile) {
  const std::string where = source + ": shards[" + std::to_string(position) + "]";
  const JsonFields fields(item, where);
  ShardCosts shard;
  shard.degrees = readParallelDegrees(fields.object("degrees").json(), where + ": degrees");
  shard.layers = layersFromJson(fields, where);
  if (shard.layers.size() != profile.layers.size()) {
    fields.fail("layers", "has " + std::to_string(shard.layers.size()) + " layers but the profile has " +
                              std::to_string(profile.layers.size()) + "; every degree lists every layer");
  }
  for (std::size_t i = 0; i < shard.layers.size(); ++i) {
    if (shard.layers[i].name != profile.layers[i].name) {
      throw Error(where + ": layer " + std::to_string(i) + " is " + shard.layers[i].name + " but the profile's is " +
                  profile.layers[i].name + "; every degree holds the same chain of layers");
    }
  }
  if (fields.has("whole_model")) shard.whole_model = wholeModelFromJson(fields.object("whole_model"), shard.layers.size());
  if (fields.has("microbatch_sizes") != !profile.microbatch_sizes.empty()) {
    throw Error(where + ": " + (profile.microbatch_sizes.empty() ? "has" : "has no") +
                " \"microbatch_sizes\" table and the profile " + (profile.microbatch_sizes.empty() ? "has none" : "has one") +
                "; every degree is measured at the profile's microbatch sizes");
  }
  if (fields.has("microbatch_sizes")) {
    shard.microbatch_sizes = sizeTableFromJson(fields, where, profile.run.microbatch_size, shard.layers);
    const auto sizes = [](const std::vector<MicrobatchSizeCosts>& table) {
      std::vector<int> list;
      for (const MicrobatchSizeCosts& entry : table) list.push_back(entry.microbatch_size);
      return list;
    };
    if (sizes(shard.microbatch_sizes) != sizes(profile.microbatch_sizes)) {
      fields.fail("microbatch_sizes", "lists other sizes than the profile's; every degree is measured at its sizes");
    }
  }
  return shard;
}

// The profile's own degree first, then the file's shards, each degree once.
void readShards(const JsonFields& top, const std::string& format, const std::string& source, Profile& profile) {
  if (format != kProfileFormatV3) {
    if (top.has("shards")) {
      top.fail("shards", std::string("needs format \"") + kProfileFormatV3 + "\", not \"" + format +
                             "\"; change the format field");
    }
    return;
  }
  const json& items = top.array("shards");
  if (items.empty()) top.fail("shards", "is empty; a format 3 profile lists the degrees beside model.config's");
  const ParallelDegrees own = readParallelDegrees(profile.model.config, source + ": model.config");
  profile.shards.push_back({own, profile.layers, profile.whole_model, profile.microbatch_sizes});
  for (std::size_t i = 0; i < items.size(); ++i) {
    ShardCosts shard = shardFromJson(items[i], i, source, profile);
    for (const ShardCosts& known : profile.shards) {
      if (known.degrees == shard.degrees) {
        throw Error(source + ": shards[" + std::to_string(i) + "] repeats " + degreesText(shard.degrees) +
                    (&known == &profile.shards.front() ? ", the degree of model.config and the profile's layers"
                                                       : ", listed before") +
                    "; list each degree once");
      }
    }
    profile.shards.push_back(std::move(shard));
  }
}

}  // namespace

const char* profileFormatOf(const Profile& profile) {
  if (!profile.shards.empty()) return kProfileFormatV3;
  return profile.microbatch_sizes.empty() ? kProfileFormat : kProfileFormatV2;
}

json profileToJson(const Profile& profile) {
  json doc;
  doc["format"] = profileFormatOf(profile);
  json model = {{"name", profile.model.name}, {"source", profile.model.source},
                {"config", profile.model.config}};
  if (!profile.model.fingerprint.empty()) model["fingerprint"] = profile.model.fingerprint;
  doc["model"] = withExtra(model, profile.model.extra);
  json device = {{"kind", profile.device.kind}, {"name", profile.device.name}};
  if (profile.device.threads > 0) device["threads"] = profile.device.threads;
  if (!profile.device.torch.empty()) device["torch"] = profile.device.torch;
  doc["device"] = withExtra(device, profile.device.extra);
  json run = json::object();
  if (profile.run.microbatch_size > 0) run["microbatch_size"] = profile.run.microbatch_size;
  if (profile.run.seq_len > 0) run["seq_len"] = profile.run.seq_len;
  if (!profile.run.dtype.empty()) run["dtype"] = profile.run.dtype;
  if (profile.run.warmup > 0) run["warmup"] = profile.run.warmup;
  if (profile.run.repeats > 0) run["repeats"] = profile.run.repeats;
  if (!profile.run.timer.empty()) run["timer"] = profile.run.timer;
  doc["run"] = withExtra(run, profile.run.extra);
  doc["layers"] = layersToJson(profile.layers);
  if (profile.whole_model) doc["whole_model"] = wholeModelToJson(*profile.whole_model);
  if (!profile.microbatch_sizes.empty()) doc["microbatch_sizes"] = sizeTableToJson(profile.microbatch_sizes);
  if (!profile.shards.empty()) doc["shards"] = shardsToJson(profile);
  if (profile.calibration) doc["calibration"] = calibrationToJson(*profile.calibration);
  return doc;
}

Profile profileFromJson(const json& document, const std::string& source) {
  const std::string format = documentFormat(document, source);
  if (!isProfileFormat(format)) {
    throw Error(source + ": format " + json(format).dump() + " is not a profile this stagecut reads; " +
                "expected \"" + kProfileFormat + "\", \"" + kProfileFormatV2 + "\" or \"" + kProfileFormatV3 + "\"");
  }
  const JsonFields top(document, source);
  constexpr int kMaxSetting = std::numeric_limits<int>::max();
  Profile profile;

  const JsonFields model = top.object("model");
  profile.model.name = model.optionalString("name");
  profile.model.source = model.optionalString("source");
  if (model.has("config")) profile.model.config = model.object("config").json();
  profile.model.fingerprint = model.optionalString("fingerprint");
  profile.model.extra = extraFields(model.json(), {"name", "source", "config", "fingerprint"});

  const JsonFields device = top.object("device");
  profile.device.kind = device.optionalString("kind");
  profile.device.name = device.optionalString("name");
  profile.device.threads = device.optionalInteger("threads", 0, kMaxSetting, 0);
  profile.device.torch = device.optionalString("torch");
  profile.device.extra = extraFields(device.json(), {"kind", "name", "threads", "torch"});

  const JsonFields run = top.object("run");
  profile.run.microbatch_size = run.optionalInteger("microbatch_size", 1, kMaxSetting, 0);
  profile.run.seq_len = run.optionalInteger("seq_len", 1, kMaxSetting, 0);
  profile.run.dtype = run.optionalString("dtype");
  profile.run.warmup = run.optionalInteger("warmup", 0, kMaxSetting, 0);
  profile.run.repeats = run.optionalInteger("repeats", 0, kMaxSetting, 0);
  profile.run.timer = run.optionalString("timer");
  profile.run.extra = extraFields(
      run.json(), {"microbatch_size", "seq_len", "dtype", "warmup", "repeats", "timer"});

  profile.layers = layersFromJson(top, source);
  if (top.has("whole_model")) {
    profile.whole_model = wholeModelFromJson(top.object("whole_model"), profile.layers.size());
  }
  readSizeTable(top, format, source, profile);
  readShards(top, format, source, profile);
  if (top.has("calibration")) profile.calibration = calibrationFromJson(top.object("calibration"));
  return profile;
}

Profile readProfileFile(const std::string& path) {
  return profileFromJson(parseJsonDocument(readTextFile(path), path), path);
}

std::string profileFingerprint(const json& document) { return "sha256:" + sha256Hex(document.dump()); }

std::string readProfileFingerprint(const std::string& path) {
  return profileFingerprint(parseJsonDocument(readTextFile(path), path));
}

void requireMadeFromProfile(const std::string& recorded, const std::string& actual, const std::string& source,
                            const std::string& profile_path, const std::string& remake) {
  if (recorded.empty() || recorded == actual) return;
  throw Error(source + ": was made from another profile than " + profile_path +
              " (its profile_fingerprint differs); give the profile it was made from, or make it again with '" +
              remake + "'");
}

Profile readProfileFile(const std::string& path, int microbatch_size) {
  Profile profile = readProfileFile(path);
  if (microbatch_size == 0) return profile;
  if (microbatch_size < 0) {
    throw Error("--microbatch-size " + std::to_string(microbatch_size) + ": must be a measured size, 1 or more");
  }
  return profileAtMicrobatchSize(profile, microbatch_size, path);
}

void writeProfileFile(const OutputPath& output, const Profile& profile) {
  writeOutputFile(output, toJsonText(profileToJson(profile)));
}

bool LayerCost::operator==(const LayerCost& other) const {
  return index == other.index && name == other.name && kind == other.kind &&
         forward_ms == other.forward_ms && backward_ms == other.backward_ms &&
         backward_input_ms == other.backward_input_ms &&
         backward_weight_ms == other.backward_weight_ms && recompute_ms == other.recompute_ms &&
         params == other.params &&
         param_bytes == other.param_bytes && activation_bytes == other.activation_bytes &&
         output_bytes == other.output_bytes && output_shape == other.output_shape &&
         forward_transient_bytes == other.forward_transient_bytes &&
         backward_transient_bytes == other.backward_transient_bytes && input_kept_bytes == other.input_kept_bytes &&
         weight_pending_bytes == other.weight_pending_bytes && gradient_bytes == other.gradient_bytes &&
         largest_parameter_bytes == other.largest_parameter_bytes && times_from == other.times_from &&
         tp_collectives == other.tp_collectives && cp_exchange == other.cp_exchange && uncalibrated == other.uncalibrated;
}

}  // namespace stagecut
