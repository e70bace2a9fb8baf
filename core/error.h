#pragma once

#include <stdexcept>
#include <string>

namespace stagecut {

/// Whether a failure is the user's input (bad flag, bad file: exit code 2) or something that
/// went wrong while running (a rank died, a device failed: exit code 1). kInterrupted: the user
/// stopped the run with a signal; exit code 128 + the signal number, as a shell reports it.
enum class ErrorKind { kInput, kRuntime, kInterrupted };

/// The one exception type the library throws. Its message is a single line that names the
/// input, says what is wrong and how to fix it; the CLI prints it as is. Line breaks that reach
/// it from user input (a field holding "a\nb") are shown escaped, as \n and \r, so the message
/// stays one line.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::kInput)
      : std::runtime_error(oneLine(message)), kind_(kind) {}

  /// The run was stopped by signal `signal_number` (SIGINT, SIGTERM).
  static Error interrupted(const std::string& message, int signal_number) {
    Error error(message, ErrorKind::kInterrupted);
    error.signal_ = signal_number;
    return error;
  }

  ErrorKind kind() const { return kind_; }
  /// Process exit code the CLI uses for this error: 2 for bad input, 1 for a run-time failure,
  /// 128 + the signal for an interrupted run.
  int exitCode() const {
    switch (kind_) {
      case ErrorKind::kInput: return 2;
      case ErrorKind::kRuntime: return 1;
      case ErrorKind::kInterrupted: return 128 + signal_;
    }
    return 1;
  }

 private:
  static std::string oneLine(const std::string& message) {
    if (message.find_first_of("\n\r") == std::string::npos) return message;
    std::string line;
    for (char c : message) {
      if (c == '\n') {
        line += "\\n";
      } else if (c == '\r') {
        line += "\\r";
      } else {
        line += c;
      }
    }
    return line;
  }

  ErrorKind kind_;
  int signal_ = 0;
};

}  // namespace stagecut
