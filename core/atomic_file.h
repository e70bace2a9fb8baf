#pragma once

#include <string>

namespace stagecut {

/// Writes `content` to `path` so that readers see either the old file or the whole new one,
/// never a part: a temporary file in the same folder, flushed to disk, then renamed over `path`.
/// Throws Error (input: the path is the user's) naming the path and the system's reason; no
/// temporary file is left behind.
void writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace stagecut
