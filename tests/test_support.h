#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/partition.h"
#include "core/profile.h"

#include <nlohmann/json.hpp>

namespace stagecut::testing {

/// The sample profile of a GPT that most CLI and prediction tests run on.
inline const std::string kExampleGptProfile = std::string(STAGECUT_SOURCE_DIR) + "/data/samples/example-gpt.profile.json";

/// profile flags that time each layer once, for tests that check what profile writes, not its times.
inline const std::string kQuickProfileFlags = " --warmup 0 --min-repeats 1 --max-repeats 1";

/// A valid profile of `layers` layers with distinct, made-up costs (tests only).
Profile makeProfile(int layers);

/// makeProfile(blocks + 3) named and kinded as Megatron reads a GPT: embed (Embedding), block.0 ..
/// (TransformerBlock), head (LMHead), loss (CrossEntropyLoss): its E, t and L (tests only).
Profile makeGptChain(int blocks);

/// makeProfile(layers) measured at `sizes` (ascending): `cost_at(layer, size)` sets each layer's
/// costs at each size; `layers` holds the largest size (format 2, tests only).
Profile makeSizedProfile(int layers, const std::vector<int>& sizes,
                         const std::function<void(LayerCost& layer, int size)>& cost_at);

/// A valid partition of `layers` layers into stages of the given sizes (tests only).
Partition makePartition(const std::vector<int>& layers_per_stage);

/// The message of the stagecut::Error that `run` throws, CHECKing that it is bad input (exit
/// code 2); "" when it throws none.
std::string inputErrorOf(const std::function<void()>& run);

/// inputErrorOf(profileFromJson(document, "p.json")), CHECKing that the message is one line.
std::string profileRejection(const nlohmann::json& document);

/// The golden check's expected documents (tests/golden/<profile>/<NAME>.json) whose NAME starts
/// with `prefix` ("simulate-"), sorted: what stagecut printed, for readers to read back.
std::vector<std::string> goldenDocuments(const std::string& prefix);

class TempDir;

/// Profiles a 2-block gpt-tiny in one round at 2 rows (dir/p.json) and partitions it into 2
/// stages for 4 microbatches (dir/s.json), with the stagecut binary: a split validate can run.
void writeTinyGptSplit(const TempDir& dir);

/// A fresh empty folder under the system temp folder, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  void write(const std::string& name, const std::string& content) const;
  /// Names of the files in the folder, sorted.
  std::vector<std::string> list() const;

 private:
  std::string path_;
};

/// What a run of the stagecut binary printed and returned.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `binary` with `args` (already shell-quoted where needed), with `environment`
/// ("NAME=value ...") added to its environment, and captures its stdout, stderr and exit code.
CommandResult runProgram(const std::string& binary, const std::string& args, const std::string& environment = "");

/// Runs the built stagecut binary with `args` (already shell-quoted where needed), with
/// `environment` ("NAME=value ...") added to its environment.
CommandResult runStagecut(const std::string& args, const std::string& environment = "");

/// Runs the built stagecut binary with `args`, its stdout sent where the shell redirection
/// `stdout_redirect` says (">/dev/full", ">&-") instead of captured: `out` stays empty.
CommandResult runStagecutWithStdout(const std::string& args, const std::string& stdout_redirect);

/// The contract for bad input: exit code 2, nothing on stdout, and exactly the one line
/// "stagecut: <message>" on stderr.
void checkInputError(const CommandResult& result, const std::string& message);

}  // namespace stagecut::testing
