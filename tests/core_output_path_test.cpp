#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "core/output_path.h"
#include "core/json_document.h"
#include "tests/test_support.h"

using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("an atomic write creates the file and leaves no temporary behind", "[core][atomic]") {
  const TempDir dir;
  stagecut::writeOutputFile(dir.file("out.json"), "{}\n");
  CHECK(stagecut::readTextFile(dir.file("out.json")) == "{}\n");
  CHECK(dir.list() == std::vector<std::string>{"out.json"});
  struct stat info {};
  REQUIRE(::stat(dir.file("out.json").c_str(), &info) == 0);
  CHECK((info.st_mode & 0044) != 0);  // readable by others under a usual umask, not mkstemp's 0600
}

TEST_CASE("an atomic write replaces an existing file whole", "[core][atomic]") {
  const TempDir dir;
  dir.write("out.json", std::string(10000, 'x'));
  stagecut::writeOutputFile(dir.file("out.json"), "short");
  CHECK(stagecut::readTextFile(dir.file("out.json")) == "short");
  CHECK(dir.list() == std::vector<std::string>{"out.json"});
}

TEST_CASE("a write into a missing folder fails naming the path and leaves nothing",
          "[core][atomic][errors]") {
  const TempDir dir;
  const std::string path = dir.file("no/such/folder/out.json");
  CHECK_THROWS_WITH(stagecut::writeOutputFile(path, "x"),
                    "cannot write " + path +
                        " (No such file or directory); check that its folder exists and is writable");
  CHECK(dir.list().empty());
}

TEST_CASE("an output naming a folder is refused and the folder kept",
          "[core][atomic][errors]") {
  const TempDir dir;
  REQUIRE(::mkdir(dir.file("taken").c_str(), 0755) == 0);
  dir.write("taken/keep", "old");
  CHECK_THROWS_WITH(stagecut::writeOutputFile(dir.file("taken"), "new"),
                    StartsWith("cannot write " + dir.file("taken") + " (") &&
                        Contains("directory"));
  CHECK(dir.list() == std::vector<std::string>{"taken"});
  CHECK(stagecut::readTextFile(dir.file("taken/keep")) == "old");
}

TEST_CASE("an output path is checked for writability before the work", "[core][atomic][errors]") {
  const TempDir dir;
  CHECK_NOTHROW(stagecut::checkOutputPath(dir.file("new.json")));
  CHECK_THROWS_WITH(stagecut::checkOutputPath(dir.file("no/such/out.json")),
                    "cannot write " + dir.file("no/such/out.json") +
                        " (No such file or directory); check that its folder exists and is writable");
  CHECK_THROWS_WITH(stagecut::checkOutputPath(dir.path()), StartsWith("cannot write " + dir.path() + " (Is a directory)"));
  CHECK(dir.list().empty());
}

// ---- The output rules: nothing the user has loses data (issue #21, item 2). ----

namespace {

using stagecut::ErrorKind;
using stagecut::OutputPath;

std::vector<std::string> namesIn(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The kind of the Error `write` throws; kInterrupted, which no write throws, stands for none.
template <typename Write>
ErrorKind errorKindOf(Write write) {
  try {
    write();
  } catch (const stagecut::Error& error) {
    return error.kind();
  }
  return ErrorKind::kInterrupted;
}

mode_t fileType(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return 0;
  return info.st_mode & S_IFMT;
}

// A private copy of /dev/null (minor 3) or /dev/full (minor 7) in `dir`, so that no test can
// touch the system's. Empty where this process may not make or open one (not root, or a file
// system mounted nodev): the caller warns and returns.
std::string charDeviceCopy(const TempDir& dir, const std::string& name, unsigned minor) {
  const std::string path = dir.file(name);
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0) return "";
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) {
    ::unlink(path.c_str());
    return "";
  }
  ::close(fd);
  return path;
}

// Everything readable from `fd` until its writer closes, or what came within `wait_ms` of the
// last byte: a writer that never comes (the node was replaced) ends the read, not the test run.
std::string readUntilClosed(int fd, int wait_ms) {
  std::string received;
  char buffer[65536];
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, wait_ms) <= 0) return received;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EAGAIN) continue;
    if (n <= 0) {
      // A FIFO opened without a writer reads 0 until one comes; only after data is it the end.
      if (received.empty() && n == 0) {
        ::usleep(10000);
        wait_ms -= 10;
        if (wait_ms <= 0) return received;
        continue;
      }
      return received;
    }
    received.append(buffer, static_cast<std::size_t>(n));
  }
}

