#pragma once

#include <cstdint>
#include <string>

namespace stagecut {

/// Whether CUDA timing can run here: built with CUDA (STAGECUT_CUDA) and a device present.
struct CudaAvailability {
  bool built = false;  ///< this binary has the CUDA timing code
  int devices = 0;     ///< CUDA devices visible now; 0 without a GPU or driver
  std::string reason;  ///< why there are none, for the user ("built without CUDA", driver error)
};

/// Asks the CUDA runtime how many devices there are. Never throws and never aborts: a machine
/// without a GPU or a driver gets devices = 0 and the runtime's reason.
CudaAvailability probeCuda();

/// The memory of CUDA device `ordinal` (as this process numbers them), in bytes; 0 when unknown
/// (no such device, no driver, built without CUDA). Never throws.
std::uint64_t cudaDeviceMemoryBytes(int ordinal);

}  // namespace stagecut
