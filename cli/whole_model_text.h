#pragma once

#include <string>

#include "core/profile.h"

namespace stagecut {

/// What the profile's whole-model figures cover, for the lines that print them: "" for the whole
/// chain, else " of layers 0-12 (embed to block.11), the longest run that fit in memory".
std::string wholeModelScope(const Profile& profile);

}  // namespace stagecut