std::string sameFileMessage(const std::string& flag, const std::string& output, const std::string& input) {
  return flag + " " + output + ": that is the input profile " + input + "; write to another file";
}

}  // namespace

TEST_CASE("an output that is the command's input is refused and the input kept",
          "[core][output][same-file]") {
  const TempDir dir;
  dir.write("a.json", "the profile");
  const OutputPath output(dir.file("a.json"), "-o", {{"the input profile", dir.file("a.json")}});
  const std::string message = sameFileMessage("-o", dir.file("a.json"), dir.file("a.json"));
  CHECK_THROWS_WITH(stagecut::checkOutputPath(output), message);
  CHECK_THROWS_WITH(stagecut::writeOutputFile(output, "a partition"), message);
  CHECK(errorKindOf([&] { stagecut::writeOutputFile(output, "x"); }) == ErrorKind::kInput);
  CHECK(stagecut::readTextFile(dir.file("a.json")) == "the profile");
  CHECK(dir.list() == std::vector<std::string>{"a.json"});
}

TEST_CASE("an output that is a symlink to the input is refused and both are kept",
          "[core][output][same-file]") {
  const TempDir dir;
  dir.write("a.json", "the profile");
  REQUIRE(::symlink("a.json", dir.file("link.json").c_str()) == 0);
  const OutputPath output(dir.file("link.json"), "--trace", {{"the input profile", dir.file("a.json")}});
  const std::string message = sameFileMessage("--trace", dir.file("link.json"), dir.file("a.json"));
  CHECK_THROWS_WITH(stagecut::checkOutputPath(output), message);
  CHECK_THROWS_WITH(stagecut::writeOutputFile(output, "a trace"), message);
  CHECK(stagecut::readTextFile(dir.file("a.json")) == "the profile");
  CHECK(fileType(dir.file("link.json")) == S_IFLNK);
  CHECK(dir.list() == std::vector<std::string>{"a.json", "link.json"});
}

TEST_CASE("an output that is a hard link of the input is refused and the input kept",
          "[core][output][same-file]") {
  const TempDir dir;
  dir.write("a.json", "the profile");
  REQUIRE(::link(dir.file("a.json").c_str(), dir.file("b.json").c_str()) == 0);
  const OutputPath output(dir.file("b.json"), "-o",
                          {{"the PipeDream graph", dir.file("none.txt")}, {"the input profile", dir.file("a.json")}});
  const std::string message = sameFileMessage("-o", dir.file("b.json"), dir.file("a.json"));
  CHECK_THROWS_WITH(stagecut::checkOutputPath(output), message);
  CHECK_THROWS_WITH(stagecut::writeOutputFile(output, "x"), message);
  CHECK(stagecut::readTextFile(dir.file("a.json")) == "the profile");
  struct stat info {};
  REQUIRE(::stat(dir.file("a.json").c_str(), &info) == 0);
  CHECK(info.st_nlink == 2);  // not split by a rename
}

TEST_CASE("an output beside the input, or with an input not given, is written", "[core][output][same-file]") {
  const TempDir dir;
  dir.write("a.json", "the profile");
  stagecut::writeOutputFile(OutputPath(dir.file("b.json"), "-o", {{"the input profile", dir.file("a.json")},
                                                                 {"the --partition file", ""}}),
                            "out");
  CHECK(stagecut::readTextFile(dir.file("b.json")) == "out");
  CHECK(stagecut::readTextFile(dir.file("a.json")) == "the profile");
}

TEST_CASE("an empty output path is refused in one line naming the flag", "[core][output][empty]") {
  CHECK_THROWS_WITH(stagecut::checkOutputPath(OutputPath("", "-o")),
                    "-o '': the file name is empty; name the file to write");
  CHECK_THROWS_WITH(stagecut::writeOutputFile(OutputPath("", "--svg"), "x"),
                    "--svg '': the file name is empty; name the file to write");
  CHECK_THROWS_WITH(stagecut::writeOutputFile(std::string(), "x"),
                    "cannot write '': the file name is empty; name the file to write");
  CHECK(errorKindOf([] { stagecut::checkOutputPath(OutputPath("", "-o")); }) == ErrorKind::kInput);
}

