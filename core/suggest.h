#pragma once

#include <string>
#include <vector>

namespace stagecut {

/// The candidate closest to `typed` by edit distance, when it is close enough to be a typo
/// (at most a third of the longer name, and at least one edit allowed); "" otherwise.
std::string closestName(const std::string& typed, const std::vector<std::string>& candidates);

/// " did you mean 'x'?" when a candidate is close, else "; use one of: a, b, c": the tail of an
/// "unknown name" message.
std::string unknownNameHint(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace stagecut
