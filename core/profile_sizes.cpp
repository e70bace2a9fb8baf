#include <algorithm>

#include "core/error.h"
#include "core/profile.h"
#include "core/units.h"

namespace stagecut {

std::vector<int> measuredMicrobatchSizes(const Profile& profile) {
  std::vector<int> sizes;
  for (const auto& entry : profile.microbatch_sizes) sizes.push_back(entry.microbatch_size);
  if (sizes.empty() && profile.run.microbatch_size > 0) sizes.push_back(profile.run.microbatch_size);
  return sizes;
}

Profile profileAtMicrobatchSize(const Profile& profile, int microbatch_size, const std::string& source) {
  Profile single = profile;
  single.microbatch_sizes.clear();
  if (profile.microbatch_sizes.empty()) {
    if (profile.run.microbatch_size == microbatch_size) return single;
    const std::string measured = profile.run.microbatch_size > 0
                                     ? "was measured at microbatch size " + std::to_string(profile.run.microbatch_size)
                                     : "does not say its microbatch size";
    throw Error(source + ": the profile " + measured + ", not " + std::to_string(microbatch_size) +
                "; profile again with --microbatch " + std::to_string(microbatch_size) +
                " (or several sizes, e.g. --microbatch 1,2,4,8)");
  }
  const auto entry = std::find_if(profile.microbatch_sizes.begin(), profile.microbatch_sizes.end(),
                                  [&](const MicrobatchSizeCosts& costs) { return costs.microbatch_size == microbatch_size; });
  if (entry == profile.microbatch_sizes.end()) {
    throw Error(source + ": microbatch size " + std::to_string(microbatch_size) +
                " was not measured; the profile has sizes " + joinNumbers(measuredMicrobatchSizes(profile)) +
                " (add it with profile --microbatch)");
  }
  single.run.microbatch_size = microbatch_size;
  single.layers = entry->layers;
  single.whole_model = entry->whole_model;
  // Every degree was measured at the same sizes (the reader holds a profile to it).
  for (ShardCosts& shard : single.shards) {
    for (const MicrobatchSizeCosts& costs : shard.microbatch_sizes) {
      if (costs.microbatch_size != microbatch_size) continue;
      shard.layers = costs.layers;
      shard.whole_model = costs.whole_model;
    }
    shard.microbatch_sizes.clear();
  }
  return single;
}

}  // namespace stagecut
