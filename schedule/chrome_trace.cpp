#include "schedule/chrome_trace.h"

#include <cstdio>

#include <nlohmann/json.hpp>

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

std::string renderChromeTrace(const std::vector<SimulatedSchedule>& runs) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char buffer[256];
  for (std::size_t pid = 0; pid < runs.size(); ++pid) {
    const Schedule& schedule = *runs[pid].schedule;
    const SimulationResult& result = *runs[pid].result;
    const int process = static_cast<int>(pid);
    appendMetadata(&out, "process_name", process, 0, schedule.name);
    for (int rank = 0; rank < schedule.stages; ++rank) {
      appendMetadata(&out, "thread_name", process, rank, "rank " + std::to_string(rank));
      const RankOps& ops = schedule.ranks[rank];
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const PipelineOp& op = ops[i];
        const OpTiming& timing = result.op_times[rank][i];
        // Trace timestamps are microseconds.
        std::snprintf(buffer, sizeof buffer,
                      "{\"ph\":\"X\",\"name\":\"%s%d\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,"
                      "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"microbatch\":%d,\"chunk\":%d,"
                      "\"model_stage\":%d}},\n",
                      opKindLetter(op.kind),
                      op.kind == OpKind::kAllReduce ? op.chunk : op.microbatch,
                      categoryOf(op.kind), process, rank,
                      timing.start_ms * 1000.0, (timing.end_ms - timing.start_ms) * 1000.0,
                      op.microbatch, op.chunk, schedule.modelStage(rank, op.chunk));
        out += buffer;
        if (runs[pid].memory_bytes && static_cast<std::size_t>(rank) < runs[pid].memory_bytes->size() &&
            i < (*runs[pid].memory_bytes)[static_cast<std::size_t>(rank)].size()) {
          std::snprintf(buffer, sizeof buffer,
                        "{\"ph\":\"C\",\"name\":\"memory rank %d\",\"pid\":%d,\"ts\":%.3f,"
                        "\"args\":{\"MiB\":%.3f}},\n",
                        rank, process, timing.start_ms * 1000.0,
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
