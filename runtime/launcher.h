#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace stagecut {

/// How `stagecut validate` starts its ranks on this machine.
struct LaunchOptions {
  int world_size = 1;
  std::string executable = "/proc/self/exe";  ///< the stagecut binary itself
  std::vector<std::string> arguments;          ///< argv for every rank, argv[0] included
  double grace_s = 2.0;  ///< after a failure, how long ranks get to stop before SIGKILL
  /// How long a rank may stay stopped (SIGSTOP, a debugger) before the run is ended: validate's
  /// --timeout, the bound on every wait of a rank on its peers.
  std::chrono::milliseconds stopped_limit{120000};
};

/// Starts `world_size` processes with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR,
/// MASTER_PORT on a free local port), rank 0 keeping stdout and the others' stdout silenced,
/// and waits for all. The ranks' stderr passes through the launcher line by line, except each
/// rank's last "stagecut: " line (its error message), which is held back. When a rank fails,
/// stops the others (SIGTERM, then SIGKILL) and reaps them, so no process is left behind, then
/// throws Error (kRuntime) in one line naming the rank, how it ended and its held-back message.
/// A rank stopped for longer than stopped_limit ends the run the same way, named as stopped; so
/// does a peer's failure while a rank is stopped, whatever phase the run is in (a rank stopped
/// after its last message would otherwise keep the launcher waiting for ever).
/// Ranks also die with the launcher (PR_SET_PDEATHSIG). SIGINT or SIGTERM to the launcher, at any
/// stage of the run, stops and reaps the ranks the same way and throws Error::interrupted (exit
/// 128 + the signal) in one line.
void launchRanks(const LaunchOptions& options);

}  // namespace stagecut
