// stagecut_fault_rank: a test-only launcher and rank of `stagecut validate`'s multi-process run,
// with one rank made faulty, so the fault tests exercise the real launcher, Gloo and rank code
// while the production binary carries no test hook.
//
//   stagecut_fault_rank PROFILE PARTITION [--microbatches M] [--steps S] [--warmup-steps W]
//                       [--timeout SECONDS] [--data-parallel D]
//                       --fault kill|stall|skip|wrong-port --fault-rank R [--fault-step K]
//
// Without RANK in the environment it is the launcher (launchRanks, re-executing itself), as
// `stagecut validate` is; with RANK it is that rank. The faults, all on global rank R:
//   kill        SIGKILL at the start of step K (warm-up included), while its peers are in theirs;
//   stall       sleeps there (the launcher stops it);
//   skip        exits at once without joining: a rank that never started, to its peers;
//   wrong-port  looks for the rendezvous store on port 1, where nobody listens;
//   stop        SIGSTOP to itself at the start of step K: stopped, not killed, while its peers wait;
//   stop-at-join  SIGSTOP before it joins the rendezvous;
//   stop-at-end   SIGSTOP after its run, its outcome delivered: nobody waits on it but the launcher.
// Errors end as the CLI's do: one "stagecut: " line on stderr, exit 1 (2 for bad input).

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/partition_json.h"
#include "profiler/torch_runtime.h"
#include "runtime/gloo_transport.h"
#include "runtime/launcher.h"
#include "runtime/rank_worker.h"
#include "tests/fault_transport.h"

namespace {

struct Options {
  stagecut::ValidateRequest request;
  std::string fault;
  int fault_rank = -1;
  int fault_step = 0;
};

Options parse(const std::vector<std::string>& args) {
  Options options;
  std::vector<std::string> positional;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      positional.push_back(arg);
      continue;
    }
    if (i + 1 == args.size()) throw stagecut::Error(arg + " needs a value");
    const std::string value = args[++i];
    if (arg == "--microbatches") {
      options.request.microbatches = std::stoi(value);
    } else if (arg == "--steps") {
      options.request.steps = std::stoi(value);
    } else if (arg == "--warmup-steps") {
      options.request.warmup_steps = std::stoi(value);
    } else if (arg == "--timeout") {
      options.request.timeout_s = std::stod(value);
    } else if (arg == "--data-parallel") {
      options.request.data_parallel = std::stoi(value);
    } else if (arg == "--fault") {
      options.fault = value;
    } else if (arg == "--fault-rank") {
      options.fault_rank = std::stoi(value);
    } else if (arg == "--fault-step") {
      options.fault_step = std::stoi(value);
    } else {
      throw stagecut::Error("unknown option " + arg);
    }
  }
  if (positional.size() != 2) throw stagecut::Error("usage: stagecut_fault_rank PROFILE PARTITION [options]");
  const std::vector<std::string> faults = {"kill", "stall", "skip", "wrong-port", "stop", "stop-at-join", "stop-at-end"};
  if (std::find(faults.begin(), faults.end(), options.fault) == faults.end()) {
    throw stagecut::Error("--fault " + options.fault + ": use kill, stall, skip, wrong-port, stop, stop-at-join or stop-at-end");
  }
  options.request.profile_path = positional[0];
  options.request.partition_path = positional[1];
  return options;
}

// One rank, as cli/validate_torch_command.cpp runs it, with the fault on rank fault_rank.
void runRank(const Options& options) {
  stagecut::RendezvousInfo rendezvous = stagecut::rendezvousFromEnvironment(
      options.request.data_parallel,
      std::chrono::milliseconds(static_cast<std::int64_t>(options.request.timeout_s * 1000)));
  const bool faulty = rendezvous.rank == options.fault_rank;
  if (faulty && options.fault == "skip") return;
  // Port 1 is privileged and unused on a test machine: the rank looks for a store nobody hosts.
  if (faulty && options.fault == "wrong-port") rendezvous.master_port = 1;
  if (faulty && options.fault == "stop-at-join") ::raise(SIGSTOP);
  stagecut::pinThreads(options.request.threads);
  stagecut::retainFreedMemory();
  stagecut::testing::Fault fault;
  fault.step = options.fault_step;
  if (faulty && options.fault == "kill") fault.kind = stagecut::testing::Fault::Kind::kKill;
  if (faulty && options.fault == "stall") fault.kind = stagecut::testing::Fault::Kind::kStall;
  if (faulty && options.fault == "stop") fault.kind = stagecut::testing::Fault::Kind::kStop;
  try {
    stagecut::GlooWorld gloo(rendezvous);
    stagecut::testing::FaultWorld world(gloo, fault);
    const auto outcomes = stagecut::runValidationRank(options.request, world);
    if (rendezvous.rank == 0) std::cout << "validated " << outcomes.size() << " ranks\n";
    if (faulty && options.fault == "stop-at-end") ::raise(SIGSTOP);
  } catch (const stagecut::Error& e) {
    const std::string message = e.what();
    if (message.rfind("rank ", 0) == 0) throw;
    throw stagecut::Error("rank " + std::to_string(rendezvous.rank) + ": " + message, e.kind());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  try {
    const Options options = parse(args);
    if (std::getenv("RANK") && std::getenv("WORLD_SIZE")) {
      runRank(options);
      return 0;
    }
    stagecut::LaunchOptions launch;
    launch.world_size = static_cast<int>(stagecut::readPartitionFile(options.request.partition_path).stages.size()) *
                        options.request.data_parallel;
    launch.arguments = args;
    launch.stopped_limit = std::chrono::milliseconds(static_cast<std::int64_t>(options.request.timeout_s * 1000));
    stagecut::launchRanks(launch);
  } catch (const stagecut::Error& e) {
    std::cerr << "stagecut: " << e.what() << '\n';
    return e.exitCode();
  } catch (const std::exception& e) {
    std::cerr << "stagecut: internal error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
