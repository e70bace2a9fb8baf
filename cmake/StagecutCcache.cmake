# ccache, where it is installed (scripts/install-deps.sh installs it), in front of every C++
# compile. Its base directory is the source tree, so a source compiled alike in two build
# folders is compiled once: the LibTorch-free parts are the same in build/ and build-pip/, and
# CI's second LibTorch leg takes them from the cache (README, "Building by hand").
# -DSTAGECUT_CCACHE=OFF, or a CMAKE_CXX_COMPILER_LAUNCHER of your own, leaves it out.
option(STAGECUT_CCACHE "Compile through ccache where it is installed" ON)
if(STAGECUT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(STAGECUT_CCACHE_PROGRAM ccache)
  if(STAGECUT_CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
        ${STAGECUT_CCACHE_PROGRAM})
  endif()
endif()
