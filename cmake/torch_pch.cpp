// The one source of stagecut_torch_pch (cmake/StagecutTorch.cmake): the target exists to build
// the precompiled <torch/torch.h> that every LibTorch target reuses.
