#pragma once

#include <cstdint>
#include <vector>

namespace stagecut {

/// DeepSpeed's `partition_uniform` (and Megatron's even split): floor(L / N) layers per stage,
/// the first L mod N stages one more. Layers per stage. Requires 1 <= N <= L.
std::vector<int> uniformSplit(int layers, int stages);

/// DeepSpeed's `partition_method="parameters"`: its `partition_balanced` dynamic program over
/// the layers' parameter counts, reproduced step for step (it minimises the spread between the
/// largest and smallest stage, ties to the later cut), O(L^2 N). Layers per stage. Requires
/// 1 <= N <= L.
std::vector<int> deepspeedParamsSplit(const std::vector<std::uint64_t>& params_per_layer, int stages);

/// DeepSpeed's `parts`: the boundary list [0, a, b, ..., L] of a split given as layers per stage.
std::vector<int> boundaryList(const std::vector<int>& layers_per_stage);

}  // namespace stagecut
