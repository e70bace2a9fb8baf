#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/profile_json.h"
#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/partition_json.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::checkInputError;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;
using Catch::Matchers::Contains;

using stagecut::testing::kExampleGptProfile;

namespace {

const std::string kGraph = std::string(STAGECUT_SOURCE_DIR) + "/data/pipedream/residual-block.graph.txt";

CommandResult partition(const std::string& args) { return runStagecut("partition '" + kExampleGptProfile + "' " + args); }

}  // namespace

TEST_CASE("partition rejects stage counts with the fix, exit 2", "[cli][partition][errors]") {
  checkInputError(partition("--stages 12"), "--stages 12: the profile has 11 layers; use --stages 11 or fewer");
  checkInputError(partition("--stages 0"), "--stages 0: use 1 to 4194304 stages");
  checkInputError(partition("--stages -2"), "--stages -2: use 1 to 4194304 stages");
  checkInputError(partition("--stages 4 --microbatches 0"), "--microbatches 0: use 1 to 4194304 microbatches per step");
}

TEST_CASE("partition names the stage a memory cap cannot serve, and by how much", "[cli][partition][errors]") {
  checkInputError(partition("--stages 4 --memory-cap 1MiB"),
                  "--memory-cap: stage 0 cannot hold even one layer: the smallest it could take, "
                  "layer 1, needs 33.1 MiB, 32.1 MiB over its cap of 1.00 MiB; raise the cap, use "
                  "--recompute full or a smaller microbatch");
  checkInputError(partition("--stages 4 --memory-cap 120MiB"),
                  "--memory-cap: no split into 4 stages fits; the closest puts layers 9-10 on stage "
                  "3, 133 MiB, 12.5 MiB over its cap of 120 MiB; raise the cap, use more stages, "
                  "--recompute auto or a smaller microbatch");
  checkInputError(partition("--stages 4 --memory-cap 80GB,80GB"),
                  "--memory-cap 80GB,80GB: 2 caps for 4 stages; give one for all stages or one per stage");
}

TEST_CASE("partition rejects bad speeds, units and names with the accepted forms", "[cli][partition][errors]") {
  checkInputError(partition("--stages 4 --stage-speed 1,1,0.5"),
                  "--stage-speed 1,1,0.5: 3 values for 4 stages; give one per stage, e.g. --stage-speed 1,1,1,1");
  checkInputError(partition("--stages 4 --stage-speed 1,x,1,1"),
                  "--stage-speed 1,x,1,1: \"x\" is not a speed > 0; use relative speeds, one per stage, e.g. 1,1,0.5,1");
  checkInputError(partition("--stages 4 --memory-cap '80 gigs'"),
                  "--memory-cap \"80 gigs\": not a memory size; use a number with B, KB, MB, GB, TB, "
                  "KiB, MiB, GiB or TiB, e.g. 80GiB");
  checkInputError(partition("--stages 4 --bandwidth 25Gb"),
                  "--bandwidth \"25Gb\": not a bandwidth; use bytes per second with B/s, KB/s, MB/s, "
                  "GB/s, TB/s, KiB/s, MiB/s or GiB/s, e.g. 25GB/s");
  checkInputError(partition("--stages 4 --latency 10sec"),
                  "--latency \"10sec\": not a duration; use a number with ns, us, ms or s, e.g. 10us");
  checkInputError(partition("--stages 4 --format megatorn"), "--format: unknown format 'megatorn', did you mean 'megatron'?");
  checkInputError(partition("--stages 4 --optimizer adamw"), "--optimizer: unknown optimizer 'adamw', did you mean 'adam'?");
  checkInputError(partition("--stages 4 --schedule 1f1"), "--schedule: unknown schedule '1f1', did you mean '1f1b'?");
}

TEST_CASE("partition accepts the documented unit forms", "[cli][partition]") {
  const CommandResult result =
      partition("--stages 4 --memory-cap 80GiB --bandwidth 25GB/s --latency 10us");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("communication charged per stage boundary, both directions: 25GB/s, 10us latency per message"));
  CHECK(partition("--stages 4 --memory-cap 80GB").exit_code == 0);
}

TEST_CASE("partition rejects a profile whose layers all take 0 ms", "[cli][partition][errors]") {
  const TempDir dir;
  nlohmann::json document = nlohmann::json::parse(stagecut::readTextFile(kExampleGptProfile));
  for (auto& layer : document["layers"]) {
    layer["forward_ms"] = 0.0;
    layer["backward_ms"] = 0.0;
    layer.erase("backward_input_ms");
    layer.erase("backward_weight_ms");
  }
  dir.write("zero.profile.json", document.dump());
  const CommandResult result = runStagecut("partition '" + dir.file("zero.profile.json") + "' --stages 2");
  checkInputError(result, dir.file("zero.profile.json") + ": all 11 layers take 0 ms; there is no time "
                  "to balance; measure the model with 'stagecut profile' or fix the imported times");
}

