#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/profile.h"

namespace stagecut {

/// Strict reader of one JSON object's fields, shared by the format readers so that every
/// rejection reads the same: "<where>: field \"<path>\" <what is wrong>".
/// `where` names the file and the item ("gpt.json: layer 3"), `prefix` the enclosing field.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string where, std::string prefix = "");

  bool has(const char* key) const;
  /// Required finite number >= 0 (times, ratios). Throws Error (input) otherwise.
  double nonNegative(const char* key) const;
  std::optional<double> optionalNonNegative(const char* key) const;
  /// Required finite number, any sign (relative differences).
  double finite(const char* key) const;
  /// Required whole number >= 0 that fits in 63 bits (counts, bytes).
  std::uint64_t count(const char* key) const;
  std::optional<std::uint64_t> optionalCount(const char* key) const;
  /// Required whole number in [min, max] (indices, small settings).
  int integer(const char* key, int min, int max) const;
  int optionalInteger(const char* key, int min, int max, int fallback) const;
  std::string string(const char* key) const;
  std::string optionalString(const char* key) const;
  /// Required JSON object; returns a reader for its fields.
  JsonFields object(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  /// A timing: an object {median, min?, max?, cv?} or a plain number (median only).
  TimeStatsMs timeStats(const char* key) const;
  std::optional<TimeStatsMs> optionalTimeStats(const char* key) const;

  /// Throws Error (input) about `key`: "<where>: field \"<prefix><key>\" <problem>".
  [[noreturn]] void fail(const char* key, const std::string& problem) const;
  const nlohmann::json& json() const { return object_; }
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& required(const char* key) const;
  const nlohmann::json& object_;
  std::string where_;
  std::string prefix_;
};

/// Short text of a JSON value for messages: numbers and short strings as they are, others by type.
std::string describeJsonValue(const nlohmann::json& value);

}  // namespace stagecut
