#pragma once

#include <streambuf>

namespace stagecut {

/// While alive, std::cout writes to file descriptor 1 through this buffer, which keeps the
/// errno of the first failed write: stdio drops its buffer on a failed write and errno moves on,
/// so `--json > /dev/full` could only have said that something failed, not what. Line-buffered
/// on a terminal, fully buffered otherwise, as stdio is.
class StandardOutput : public std::streambuf {
 public:
  StandardOutput();
  ~StandardOutput() override;
  StandardOutput(const StandardOutput&) = delete;
  StandardOutput& operator=(const StandardOutput&) = delete;

  /// Flushes what is buffered and closes descriptor 1 (where a disk reports a deferred error).
  /// Returns 0 when everything reached it, else the errno of the first write that failed.
  int finish();

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* text, std::streamsize count) override;
  int sync() override;

 private:
  bool flush();

  char buffer_[8192];
  bool line_buffered_ = false;
  bool finished_ = false;
  int error_ = 0;
  std::streambuf* previous_ = nullptr;
};

/// Puts /dev/null, read-only, on whichever of descriptors 0, 1 and 2 the caller left closed
/// (`>&-`), so that no file the command opens gets one of those numbers (what it prints would
/// land in that file) and a write to a closed stdout fails as a write to stdout.
void reserveStandardDescriptors();

}  // namespace stagecut