TEST_CASE("partition prints the table, says that no communication is modelled, and the list", "[cli][partition]") {
  const CommandResult result = partition("--stages 4 --microbatches 8");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("no communication cost modelled"));
  CHECK_THAT(result.out, Contains("bottleneck 18.30 ms (lower bound 16.95 ms), predicted step 195.9 ms, bubble 30.8%"));
  CHECK_THAT(result.out, Contains("list:\n  3,3,3,2\n"));
}

TEST_CASE("partition prints each framework's format", "[cli][partition][formats]") {
  CHECK_THAT(partition("--stages 4 --microbatches 8 --format megatron").out,
             Contains("megatron:\n  --pipeline-model-parallel-layout \"Ett|ttt|ttt|L\"\n"));
  const CommandResult first_last = partition("--stages 4 --microbatches 8 --format megatron --megatron-first-last");
  // Two alternatives, "or" between them: Megatron refuses the layout and the flags together.
  CHECK_THAT(first_last.out, Contains("--pipeline-model-parallel-layout \"Ettt|tt|tt|tL\"\n  or\n"
                                      "  --num-layers 8 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 3 "
                                      "--decoder-last-pipeline-num-layers 1\n"));
  CHECK_THAT(first_last.out, Contains("restricted to Megatron's flags: bottleneck +32.2%, step +21.1% against the best layout"));
  // The Sequential, PipelineModule and model parts end before the loss, their loss function.
  CHECK_THAT(partition("--stages 4 --format torchgpipe").out, Contains("torchgpipe:\n  balance=[3, 3, 3, 1]\n"));
  CHECK_THAT(partition("--stages 4 --format fairscale").out, Contains("fairscale:\n  balance=[3, 3, 3, 1]\n"));
  CHECK_THAT(partition("--stages 4 --format deepspeed").out,
             Contains("deepspeed:\n  parts=[0, 3, 6, 9, 10]\n  stage=0 layers=3\n       0: Embedding\n"
                      "       1: TransformerBlock\n       2: TransformerBlock\n  stage=1 layers=3\n"));
  CHECK_THAT(partition("--stages 4 --format deepspeed").out, Contains("       9: LMHead\n    loss: CrossEntropyLoss\n"));
  CHECK_THAT(partition("--stages 4 --format pippy").out,
             Contains("split_spec={\"block.2\": SplitPoint.BEGINNING, \"block.5\": SplitPoint.BEGINNING, "
                      "\"head\": SplitPoint.BEGINNING}"));
  CHECK_THAT(partition("--stages 2 --format torchtitan").out,
             Contains("module_fqns_per_model_part=[[\"embed\", \"block.0\", \"block.1\", \"block.2\", "
                      "\"block.3\", \"block.4\"], [\"block.5\", \"block.6\", \"block.7\", \"head\"]]"));
}

TEST_CASE("a given split a framework cannot run is told once, with the way to its best split", "[cli][partition][formats]") {
  const CommandResult result = partition("--split 1,9,1 --format deepspeed");
  CHECK(result.exit_code == 0);
  const std::string rule = "stage 2 holds only the loss";
  CHECK_THAT(result.out, Contains("  your split: " + rule));
  CHECK(result.out.find(rule) == result.out.rfind(rule));
  CHECK_THAT(result.out, Contains("deepspeed: cannot express your split (the rule above); partition with --format "
                                  "deepspeed for the best split it can run\n"));
}

TEST_CASE("partition --json prints a stagecut.partition/1 document and -o writes it", "[cli][partition]") {
  const TempDir dir;
  const CommandResult result = partition("--stages 4 --microbatches 8 --json -o '" + dir.file("p.json") + "'");
  REQUIRE(result.exit_code == 0);
  const nlohmann::json document = nlohmann::json::parse(result.out);
  CHECK(document["format"] == "stagecut.partition/1");
  CHECK(document["method"] == "compute");
  CHECK(document["stages"].size() == 4);
  CHECK(document["outputs"]["list"] == "3,3,3,2");
  CHECK(document["predicted_step_ms"].get<double>() == Approx(195.9));
  CHECK(nlohmann::json::parse(stagecut::readTextFile(dir.file("p.json"))) == document);
  CHECK(dir.list() == std::vector<std::string>{"p.json"});
  // The file reads back through inspect.
  CHECK(runStagecut("inspect '" + dir.file("p.json") + "'").exit_code == 0);
}

