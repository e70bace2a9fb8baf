#pragma once

#include <string>

namespace stagecut {

/// Writes `content` to `path` so that readers see either the old file or the whole new one,
/// never a part: a temporary file in the same folder, flushed to disk, then renamed over `path`.
/// Throws Error (input: the path is the user's) naming the path and the system's reason; no
/// temporary file is left behind.
void writeFileAtomically(const std::string& path, const std::string& content);

/// Checks up front that `path` could be written (its folder exists and is writable), so a long
/// run does not fail at its end. Throws the same Error as writeFileAtomically would.
void checkWritable(const std::string& path);

}  // namespace stagecut