TEST_CASE("a private /dev/null is written through and stays a character device", "[core][output][device]") {
  const TempDir dir;
  const std::string null_copy = charDeviceCopy(dir, "null", 3);
  if (null_copy.empty()) {
    WARN("cannot make a device node here (needs root and a file system without nodev); not tested");
    return;
  }
  CHECK_NOTHROW(stagecut::checkOutputPath(null_copy));
  CHECK_NOTHROW(stagecut::writeOutputFile(OutputPath(null_copy, "-o"), std::string(100000, 'x')));
  CHECK(fileType(null_copy) == S_IFCHR);
  CHECK(dir.list() == std::vector<std::string>{"null"});
}

TEST_CASE("a private /dev/full fails as a run-time error and stays a character device",
          "[core][output][device]") {
  const TempDir dir;
  const std::string full_copy = charDeviceCopy(dir, "full", 7);
  if (full_copy.empty()) {
    WARN("cannot make a device node here (needs root and a file system without nodev); not tested");
    return;
  }
  CHECK_NOTHROW(stagecut::checkOutputPath(full_copy));  // a full disk is not known up front
  CHECK_THROWS_WITH(stagecut::writeOutputFile(full_copy, "{}"),
                    "cannot write " + full_copy + " (No space left on device); free some space or write to another disk");
  CHECK(errorKindOf([&] { stagecut::writeOutputFile(full_copy, "{}"); }) == ErrorKind::kRuntime);
  CHECK(fileType(full_copy) == S_IFCHR);
  CHECK(dir.list() == std::vector<std::string>{"full"});
}

TEST_CASE("a block device is refused, never written", "[core][output][device]") {
  const TempDir dir;
  if (::mknod(dir.file("disk").c_str(), S_IFBLK | 0600, makedev(7, 200)) != 0) {
    WARN("cannot make a device node here (needs root); not tested");
    return;
  }
  CHECK_THROWS_WITH(stagecut::checkOutputPath(dir.file("disk")),
                    "cannot write " + dir.file("disk") + ": it is a block device (a disk); write to a file");
  CHECK_THROWS(stagecut::writeOutputFile(dir.file("disk"), "x"));
  CHECK(fileType(dir.file("disk")) == S_IFBLK);
}

TEST_CASE("a FIFO is written through to its reader and stays a FIFO", "[core][output][fifo]") {
  const TempDir dir;
  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opened before the writer so that its open() does not wait; more than a pipe holds, so the
  // reader must drain it while the write goes on.
  const int read_fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(read_fd >= 0);
  std::string received;
  std::thread reader([&] { received = readUntilClosed(read_fd, 5000); });
  const std::string content(300000, 'f');
  CHECK_NOTHROW(stagecut::checkOutputPath(fifo));
  try {
    stagecut::writeOutputFile(OutputPath(fifo, "--trace"), content);
  } catch (const stagecut::Error& error) {
    FAIL_CHECK(error.what());
  }
  reader.join();
  ::close(read_fd);
  CHECK(received.size() == content.size());
  CHECK(fileType(fifo) == S_IFIFO);
  CHECK(dir.list() == std::vector<std::string>{"fifo"});
}

TEST_CASE("a Unix socket is written through to its listener and stays a socket", "[core][output][socket]") {
  const TempDir dir;
  const std::string path = dir.file("sock");
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof address.sun_path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  std::string received;
  std::thread reader([&] {
    pollfd ready{listener, POLLIN, 0};
    if (::poll(&ready, 1, 5000) <= 0) return;
    const int connection = ::accept(listener, nullptr, nullptr);
    if (connection < 0) return;
    received = readUntilClosed(connection, 5000);
    ::close(connection);
  });
  try {
    stagecut::writeOutputFile(path, "through the socket");
  } catch (const stagecut::Error& error) {
    FAIL_CHECK(error.what());
  }
  reader.join();
  ::close(listener);
  CHECK(received == "through the socket");
  CHECK(fileType(path) == S_IFSOCK);
}