TEST_CASE("compare prints the baselines beside the optimum with the slowdown", "[cli][compare]") {
  const CommandResult result = runStagecut("compare '" + kExampleGptProfile + "' --stages 4 --microbatches 8");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("no communication cost modelled"));
  // uniform as DeepSpeed's partition_method="uniform" does it: 10 layers, then its loss_fn.
  CHECK_THAT(result.out, Contains("  layers per stage        3,3,2,3   1,4,4,2   3,3,3,2\n"));
  CHECK_THAT(result.out, Contains("  bottleneck vs compute    +32.2%    +33.3%      0.0%\n"));
  CHECK_THAT(result.out, Contains("  lower bound ms            16.95     16.95     16.95\n"));
  // Each schedule with its own best split, the chunked ones among them.
  CHECK_THAT(result.out, Contains("Each schedule with its own best split"));
  for (const char* row : {"  1f1b              1", "  zb-h1             1", "  interleaved-1f1b  2", "  zb-v              2",
                          "  dualpipe-v        2"}) {
    CHECK_THAT(result.out, Contains(row));
  }
  CHECK_THAT(result.out, Contains("left out: interleaved-1f1b (v = 3): 12 chunks need more layers than the profile's 11"));
}

TEST_CASE("compare --json prints a stagecut.comparison/1 document", "[cli][compare]") {
  const CommandResult result = runStagecut("compare '" + kExampleGptProfile + "' --stages 3 --json");
  REQUIRE(result.exit_code == 0);
  const nlohmann::json document = nlohmann::json::parse(result.out);
  CHECK(document["format"] == "stagecut.comparison/1");
  REQUIRE(document["splits"].size() == 3);
  CHECK(document["splits"][0]["method"] == "uniform");
  CHECK(document["splits"][1]["method"] == "params");
  CHECK(document["splits"][2]["method"] == "compute");
  CHECK(document["splits"][0]["format"] == "stagecut.partition/1");
  // Each schedule on its own best split, as the text's last table: the split that
  // `partition --schedule S [--chunks v]` writes, its simulated step, or why it is left out.
  const auto& schedules = document["schedules"];
  REQUIRE(schedules.size() == 7u);
  CHECK(schedules[0]["schedule"] == "1f1b");
  CHECK(schedules[5]["schedule"] == "zb-v");
  CHECK(schedules[5]["split"]["placement"]["style"] == "v");
  CHECK(schedules[5]["split"]["outputs"]["torchtitan"].get<std::string>().find("ZBVZeroBubble") != std::string::npos);
  CHECK(schedules[6]["schedule"] == "dualpipe-v");
  CHECK(schedules[6]["split"]["outputs"]["torchtitan"].get<std::string>().find("\"DualPipeV\"") != std::string::npos);
  CHECK(schedules[4]["left_out"].get<std::string>().find("more layers than the profile's 11") != std::string::npos);
  const CommandResult zbv = runStagecut("partition '" + kExampleGptProfile + "' --stages 3 --schedule zb-v --json");
  REQUIRE(zbv.exit_code == 0);
  const nlohmann::json alone = nlohmann::json::parse(zbv.out);
  CHECK(schedules[5]["split"]["stages"] == alone["stages"]);
  CHECK(schedules[5]["split"]["bottleneck_ms"] == alone["bottleneck_ms"]);
  for (const auto& entry : schedules) {
    if (!entry.contains("split")) continue;
    CHECK(entry["step_ms"].get<double>() >= entry["split"]["bottleneck_ms"].get<double>() * 12);
    CHECK(entry["bubble"].get<double>() > 0);
  }
  // The document reads back (report --comparison takes it).
  CHECK(stagecut::comparisonFromJson(document, "c.json").schedules.size() == 7u);
}

TEST_CASE("import pipedream writes a profile and says which Input nodes it dropped", "[cli][import]") {
  const TempDir dir;
  const CommandResult result = runStagecut("import pipedream '" + kGraph + "' -o '" + dir.file("r.json") + "'");
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("7 layers in topological order; dropped 1 Input node (data loading, "
                                  "not compute, as PipeDream's optimizer does): node1 (Input0, 0.750 ms)"));
  const nlohmann::json profile = nlohmann::json::parse(stagecut::readTextFile(dir.file("r.json")));
  CHECK(profile["format"] == "stagecut.profile/1");
  CHECK(profile["layers"].size() == 7);
  CHECK(runStagecut("partition '" + dir.file("r.json") + "' --stages 3").exit_code == 0);
}

