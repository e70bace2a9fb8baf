#include "core/parallel_degrees.h"

#include "core/error.h"
#include "core/json_fields.h"

namespace stagecut {

namespace {

// The keys, here and nowhere else.
const char* const kTensorParallelKey = "tensor_parallel";
const char* const kSequenceParallelKey = "sequence_parallel";
const char* const kContextParallelKey = "context_parallel";

int degreeField(const nlohmann::json& config, const char* key, const std::string& where) {
  const auto found = config.find(key);
  if (found == config.end()) return 1;
  if (!found->is_number_integer() || found->get<std::int64_t>() < 1 || found->get<std::int64_t>() > kMaxTensorParallel) {
    throw Error(where + ": model.config field \"" + key + "\" must be a whole number from 1 to " +
                std::to_string(kMaxTensorParallel) + ", got " + describeJsonValue(*found) + "; profile the model again");
  }
  return found->get<int>();
}

[[noreturn]] void refuseField(const std::string& where, const char* key, const std::string& problem,
                              const nlohmann::json& value) {
  throw Error(where + ": model.config field \"" + key + "\" must be " + problem + ", got " + describeJsonValue(value) +
              "; profile the model again");
}

}  // namespace

void writeParallelDegrees(const ParallelDegrees& degrees, nlohmann::json& config) {
  for (const char* key : {kTensorParallelKey, kSequenceParallelKey, kContextParallelKey}) config.erase(key);
  if (degrees.tensor_parallel > 1) {
    config[kTensorParallelKey] = degrees.tensor_parallel;
    config[kSequenceParallelKey] = degrees.sequence_parallel;
  }
  if (degrees.context_parallel > 1) config[kContextParallelKey] = degrees.context_parallel;
}

ParallelDegrees readParallelDegrees(const nlohmann::json& config, const std::string& where) {
  ParallelDegrees degrees;
  if (!config.is_object()) return degrees;
  degrees.tensor_parallel = degreeField(config, kTensorParallelKey, where);
  degrees.context_parallel = degreeField(config, kContextParallelKey, where);
  if (const auto found = config.find(kSequenceParallelKey); found != config.end()) {
    if (!found->is_boolean()) refuseField(where, kSequenceParallelKey, "true or false", *found);
    degrees.sequence_parallel = found->get<bool>();
  }
  return degrees;
}

}  // namespace stagecut
