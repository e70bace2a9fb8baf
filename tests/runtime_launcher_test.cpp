#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>

#include "core/error.h"
#include "runtime/launcher.h"
#include "tests/test_support.h"

using stagecut::testing::TempDir;

namespace {

stagecut::LaunchOptions shellRanks(int world_size, const std::string& script) {
  stagecut::LaunchOptions options;
  options.world_size = world_size;
  options.executable = "/bin/sh";
  options.arguments = {"sh", "-c", script};
  options.grace_s = 1.0;
  return options;
}

bool processAlive(int pid) { return ::kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("the launcher gives every rank torchrun's environment", "[runtime][launcher]") {
  const TempDir dir;
  stagecut::launchRanks(shellRanks(3, "echo $RANK $WORLD_SIZE $MASTER_ADDR > " + dir.path() + "/$RANK.env"));
  for (int rank = 0; rank < 3; ++rank) {
    std::ifstream in(dir.file(std::to_string(rank) + ".env"));
    std::string line;
    std::getline(in, line);
    CHECK(line == std::to_string(rank) + " 3 127.0.0.1");
  }
}

TEST_CASE("a failing rank stops the others and is named", "[runtime][launcher][errors]") {
  const TempDir dir;
  // Rank 1 fails at once; ranks 0 and 2 would sleep for a minute (exec: the rank is the sleep
  // itself, as a stagecut rank is one process).
  const std::string script =
      "echo $$ > " + dir.path() + "/$RANK.pid; if [ $RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep 60";
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(stagecut::launchRanks(shellRanks(3, script)),
                    "rank 1 exited with code 3; stopped the other 2 running rank(s)");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  for (int rank : {0, 2}) {
    std::ifstream in(dir.file(std::to_string(rank) + ".pid"));
    int pid = 0;
    REQUIRE(in >> pid);
    CHECK_FALSE(processAlive(pid));
  }
}

TEST_CASE("a rank killed by a signal is reported as such", "[runtime][launcher][errors]") {
  CHECK_THROWS_WITH(stagecut::launchRanks(shellRanks(2, "if [ $RANK = 0 ]; then kill -9 $$; fi; exec sleep 60")),
                    "rank 0 was killed by signal Killed; stopped the other 1 running rank(s)");
}

TEST_CASE("a failed rank's own stagecut message ends up in the launcher's one line", "[runtime][launcher][errors]") {
  // Rank 1 says why it failed, as the CLI prints errors; the others would run for a minute.
  const std::string script =
      "if [ $RANK = 1 ]; then echo 'stagecut: rank 1: waiting for F(0) from rank 0 timed out' >&2; exit 1; fi; "
      "exec sleep 60";
  CHECK_THROWS_WITH(stagecut::launchRanks(shellRanks(3, script)),
                    "rank 1 exited with code 1: waiting for F(0) from rank 0 timed out; stopped the other 2 running "
                    "rank(s)");
}
