#pragma once

#include <string>
#include <vector>

#include "core/profile.h"

namespace stagecut {

/// How `profile` and `inspect` say which layers took their times from identical ones: one line per
/// group, "8 TransformerBlock layers: timed 1, 5, 8 (8.0% apart), the other 5 take their samples".
/// Empty when every layer was timed itself.
std::vector<std::string> identicalLayersLines(const Profile& profile);

/// A layer's name as the tables print it: marked "=" when its times are copied.
std::string layerNameCell(const LayerCost& layer);

}  // namespace stagecut