TEST_CASE("import rejects an unknown tool and a malformed graph with exit 2", "[cli][import][errors]") {
  const TempDir dir;
  checkInputError(runStagecut("import pipedrem '" + kGraph + "' -o '" + dir.file("x.json") + "'"),
                  "import: unknown tool 'pipedrem', did you mean 'pipedream'?");
  dir.write("bad.txt", "node1 -- Conv2d -- forward_compute_time=abc, backward_compute_time=1, "
                       "activation_size=1, parameter_size=1\n");
  checkInputError(runStagecut("import pipedream '" + dir.file("bad.txt") + "' -o '" + dir.file("x.json") + "'"),
                  dir.file("bad.txt") + ":1: forward_compute_time=abc is not a decimal number >= 0 (digits, a point, an exponent)");
  CHECK(dir.list() == std::vector<std::string>{"bad.txt"});
}

TEST_CASE("partition --simulate reports the simulated step of the optimal-bottleneck splits", "[cli][partition][simulate]") {
  const CommandResult result = partition("--stages 4 --microbatches 8 --simulate");
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Contains("  simulated 1f1b step 195.7 ms (the solver's first choice: 195.7 ms), "
                                  "best of 1 splits with the optimal bottleneck\n"));
}

TEST_CASE("recomputation saves nothing on a stage that keeps one microbatch", "[cli][partition][recompute]") {
  const stagecut::testing::TempDir dir;
  // One layer per stage under 1F1B: stage s keeps 4 - s microbatches. Checkpointed, each keeps
  // only its input, and B builds one microbatch's activations again: the last stage, which
  // keeps one, holds as much at its peak as without recomputation; the first saves 3 of 4.
  stagecut::writeProfileFile(dir.file("p.json"), stagecut::testing::makeProfile(4));
  const auto result = stagecut::testing::runStagecut("partition " + dir.file("p.json") +
                                                     " --stages 4 --microbatches 4 --recompute full --json");
  REQUIRE(result.exit_code == 0);
  const auto document = nlohmann::json::parse(result.out);
  const auto plain = nlohmann::json::parse(
      stagecut::testing::runStagecut("partition " + dir.file("p.json") + " --stages 4 --microbatches 4 --json").out);
  const auto& stages = document["stages"];
  CHECK(stages[3]["memory_bytes"] == plain["stages"][3]["memory_bytes"]);
  CHECK(stages[0]["memory_bytes"].get<double>() < plain["stages"][0]["memory_bytes"].get<double>());
  CHECK_THAT(stagecut::testing::runStagecut("partition " + dir.file("p.json") +
                                            " --stages 4 --microbatches 4 --recompute full").out,
             Catch::Matchers::Contains("  3  full             79.2 KiB     79.2 KiB       0 B"));
}

// ---- Outputs never lose data (issue #21, item 2). Inputs are copies: a regression would
// overwrite them, not the repository's samples. ----

namespace {

// `dir`/name holding `source`'s bytes.
std::string copyInto(const TempDir& dir, const std::string& source, const std::string& name) {
  dir.write(name, stagecut::readTextFile(source));
  return dir.file(name);
}

}  // namespace

TEST_CASE("partition -o onto its own profile is refused in one line and the profile kept byte for byte",
          "[cli][partition][output][errors]") {
  const TempDir dir;
  const std::string profile = copyInto(dir, kExampleGptProfile, "a.json");
  const std::string before = stagecut::readTextFile(profile);
  checkInputError(runStagecut("partition '" + profile + "' --stages 2 -o '" + profile + "'"),
                  "-o " + profile + ": that is the input profile " + profile + "; write to another file");
  CHECK(stagecut::readTextFile(profile) == before);
  CHECK(dir.list() == std::vector<std::string>{"a.json"});
}

TEST_CASE("compare -o through a symlink or a hard link to its profile is refused and the profile kept",
          "[cli][compare][output][errors]") {
  const TempDir dir;
  const std::string profile = copyInto(dir, kExampleGptProfile, "a.json");
  const std::string before = stagecut::readTextFile(profile);
  REQUIRE(::symlink("a.json", dir.file("link.json").c_str()) == 0);
  REQUIRE(::link(profile.c_str(), dir.file("hard.json").c_str()) == 0);
  for (const char* name : {"link.json", "hard.json"}) {
    checkInputError(runStagecut("compare '" + profile + "' --stages 2 -o '" + dir.file(name) + "'"),
                    "-o " + dir.file(name) + ": that is the input profile " + profile + "; write to another file");
  }
  CHECK(stagecut::readTextFile(profile) == before);
  CHECK(dir.list() == std::vector<std::string>{"a.json", "hard.json", "link.json"});
}

