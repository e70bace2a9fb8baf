#include <catch2/catch.hpp>

#include <algorithm>

#include <torch/torch.h>

#include "profiler/torch_runtime.h"

// A broken LibTorch install (missing BLAS, mismatched libraries) should fail CI, not a user.
TEST_CASE("LibTorch runs a forward and backward with the expected gradient", "[torch][smoke]") {
  stagecut::pinThreads(1);
  torch::manual_seed(0);
  torch::nn::Linear layer(8, 3);
  const torch::Tensor input = torch::randn({5, 8});
  const torch::Tensor loss = layer->forward(input).sum();
  loss.backward();
  // d(sum(x W^T + b))/dW = column sums of x, repeated for every output row.
  const torch::Tensor expected = input.sum(0).unsqueeze(0).expand({3, 8});
  CHECK(torch::allclose(layer->weight.grad(), expected, 1e-5, 1e-6));
  CHECK(torch::allclose(layer->bias.grad(), torch::full({3}, 5.0)));
}

TEST_CASE("pinning threads sets LibTorch's pool and its BLAS's", "[torch][smoke]") {
  stagecut::pinThreads(1);
  const stagecut::TorchRuntimeInfo info = stagecut::torchRuntimeInfo();
  CHECK(info.intraop_threads == 1);
  // "1.13.0", "2.11.0": major.minor.patch as the profile records it.
  CHECK(std::count(info.torch_version.begin(), info.torch_version.end(), '.') == 2);
  if (info.blas_threads < 0) {
    WARN("the BLAS is neither OpenBLAS nor MKL (" << info.blas << "): matrix products will be slow");
  } else {
    CHECK(info.blas_threads == 1);
  }
  CHECK_THROWS_WITH(stagecut::pinThreads(0), "--threads 0: use 1 or more threads");
}
