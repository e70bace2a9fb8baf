#include "cli/standard_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

namespace stagecut {

StandardOutput::StandardOutput() : line_buffered_(::isatty(STDOUT_FILENO) == 1) {
  setp(buffer_, buffer_ + sizeof buffer_);
  previous_ = std::cout.rdbuf(this);
}

StandardOutput::~StandardOutput() {
  finish();
  // std::cout outlives main and is flushed once more at exit: not through this buffer.
  std::cout.rdbuf(previous_);
}

int StandardOutput::finish() {
  if (finished_) return error_;
  finished_ = true;
  flush();
  if (::close(STDOUT_FILENO) != 0 && error_ == 0 && errno != EINTR) error_ = errno;
  return error_;
}

bool StandardOutput::flush() {
  const char* next = pbase();
  while (next < pptr()) {
    const ssize_t n = ::write(STDOUT_FILENO, next, static_cast<std::size_t>(pptr() - next));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (error_ == 0) error_ = errno;
      break;
    }
    next += n;
  }
  // Dropped after a failure, as stdio does: the command goes on and the error is reported once.
  setp(buffer_, buffer_ + sizeof buffer_);
  return error_ == 0;
}

StandardOutput::int_type StandardOutput::overflow(int_type c) {
  if (!flush()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  if (line_buffered_ && traits_type::to_char_type(c) == '\n' && !flush()) return traits_type::eof();
  return c;
}

std::streamsize StandardOutput::xsputn(const char* text, std::streamsize count) {
  std::streamsize done = 0;
  while (done < count) {
    if (pptr() == epptr() && !flush()) return done;
    const std::streamsize room = epptr() - pptr();
    const std::streamsize part = std::min(room, count - done);
    std::memcpy(pptr(), text + done, static_cast<std::size_t>(part));
    pbump(static_cast<int>(part));
    done += part;
  }
  if (line_buffered_ && std::memchr(text, '\n', static_cast<std::size_t>(count)) != nullptr) flush();
  return count;
}

int StandardOutput::sync() { return flush() ? 0 : -1; }

void reserveStandardDescriptors() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // open() takes the lowest free number, which is `fd` when the ones below it are open.
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0 && null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
  }
}

}  // namespace stagecut
