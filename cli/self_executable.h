#pragma once

#include <string>

namespace stagecut {

/// The running stagecut binary's path (/proc/self/exe resolved), for starting its LibTorch part
/// or itself again. Throws Error (kRuntime), `what` first, when the kernel does not say.
std::string selfExecutablePath(const std::string& what);

}  // namespace stagecut
