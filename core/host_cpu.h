#pragma once

#include <string>

namespace stagecut {

/// CPU time on this host at one instant: every process's (from /proc/stat) and this process's
/// own, all threads (getrusage), in seconds, with the wall clock.
struct HostCpuSnapshot {
  double host_busy_s = -1.0;  ///< < 0 when /proc/stat cannot be read
  double own_s = 0.0;
  double wall_s = 0.0;
};

HostCpuSnapshot takeHostCpuSnapshot();

/// The cores this process may run on (its CPU affinity), at least 1.
int usableCores();

/// This machine's host name ("localhost" when unknown).
std::string hostName();

}  // namespace stagecut
