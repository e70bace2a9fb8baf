# STAGECUT_CUDA decides whether the CUDA timing code is built. AUTO builds it when a CUDA
# toolkit is found, ON fails the configure with the fix when none is, OFF never builds it.
# The code only needs the CUDA runtime and CUPTI headers and libraries, not nvcc, and it
# checks for a device at run time, so a build with CUDA still runs on a machine without a GPU.
if(NOT STAGECUT_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STAGECUT_CUDA=${STAGECUT_CUDA}: use AUTO, ON or OFF")
endif()

set(STAGECUT_HAVE_CUDA OFF)
if(NOT STAGECUT_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart)
    set(STAGECUT_HAVE_CUDA ON)
  elseif(STAGECUT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "STAGECUT_CUDA=ON but no CUDA toolkit was found: set CUDAToolkit_ROOT "
                        "to the toolkit (e.g. -DCUDAToolkit_ROOT=/usr/local/cuda) or use STAGECUT_CUDA=AUTO")
  endif()
endif()

if(STAGECUT_HAVE_CUDA)
  message(STATUS "stagecut: CUDA timing code ON (CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_DIR}; STAGECUT_CUDA=${STAGECUT_CUDA})")
else()
  message(STATUS "stagecut: CUDA timing code OFF (STAGECUT_CUDA=${STAGECUT_CUDA})")
endif()
