#include "runtime/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <thread>

#include "core/error.h"
#include "core/units.h"

namespace stagecut {

namespace {

// How the CLI starts its one-line error messages (cli/main.cpp): the line a failed rank leaves.
constexpr const char* kMessagePrefix = "stagecut: ";

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

void onChild(int) {}

volatile std::sig_atomic_t g_stop_signal = 0;

void onStop(int signal_number) { g_stop_signal = signal_number; }

// While the launcher waits, SIGCHLD, SIGINT and SIGTERM are blocked except inside ppoll(), so a
// rank's exit or the user's Ctrl-C wakes the wait at once and is never lost between two checks;
// a stop is then handled by stopping the ranks (stopSignal()). Restores the caller's masks and
// handlers; the ranks start with the caller's mask and default handlers.
class ChildSignalScope {
 public:
  ChildSignalScope() {
    g_stop_signal = 0;
    sigset_t handled;
    sigemptyset(&handled);
    for (int signal_number : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&handled, signal_number);
    ::pthread_sigmask(SIG_BLOCK, &handled, &old_mask_);
    struct sigaction action {};
    action.sa_handler = onChild;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGCHLD, &action, &old_child_);
    action.sa_handler = onStop;
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
    wait_mask_ = old_mask_;
    for (int signal_number : {SIGCHLD, SIGINT, SIGTERM}) sigdelset(&wait_mask_, signal_number);
  }
  ~ChildSignalScope() {
    ::sigaction(SIGCHLD, &old_child_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  /// SIGINT or SIGTERM once one arrived during a wait; 0 before.
  int stopSignal() const { return g_stop_signal; }
  ChildSignalScope(const ChildSignalScope&) = delete;
  ChildSignalScope& operator=(const ChildSignalScope&) = delete;
  const sigset_t& oldMask() const { return old_mask_; }
  const sigset_t& waitMask() const { return wait_mask_; }

 private:
  sigset_t old_mask_;
  sigset_t wait_mask_;
  struct sigaction old_child_ {};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

struct RankProcess {
  int rank = 0;
  int stop_signal = 0;  // the signal that stopped it, while it is stopped; 0 while it runs
  std::chrono::steady_clock::time_point stopped_since;
  int err_fd = -1;      // read end of the rank's stderr; -1 once closed
  std::string partial;  // bytes after the last newline
  std::string held;     // the rank's last "stagecut: " line, not forwarded yet
};

void writeStderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

void takeBytes(RankProcess& process, const char* data, std::size_t size) {
  process.partial.append(data, size);
  std::size_t start = 0;
  for (std::size_t end; (end = process.partial.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string line = process.partial.substr(start, end - start);
    if (line.rfind(kMessagePrefix, 0) == 0) {
      if (!process.held.empty()) writeStderr(process.held + "\n");
      process.held = std::move(line);
    } else {
      writeStderr(line + "\n");
    }
  }
  process.partial.erase(0, start);
}

void closeStderr(RankProcess& process) {
  if (process.err_fd < 0) return;
  ::close(process.err_fd);
  process.err_fd = -1;
  if (!process.partial.empty()) takeBytes(process, "\n", 1);
}

// Reads what the rank has written (the pipe is non-blocking); closes it at end of file.
void readStderr(RankProcess& process) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(process.err_fd, buffer, sizeof buffer);
    if (n > 0) {
      takeBytes(process, buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    closeStderr(process);
    return;
  }
}

// The rest of an exited rank's stderr; a short wait, in case a child of the rank holds the pipe.
void drainStderr(RankProcess& process) {
  while (process.err_fd >= 0) {
    pollfd fd{process.err_fd, POLLIN, 0};
    if (::poll(&fd, 1, 200) <= 0) {
      closeStderr(process);
      return;
    }
    readStderr(process);
  }
}

[[noreturn]] void execRank(const LaunchOptions& options, int rank, int port, pid_t launcher, int err_fd,
                           const sigset_t& mask) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) _exit(1);  // the launcher died before prctl took effect
  ::pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  ::dup2(err_fd, STDERR_FILENO);
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

std::string signalName(int signal_number) {
  const char* abbreviation = ::sigabbrev_np(signal_number);
  return abbreviation != nullptr ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal_number);
}

std::string describeExit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}

// The failed rank's own message without the CLI's prefix and its own "rank R: ".
std::string ownMessage(const RankProcess& process) {
  std::string message = process.held.substr(std::min(process.held.size(), std::strlen(kMessagePrefix)));
  const std::string self = "rank " + std::to_string(process.rank) + ": ";
  if (message.rfind(self, 0) == 0) message.erase(0, self.size());
  return message;
}

// "rank 1 exited with code 1: <its own message>": how a rank ended, in its own words.
std::string failureText(const RankProcess& process, int status) {
  const std::string message = ownMessage(process);
  return "rank " + std::to_string(process.rank) + " " + describeExit(status) + (message.empty() ? "" : ": " + message);
}

void stopAll(std::map<pid_t, RankProcess>& running, double grace_s) {
  for (auto& [pid, process] : running) {
    ::kill(pid, SIGTERM);
    ::kill(pid, SIGCONT);  // a stopped rank would hold the SIGTERM until the SIGKILL below
    if (process.err_fd >= 0) ::close(process.err_fd);
  }
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
  for (const auto& [pid, process] : running) ::kill(pid, SIGKILL);
  for (const auto& [pid, process] : running) ::waitpid(pid, nullptr, 0);
  running.clear();
}

// Starts every rank with its stderr on a pipe the launcher reads; a rank that cannot be started
// stops those that were.
std::map<pid_t, RankProcess> startRanks(const LaunchOptions& options, int port, const ChildSignalScope& signals) {
  const pid_t launcher = ::getpid();
  std::map<pid_t, RankProcess> running;
  for (int rank = 0; rank < options.world_size; ++rank) {
    int pipe_fds[2];
    pid_t pid = -1;
    if (::pipe2(pipe_fds, O_CLOEXEC) == 0) {
      pid = ::fork();
      if (pid != 0) ::close(pipe_fds[1]);
      if (pid < 0) ::close(pipe_fds[0]);
    }
    if (pid < 0) {
      const int error = errno;
      stopAll(running, options.grace_s);
      throw Error(std::string("cannot start rank ") + std::to_string(rank) + " (" + std::strerror(error) + ")",
                  ErrorKind::kRuntime);
    }
    if (pid == 0) execRank(options, rank, port, launcher, pipe_fds[1], signals.oldMask());
    ::fcntl(pipe_fds[0], F_SETFL, ::fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
    RankProcess process;
    process.rank = rank;
    process.err_fd = pipe_fds[0];
    running[pid] = std::move(process);
  }
  return running;
}

// Reads what the ranks wrote to stderr for up to one tick, or until a signal arrives.
void readRanksStderr(std::map<pid_t, RankProcess>& running, const ChildSignalScope& signals) {
  std::vector<pollfd> fds;
  std::vector<RankProcess*> owners;
  for (auto& [pid, process] : running) {
    if (process.err_fd < 0) continue;
    fds.push_back({process.err_fd, POLLIN, 0});
    owners.push_back(&process);
  }
  const timespec tick{0, 200 * 1000 * 1000};
  if (::ppoll(fds.data(), fds.size(), &tick, &signals.waitMask()) > 0) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) readStderr(*owners[i]);
    }
  }
}

