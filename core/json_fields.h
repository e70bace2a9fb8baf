#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

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
  /// Throws Error (input) naming the first field not in `known`: for formats read strictly,
  /// where a misspelt or forged field must not pass as an absent one.
  void onlyFields(std::initializer_list<const char*> known) const;
  /// Required finite number >= 0 (times, ratios). Throws Error (input) otherwise.
  double nonNegative(const char* key) const;
  std::optional<double> optionalNonNegative(const char* key) const;
  /// Required finite number, any sign (relative differences).
  double finite(const char* key) const;
  /// Required finite number between 0 and 1 (bubbles, idle fractions).
  double fraction(const char* key) const;
  /// Required whole number >= 0 that fits in 63 bits (counts, bytes).
  std::uint64_t count(const char* key) const;
  std::optional<std::uint64_t> optionalCount(const char* key) const;
  /// Required whole number in [min, max] (indices, small settings).
  int integer(const char* key, int min, int max) const;
  int optionalInteger(const char* key, int min, int max, int fallback) const;
  std::string string(const char* key) const;
  std::string optionalString(const char* key) const;
  /// Required true or false.
  bool boolean(const char* key) const;
  /// Whether the required field `key` is null (a field such as "best": null).
  bool isNull(const char* key) const;
  /// Required arrays whose items are checked as the one-value readers above check them; a bad
  /// item is named by its position: field "busy_time[2]" must be >= 0, got -1.
  std::vector<double> nonNegativeList(const char* key) const;
  std::vector<std::uint64_t> countList(const char* key) const;
  std::vector<int> integerList(const char* key, int min, int max) const;
  std::vector<std::string> stringList(const char* key) const;
  /// Throws Error (input) unless the array `key` holds `expected` items: field "busy_time" has 3
  /// entries; expected 4, <per_what> ("one per stage").
  void requireEntries(const char* key, std::size_t expected, const std::string& per_what) const;
  /// Required JSON object; returns a reader for its fields.
  JsonFields object(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  /// A timing: an object {median, min?, max?, cv?} or a plain number (median only).
  TimeStatsMs timeStats(const char* key) const;
  std::optional<TimeStatsMs> optionalTimeStats(const char* key) const;

  /// Throws Error (input) about `key`: "<where>: field \"<prefix><key>\" <problem>".
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  const nlohmann::json& json() const { return object_; }
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& required(const char* key) const;
  // The checks of one value, `name` being its key or "key[i]" for an array's item.
  double finiteValue(const nlohmann::json& value, const std::string& name) const;
  double nonNegativeValue(const nlohmann::json& value, const std::string& name) const;
  std::uint64_t countValue(const nlohmann::json& value, const std::string& name) const;
  int integerValue(const nlohmann::json& value, const std::string& name, int min, int max) const;
  std::string stringValue(const nlohmann::json& value, const std::string& name) const;
  template <typename Item, typename ReadItem>
  std::vector<Item> list(const char* key, const ReadItem& read_item) const;
  const nlohmann::json& object_;
  std::string where_;
  std::string prefix_;
};

/// Short text of a JSON value for messages: numbers and short strings as they are, others by type.
std::string describeJsonValue(const nlohmann::json& value);

}  // namespace stagecut