TEST_CASE("import -o onto its PipeDream graph is refused and the graph kept byte for byte",
          "[cli][import][output][errors]") {
  const TempDir dir;
  const std::string graph = copyInto(dir, kGraph, "g.txt");
  const std::string before = stagecut::readTextFile(graph);
  checkInputError(runStagecut("import pipedream '" + graph + "' -o '" + graph + "'"),
                  "-o " + graph + ": that is the PipeDream graph " + graph + "; write to another file");
  CHECK(stagecut::readTextFile(graph) == before);
  CHECK(dir.list() == std::vector<std::string>{"g.txt"});
}

TEST_CASE("partition, compare and import -o '' are refused in one line, exit 2", "[cli][output][errors]") {
  const TempDir dir;
  const std::string message = "-o '': the file name is empty; name the file to write";
  checkInputError(partition("--stages 2 -o ''"), message);
  checkInputError(runStagecut("compare '" + kExampleGptProfile + "' --stages 2 -o ''"), message);
  checkInputError(runStagecut("import pipedream '" + kGraph + "' -o ''"), message);
}

TEST_CASE("partition -o writes through a symlink, a link to standard output and a private /dev/full",
          "[cli][partition][output]") {
  const TempDir dir;
  dir.write("target.json", "old");
  REQUIRE(::symlink("target.json", dir.file("link.json").c_str()) == 0);
  REQUIRE(partition("--stages 2 -o '" + dir.file("link.json") + "'").exit_code == 0);
  struct stat info {};
  REQUIRE(::lstat(dir.file("link.json").c_str(), &info) == 0);
  CHECK(S_ISLNK(info.st_mode));
  CHECK(nlohmann::json::parse(stagecut::readTextFile(dir.file("target.json")))["format"] == "stagecut.partition/1");
  CHECK(dir.list() == std::vector<std::string>{"link.json", "target.json"});

  // Standard output by a link of /dev/stdout's shape, not /dev/stdout itself: as root, a
  // regression would replace the system's /dev/stdout with a regular file.
  REQUIRE(::symlink("/proc/self/fd/1", dir.file("stdout").c_str()) == 0);
  const CommandResult to_stdout = partition("--stages 2 --format json -o '" + dir.file("stdout") + "'");
  CHECK(to_stdout.exit_code == 0);
  CHECK(to_stdout.err.empty());
  const nlohmann::json document = nlohmann::json::parse(stagecut::readTextFile(dir.file("target.json")));
  CHECK(to_stdout.out == stagecut::toJsonText(document) + stagecut::toJsonText(document));

  if (::mknod(dir.file("full").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    WARN("cannot make a device node here (needs root); -o onto a private /dev/full not tested");
    return;
  }
  const CommandResult full = partition("--stages 2 -o '" + dir.file("full") + "'");
  CHECK(full.exit_code == 1);
  CHECK(full.out.empty());
  CHECK(full.err == "stagecut: cannot write " + dir.file("full") +
                        " (No space left on device); free some space or write to another disk\n");
  REQUIRE(::lstat(dir.file("full").c_str(), &info) == 0);
  CHECK(S_ISCHR(info.st_mode));
}

TEST_CASE("partition --chunks places N x v chunks on the ranks and prints the virtual pipeline",
          "[cli][partition][chunks]") {
  const CommandResult megatron =
      partition("--stages 2 --schedule interleaved-1f1b --chunks 2 --microbatches 4 --format megatron");
  REQUIRE(megatron.exit_code == 0);
  CHECK_THAT(megatron.out, Contains("2 ranks x 2 chunks, chunk c on rank c mod 2"));
  CHECK_THAT(megatron.out, Contains("exact: the search over every chunking ended"));
  // The layout has one stage per chunk, the embedding first and L last, and names N.
  const std::string flag = "--pipeline-model-parallel-layout \"";
  const std::size_t start = megatron.out.find(flag);
  REQUIRE(start != std::string::npos);
  const std::string layout = megatron.out.substr(start + flag.size(), megatron.out.find('"', start + flag.size()) - start - flag.size());
  CHECK(std::count(layout.begin(), layout.end(), '|') == 3);
  CHECK(layout.front() == 'E');
  CHECK(layout.back() == 'L');
  CHECK_THAT(megatron.out, Contains("\" --pipeline-model-parallel-size 2"));

  const CommandResult json = partition("--stages 2 --schedule interleaved-1f1b --chunks 2 --microbatches 4 --json");
  REQUIRE(json.exit_code == 0);
  const nlohmann::json document = nlohmann::json::parse(json.out);
  CHECK(document["placement"] == nlohmann::json({{"ranks", 2}, {"chunks_per_rank", 2}, {"style", "loop"}}));
  CHECK(document["stages"].size() == 4);
  CHECK_THAT(document["outputs"]["torchtitan"].get<std::string>(), Contains("pipeline_parallel_schedule=\"Interleaved1F1B\""));
  CHECK(document["outputs"].count("deepspeed") == 0);
  // Rank 0's load is its two chunks'.
  const double rank0 = document["stages"][0]["cost_ms"].get<double>() + document["stages"][2]["cost_ms"].get<double>();
  const double rank1 = document["stages"][1]["cost_ms"].get<double>() + document["stages"][3]["cost_ms"].get<double>();
  CHECK(document["bottleneck_ms"].get<double>() == Approx(std::max(rank0, rank1)));

  checkInputError(partition("--stages 2 --schedule interleaved-1f1b --chunks 2 --microbatches 4 --format deepspeed"),
                  "deepspeed: DeepSpeed's PipelineModule runs one stage per rank, not 2 chunks; use --format megatron, "
                  "torchtitan or pippy");
  checkInputError(partition("--stages 2 --chunks 3 --microbatches 4"),
                  "--chunks 3: 1f1b runs one model chunk per rank; add --schedule interleaved-1f1b");
  checkInputError(partition("--stages 4 --schedule interleaved-1f1b --chunks 3 --microbatches 4"),
                  "--chunks 3: 4 ranks x 3 chunks need 12 layers, the profile has 11; use fewer --chunks");
}

TEST_CASE("partition --schedule zb-v places 2 chunks per rank in a V for torchtitan and PiPPy, not Megatron",
          "[cli][partition][chunks]") {
  TempDir dir;
  const std::string path = dir.path() + "/v.json";
  const CommandResult text =
      partition("--stages 2 --schedule zb-v --microbatches 8 --format torchtitan -o '" + path + "'");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("2 ranks x 2 chunks in a V, rank r holding chunks r and 3 - r (the turn stays on rank 1)"));
  CHECK_THAT(text.out, Contains("pipeline_parallel_schedule=\"ZBVZeroBubble\""));
  const nlohmann::json document = nlohmann::json::parse(stagecut::readTextFile(path));
  CHECK(document["placement"] == nlohmann::json({{"ranks", 2}, {"chunks_per_rank", 2}, {"style", "v"}}));
  REQUIRE(document["stages"].size() == 4);
  CHECK_THAT(document["outputs"]["pippy"].get<std::string>(), Contains("schedule=ScheduleZBVZeroBubble"));
  CHECK(document["outputs"].count("megatron") == 0);
  // Rank 0 holds the first and the last chunk, rank 1 the two around the turn.
  const auto cost = [&](int c) { return document["stages"][c]["cost_ms"].get<double>(); };
  CHECK(document["bottleneck_ms"].get<double>() == Approx(std::max(cost(0) + cost(3), cost(1) + cost(2))));
  // The turn from chunk 1 to chunk 2 stays on rank 1: with a link, only the other two boundaries are charged.
  const nlohmann::json linked = nlohmann::json::parse(
      partition("--stages 2 --schedule zb-v --microbatches 8 --bandwidth 1GB/s --latency 1ms --json").out);
  CHECK(linked["stages"][1]["comm_ms"].get<double>() > 0);
  CHECK(linked["stages"][1]["comm_ms"].get<double>() < linked["stages"][0]["comm_ms"].get<double>() +
                                                          linked["stages"][3]["comm_ms"].get<double>() + 1e-9);

  const CommandResult simulated = runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + path +
                                              "' --schedule all --microbatches 8 --json");
  REQUIRE(simulated.exit_code == 0);
  const nlohmann::json figures = nlohmann::json::parse(simulated.out);
  // Both V schedules run the V's split; interleaved 1F1B's loop order cannot.
  REQUIRE(figures["schedules"].size() == 2);
  CHECK(figures["schedules"][0]["schedule"] == "zb-v");
  CHECK(figures["schedules"][1]["schedule"] == "dualpipe-v");
  CHECK(document["predicted_step_ms"].get<double>() ==
        Approx(figures["schedules"][0]["step_time"].get<double>()).epsilon(1e-6));
  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + path +
                              "' --schedule interleaved-1f1b --microbatches 8"),
                  path + ": the split places 2 chunks on each rank in a V; interleaved-1f1b runs its chunks in loop "
                         "order; use --schedule zb-v or dualpipe-v");
  checkInputError(partition("--stages 2 --schedule zb-v --format megatron"),
                  "--format megatron: Megatron-LM runs no V-shaped schedule (zb-v); use --format torchtitan or pippy");
  checkInputError(partition("--stages 2 --schedule zb-v --format deepspeed"),
                  "deepspeed: DeepSpeed's PipelineModule runs one stage per rank, not 2 chunks; use --format "
                  "torchtitan or pippy");
  checkInputError(partition("--stages 2 --schedule zb-v --chunks 3"),
                  "--chunks 3: zb-v runs 2 model chunks per rank (a V); leave --chunks out");
}

