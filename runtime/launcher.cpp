#include "runtime/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "core/error.h"

namespace stagecut {

namespace {

int freeLocalPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("cannot open a socket (") + std::strerror(errno) + ")", ErrorKind::kRuntime);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    throw Error(std::string("cannot find a free local port (") + std::strerror(error) + ")", ErrorKind::kRuntime);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

[[noreturn]] void execRank(const LaunchOptions& options, int rank, int port, pid_t launcher) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) _exit(1);  // the launcher died before prctl took effect
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(options.world_size).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  if (rank != 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
  }
  std::vector<char*> argv;
  for (const auto& argument : options.arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  ::execv(options.executable.c_str(), argv.data());
  _exit(127);
}

std::string describeExit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}

void stopAll(std::map<pid_t, int>& running, double grace_s) {
  for (const auto& [pid, rank] : running) ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      running.erase(pid);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (const auto& [pid, rank] : running) ::kill(pid, SIGKILL);
  for (const auto& [pid, rank] : running) ::waitpid(pid, nullptr, 0);
  running.clear();
}

}  // namespace

void launchRanks(const LaunchOptions& options) {
  const int port = freeLocalPort();
  const pid_t launcher = ::getpid();
  std::map<pid_t, int> running;
  for (int rank = 0; rank < options.world_size; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int error = errno;
      stopAll(running, options.grace_s);
      throw Error(std::string("cannot start rank ") + std::to_string(rank) + " (" + std::strerror(error) + ")",
                  ErrorKind::kRuntime);
    }
    if (pid == 0) execRank(options, rank, port, launcher);
    running[pid] = rank;
  }
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto found = running.find(pid);
    if (found == running.end()) continue;
    const int rank = found->second;
    running.erase(found);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      const std::size_t others = running.size();
      stopAll(running, options.grace_s);
      throw Error("rank " + std::to_string(rank) + " " + describeExit(status) + "; stopped the other " +
                      std::to_string(others) + " running rank(s)",
                  ErrorKind::kRuntime);
    }
  }
}

}  // namespace stagecut
