// The zoo's checks before anything is allocated: shared bounds, the memory rule, and the check of
// a whole request (which validate runs on a profile's model.config before any rank starts).
#include <unistd.h>

#include <algorithm>

#include "core/suggest.h"
#include "core/units.h"
#include "profiler/zoo_builders.h"

namespace stagecut {

void requireSize(const char* flag, int value, int max) {
  if (value < 1) throw Error(std::string(flag) + " " + std::to_string(value) + ": must be 1 or more");
  if (value > max) {
    throw Error(std::string(flag) + " " + std::to_string(value) + ": at most " + std::to_string(max) +
                " for a zoo model; choose a smaller size");
  }
}

void requireWeightsFit(double parameters, const std::string& model) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;  // unknown memory: let the allocation decide
  const double memory = static_cast<double>(pages) * static_cast<double>(page_size);
  const double needed = parameters * 4.0 * 2.0;
  if (needed > memory) {
    throw Error(model + ": its weights and their gradients alone would take " +
                formatBytes(static_cast<std::uint64_t>(std::min(needed, 1e18))) + ", more than this machine's " +
                formatBytes(static_cast<std::uint64_t>(memory)) + " of memory; choose smaller sizes");
  }
}

void checkZooOptions(const ZooOptions& options) {
  if (options.family == "gpt") return checkGpt(options);
  if (options.family == "mlp") return checkMlp(options);
  if (options.family == "vgg16") return checkVgg16(options);
  throw Error("--model " + options.family + ": not a built-in model" + unknownNameHint(options.family, zooFamilies()));
}

}  // namespace stagecut
