#pragma once

#include <exception>
#include <string>

namespace stagecut {

/// The one line of a LibTorch or TorchScript error that says what went wrong, for a message of
/// stagecut's own: the interpreter's last line ("mat1 and mat2 shapes cannot be multiplied (4x7
/// and 8x8)") without the traceback above it, an allocator's message without its "[enforce fail
/// at ...]" prefix, and the first line of any other error, never a C++ backtrace.
std::string torchErrorLine(const std::exception& error);

}  // namespace stagecut
