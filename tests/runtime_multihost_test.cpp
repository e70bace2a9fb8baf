// Two hosts for real: each rank of a 2-rank `stagecut validate` in its own network namespace, the
// two joined by a veth pair, started as torchrun starts ranks (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, and GLOO_SOCKET_IFNAME as multi-host PyTorch users set it). It needs root and
// iproute2; where namespaces cannot be made the test says so and skips.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "core/json_document.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::runProgram;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

CommandResult shell(const std::string& script) { return runProgram("/bin/sh", "-c '" + script + "'"); }

// Two namespaces, "host a" at 10.231.0.1 and "host b" at 10.231.0.2, removed with the object.
class TwoHosts {
 public:
  TwoHosts()
      : a_("stagecut-" + std::to_string(::getpid()) + "-a"),
        b_("stagecut-" + std::to_string(::getpid()) + "-b"),
        // Interface names hold 15 characters; the process id keeps two runs' links apart.
        link_a_("scv" + std::to_string(::getpid()) + "a"),
        link_b_("scv" + std::to_string(::getpid()) + "b") {
    const std::string setup = "ip netns add " + a_ + " && ip netns add " + b_ + " && ip link add " + link_a_ +
                              " type veth peer name " + link_b_ + " && ip link set " + link_a_ + " netns " + a_ +
                              " && ip link set " + link_b_ + " netns " + b_ + " && ip -n " + a_ + " addr add " +
                              "10.231.0.1/24 dev " + link_a_ + " && ip -n " + b_ + " addr add 10.231.0.2/24 dev " +
                              link_b_ + " && ip -n " + a_ + " link set " + link_a_ + " up && ip -n " + b_ +
                              " link set " + link_b_ + " up && ip -n " + a_ + " link set lo up && ip -n " + b_ +
                              " link set lo up && ip netns exec " + a_ + " true && ip netns exec " + b_ + " true";
    const CommandResult made = shell(setup);
    ready_ = made.exit_code == 0;
    problem_ = made.err.substr(0, made.err.find('\n'));
  }
  // Deleting a namespace deletes its end of the link, and so the pair; a link never moved into
  // one (setup failed half-way) is deleted by name.
  ~TwoHosts() {
    shell("ip netns del " + a_ + " 2>/dev/null; ip netns del " + b_ + " 2>/dev/null; ip link del " + link_a_ +
          " 2>/dev/null; true");
  }
  TwoHosts(const TwoHosts&) = delete;
  TwoHosts& operator=(const TwoHosts&) = delete;

  bool ready() const { return ready_; }
  const std::string& problem() const { return problem_; }

  /// Cuts host b off: its end of the link goes down.
  void unplugB() const { REQUIRE(shell("ip -n " + b_ + " link set " + link_b_ + " down").exit_code == 0); }

  /// Runs `args` of stagecut as rank 0 on host a and rank 1 on host b at once; each rank's
  /// stdout and stderr go to r0.out, r0.err, r1.out, r1.err in `dir`. Returns "E0 E1", the exit codes.
  std::string runBoth(const TempDir& dir, const std::string& args) const {
    const auto rank = [&](int r, const std::string& ns, const std::string& link) {
      return "ip netns exec " + ns + " env RANK=" + std::to_string(r) +
             " WORLD_SIZE=2 MASTER_ADDR=10.231.0.1 MASTER_PORT=29500 GLOO_SOCKET_IFNAME=" + link + " " +
             STAGECUT_BINARY + " " + args + " >" + dir.file("r" + std::to_string(r) + ".out") + " 2>" +
             dir.file("r" + std::to_string(r) + ".err");
    };
    const CommandResult run =
        shell(rank(0, a_, link_a_) + " & p0=$!; " + rank(1, b_, link_b_) + " & p1=$!; wait $p0; e0=$?; wait $p1; " +
              "e1=$?; echo $e0 $e1");
    return run.out.substr(0, run.out.find('\n'));
  }

 private:
  std::string a_, b_;
  std::string link_a_, link_b_;
  bool ready_ = false;
  std::string problem_;
};

}  // namespace

TEST_CASE("validate runs as two hosts in their own network namespaces, and ends when one is cut off",
          "[runtime][multihost]") {
  const TwoHosts hosts;
  if (!hosts.ready()) {
    WARN("cannot create network namespaces here (" + hosts.problem() + "); the two-host test is skipped");
    return;
  }
  const TempDir dir;
  stagecut::testing::writeTinyGptSplit(dir);
  const std::string validate = "validate " + dir.file("p.json") + " --partition " + dir.file("s.json") +
                               " --microbatches 4 --steps 2 --timeout 10";

  SECTION("both hosts reach each other over the link") {
    REQUIRE(hosts.runBoth(dir, validate + " --json") == "0 0");
    CHECK(stagecut::readTextFile(dir.file("r1.out")).empty());  // rank 0 reports
    const auto report = nlohmann::json::parse(stagecut::readTextFile(dir.file("r0.out")));
    CHECK(report["grad_check"] == "pass");
    CHECK(report["grad_max_rel_diff"].get<double>() < 1e-4);
    CHECK(report["ranks"].size() == 2u);
    CHECK(report["measured_step_ms"].get<double>() > 0);
    CHECK(report["measured_steps_ms"].size() == 2u);
  }

  SECTION("host b cut off: both ranks end within the timeout, naming the rank") {
    hosts.unplugB();
    const auto started = std::chrono::steady_clock::now();
    CHECK(hosts.runBoth(dir, validate.substr(0, validate.rfind("--timeout")) + "--timeout 5") == "1 1");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    CHECK(seconds < 5 + 10);  // the timeout and a start-up's slack, never a hang
    const std::string rank0 = stagecut::readTextFile(dir.file("r0.err"));
    const std::string rank1 = stagecut::readTextFile(dir.file("r1.err"));
    CHECK_THAT(rank0, StartsWith("stagecut: rank 0: rank 1 did not join within 5 s at 10.231.0.1:29500"));
    CHECK_THAT(rank1, StartsWith("stagecut: rank 1: could not reach rank 0's rendezvous store at 10.231.0.1:29500 "
                                 "within 5 s"));
    CHECK(std::count(rank0.begin(), rank0.end(), '\n') == 1);
    CHECK(std::count(rank1.begin(), rank1.end(), '\n') == 1);
  }
}
