#include "core/output_path.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/error.h"
#include "core/json_document.h"
#include "core/units.h"

namespace stagecut {

namespace {

// Errors of the data, not of the path: the same command may work once space is freed, so they
// are run-time failures (exit 1), not bad input.
bool isRunTimeError(int error_number) {
  return error_number == ENOSPC || error_number == EDQUOT || error_number == EIO || error_number == EFBIG ||
         error_number == EPIPE || error_number == ENOMEM;
}

[[noreturn]] void fail(const std::string& message, int error_number) {
  throw Error(message, isRunTimeError(error_number) ? ErrorKind::kRuntime : ErrorKind::kInput);
}

std::string because(int error_number) { return std::string(" (") + std::strerror(error_number) + ")"; }

// The data did not get through.
[[noreturn]] void failWrite(const std::string& path, int error_number) {
  if (error_number == ENOSPC || error_number == EDQUOT) {
    fail("cannot write " + path + because(error_number) + "; free some space or write to another disk",
         error_number);
  }
  fail("cannot write " + path + because(error_number), error_number);
}

// The path's folder or name is at fault.
[[noreturn]] void failPath(const std::string& path, int error_number) {
  // A path naming a folder: the fix is a file name, not the folder's permissions.
  if (error_number == EISDIR) {
    fail("cannot write " + path + because(error_number) + "; give a file name, not a folder", error_number);
  }
  if (isRunTimeError(error_number)) failWrite(path, error_number);
  fail("cannot write " + path + because(error_number) + "; check that its folder exists and is writable",
       error_number);
}

// A device, FIFO or socket that refuses to be opened for writing.
[[noreturn]] void failNode(const std::string& path, int error_number) {
  if (isRunTimeError(error_number)) failWrite(path, error_number);
  fail("cannot write " + path + because(error_number) + "; check that it takes writes, or write to a file",
       error_number);
}

// How a message names the output where the flag is what to change.
std::string named(const OutputPath& output) {
  const std::string path = output.path.empty() ? "''" : output.path;
  return output.flag.empty() ? "cannot write " + path : output.flag + " " + path;
}

bool writeAll(int fd, const std::string& content) {
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // A descriptor someone else made non-blocking (a shared pipe or terminal): wait for room.
        pollfd ready{fd, POLLOUT, 0};
        if (::poll(&ready, 1, -1) >= 0 || errno == EINTR) continue;
      }
      return false;
    }
    written += static_cast<std::size_t>(n);
  }
  return true;
}

// The descriptor that /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N names, or -1.
// Opening those by name would reopen what the descriptor points at: a socket refuses, and a
// regular file (stdout redirected to it) would be replaced by rename under the shell's feet.
int descriptorNamed(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.size() <= prefix.size() || path.size() > prefix.size() + 9 || path.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    const std::string digits = path.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(digits);
  }
  return -1;
}

std::string folderOf(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

enum class TargetKind { kDescriptor, kNode, kSocket, kFile };

struct Target {
  TargetKind kind = TargetKind::kFile;
  int fd = -1;
  std::string path;  ///< with the final component's links followed: what is opened or replaced
  bool exists = false;
  struct stat info {};
};

// Applies every rule that needs no writing; what checkOutputPath and writeOutputFile share.
Target resolve(const OutputPath& output) {
  if (output.path.empty()) {
    throw Error(named(output) + ": the file name is empty; name the file to write");
  }
  Target target;
  target.path = output.path;
  // Links are followed by their text, one at a time, so that a link to /dev/stdout is seen as
  // the descriptor and a link to a file that does not exist yet is created at its target.
  for (int hop = 0;; ++hop) {
    target.fd = descriptorNamed(target.path);
    if (target.fd >= 0) {
      const int flags = ::fcntl(target.fd, F_GETFL);
      if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
        fail("cannot write " + output.path + because(EBADF) + "; that descriptor is not open for writing", EBADF);
      }
      target.kind = TargetKind::kDescriptor;
      return target;
    }
    struct stat link {};
    if (::lstat(target.path.c_str(), &link) != 0) {
      if (errno != ENOENT) failPath(output.path, errno);
      break;
    }
    if (!S_ISLNK(link.st_mode)) break;
    if (hop == 40) failPath(output.path, ELOOP);
    char text[PATH_MAX];
    const ssize_t length = ::readlink(target.path.c_str(), text, sizeof text);
    if (length < 0) failPath(output.path, errno);
    if (static_cast<std::size_t>(length) == sizeof text) failPath(output.path, ENAMETOOLONG);
    const std::string points_to(text, static_cast<std::size_t>(length));
    target.path = points_to[0] == '/' ? points_to : folderOf(target.path) + "/" + points_to;
  }

  if (::stat(target.path.c_str(), &target.info) == 0) {
    target.exists = true;
  } else if (errno != ENOENT) {
    failPath(output.path, errno);
  }
  if (target.exists) {
    const mode_t type = target.info.st_mode & S_IFMT;
    if (type == S_IFDIR) failPath(output.path, EISDIR);
    if (type == S_IFBLK) {
      throw Error("cannot write " + output.path + ": it is a block device (a disk); write to a file");
    }
    if (type == S_IFCHR || type == S_IFIFO || type == S_IFSOCK) {
      // Written through, never replaced: writing into the input's device or pipe loses nothing.
      if (::access(target.path.c_str(), W_OK) != 0) failNode(output.path, errno);
      target.kind = type == S_IFSOCK ? TargetKind::kSocket : TargetKind::kNode;
      return target;
    }
    for (const InputFile& input : output.inputs) {
      struct stat input_info {};
      if (input.path.empty() || ::stat(input.path.c_str(), &input_info) != 0) continue;
      if (input_info.st_dev == target.info.st_dev && input_info.st_ino == target.info.st_ino) {
        throw Error(named(output) + ": that is " + input.what + " " + input.path + "; write to another file");
      }
    }
    // The rename would succeed in a writable folder; a file its owner made read-only is kept.
    if (::access(target.path.c_str(), W_OK) != 0) {
      if (errno != EACCES) failPath(output.path, errno);
      throw Error("cannot write " + output.path + because(EACCES) +
                  "; the file is read-only for you and is kept as it is; write to another file");
    }
  }
  if (::access(folderOf(target.path).c_str(), W_OK) != 0) failPath(output.path, errno);
  target.kind = TargetKind::kFile;
  return target;
}

