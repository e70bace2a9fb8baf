#include "planner/parallel_layout.h"

#include <map>

#include "core/error.h"
#include "core/suggest.h"

namespace stagecut {

const char* frameworkName(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kTorchtitan:
      return "torchtitan";
  }
  return "megatron";
}

Framework parseFramework(const std::string& name) {
  for (Framework framework : {Framework::kMegatron, Framework::kTorchtitan}) {
    if (name == frameworkName(framework)) return framework;
  }
  throw Error("--format: plan prints a layout as 'megatron' or 'torchtitan' runs it, not '" + name + "'" +
              unknownNameHint(name, {"megatron", "torchtitan"}));
}

std::vector<ScheduleKind> frameworkSchedules(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return {ScheduleKind::kOneFOneB, ScheduleKind::kInterleavedOneFOneB};
    case Framework::kTorchtitan:
      return {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleavedOneFOneB,
              ScheduleKind::kZeroBubbleV, ScheduleKind::kDualPipeV};
  }
  return {};
}

bool shardsWeights(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return false;
    case Framework::kTorchtitan:
      return true;
  }
  return false;
}

const char* shardedDataParallelName(Framework framework) { return shardsWeights(framework) ? "fsdp" : "dist-opt"; }

long long ParallelLayout::gpus() const {
  return static_cast<long long>(degrees.ranks()) * placement.ranks * data_parallel;
}

long long ParallelLayout::globalBatch() const {
  return static_cast<long long>(microbatch_size) * microbatches * data_parallel;
}

std::string layoutText(const ParallelLayout& layout, Framework framework) {
  std::string text = "TP " + std::to_string(layout.degrees.tensor_parallel) + " CP " +
                     std::to_string(layout.degrees.context_parallel) + " PP " + std::to_string(layout.placement.ranks);
  if (layout.placement.chunked()) text += " v " + std::to_string(layout.placement.chunks_per_rank);
  text += " DP " + std::to_string(layout.data_parallel) + ", mbs " + std::to_string(layout.microbatch_size) + " x " +
          std::to_string(layout.microbatches) + ", " + scheduleName(layout.schedule) + ", recompute " +
          layout.recompute.text();
  if (layout.sharded_data_parallel) text += std::string(", ") + shardedDataParallelName(framework);
  return text;
}

bool LayoutPin::admits(const ParallelLayout& layout) const {
  const auto agrees = [](const std::optional<int>& pinned, int value) { return !pinned || *pinned == value; };
  return agrees(tensor_parallel, layout.degrees.tensor_parallel) &&
         agrees(context_parallel, layout.degrees.context_parallel) &&
         agrees(pipeline_parallel, layout.placement.ranks) && agrees(data_parallel, layout.data_parallel) &&
         agrees(chunks, layout.placement.chunks_per_rank) && agrees(microbatch_size, layout.microbatch_size) &&
         (!schedule || *schedule == layout.schedule) &&
         (!recompute || recompute->text() == layout.recompute.text()) &&
         (!sharded_data_parallel || *sharded_data_parallel == layout.sharded_data_parallel);
}

namespace {

int wholeValue(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  long long number = -1;
  try {
    number = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || number < 1 || number > (1 << 22)) {
    throw Error("--fix " + key + "=" + value + ": give a whole number from 1 up, e.g. " + key + "=2");
  }
  return static_cast<int>(number);
}

bool onOff(const std::string& key, const std::string& value) {
  if (value == "on" || value == "true" || value == "1") return true;
  if (value == "off" || value == "false" || value == "0") return false;
  throw Error("--fix " + key + "=" + value + ": give on or off");
}

void setPin(LayoutPin& pin, const std::string& key, const std::string& value, const Profile& profile) {
  const std::map<std::string, std::optional<int> LayoutPin::*> whole = {
      {"tp", &LayoutPin::tensor_parallel}, {"cp", &LayoutPin::context_parallel}, {"pp", &LayoutPin::pipeline_parallel},
      {"dp", &LayoutPin::data_parallel},   {"v", &LayoutPin::chunks},            {"mbs", &LayoutPin::microbatch_size}};
  if (const auto found = whole.find(key); found != whole.end()) {
    pin.*(found->second) = wholeValue(key, value);
  } else if (key == "schedule") {
    pin.schedule = parseScheduleName(value);
  } else if (key == "recompute") {
    pin.recompute = parseRecomputePolicy(value, profile);
  } else if (key == "dist-opt" || key == "fsdp") {
    pin.sharded_data_parallel = onOff(key, value);
  } else {
    throw Error("--fix: unknown key '" + key + "'" +
                unknownNameHint(key, {"tp", "cp", "pp", "dp", "v", "mbs", "schedule", "recompute", "dist-opt", "fsdp"}) +
                "; give e.g. --fix tp=4,cp=2,pp=4,v=5,mbs=1");
  }
}

}  // namespace

LayoutPin parseLayoutPin(const std::string& text, const Profile& profile) {
  LayoutPin pin;
  std::vector<std::string> seen;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    begin = comma + 1;
    if (item.empty()) continue;
    const std::size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == item.size()) {
      throw Error("--fix " + item + ": give key=value pairs, e.g. --fix tp=4,pp=8,v=5");
    }
    std::string key = item.substr(0, equals);
    if (key == "fsdp") key = "dist-opt";  // one switch, named as each framework names it
    for (const std::string& earlier : seen) {
      if (earlier == key) throw Error("--fix: " + key + " is given twice; give each key once");
    }
    seen.push_back(key);
    setPin(pin, key, item.substr(equals + 1), profile);
  }
  if (seen.empty()) throw Error("--fix \"" + text + "\": names nothing; give e.g. --fix tp=4,pp=8,v=5");
  return pin;
}

}  // namespace stagecut