TEST_CASE("partition --schedule dualpipe-v cuts zb-v's V, named DualPipeV for torchtitan and PiPPy, for M >= 2N",
          "[cli][partition][chunks]") {
  TempDir dir;
  const std::string path = dir.path() + "/dualpipe.json";
  const CommandResult text =
      partition("--stages 2 --schedule dualpipe-v --microbatches 8 --format torchtitan -o '" + path + "'");
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("2 ranks x 2 chunks in a V"));
  CHECK_THAT(text.out, Contains("pipeline_parallel_schedule=\"DualPipeV\""));
  const nlohmann::json document = nlohmann::json::parse(stagecut::readTextFile(path));
  CHECK(document["placement"] == nlohmann::json({{"ranks", 2}, {"chunks_per_rank", 2}, {"style", "v"}}));
  CHECK_THAT(document["outputs"]["pippy"].get<std::string>(), Contains("schedule=ScheduleDualPipeV, 2 stages per rank"));
  CHECK(document["outputs"].count("megatron") == 0);
  // The same V as zb-v's: the slowest rank is the same; the step is DualPipeV's own simulation.
  const nlohmann::json zbv = nlohmann::json::parse(partition("--stages 2 --schedule zb-v --microbatches 8 --json").out);
  CHECK(document["bottleneck_ms"].get<double>() == Approx(zbv["bottleneck_ms"].get<double>()));
  const nlohmann::json simulated = nlohmann::json::parse(
      runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + path + "' --schedule dualpipe-v --microbatches 8 --json").out);
  CHECK(document["predicted_step_ms"].get<double>() ==
        Approx(simulated["schedules"][0]["step_time"].get<double>()).epsilon(1e-6));
  checkInputError(partition("--stages 3 --schedule dualpipe-v --microbatches 5"),
                  "--microbatches 5: dualpipe-v needs at least 2N = 6 microbatches on 3 stages (DualPipeV fills both "
                  "arms of the V before its steady state); use --microbatches 6 or more, or zb-v");
  checkInputError(partition("--stages 2 --schedule dualpipe-v --format megatron"),
                  "--format megatron: Megatron-LM runs no V-shaped schedule (dualpipe-v); use --format torchtitan or pippy");
}

