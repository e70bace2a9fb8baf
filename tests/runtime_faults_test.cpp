// validate's faults as a user meets them: a rank killed, stalled, stopped (SIGSTOP) in any phase,
// never started or given a wrong port, and SIGTERM or SIGINT to the launcher. Each ends the run
// within its timeout, one line naming the rank, and leaves no process of the run behind.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "core/json_document.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;


namespace {

// Processes started with `marker` in their environment: this test's launcher and its ranks
// (other tests may run stagecut at the same time).
int processesWithEnvironment(const std::string& marker) {
  int count = 0;
  DIR* proc = ::opendir("/proc");
  while (dirent* entry = ::readdir(proc)) {
    std::ifstream environ(std::string("/proc/") + entry->d_name + "/environ");
    std::string variable;
    while (std::getline(environ, variable, '\0')) {
      if (variable == marker) {
        ++count;
        break;
      }
    }
  }
  ::closedir(proc);
  return count;
}

// Runs validate's ranks with one of them faulty: the test-only launcher and rank
// (tests/fault_rank_main.cpp, the same launchRanks, GlooWorld and runValidationRank as
// `stagecut validate`) with `args` (PROFILE PARTITION [options] --fault ... --fault-rank R), and
// `marker` ("NAME=value") in its environment and so in its ranks'.
CommandResult runFaultyRanks(const std::string& args, const std::string& marker) {
  return stagecut::testing::runProgram(STAGECUT_FAULT_RANK_BINARY, args, marker);
}

}  // namespace

