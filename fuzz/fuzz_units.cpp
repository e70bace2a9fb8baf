// libFuzzer target: the unit parsers behind --memory-cap, --bandwidth and --latency. The first
// byte picks the parser, the rest is the flag's text. Accepted values must be in the documented
// range: sizes >= 1 byte, bandwidths finite and > 0, durations finite and >= 0.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/units.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  stagecut::fuzz::expectCleanOutcome([&] {
    switch (data[0] % 3) {
      case 0: {
        const std::uint64_t bytes = stagecut::parseBytes(text, "--memory-cap");
        if (bytes == 0) stagecut::fuzz::finding("parseBytes accepted a size of 0 bytes");
        (void)stagecut::formatBytes(bytes);
        break;
      }
      case 1: {
        const double bytes_per_s = stagecut::parseBandwidthBytesPerS(text, "--bandwidth");
        if (!std::isfinite(bytes_per_s) || !(bytes_per_s > 0)) {
          stagecut::fuzz::finding("parseBandwidthBytesPerS returned " + std::to_string(bytes_per_s));
        }
        break;
      }
      default: {
        const double ms = stagecut::parseDurationMs(text, "--latency");
        if (!std::isfinite(ms) || ms < 0) {
          stagecut::fuzz::finding("parseDurationMs returned " + std::to_string(ms));
        }
        (void)stagecut::formatMs(ms);
        break;
      }
    }
  });
  return 0;
}
