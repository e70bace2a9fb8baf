#pragma once

#include <vector>

#include <catch2/catch.hpp>
#include <torch/torch.h>

namespace stagecut::testing {

/// Every parameter's gradient equals the reference's, parameter by parameter (both in one order).
inline void checkSameGradients(const std::vector<torch::Tensor>& mine, const std::vector<torch::Tensor>& reference) {
  REQUIRE(mine.size() == reference.size());
  for (std::size_t p = 0; p < mine.size(); ++p) {
    INFO("parameter " << p);
    REQUIRE(mine[p].grad().defined());
    CHECK(torch::allclose(mine[p].grad(), reference[p].grad(), 1e-5, 1e-7));
  }
}

}  // namespace stagecut::testing
