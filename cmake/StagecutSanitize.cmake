# Instrumented builds (docs/reliability.md). Both apply to every target configured after this
# file, so the libraries, the CLI and the tests are built the same way.
#
# STAGECUT_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer, any report fatal, so ctest
#   fails on the first one (`make test-asan`, build-asan/).
# STAGECUT_FUZZ=ON: clang only; libraries instrumented for libFuzzer's coverage as well, and the
#   targets in fuzz/ built (`make fuzz`, build-fuzz/).
option(STAGECUT_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(STAGECUT_FUZZ "Build the libFuzzer targets in fuzz/ (needs clang)" OFF)

set(stagecut_sanitize_flags -fsanitize=address,undefined -fno-omit-frame-pointer
                            -fno-sanitize-recover=all)

if(STAGECUT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "STAGECUT_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}; "
                        "configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(STAGECUT_TORCH)
    message(FATAL_ERROR "STAGECUT_FUZZ=ON fuzzes the LibTorch-free readers; add -DSTAGECUT_TORCH=OFF")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link ${stagecut_sanitize_flags} -g)
  add_link_options(${stagecut_sanitize_flags})
  message(STATUS "stagecut: STAGECUT_FUZZ=ON; libFuzzer + ASan + UBSan instrumented build")
elseif(STAGECUT_SANITIZE)
  if(STAGECUT_TORCH)
    # LibTorch is not built with ASan; mixing gives false reports from its allocations.
    message(FATAL_ERROR "STAGECUT_SANITIZE=ON covers the LibTorch-free parts; add -DSTAGECUT_TORCH=OFF")
  endif()
  # -Og -g1 rather than the build type's -O2 -g: the checks are the same and the build takes a
  # quarter of the time (65 s -> 19 s for cli/simulate_command.cpp), which is most of CI's.
  add_compile_options(${stagecut_sanitize_flags} -Og -g1)
  add_link_options(${stagecut_sanitize_flags})
  message(STATUS "stagecut: STAGECUT_SANITIZE=ON; ASan + UBSan instrumented build")
endif()
