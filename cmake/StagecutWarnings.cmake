# One place for the project's warning flags, applied per target so that third-party
# headers (LibTorch, CLI11) pulled in as system includes stay quiet.
function(stagecut_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual)
  if(STAGECUT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