TEST_CASE("a chunked partition file is read back and simulated on its own chunks", "[cli][partition][chunks]") {
  TempDir dir;
  const std::string path = dir.path() + "/chunked.json";
  REQUIRE(partition("--stages 2 --schedule interleaved-1f1b --chunks 2 --microbatches 4 -o '" + path + "'").exit_code == 0);
  const nlohmann::json written = nlohmann::json::parse(stagecut::readTextFile(path));
  const CommandResult simulated =
      runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + path +
                  "' --schedule interleaved-1f1b --microbatches 4 --json");
  REQUIRE(simulated.exit_code == 0);
  const nlohmann::json figures = nlohmann::json::parse(simulated.out);
  CHECK(figures.dump().find("\"chunks\":2") != std::string::npos);
  CHECK(written["predicted_step_ms"].get<double>() ==
        Approx(figures["schedules"][0]["step_time"].get<double>()).epsilon(1e-6));
  const CommandResult all = runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + path +
                                        "' --schedule all --microbatches 4");
  REQUIRE(all.exit_code == 0);
  CHECK_THAT(all.out, Contains("zb-h1 skipped: the partition places 2 chunks on each rank"));
  CHECK_THAT(all.out, !Contains("as zb-h1 runs them"));
  checkInputError(runStagecut("simulate '" + kExampleGptProfile + "' --partition '" + path +
                              "' --schedule 1f1b --microbatches 4"),
                  path + ": the split places 2 chunks on each rank; 1f1b runs one; use --schedule interleaved-1f1b");
}

