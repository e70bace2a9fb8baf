#include "cli/self_executable.h"

#include <unistd.h>

#include "core/error.h"

namespace stagecut {

std::string selfExecutablePath(const std::string& what) {
  char path[4096];
  const ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) throw Error(what + ": cannot find the stagecut binary (/proc/self/exe)", ErrorKind::kRuntime);
  return std::string(path, static_cast<std::size_t>(length));
}

}  // namespace stagecut
