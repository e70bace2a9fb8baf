#include "core/memory_parts.h"

#include <cmath>

namespace stagecut {

bool MemoryParts::operator==(const MemoryParts& other) const {
  return weights == other.weights && gradients == other.gradients && optimizer == other.optimizer &&
         activations == other.activations && buffers == other.buffers && transient == other.transient;
}

nlohmann::json memoryPartsToJson(const MemoryParts& parts) {
  const auto whole = [](double bytes) { return static_cast<std::uint64_t>(std::llround(std::max(bytes, 0.0))); };
  return {{"weights", whole(parts.weights)},         {"gradients", whole(parts.gradients)},
          {"optimizer", whole(parts.optimizer)},     {"activations", whole(parts.activations)},
          {"buffers", whole(parts.buffers)},         {"transient", whole(parts.transient)}};
}

MemoryParts memoryPartsFromJson(const JsonFields& fields) {
  MemoryParts parts;
  parts.weights = static_cast<double>(fields.count("weights"));
  parts.gradients = static_cast<double>(fields.count("gradients"));
  parts.optimizer = static_cast<double>(fields.count("optimizer"));
  parts.activations = static_cast<double>(fields.count("activations"));
  parts.buffers = static_cast<double>(fields.count("buffers"));
  parts.transient = static_cast<double>(fields.count("transient"));
  return parts;
}

}  // namespace stagecut
