# LibTorch targets share one recipe: link torch, and precompile <torch/torch.h> because each
# translation unit that parses it costs ~20 s on this project's 2-core machines.
function(stagecut_torch_target target)
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  target_compile_options(${target} PRIVATE ${TORCH_CXX_FLAGS})
  target_precompile_headers(${target} PRIVATE <torch/torch.h>)
endfunction()
