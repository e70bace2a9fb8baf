#include "core/json_fields.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace stagecut {

std::string describeJsonValue(const nlohmann::json& value) {
  if (value.is_number() || value.is_boolean() || value.is_null()) return value.dump();
  if (value.is_string()) {
    const auto text = value.get<std::string>();
    return text.size() <= 24 ? value.dump() : "a string";
  }
  return std::string("an ") + value.type_name();
}

JsonFields::JsonFields(const nlohmann::json& object, std::string where, std::string prefix)
    : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {
  if (!object_.is_object()) {
    throw Error(where_ + ": " + (prefix_.empty() ? "expected a JSON object" :
                                 "field \"" + prefix_.substr(0, prefix_.size() - 1) +
                                     "\" must be an object") +
                ", got " + describeJsonValue(object_));
  }
}

void JsonFields::fail(const char* key, const std::string& problem) const {
  throw Error(where_ + ": field \"" + prefix_ + key + "\" " + problem);
}

bool JsonFields::has(const char* key) const { return object_.contains(key); }

const nlohmann::json& JsonFields::required(const char* key) const {
  const auto it = object_.find(key);
  if (it == object_.end()) fail(key, "is missing; it is required");
  return *it;
}

double JsonFields::finite(const char* key) const {
  const auto& value = required(key);
  if (!value.is_number()) fail(key, "must be a number, got " + describeJsonValue(value));
  const double number = value.get<double>();
  if (!std::isfinite(number)) fail(key, "must be finite, got " + value.dump());
  return number;
}

double JsonFields::nonNegative(const char* key) const {
  const double number = finite(key);
  if (number < 0) fail(key, "must be >= 0, got " + describeJsonValue(object_.at(key)));
  return number;
}

std::optional<double> JsonFields::optionalNonNegative(const char* key) const {
  if (!has(key)) return std::nullopt;
  return nonNegative(key);
}

std::uint64_t JsonFields::count(const char* key) const {
  const auto& value = required(key);
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(key, "is too large, got " + value.dump());
    }
    return number;
  }
  if (value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number < 0) fail(key, "must be >= 0, got " + value.dump());
    return static_cast<std::uint64_t>(number);
  }
  if (value.is_number_float()) {
    // Other tools write byte counts as floats (1.5e9); accept them when they are whole.
    const double number = value.get<double>();
    if (!std::isfinite(number)) fail(key, "must be finite, got " + value.dump());
    if (number < 0) fail(key, "must be >= 0, got " + value.dump());
    if (number != std::floor(number)) fail(key, "must be a whole number, got " + value.dump());
    if (number >= 9.2e18) fail(key, "is too large, got " + value.dump());
    return static_cast<std::uint64_t>(number);
  }
  fail(key, "must be a whole number, got " + describeJsonValue(value));
}

std::optional<std::uint64_t> JsonFields::optionalCount(const char* key) const {
  if (!has(key)) return std::nullopt;
  return count(key);
}

int JsonFields::integer(const char* key, int min, int max) const {
  const auto& value = required(key);
  if (!value.is_number_integer()) {
    fail(key, "must be a whole number, got " + describeJsonValue(value));
  }
  const auto number = value.get<std::int64_t>();
  if (number < min || number > max) {
    fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                  ", got " + value.dump());
  }
  return static_cast<int>(number);
}

int JsonFields::optionalInteger(const char* key, int min, int max, int fallback) const {
  return has(key) ? integer(key, min, max) : fallback;
}

std::string JsonFields::string(const char* key) const {
  const auto& value = required(key);
  if (!value.is_string()) fail(key, "must be a string, got " + describeJsonValue(value));
  return value.get<std::string>();
}

std::string JsonFields::optionalString(const char* key) const {
  return has(key) ? string(key) : std::string();
}

JsonFields JsonFields::object(const char* key) const {
  const auto& value = required(key);
  if (!value.is_object()) fail(key, "must be an object, got " + describeJsonValue(value));
  return JsonFields(value, where_, prefix_ + key + ".");
}

const nlohmann::json& JsonFields::array(const char* key) const {
  const auto& value = required(key);
  if (!value.is_array()) fail(key, "must be an array, got " + describeJsonValue(value));
  return value;
}

TimeStatsMs JsonFields::timeStats(const char* key) const {
  const auto& value = required(key);
  if (value.is_number()) return TimeStatsMs::exactly(nonNegative(key));
  if (!value.is_object()) {
    fail(key, "must be an object {\"median\": ...} or a number of ms, got " +
                  describeJsonValue(value));
  }
  const JsonFields stats = object(key);
  TimeStatsMs result;
  result.median = stats.nonNegative("median");
  result.min = stats.optionalNonNegative("min").value_or(result.median);
  result.max = stats.optionalNonNegative("max").value_or(result.median);
  result.cv = stats.optionalNonNegative("cv").value_or(0.0);
  result.repeats = stats.optionalInteger("repeats", 0, std::numeric_limits<int>::max(), 0);
  if (result.min > result.median || result.median > result.max) {
    fail(key, "must have min <= median <= max, got min " + std::to_string(result.min) +
                  ", median " + std::to_string(result.median) + ", max " +
                  std::to_string(result.max));
  }
  return result;
}

std::optional<TimeStatsMs> JsonFields::optionalTimeStats(const char* key) const {
  if (!has(key)) return std::nullopt;
  return timeStats(key);
}

}  // namespace stagecut