void writeThroughNode(const OutputPath& output, const Target& target, const std::string& content) {
  // No O_CREAT or O_TRUNC: the node exists and is written through; O_NOCTTY so that a terminal
  // named as output does not become the controlling one.
  const int fd = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) failNode(output.path, errno);
  const bool ok = writeAll(fd, content);
  const int write_errno = errno;
  if (::close(fd) != 0 && ok) failWrite(output.path, errno);
  if (!ok) failWrite(output.path, write_errno);
}

void writeToSocket(const OutputPath& output, const Target& target, const std::string& content) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (target.path.size() >= sizeof address.sun_path) failNode(output.path, ENAMETOOLONG);
  std::memcpy(address.sun_path, target.path.c_str(), target.path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) failNode(output.path, errno);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int connect_errno = errno;
    ::close(fd);
    failNode(output.path, connect_errno);
  }
  const bool ok = writeAll(fd, content);
  const int write_errno = errno;
  ::close(fd);
  if (!ok) failWrite(output.path, write_errno);
}

void replaceFile(const OutputPath& output, const Target& target, const std::string& content) {
  std::string temp_path = target.path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp_path.data());
  if (fd < 0) failPath(output.path, errno);

  // mkstemp creates 0600: a replaced file keeps its bits, a new one gets the usual ones.
  mode_t mode = 0;
  if (target.exists) {
    mode = target.info.st_mode & 0777;
    // Root rewriting a user's file leaves it theirs; anyone else keeps the group where allowed.
    if (target.info.st_uid != ::geteuid() || target.info.st_gid != ::getegid()) {
      if (::fchown(fd, target.info.st_uid, target.info.st_gid) != 0 &&
          ::fchown(fd, static_cast<uid_t>(-1), target.info.st_gid) != 0) {
        // Neither: the new file is the writer's, as any file it creates.
      }
    }
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);

  const bool ok = writeAll(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  if (::close(fd) != 0 || !ok) {
    const int close_errno = errno;
    ::unlink(temp_path.c_str());
    failWrite(output.path, ok ? close_errno : write_errno);
  }
  if (::rename(temp_path.c_str(), target.path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temp_path.c_str());
    failPath(output.path, rename_errno);
  }
  // The rename itself reaches the disk with the folder; without it a crash may bring back the
  // old file, which loses nothing, so a failure here is not reported.
  const int folder = ::open(folderOf(target.path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    ::fsync(folder);
    ::close(folder);
  }
}

}  // namespace

void checkOutputPath(const OutputPath& output) { resolve(output); }

namespace {

// Where a file output lands: its folder's real path and its name, so that "a.json", "./a.json"
// and a link's target name the same place even before the file exists.
std::string landingPlace(const Target& target) {
  char folder[PATH_MAX];
  if (::realpath(folderOf(target.path).c_str(), folder) == nullptr) return target.path;
  const auto slash = target.path.find_last_of('/');
  return std::string(folder) + "/" + (slash == std::string::npos ? target.path : target.path.substr(slash + 1));
}

}  // namespace

void checkDistinctOutputs(const std::vector<OutputPath>& outputs) {
  std::vector<Target> targets;
  for (const OutputPath& output : outputs) targets.push_back(resolve(output));
  for (std::size_t i = 0; i < targets.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (targets[i].kind != TargetKind::kFile || targets[j].kind != TargetKind::kFile) continue;
      const bool same_inode = targets[i].exists && targets[j].exists && targets[i].info.st_dev == targets[j].info.st_dev &&
                              targets[i].info.st_ino == targets[j].info.st_ino;
      if (same_inode || landingPlace(targets[i]) == landingPlace(targets[j])) {
        throw Error(named(outputs[i]) + ": is also the " + (outputs[j].flag.empty() ? "other output" : outputs[j].flag) +
                    " file; give each output its own file");
      }
    }
  }
}

void writeOutputFile(const OutputPath& output, const std::string& content) {
  // Every output reads back: none is larger than what stagecut's readers take.
  if (content.size() > kMaxDocumentBytes) {
    throw Error(named(output) + ": it would be " + std::to_string(content.size()) + " bytes, over the " +
                formatBytes(kMaxDocumentBytes) + " (" + std::to_string(kMaxDocumentBytes) +
                " bytes) stagecut writes and reads back; nothing was written; ask for a smaller output");
  }
  const Target target = resolve(output);
  switch (target.kind) {
    case TargetKind::kDescriptor:
      // What the command printed before comes first, as when the shell had redirected it.
      if (target.fd == STDOUT_FILENO || target.fd == STDERR_FILENO) {
        std::cout.flush();
        std::fflush(stdout);
      }
      if (!writeAll(target.fd, content)) failWrite(output.path, errno);
      return;
    case TargetKind::kNode:
      writeThroughNode(output, target, content);
      return;
    case TargetKind::kSocket:
      writeToSocket(output, target, content);
      return;
    case TargetKind::kFile:
      replaceFile(output, target, content);
      return;
  }
}

}  // namespace stagecut