TEST_CASE("partition --split reads a virtual-pipeline layout as chunks on ranks and sets it beside the best",
          "[cli][partition][chunks]") {
  const std::string layout = "--split '--pipeline-model-parallel-layout \"Et*3|t*3|t*2|L\" --pipeline-model-parallel-size 2'";
  const CommandResult text = partition("--schedule interleaved-1f1b --microbatches 4 " + layout);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("your split, as given"));
  CHECK_THAT(text.out, Contains("2 ranks x 2 chunks"));
  CHECK_THAT(text.out, Contains("against yours"));
  const CommandResult json = partition("--schedule interleaved-1f1b --microbatches 4 --json " + layout);
  REQUIRE(json.exit_code == 0);
  const nlohmann::json document = nlohmann::json::parse(json.out);
  CHECK(document["method"] == "yours");
  CHECK(document["placement"]["chunks_per_rank"] == 2);
  CHECK(document["stages"][3]["first"] == 9);
  checkInputError(partition("--microbatches 4 " + layout),
                  "--split --pipeline-model-parallel-layout \"Et*3|t*3|t*2|L\" --pipeline-model-parallel-size 2: "
                  "places 2 chunks on each rank in loop order; 1f1b runs one; use --schedule interleaved-1f1b");
  const CommandResult simulated = runStagecut("simulate '" + kExampleGptProfile +
                                              "' --schedule interleaved-1f1b --microbatches 4 --json " + layout);
  REQUIRE(simulated.exit_code == 0);
  CHECK(nlohmann::json::parse(simulated.out)["schedules"][0]["chunks"] == 2);
}

TEST_CASE("a split's own chunks decide v: --chunks and --schedule that disagree are refused, and a V's errors "
          "name no --chunks the user never gave",
          "[cli][partition][chunks][errors]") {
  const std::string split = "'--pipeline-model-parallel-layout \"Et*3|t*3|t*2|L\" --pipeline-model-parallel-size 2'";
  // A layout of 2 chunks per rank with --chunks 4 used to run the layout's 2 without a word.
  checkInputError(partition("--schedule interleaved-1f1b --microbatches 4 --chunks 4 --split " + split),
                  "--chunks 4: --split --pipeline-model-parallel-layout \"Et*3|t*3|t*2|L\" --pipeline-model-parallel-size "
                  "2 places 2 ranks x 2 chunks; drop --chunks (the split decides them)");
  const CommandResult agreeing = partition("--schedule interleaved-1f1b --microbatches 4 --chunks 2 --split " + split);
  REQUIRE(agreeing.exit_code == 0);
  CHECK_THAT(agreeing.out, Contains("interleaved-1f1b (2 chunks per rank)"));
  // An 8-stage layout is one chunk per rank: its header said "(2 chunks)" of a pipeline that had none.
  const std::string eight = "'--pipeline-model-parallel-layout \"Et|t|t|t|t|t|t|tL\"'";
  checkInputError(partition("--schedule interleaved-1f1b --split " + eight),
                  "--schedule interleaved-1f1b: --split --pipeline-model-parallel-layout \"Et|t|t|t|t|t|t|tL\" places "
                  "one chunk on each of its 8 ranks; interleaved-1f1b runs several (give the layout of N x v stages "
                  "with --pipeline-model-parallel-size N), or use --schedule 1f1b");
  const CommandResult one_chunk = partition("--split " + eight);
  REQUIRE(one_chunk.exit_code == 0);
  CHECK_THAT(one_chunk.out, Contains("8 stages, 32 microbatches, 1f1b, "));
  // zb-v and dualpipe-v always run 2 chunks: their errors say so instead of naming --chunks 2.
  for (const std::string schedule : {"zb-v", "dualpipe-v"}) {
    const CommandResult too_many = partition("--stages 8 --microbatches 16 --schedule " + schedule);
    CHECK(too_many.exit_code == 2);
    CHECK(too_many.err == "stagecut: --schedule " + schedule + ": 8 ranks x 2 chunks in a V need 16 layers, the "
                          "profile has 11; use fewer --stages or a schedule of one chunk per rank\n");
    // Chunks recompute as stages do: every chunk keeps only its input and runs its forward again.
    const CommandResult recompute = partition("--stages 2 --microbatches 4 --recompute --json --schedule " + schedule);
    REQUIRE(recompute.exit_code == 0);
    const nlohmann::json document = nlohmann::json::parse(recompute.out);  // alive through the loop
    for (const auto& chunk : document["stages"]) CHECK(chunk["recompute"] == "full");
    const CommandResult ops = runStagecut("simulate --stages 4 --microbatches 4000000 --schedule " + schedule);
    CHECK(ops.exit_code == 2);
    CHECK_THAT(ops.err, Contains("--stages 4 --microbatches 4000000: 32000000 forward ops per step"));
    CHECK_THAT(ops.err, !Contains("--chunks"));
  }
}