TEST_CASE("a symlink stays a link and its target is replaced whole", "[core][output][symlink]") {
  const TempDir dir;
  REQUIRE(::mkdir(dir.file("real").c_str(), 0755) == 0);
  dir.write("real/target.json", std::string(5000, 'o'));
  REQUIRE(::chmod(dir.file("real/target.json").c_str(), 0640) == 0);
  REQUIRE(::symlink("real/target.json", dir.file("link.json").c_str()) == 0);
  CHECK_NOTHROW(stagecut::checkOutputPath(dir.file("link.json")));
  stagecut::writeOutputFile(OutputPath(dir.file("link.json"), "-o"), "new");
  CHECK(fileType(dir.file("link.json")) == S_IFLNK);
  char text[256] = {};
  CHECK(::readlink(dir.file("link.json").c_str(), text, sizeof text - 1) == 16);
  CHECK(std::string(text) == "real/target.json");
  CHECK(stagecut::readTextFile(dir.file("real/target.json")) == "new");
  struct stat info {};
  REQUIRE(::stat(dir.file("real/target.json").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0640);
  CHECK(dir.list() == std::vector<std::string>{"link.json", "real"});  // no temporary in either folder
  CHECK(namesIn(dir.file("real")) == std::vector<std::string>{"target.json"});
}

TEST_CASE("a dangling symlink is kept and its target created", "[core][output][symlink]") {
  const TempDir dir;
  REQUIRE(::symlink("made.json", dir.file("link.json").c_str()) == 0);
  stagecut::writeOutputFile(dir.file("link.json"), "made");
  CHECK(fileType(dir.file("link.json")) == S_IFLNK);
  CHECK(stagecut::readTextFile(dir.file("made.json")) == "made");
}

TEST_CASE("a replaced file keeps its permission bits", "[core][output]") {
  const TempDir dir;
  dir.write("private.json", "old");
  REQUIRE(::chmod(dir.file("private.json").c_str(), 0600) == 0);
  dir.write("shared.json", "old");
  REQUIRE(::chmod(dir.file("shared.json").c_str(), 0664) == 0);
  stagecut::writeOutputFile(dir.file("private.json"), "new");
  stagecut::writeOutputFile(dir.file("shared.json"), "new");
  struct stat info {};
  REQUIRE(::stat(dir.file("private.json").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  REQUIRE(::stat(dir.file("shared.json").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0664);
  CHECK(stagecut::readTextFile(dir.file("private.json")) == "new");
}

TEST_CASE("a read-only file of another user in a shared folder is kept, not replaced",
          "[core][output][read-only]") {
  if (::geteuid() != 0) {
    WARN("needs root to act as another user (setuid to nobody); not tested");
    return;
  }
  const TempDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);  // a shared folder: anyone may rename in it
  dir.write("theirs.json", "theirs");
  REQUIRE(::chmod(dir.file("theirs.json").c_str(), 0644) == 0);  // root's, not writable by others
  const std::string path = dir.file("theirs.json");
  const std::string message = "cannot write " + path +
                              " (Permission denied); the file is read-only for you and is kept as it is; "
                              "write to another file";
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // No Catch2 in the child: its exit code says what went wrong.
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    int code = 0;
    try {
      stagecut::checkOutputPath(path);
      code = 10;
    } catch (const stagecut::Error& error) {
      if (error.what() != message || error.kind() != ErrorKind::kInput) code = 11;
    }
    try {
      stagecut::writeOutputFile(path, "mine");
      code = code ? code : 12;
    } catch (const stagecut::Error& error) {
      if (error.what() != message) code = code ? code : 13;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  INFO("child exit code: 3 setuid failed, 10/12 not refused, 11/13 another message");
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(stagecut::readTextFile(path) == "theirs");
  CHECK(dir.list() == std::vector<std::string>{"theirs.json"});
}

TEST_CASE("/dev/fd/N writes into that descriptor, without reopening or replacing what it names",
          "[core][output][descriptor]") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  stagecut::writeOutputFile("/dev/fd/" + std::to_string(pipe_fds[1]), "through the pipe");
  ::close(pipe_fds[1]);
  CHECK(readUntilClosed(pipe_fds[0], 1000) == "through the pipe");
  ::close(pipe_fds[0]);

  // Standard output redirected to a file (`> log`): written at its offset, the file not renamed over.
  const TempDir dir;
  dir.write("log.txt", "first ");
  struct stat before {};
  REQUIRE(::stat(dir.file("log.txt").c_str(), &before) == 0);
  const int fd = ::open(dir.file("log.txt").c_str(), O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  stagecut::writeOutputFile("/proc/self/fd/" + std::to_string(fd), "second");
  ::close(fd);
  struct stat after {};
  REQUIRE(::stat(dir.file("log.txt").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(stagecut::readTextFile(dir.file("log.txt")) == "first second");
  CHECK(dir.list() == std::vector<std::string>{"log.txt"});
}

TEST_CASE("a closed or read-only descriptor is refused before any work", "[core][output][descriptor]") {
  const int fd = ::open("/dev/null", O_RDONLY);
  REQUIRE(fd >= 0);
  const std::string path = "/dev/fd/" + std::to_string(fd);
  CHECK_THROWS_WITH(stagecut::checkOutputPath(path),
                    "cannot write " + path + " (Bad file descriptor); that descriptor is not open for writing");
  ::close(fd);
  CHECK_THROWS_WITH(stagecut::checkOutputPath(path),
                    "cannot write " + path + " (Bad file descriptor); that descriptor is not open for writing");
}

TEST_CASE("two outputs of one command that are the same file are refused before any work",
          "[core][output][same-file]") {
  const TempDir dir;
  dir.write("old.json", "kept");
  REQUIRE(::symlink("t.json", dir.file("link.json").c_str()) == 0);
  REQUIRE(::link(dir.file("old.json").c_str(), dir.file("hard.json").c_str()) == 0);
  const std::string also = ": is also the --trace file; give each output its own file";
  // The same name, the same place spelled another way, a link to it before it exists, a hard link.
  const std::pair<std::string, std::string> same[] = {
      {dir.file("t.json"), dir.file("t.json")},
      {dir.file("t.json"), dir.path() + "/./t.json"},
      {dir.file("t.json"), dir.file("link.json")},
      {dir.file("old.json"), dir.file("hard.json")},
  };
  for (const auto& [trace, svg] : same) {
    INFO(trace << " and " << svg);
    CHECK_THROWS_WITH(stagecut::checkDistinctOutputs({OutputPath(trace, "--trace"), OutputPath(svg, "--svg")}),
                      "--svg " + svg + also);
  }
  CHECK(stagecut::readTextFile(dir.file("old.json")) == "kept");
  CHECK(dir.list() == std::vector<std::string>{"hard.json", "link.json", "old.json"});
  // Distinct files, and a device both may write through, pass.
  stagecut::checkDistinctOutputs({OutputPath(dir.file("t.json"), "--trace"), OutputPath(dir.file("g.svg"), "--svg")});
  stagecut::checkDistinctOutputs({OutputPath("/dev/null", "--trace"), OutputPath("/dev/null", "--svg")});
}

TEST_CASE("readTextFile reads a regular file up to its bound and looks at anything else first",
          "[core][io][errors]") {
  const TempDir dir;
  dir.write("ten.json", "0123456789");
  CHECK(stagecut::readTextFile(dir.file("ten.json"), 10) == "0123456789");  // the bound itself is taken
  CHECK(stagecut::testing::inputErrorOf([&] { stagecut::readTextFile(dir.file("ten.json"), 9); }) ==
        dir.file("ten.json") + ": is 10 B, more than any document stagecut writes (at most 9 B); check the path");
  CHECK(stagecut::testing::inputErrorOf([&] { stagecut::readTextFile(dir.path()); }) ==
        dir.path() + ": is a folder; give the file in it");
  CHECK(stagecut::testing::inputErrorOf([&] { stagecut::readTextFile("/dev/null"); }) ==
        "/dev/null: is not a regular file (a device, pipe or socket); give a file stagecut wrote");
  // A link to a regular file is the file.
  std::filesystem::create_symlink(dir.file("ten.json"), dir.file("link.json"));
  CHECK(stagecut::readTextFile(dir.file("link.json")) == "0123456789");
}

TEST_CASE("an output over what stagecut reads back is refused, nothing written", "[core][output][bound]") {
  const TempDir dir;
  dir.write("old.json", "the old profile");
  const std::string over(stagecut::kMaxDocumentBytes + 1, ' ');
  for (const char* name : {"new.json", "old.json"}) {
    const OutputPath output(dir.file(name), "-o");
    CHECK_THROWS_WITH(stagecut::writeOutputFile(output, over),
                      "-o " + dir.file(name) + ": it would be 536870913 bytes, over the 512 MiB (536870912 bytes) "
                      "stagecut writes and reads back; nothing was written; ask for a smaller output");
    CHECK(errorKindOf([&] { stagecut::writeOutputFile(output, over); }) == ErrorKind::kInput);
  }
  CHECK(dir.list() == std::vector<std::string>{"old.json"});
  CHECK(stagecut::readTextFile(dir.file("old.json")) == "the old profile");
  // At the bound it is written, and reads back.
  const std::string at_bound(stagecut::kMaxDocumentBytes, ' ');
  stagecut::writeOutputFile(OutputPath(dir.file("new.json"), "-o"), at_bound);
  CHECK(stagecut::readTextFile(dir.file("new.json")).size() == stagecut::kMaxDocumentBytes);
}
