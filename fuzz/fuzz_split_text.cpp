// libFuzzer target: `--split`, the reader of a user's split in any printed form, on a GPT-like
// chain of 9 layers (embed, 6 blocks, head, loss). The first byte picks --stages (0: not given);
// the rest is the flag's text. An accepted split must cover the chain with non-empty stages.
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>

#include "fuzz/fuzz_check.h"
#include "fuzz/split_text_chain.h"
#include "partitioner/split_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const stagecut::Profile profile = stagecut::fuzz::splitTextChain();
  const int stages = data[0] % 11;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  stagecut::fuzz::expectCleanOutcome([&] {
    const std::vector<int> counts = stagecut::parseSplitText(text, profile, stages, "--split");
    if (std::accumulate(counts.begin(), counts.end(), 0) != 9) stagecut::fuzz::finding("a split that does not cover the chain");
    for (int count : counts) {
      if (count < 1) stagecut::fuzz::finding("a split with an empty stage");
    }
    if (stages > 0 && static_cast<int>(counts.size()) != stages) stagecut::fuzz::finding("a split with the wrong stage count");
  });
  return 0;
}