// Every rank that ended, stopped or continued since the last look: the ended ones leave
// `running` (a success passes its stderr on), the failed ones are returned with their status.
std::vector<std::pair<RankProcess, int>> reapRanks(std::map<pid_t, RankProcess>& running) {
  std::vector<std::pair<RankProcess, int>> failed;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED);
    if (pid <= 0) break;
    const auto found = running.find(pid);
    if (found == running.end()) continue;
    if (WIFSTOPPED(status) || WIFCONTINUED(status)) {
      found->second.stop_signal = WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
      found->second.stopped_since = std::chrono::steady_clock::now();
      continue;
    }
    RankProcess process = std::move(found->second);
    running.erase(found);
    drainStderr(process);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      if (!process.held.empty()) writeStderr(process.held + "\n");
    } else {
      failed.emplace_back(std::move(process), status);
    }
  }
  return failed;
}

// The rank stopped (SIGSTOP and the like) the longest, or nullptr.
const RankProcess* longestStopped(const std::map<pid_t, RankProcess>& running) {
  const RankProcess* stopped = nullptr;
  for (const auto& [pid, process] : running) {
    if (process.stop_signal != 0 && (stopped == nullptr || process.stopped_since < stopped->stopped_since)) {
      stopped = &process;
    }
  }
  return stopped;
}

