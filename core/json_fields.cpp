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

void JsonFields::fail(const std::string& key, const std::string& problem) const {
  throw Error(where_ + ": field \"" + prefix_ + key + "\" " + problem);
}

bool JsonFields::has(const char* key) const { return object_.contains(key); }

void JsonFields::onlyFields(std::initializer_list<const char*> known) const {
  for (const auto& item : object_.items()) {
    bool listed = false;
    for (const char* key : known) listed = listed || item.key() == key;
    if (!listed) fail(item.key(), "is not a field of this format");
  }
}

const nlohmann::json& JsonFields::required(const char* key) const {
  const auto it = object_.find(key);
  if (it == object_.end()) fail(key, "is missing; it is required");
  return *it;
}

double JsonFields::finiteValue(const nlohmann::json& value, const std::string& name) const {
  if (!value.is_number()) fail(name, "must be a number, got " + describeJsonValue(value));
  const double number = value.get<double>();
  if (!std::isfinite(number)) fail(name, "must be finite, got " + value.dump());
  return number;
}

double JsonFields::nonNegativeValue(const nlohmann::json& value, const std::string& name) const {
  const double number = finiteValue(value, name);
  if (number < 0) fail(name, "must be >= 0, got " + describeJsonValue(value));
  return number;
}

double JsonFields::finite(const char* key) const { return finiteValue(required(key), key); }

double JsonFields::nonNegative(const char* key) const { return nonNegativeValue(required(key), key); }

double JsonFields::fraction(const char* key) const {
  const double number = nonNegative(key);
  if (number > 1.0) fail(key, "must be a fraction between 0 and 1, got " + nlohmann::json(number).dump());
  return number;
}

std::optional<double> JsonFields::optionalNonNegative(const char* key) const {
  if (!has(key)) return std::nullopt;
  return nonNegative(key);
}

std::uint64_t JsonFields::count(const char* key) const { return countValue(required(key), key); }

std::uint64_t JsonFields::countValue(const nlohmann::json& value, const std::string& name) const {
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(name, "is too large, got " + value.dump());
    }
    return number;
  }
  if (value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    if (number < 0) fail(name, "must be >= 0, got " + value.dump());
    return static_cast<std::uint64_t>(number);
  }
  if (value.is_number_float()) {
    // Other tools write byte counts as floats (1.5e9); accept them when they are whole.
    const double number = value.get<double>();
    if (!std::isfinite(number)) fail(name, "must be finite, got " + value.dump());
    if (number < 0) fail(name, "must be >= 0, got " + value.dump());
    if (number != std::floor(number)) fail(name, "must be a whole number, got " + value.dump());
    if (number >= 9.2e18) fail(name, "is too large, got " + value.dump());
    return static_cast<std::uint64_t>(number);
  }
  fail(name, "must be a whole number, got " + describeJsonValue(value));
}

std::optional<std::uint64_t> JsonFields::optionalCount(const char* key) const {
  if (!has(key)) return std::nullopt;
  return count(key);
}

int JsonFields::integer(const char* key, int min, int max) const {
  return integerValue(required(key), key, min, max);
}

int JsonFields::integerValue(const nlohmann::json& value, const std::string& name, int min, int max) const {
  if (!value.is_number_integer()) {
    fail(name, "must be a whole number, got " + describeJsonValue(value));
  }
  const auto number = value.get<std::int64_t>();
  if (number < min || number > max) {
    fail(name, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                  ", got " + value.dump());
  }
  return static_cast<int>(number);
}

int JsonFields::optionalInteger(const char* key, int min, int max, int fallback) const {
  return has(key) ? integer(key, min, max) : fallback;
}

std::string JsonFields::string(const char* key) const { return stringValue(required(key), key); }

std::string JsonFields::stringValue(const nlohmann::json& value, const std::string& name) const {
  if (!value.is_string()) fail(name, "must be a string, got " + describeJsonValue(value));
  return value.get<std::string>();
}

std::string JsonFields::optionalString(const char* key) const {
  return has(key) ? string(key) : std::string();
}

bool JsonFields::boolean(const char* key) const {
  const auto& value = required(key);
  if (!value.is_boolean()) fail(key, "must be true or false, got " + describeJsonValue(value));
  return value.get<bool>();
}

bool JsonFields::isNull(const char* key) const { return required(key).is_null(); }

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

template <typename Item, typename ReadItem>
std::vector<Item> JsonFields::list(const char* key, const ReadItem& read_item) const {
  const nlohmann::json& items = array(key);
  std::vector<Item> values;
  values.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    values.push_back(read_item(items[i], std::string(key) + "[" + std::to_string(i) + "]"));
  }
  return values;
}

std::vector<double> JsonFields::nonNegativeList(const char* key) const {
  return list<double>(key, [this](const nlohmann::json& item, const std::string& name) {
    return nonNegativeValue(item, name);
  });
}

std::vector<std::uint64_t> JsonFields::countList(const char* key) const {
  return list<std::uint64_t>(key, [this](const nlohmann::json& item, const std::string& name) {
    return countValue(item, name);
  });
}

std::vector<int> JsonFields::integerList(const char* key, int min, int max) const {
  return list<int>(key, [this, min, max](const nlohmann::json& item, const std::string& name) {
    return integerValue(item, name, min, max);
  });
}

std::vector<std::string> JsonFields::stringList(const char* key) const {
  return list<std::string>(key, [this](const nlohmann::json& item, const std::string& name) {
    return stringValue(item, name);
  });
}

void JsonFields::requireEntries(const char* key, std::size_t expected, const std::string& per_what) const {
  const std::size_t entries = array(key).size();
  if (entries != expected) {
    fail(key, "has " + std::to_string(entries) + (entries == 1 ? " entry" : " entries") + "; expected " +
                  std::to_string(expected) + ", " + per_what);
  }
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
