#include "profiler/reference_kernel.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace stagecut {

double timeReferenceKernelMs() {
  torch::NoGradGuard no_grad;
  // No random numbers: the global generator belongs to the caller (ranks that are threads build
  // their models from it), and a product's time does not depend on its values.
  const torch::Tensor a = torch::linspace(0.0, 1.0, 256 * 256).reshape({256, 256});
  const torch::Tensor b = a.t().contiguous();
  torch::Tensor product = torch::mm(a, b);  // warms the BLAS's pool and caches
  // The fastest of 15, not the median: on this project's VM the median of one process swings
  // 15-40% from run to run (CPU frequency, the hypervisor), the fastest about 10%. Other
  // processes' load is measured apart (validation/run_environment.h), from /proc/stat.
  std::vector<double> samples;
  for (int sample = 0; sample < 15; ++sample) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < 8; ++k) product = torch::mm(a, b);
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return *std::min_element(samples.begin(), samples.end());
}

}  // namespace stagecut
