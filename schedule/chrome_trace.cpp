#include "schedule/chrome_trace.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace stagecut {

namespace {

// Events are written by hand rather than through nlohmann::json: a 500,000-op trace then takes
// a few hundred ms instead of seconds. Only names can hold characters JSON must escape.
void appendMetadata(std::string* out, const char* what, int pid, int tid, const std::string& name) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer,
                "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"", what,
                pid, tid);
  *out += buffer;
  const std::string quoted = nlohmann::json(name).dump();
  *out += quoted.substr(1, quoted.size() - 2) + "\"}},\n";
}

// Microseconds as a JSON number: three decimals, or an exponent past 1e15 us (31 years), where
// "%.3f" would print up to 300 digits and overrun the event's buffer (a cut, invalid trace).
std::string traceMicroseconds(double us) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, std::fabs(us) < 1e15 ? "%.3f" : "%.6e", us);
  return buffer;
}

const char* categoryOf(OpKind kind) {
  switch (kind) {
    case OpKind::kForward:
      return "forward";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kWeight:
      return "weight";
    case OpKind::kAllReduce:
      return "allreduce";
  }
  return "op";
}

}  // namespace

void requireChromeTraceFits(std::size_t ops, const std::string& what, const std::string& fix) {
  if (ops <= kMaxChromeTraceOps) return;
  throw Error(what + ": the trace would hold " + std::to_string(ops) + " ops, over the " +
              std::to_string(kMaxChromeTraceOps) + " one trace holds (one event each, about 140 MB); " + fix);
}

std::string renderChromeTrace(const std::vector<SimulatedSchedule>& runs) {
  std::size_t op_count = 0;
  for (const SimulatedSchedule& run : runs) op_count += run.schedule->opCount();
  requireChromeTraceFits(op_count, "Chrome trace", "trace fewer microbatches or schedules");
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char buffer[320];
  for (std::size_t pid = 0; pid < runs.size(); ++pid) {
    const Schedule& schedule = *runs[pid].schedule;
    const SimulationResult& result = *runs[pid].result;
    const int process = static_cast<int>(pid);
    appendMetadata(&out, "process_name", process, 0, schedule.name);
    for (int rank = 0; rank < schedule.placement.ranks; ++rank) {
      appendMetadata(&out, "thread_name", process, rank, "rank " + std::to_string(rank));
      const RankOps& ops = schedule.ranks[rank];
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const PipelineOp& op = ops[i];
        const OpTiming& timing = result.op_times[rank][i];
        // Trace timestamps are microseconds.
        std::snprintf(buffer, sizeof buffer,
                      "{\"ph\":\"X\",\"name\":\"%s%d\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,"
                      "\"ts\":%s,\"dur\":%s,\"args\":{\"microbatch\":%d,\"chunk\":%d,"
                      "\"model_stage\":%d}},\n",
                      opKindLetter(op.kind),
                      op.kind == OpKind::kAllReduce ? op.chunk : op.microbatch,
                      categoryOf(op.kind), process, rank, traceMicroseconds(timing.start_ms * 1000.0).c_str(),
                      traceMicroseconds((timing.end_ms - timing.start_ms) * 1000.0).c_str(),
                      op.microbatch, op.chunk, schedule.placement.chunkAt(rank, op.chunk));
        out += buffer;
        if (runs[pid].memory_bytes && static_cast<std::size_t>(rank) < runs[pid].memory_bytes->size() &&
            i < (*runs[pid].memory_bytes)[static_cast<std::size_t>(rank)].size()) {
          std::snprintf(buffer, sizeof buffer,
                        "{\"ph\":\"C\",\"name\":\"memory rank %d\",\"pid\":%d,\"ts\":%s,"
                        "\"args\":{\"MiB\":%.3f}},\n",
                        rank, process, traceMicroseconds(timing.start_ms * 1000.0).c_str(),
                        (*runs[pid].memory_bytes)[static_cast<std::size_t>(rank)][i] / (1024.0 * 1024.0));
          out += buffer;
        }
      }
    }
  }
  if (out.size() >= 2 && out[out.size() - 2] == ',') out.erase(out.size() - 2, 1);
  out += "]}\n";
  return out;
}

}  // namespace stagecut