// Ends the run over a stopped rank, which is the cause of its peers' timeouts and is named before them.
[[noreturn]] void endOverStoppedRank(std::map<pid_t, RankProcess>& running, const RankProcess& stopped,
                                     const std::vector<std::pair<RankProcess, int>>& failed, const LaunchOptions& options) {
  std::string message = "rank " + std::to_string(stopped.rank) + " was stopped by " + signalName(stopped.stop_signal);
  if (!failed.empty()) {
    message += " (" + failureText(failed.front().first, failed.front().second) + ")";
  } else {
    message += " and did not continue within " + timeoutSeconds(options.stopped_limit) + " s";
  }
  const std::size_t others = running.size() - 1;
  stopAll(running, options.grace_s);
  throw Error(message + (others == 0 ? std::string("; ended it, no other rank was still running")
                                     : "; ended it and the other " + std::to_string(others) + " running rank(s)"),
              ErrorKind::kRuntime);
}

// Ends the run over a failed rank: among several, one killed by a signal first (the peers of a
// crashed rank fail because of it).
[[noreturn]] void endOverFailedRank(std::map<pid_t, RankProcess>& running,
                                    const std::vector<std::pair<RankProcess, int>>& failed, const LaunchOptions& options) {
  std::size_t chosen = 0;
  for (std::size_t i = 0; i < failed.size(); ++i) {
    if (WIFSIGNALED(failed[i].second)) {
      chosen = i;
      break;
    }
  }
  const std::string failure = failureText(failed[chosen].first, failed[chosen].second);
  const std::size_t others = running.size();
  stopAll(running, options.grace_s);
  throw Error(failure + (others == 0 ? std::string("; no other rank was still running")
                                     : "; stopped the other " + std::to_string(others) + " running rank(s)"),
              ErrorKind::kRuntime);
}

}  // namespace

void launchRanks(const LaunchOptions& options) {
  const int port = freeLocalPort();
  const ChildSignalScope signals;
  std::map<pid_t, RankProcess> running = startRanks(options, port, signals);
  while (!running.empty()) {
    readRanksStderr(running, signals);
    if (const int stop = signals.stopSignal(); stop != 0) {
      const std::size_t ranks = running.size();
      stopAll(running, options.grace_s);
      throw Error::interrupted(std::string("validate stopped by ") + (stop == SIGINT ? "SIGINT" : "SIGTERM") + "; stopped the " +
                                   std::to_string(ranks) + " running rank(s), nothing was written",
                               stop);
    }
    const std::vector<std::pair<RankProcess, int>> failed = reapRanks(running);
    const RankProcess* stopped = longestStopped(running);
    const bool stopped_too_long =
        stopped != nullptr && std::chrono::steady_clock::now() - stopped->stopped_since >= options.stopped_limit;
    if (failed.empty() && !stopped_too_long) continue;
    if (stopped != nullptr) endOverStoppedRank(running, *stopped, failed, options);
    endOverFailedRank(running, failed, options);
  }
}

}  // namespace stagecut
