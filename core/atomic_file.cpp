#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace stagecut {

namespace {

[[noreturn]] void failWrite(const std::string& path, int error_number) {
  // A path naming a folder (checkWritable, or rename() of our temporary file onto it): the fix
  // is a file name, not the folder's permissions.
  if (error_number == EISDIR) {
    throw Error("cannot write " + path + " (" + std::strerror(error_number) +
                "); give a file name, not a folder");
  }
  throw Error("cannot write " + path + " (" + std::strerror(error_number) +
              "); check that its folder exists and is writable");
}

bool writeAll(int fd, const std::string& content) {
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void checkWritable(const std::string& path) {
  if (path.empty()) failWrite("\"\"", ENOENT);
  const auto slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::access(folder.c_str(), W_OK) != 0) failWrite(path, errno);
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) failWrite(path, EISDIR);
}

void writeFileAtomically(const std::string& path, const std::string& content) {
  if (path.empty()) failWrite("\"\"", ENOENT);
  std::string temp_template = path + ".tmp.XXXXXX";
  std::vector<char> temp_path(temp_template.begin(), temp_template.end());
  temp_path.push_back('\0');
  const int fd = ::mkstemp(temp_path.data());
  if (fd < 0) failWrite(path, errno);

  // mkstemp creates 0600; a result file should get the usual permissions under the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);

  const bool ok = writeAll(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(temp_path.data());
    failWrite(path, ok ? errno : write_errno);
  }
  if (::rename(temp_path.data(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temp_path.data());
    failWrite(path, rename_errno);
  }
}

}  // namespace stagecut
