# One place for the project's warning flags, applied per target so that third-party
# headers (LibTorch, CLI11) pulled in as system includes stay quiet.
function(stagecut_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual)
  if(STAGECUT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  # A unity build includes each source into one file, so GCC reads a .cpp's anonymous-namespace
  # types as a header's and warns where a class holds one: true of a header, not of a source.
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()
