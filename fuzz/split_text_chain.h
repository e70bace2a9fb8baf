#pragma once

// The chain fuzz_split_text reads splits of, shared with the test that replays its regressions
// (tests/partitioner_fuzz_regression_test.cpp): embed, 6 blocks, head, loss.

#include "core/profile.h"

namespace stagecut::fuzz {

inline Profile splitTextChain() {
  Profile profile;
  const char* kinds[] = {"Embedding", "TransformerBlock", "TransformerBlock", "TransformerBlock", "TransformerBlock",
                         "TransformerBlock", "TransformerBlock", "LMHead", "CrossEntropyLoss"};
  const char* names[] = {"embed", "block.0", "block.1", "block.2", "block.3", "block.4", "block.5", "head", "loss"};
  for (int k = 0; k < 9; ++k) {
    LayerCost layer;
    layer.index = k;
    layer.name = names[k];
    layer.kind = kinds[k];
    profile.layers.push_back(layer);
  }
  return profile;
}

}  // namespace stagecut::fuzz
