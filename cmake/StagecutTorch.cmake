include(${CMAKE_CURRENT_LIST_DIR}/StagecutCxxRuntime.cmake)

# LibTorch targets share one recipe: link torch, and reuse one precompiled <torch/torch.h>.
# Parsing the header costs ~20 s per translation unit on this project's 2-core machines and
# building its PCH ~50 s; built once (stagecut_torch_pch) rather than once per target, it saves
# four of those builds, and no target's sources wait behind a PCH of their own.
function(stagecut_torch_target target)
  target_link_libraries(${target} PUBLIC ${TORCH_LIBRARIES})
  # The wheel's LibTorch exports its own copies of libstdc++ parts (cmake/StagecutCxxRuntime.cmake).
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    stagecut_cxx_runtime_first(${target})
  endif()
  target_compile_options(${target} PRIVATE ${TORCH_CXX_FLAGS})
  if(NOT TARGET stagecut_torch_pch)
    add_library(stagecut_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp)
    target_link_libraries(stagecut_torch_pch PRIVATE ${TORCH_LIBRARIES})
    target_compile_options(stagecut_torch_pch PRIVATE ${TORCH_CXX_FLAGS})
    target_precompile_headers(stagecut_torch_pch PRIVATE <torch/torch.h>)
    stagecut_warnings(stagecut_torch_pch)
  endif()
  target_precompile_headers(${target} REUSE_FROM stagecut_torch_pch)
endfunction()
