#include "core/profile_shards.h"

#include <algorithm>

#include "core/error.h"

namespace stagecut {

namespace {

bool ascending(const ParallelDegrees& a, const ParallelDegrees& b) {
  if (a.tensor_parallel != b.tensor_parallel) return a.tensor_parallel < b.tensor_parallel;
  if (a.context_parallel != b.context_parallel) return a.context_parallel < b.context_parallel;
  return !a.sequence_parallel && b.sequence_parallel;
}

}  // namespace

std::vector<ParallelDegrees> measuredDegrees(const Profile& profile, const std::string& source) {
  if (profile.shards.empty()) return {readParallelDegrees(profile.model.config, source)};
  std::vector<ParallelDegrees> degrees;
  for (const ShardCosts& shard : profile.shards) degrees.push_back(shard.degrees);
  std::sort(degrees.begin(), degrees.end(), ascending);
  return degrees;
}

Profile shardProfile(const Profile& profile, const ParallelDegrees& degrees, const std::string& source) {
  if (profile.shards.empty()) {
    const ParallelDegrees own = readParallelDegrees(profile.model.config, source);
    if (own == degrees) return profile;
    throw Error(source + ": measured at " + degreesText(own) + " only, not at " + degreesText(degrees) +
                "; profile with --tensor-parallel listing every degree to plan");
  }
  for (const ShardCosts& shard : profile.shards) {
    if (shard.degrees != degrees) continue;
    Profile view = profile;
    view.shards.clear();
    view.layers = shard.layers;
    view.whole_model = shard.whole_model;
    view.microbatch_sizes = shard.microbatch_sizes;
    writeParallelDegrees(degrees, view.model.config);
    return view;
  }
  std::string measured;
  for (const ParallelDegrees& known : measuredDegrees(profile, source)) {
    measured += (measured.empty() ? "" : "; ") + degreesText(known);
  }
  throw Error(source + ": has no layers measured at " + degreesText(degrees) + " (it has " + measured +
              "); profile at that degree, or plan among those");
}

Profile profileOfDegrees(const std::vector<Profile>& points, const std::string& source) {
  if (points.empty()) throw Error(source + ": no degree was measured");
  Profile merged = points.front();
  merged.shards.clear();
  if (points.size() == 1) return merged;
  for (const Profile& point : points) {
    const ParallelDegrees degrees = readParallelDegrees(point.model.config, source);
    for (const ShardCosts& known : merged.shards) {
      if (known.degrees == degrees) throw Error(source + ": " + degreesText(degrees) + " was measured twice");
    }
    bool same_chain = point.layers.size() == merged.layers.size();
    for (std::size_t i = 0; same_chain && i < point.layers.size(); ++i) {
      same_chain = point.layers[i].name == merged.layers[i].name;
    }
    if (!same_chain || measuredMicrobatchSizes(point) != measuredMicrobatchSizes(merged)) {
      throw Error(source + ": the layers measured at " + degreesText(degrees) + " are not those at " +
                  degreesText(readParallelDegrees(merged.model.config, source)) +
                  "; every degree profiles the same model at the same microbatch sizes");
    }
    merged.shards.push_back({degrees, point.layers, point.whole_model, point.microbatch_sizes});
  }
  return merged;
}

std::string degreesText(const ParallelDegrees& degrees) {
  return "TP " + std::to_string(degrees.tensor_parallel) + ", CP " + std::to_string(degrees.context_parallel) +
         (degrees.sequence_parallel ? ", SP" : "");
}

}  // namespace stagecut
