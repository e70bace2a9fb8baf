#include "core/host_cpu.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

namespace stagecut {

namespace {

double seconds(const timeval& value) { return static_cast<double>(value.tv_sec) + value.tv_usec / 1e6; }

// Busy jiffies of all CPUs (user, nice, system, irq, softirq: not idle, iowait or the steal of
// a hypervisor, which no process of the host runs), in seconds.
double hostBusySeconds() {
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!stat || !std::getline(stat, line) || line.rfind("cpu ", 0) != 0) return -1.0;
  std::istringstream fields(line.substr(4));
  unsigned long long value = 0, busy = 0;
  for (int field = 0; field < 7 && fields >> value; ++field) {
    if (field != 3 && field != 4) busy += value;  // 3: idle, 4: iowait; 7 (steal) not read
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(busy) / static_cast<double>(ticks) : -1.0;
}

}  // namespace

HostCpuSnapshot takeHostCpuSnapshot() {
  HostCpuSnapshot snapshot;
  snapshot.host_busy_s = hostBusySeconds();
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) snapshot.own_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  snapshot.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return snapshot;
}

int usableCores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof mask, &mask) != 0) return 1;
  return std::max(1, CPU_COUNT(&mask));
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace stagecut
