#include <catch2/catch.hpp>

#include "core/error.h"
#include "validation/device_memory_fit.h"

using stagecut::RankMemoryNeed;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::uint64_t offered(const std::string& device) {
  if (device == "cpu") return static_cast<std::uint64_t>(20 * kGiB);
  if (device == "cuda:0") return static_cast<std::uint64_t>(80 * kGiB);
  return 0;  // cuda:1: unknown
}

std::string refusal(const std::vector<RankMemoryNeed>& ranks) {
  try {
    stagecut::requireRanksFitDevices(ranks, offered);
  } catch (const stagecut::Error& error) {
    CHECK(error.kind() == stagecut::ErrorKind::kInput);
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("validate refuses ranks whose predicted peaks do not fit their device, summed per device",
          "[validation][memory]") {
  // Each fits alone; on one device the ranks share its memory.
  CHECK(refusal({{"cpu", 0, 0, 3, 9 * kGiB}, {"cpu", 1, 4, 7, 10 * kGiB}}).empty());
  CHECK(refusal({{"cpu", 0, 0, 3, 9 * kGiB}, {"cpu", 1, 4, 7, 12 * kGiB}}) ==
        "validate: stage 1 (layers 4-7) would hold 12.0 GiB at its predicted peak, and the 2 ranks on cpu 21.0 GiB "
        "together, more than this machine's 20.0 GiB available; partition for more stages, fewer microbatches in "
        "flight or a smaller microbatch, or run where each stage has the memory");
  // A GPU per rank: each against its own.
  CHECK(refusal({{"cuda:0", 0, 0, 40, 79 * kGiB}, {"cuda:1", 1, 41, 82, 500 * kGiB}}).empty());
  CHECK(refusal({{"cuda:0", 0, 0, 40, 81 * kGiB}, {"cuda:1", 1, 41, 82, 1 * kGiB}}) ==
        "validate: stage 0 (layers 0-40) would hold 81.0 GiB at its predicted peak, more than cuda:0's 80.0 GiB; "
        "partition for more stages, fewer microbatches in flight or a smaller microbatch, or run where each stage "
        "has the memory");
  CHECK(refusal({}).empty());
}