TEST_CASE("a rank killed mid-run ends validate with exit 1 naming it, leaving no process", "[runtime][cli][errors]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const auto start = std::chrono::steady_clock::now();
  // Killed at its first measured step (step 1, after the default warm-up step).
  const CommandResult result = runFaultyRanks(dir.file("p.json") + " " + dir.file("s.json") +
                                                  " --microbatches 4 --steps 2 --timeout 30 --fault kill --fault-rank 1 "
                                                  "--fault-step 1",
                                              "STAGECUT_FAULT_TEST=kill");
  CHECK(result.exit_code == 1);
  CHECK_THAT(result.err, Contains("stagecut: rank 1 was killed by signal Killed; stopped the other 1 running rank(s)"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  CHECK(processesWithEnvironment("STAGECUT_FAULT_TEST=kill") == 0);
}

namespace {

// The stagecut messages on stderr (LibTorch and Gloo may add their own warnings around them).
int stagecutLines(const std::string& err) {
  int count = 0;
  for (std::size_t at = 0; at < err.size(); at = err.find('\n', at) + 1) {
    if (err.compare(at, 10, "stagecut: ") == 0) ++count;
    if (err.find('\n', at) == std::string::npos) break;
  }
  return count;
}

// Runs validate's ranks on the tiny split with `fault` (kill, stall, skip or wrong-port) on rank 1
// at its first step and a short --timeout; checks exit 1, one line holding `expected_message`, the time it
// took and that no process of the run is left.
void checkFaultEndsRun(const std::string& fault, const std::string& expected_message, int timeout_s,
                       const std::string& more_flags = "") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  // Unique to this run: tests of the same fault run side by side under ctest -j.
  const std::string environment = "STAGECUT_FAULT_TEST=" + fault + ":" + dir.path();
  const auto start = std::chrono::steady_clock::now();
  const CommandResult result = runFaultyRanks(dir.file("p.json") + " " + dir.file("s.json") +
                                                  " --microbatches 4 --steps 1 --warmup-steps 0 --timeout " +
                                                  std::to_string(timeout_s) + " --fault " + fault + " --fault-rank 1" +
                                                  more_flags,
                                              environment);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(result.err);
  CHECK(result.exit_code == 1);
  // One line: the launcher's, holding the failed rank's own message.
  CHECK(stagecutLines(result.err) == 1);
  CHECK_THAT(result.err, Contains(expected_message));
  CHECK(seconds < timeout_s + 10.0);
  CHECK(processesWithEnvironment(environment) == 0);
}

}  // namespace

TEST_CASE("a stalled rank ends validate within the timeout with its peer's wait named", "[runtime][cli][errors]") {
  // 5 s: the ranks must first meet within the timeout, even on a loaded machine.
  checkFaultEndsRun("stall", "waiting for B(0)'s gradient from rank 1 failed or timed out after 5 s",
                    5);
}

// Stopped, not killed: its sockets stay open, so only a bounded wait ends the run. Whichever
// notices first, the peer's wait or the launcher, the one line names the stopped rank first.
TEST_CASE("a rank stopped mid-step ends validate within the timeout naming it", "[runtime][cli][errors][stop]") {
  checkFaultEndsRun("stop", "stagecut: rank 1 was stopped by SIGSTOP", 5);
  checkFaultEndsRun("stop", "stagecut: rank 1 was stopped by SIGSTOP", 5, " --fault-step 1 --steps 2");
}

TEST_CASE("a rank stopped before it joins ends validate within the timeout naming it", "[runtime][cli][errors][stop]") {
  checkFaultEndsRun("stop-at-join", "stagecut: rank 1 was stopped by SIGSTOP", 5);
}

TEST_CASE("a replica stopped in its all-reduce ends validate within the timeout naming it",
          "[runtime][cli][errors][stop]") {
  checkFaultEndsRun("stop", "stagecut: rank 1 was stopped by SIGSTOP", 5, " --data-parallel 2");
}

TEST_CASE("a rank stopped after its last message ends validate within the timeout, not never",
          "[runtime][cli][errors][stop]") {
  // Nobody waits on it but the launcher: rank 0 has read its outcome and finished.
  checkFaultEndsRun("stop-at-end",
                    "stagecut: rank 1 was stopped by SIGSTOP and did not continue within 5 s; ended it, no other rank "
                    "was still running\n",
                    5);
}

TEST_CASE("a rank that never starts ends validate within the timeout naming it", "[runtime][cli][errors]") {
  // Rank 1 exits at once without joining: to its peers, a rank that never started.
  checkFaultEndsRun("skip",
                    "stagecut: rank 0 exited with code 1: rank 1 did not join within 3 s at 127.0.0.1:", 3);
}

TEST_CASE("a rank given a port where nobody listens ends validate within the timeout naming it",
          "[runtime][cli][errors]") {
  // Whichever notices first: rank 1 cannot reach the store, or rank 0 misses rank 1.
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const CommandResult result = runFaultyRanks(dir.file("p.json") + " " + dir.file("s.json") +
                                                  " --microbatches 4 --steps 1 --warmup-steps 0 --timeout 3 --fault "
                                                  "wrong-port --fault-rank 1",
                                              "STAGECUT_FAULT_TEST=wrong-port");
  INFO(result.err);
  CHECK(result.exit_code == 1);
  CHECK(stagecutLines(result.err) == 1);
  const bool named = result.err.find("rank 1 did not join within 3 s") != std::string::npos ||
                     result.err.find("rank 1 exited with code 1: could not reach rank 0's rendezvous store at "
                                     "127.0.0.1:1 within 3 s") != std::string::npos;
  CHECK(named);
  CHECK(processesWithEnvironment("STAGECUT_FAULT_TEST=wrong-port") == 0);
}

TEST_CASE("SIGTERM or SIGINT to validate stops every rank within seconds, one line, exit 128 + signal",
          "[runtime][cli][signals]") {
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  for (const int signal_number : {SIGTERM, SIGINT}) {
    INFO("signal " << signal_number);
    const std::string marker = "STAGECUT_SIGNAL_TEST=" + std::to_string(signal_number);
    const std::string err_path = dir.file("err-" + std::to_string(signal_number) + ".txt");
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::putenv(const_cast<char*>(marker.c_str()));
      ::freopen(err_path.c_str(), "w", stderr);
      ::freopen("/dev/null", "w", stdout);
      const std::string profile = dir.file("p.json"), partition = dir.file("s.json");
      ::execl(STAGECUT_BINARY, STAGECUT_BINARY, "validate", profile.c_str(), "--partition", partition.c_str(),
              "--steps", "100000", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    // Whatever the run is doing by then (starting ranks, meeting, stepping), the signal ends it.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const auto sent = std::chrono::steady_clock::now();
    REQUIRE(::kill(pid, signal_number) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    const std::string err = stagecut::readTextFile(err_path);
    INFO(err);
    CHECK(seconds < 5.0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 128 + signal_number);
    CHECK_THAT(err, Contains(std::string("stagecut: validate stopped by ") +
                             (signal_number == SIGINT ? "SIGINT" : "SIGTERM") + "; stopped the 2 running rank(s), "
                             "nothing was written\n"));
    CHECK(processesWithEnvironment(marker) == 0);
  }
}
