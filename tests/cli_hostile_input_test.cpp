// The bad-input matrix (docs/reliability.md): every reader and every flag of the LibTorch-free
// commands meets its hostile inputs, and each must end in exit code 2, nothing on stdout, one
// line on stderr that names the input, and no file written. Cases already asserted word for word
// elsewhere (cli_inspect_test, cli_partition_test, cli_simulate_test, cli_bubble_test) are not
// repeated here; each row below is one case, and the count is printed by the last test.

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_document.h"
#include "core/partition_json.h"
#include "core/profile_json.h"
#include "tests/test_support.h"

using stagecut::testing::CommandResult;
using stagecut::testing::makePartition;
using stagecut::testing::makeProfile;
using stagecut::testing::runStagecut;
using stagecut::testing::TempDir;

namespace {

using nlohmann::json;

// ---- inputs -----------------------------------------------------------------------------------

std::string profileText(int layers, const std::function<void(json&)>& breakIt = {}) {
  json document = stagecut::profileToJson(makeProfile(layers));
  if (breakIt) breakIt(document);
  return stagecut::toJsonText(document);
}

// A 4-layer profile with `token` in place of layer 1's forward median: for text JSON cannot hold.
std::string profileWithToken(const std::string& token) {
  std::string text = profileText(4, [](json& d) { d["layers"][1]["forward_ms"]["median"] = 12345.5; });
  return text.replace(text.find("12345.5"), 7, token);
}

std::string partitionText(const std::function<void(json&)>& breakIt = {}) {
  json document = stagecut::partitionToJson(makePartition({2, 2}), {{"list", "2,2"}});
  if (breakIt) breakIt(document);
  return stagecut::toJsonText(document);
}

std::string partitionWithToken(const std::string& token) {
  std::string text = partitionText([](json& d) { d["stages"][0]["cost_ms"] = 12345.5; });
  return text.replace(text.find("12345.5"), 7, token);
}

const std::string kGarbage("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", 20);
const std::string kUtf16Json("\xff\xfe{\x00\"\x00" "f\x00", 8);
const std::string kTruncated = "{\"format\": \"stagecut.profile/1\", \"model\": {";

const char* const kNodeTail =
    " -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size=64.0, "
    "parameter_size=16.0\n";

std::string node(const std::string& id, const std::string& description = "Linear") {
  return id + " -- " + description + kNodeTail;
}

const std::string kNodeFormat =
    "expected 'nodeK -- Desc -- forward_compute_time=F, backward_compute_time=B, "
    "activation_size=A, parameter_size=P' or '<tab>nodeA -- nodeB'";

// ---- running a case ---------------------------------------------------------------------------

// Replaces every "{dir}" in `text` with the case's folder.
std::string inDir(std::string text, const std::string& dir) {
  for (auto at = text.find("{dir}"); at != std::string::npos; at = text.find("{dir}", at)) {
    text.replace(at, 5, dir);
  }
  return text;
}

struct InputFile {
  std::string name;
  std::string content;
};

// Writes `files` into a fresh folder, runs `args` there and holds the result to the contract:
// exit 2, empty stdout, stderr exactly "stagecut: <message>\n", and no file added to the folder.
void expectRejected(const std::vector<InputFile>& files, const std::string& args,
                    const std::string& message) {
  const TempDir dir;
  std::vector<std::string> names;
  for (const InputFile& file : files) {
    dir.write(file.name, file.content);
    names.push_back(file.name);
  }
  std::sort(names.begin(), names.end());
  const std::string command = inDir(args, dir.path());
  INFO("stagecut " << command);
  const CommandResult result = runStagecut(command);
  CHECK(result.exit_code == 2);
  CHECK(result.out.empty());
  CHECK(result.err == "stagecut: " + inDir(message, dir.path()) + "\n");
  CHECK(dir.list() == names);
}

// ---- the tables -------------------------------------------------------------------------------

// A profile file's content and what every command that reads a profile says about it, after
// "<path>".
struct BadProfile {
  const char* what;
  std::string content;
  std::string message;
  // Not run through inspect: asserted word for word by cli_inspect_test already, or a file that
  // inspect reads differently (a partition is fine there; an odd format gets its own row below).
  bool skip_inspect;
};

const std::vector<BadProfile>& badProfiles() {
  static const std::vector<BadProfile> rows = {
      {"empty file", "", ": file is empty; expected a stagecut JSON document", true},
      {"only whitespace", " \n\t\r\n", ": file is empty; expected a stagecut JSON document", false},
      {"binary garbage (a PNG)", kGarbage,
       ": is a binary file, not JSON; expected a stagecut JSON document", true},
      {"UTF-16 JSON", kUtf16Json, ": is a binary file, not JSON; expected a stagecut JSON document",
       false},
      {"truncated JSON", kTruncated,
       ": not valid JSON: parse error at line 1, column 44: syntax error while parsing object key - "
       "unexpected end of input; expected string literal",
       false},
      {"deeply nested arrays", std::string(100000, '['),
       ": not valid JSON: parse error at line 1, column 100001: syntax error while parsing value - "
       "unexpected end of input; expected '[', '{', or a literal",
       false},
      {"wrong shape: an array", "[1, 2]", ": expected a JSON object with a \"format\" field, got array",
       true},
      {"wrong shape: a string", "\"stagecut.profile/1\"",
       ": expected a JSON object with a \"format\" field, got string", false},
      {"wrong shape: a partition", partitionText(),
       ": format \"stagecut.partition/1\" is not a profile this stagecut reads; expected "
       "\"stagecut.profile/1\", \"stagecut.profile/2\" or \"stagecut.profile/3\"",
       true},
      {"wrong shape: format with a line break", profileText(4, [](json& d) { d["format"] = "stagecut.profile/1\n"; }),
       ": format \"stagecut.profile/1\\n\" is not a profile this stagecut reads; expected "
       "\"stagecut.profile/1\", \"stagecut.profile/2\" or \"stagecut.profile/3\"",
       true},
      {"wrong shape: layers is an object", profileText(4, [](json& d) { d["layers"] = {{"0", 1}}; }),
       ": field \"layers\" must be an array, got an object", false},
      {"wrong shape: a layer is a number", profileText(4, [](json& d) { d["layers"][2] = 7; }),
       ": layer 2: expected a JSON object, got 7", false},
      {"wrong shape: no model block", profileText(4, [](json& d) { d.erase("model"); }),
       ": field \"model\" is missing; it is required", false},
      {"wrong shape: a time in words", profileText(4, [](json& d) { d["layers"][0]["forward_ms"] = "fast"; }),
       ": layer 0: field \"forward_ms\" must be an object {\"median\": ...} or a number of ms, got "
       "\"fast\"",
       false},
      {"huge number: params 1e30", profileText(4, [](json& d) { d["layers"][1]["params"] = 1e30; }),
       ": layer 1: field \"params\" is too large, got 1e+30", false},
      {"huge number: param_bytes 2^64 - 1",
       profileText(4, [](json& d) { d["layers"][1]["param_bytes"] = 18446744073709551615ull; }),
       ": layer 1: field \"param_bytes\" is too large, got 18446744073709551615", false},
      {"huge number: index 2^32", profileText(4, [](json& d) { d["layers"][0]["index"] = 4294967296ll; }),
       ": layer 0: field \"index\" must be between 0 and 2147483647, got 4294967296", false},
      // A finite time no run can have: it once made a step of "inf ms" and a Gantt of "0 ms".
      {"huge number: a forward of 1e308 ms", profileText(4, [](json& d) { d["layers"][1]["forward_ms"] = 1e308; }),
       ": layer 1: field \"forward_ms\" is 1e+308 ms, longer than a day, which no run takes (validate stops a "
       "step at its longest --timeout, a day); measure the model again or correct the field",
       false},
      {"huge number: a backward's max past a day",
       profileText(4, [](json& d) { d["layers"][2]["backward_ms"] = {{"median", 1.0}, {"max", 1e9}}; }),
       ": layer 2: field \"backward_ms.max\" is 1000000000 ms, longer than a day, which no run takes (validate "
       "stops a step at its longest --timeout, a day); measure the model again or correct the field",
       false},
      {"NaN as text in a time", profileWithToken("NaN"),
       ": not valid JSON: parse error at line 54, column 19: syntax error while parsing value - "
       "invalid literal; last read: '\"median\": N'",
       false},
      {"Infinity as text in a time", profileWithToken("Infinity"),
       ": not valid JSON: parse error at line 54, column 19: syntax error while parsing value - "
       "invalid literal; last read: '\"median\": I'",
       false},
      {"-Infinity as text in a time", profileWithToken("-Infinity"),
       ": not valid JSON: parse error at line 54, column 20: syntax error while parsing value - "
       "invalid number; expected digit after '-'; last read: '-I'",
       false},
      {"1e999 in a time", profileWithToken("1e999"), ": not valid JSON: number overflow parsing '1e999'",
       false},
      {"-1e999 in a time", profileWithToken("-1e999"),
       ": not valid JSON: number overflow parsing '-1e999'", false},
      {"negative size: activation_bytes",
       profileText(4, [](json& d) { d["layers"][0]["activation_bytes"] = -4096; }),
       ": layer 0: field \"activation_bytes\" must be >= 0, got -4096", false},
      {"negative size: output_bytes as a float",
       profileText(4, [](json& d) { d["layers"][3]["output_bytes"] = -1.5; }),
       ": layer 3: field \"output_bytes\" must be >= 0, got -1.5", false},
      {"negative size: an output_shape dimension",
       profileText(4, [](json& d) { d["layers"][1]["output_shape"] = {4, -16}; }),
       ": layer 1: field \"output_shape\" must list whole numbers >= 0, got -16", false},
      {"negative time: backward_ms as a number",
       profileText(4, [](json& d) { d["layers"][1]["backward_ms"] = -2; }),
       ": layer 1: field \"backward_ms\" must be >= 0, got -2", false},
      {"duplicate layer index", profileText(4, [](json& d) { d["layers"][2]["index"] = 1; }),
       ": layer at position 2 has field \"index\" 1; layers must be listed in order 0, 1, 2, ... "
       "with no gap or duplicate",
       false},
      {"missing layer index", profileText(4, [](json& d) { d["layers"][2].erase("index"); }),
       ": layer 2: field \"index\" is missing; it is required", false},
      {"0 layers", profileText(4, [](json& d) { d["layers"] = json::array(); }),
       ": field \"layers\" is empty; a profile needs at least one layer", false},
  };
  return rows;
}

// The commands that read a profile, with the arguments that get them to it. simulate reads the
// profile before the partition, so a valid partition beside it does not change the message.
struct ProfileReader {
  const char* args;
  bool is_inspect;
};
const ProfileReader kProfileReaders[] = {
    {"inspect {dir}/p.json", true},
    {"partition {dir}/p.json --stages 2", false},
    {"compare {dir}/p.json --stages 2", false},
    {"simulate {dir}/p.json --partition {dir}/part.json", false},
};

// A partition file's content and what inspect and simulate say about it, after "<path>".
struct BadPartition {
  const char* what;
  std::string content;
  std::string message;
  bool only_simulate;  // inspect accepts it (a profile) or never sees the profile it must cover
};

const std::vector<BadPartition>& badPartitions() {
  static const std::vector<BadPartition> rows = {
      {"empty file", "", ": file is empty; expected a stagecut JSON document", false},
      {"binary garbage (a PNG)", kGarbage,
       ": is a binary file, not JSON; expected a stagecut JSON document", false},
      {"truncated JSON", partitionText().substr(0, 60),
       ": not valid JSON: parse error at line 3, column 33: syntax error while parsing value - "
       "invalid string: missing closing quote; last read: '\"stagecut.partition/'",
       false},
      {"wrong shape: a profile", profileText(4),
       ": format \"stagecut.profile/1\" is not a partition this stagecut reads; expected "
       "\"stagecut.partition/1\"",
       true},
      {"wrong shape: stages is a number", partitionText([](json& d) { d["stages"] = 2; }),
       ": field \"stages\" must be an array, got 2", false},
      {"wrong shape: an output that is not text",
       partitionText([](json& d) { d["outputs"]["list\nx"] = 7; }),
       ": field \"outputs.list\\nx\" must be a string, got 7", false},
      {"no stages", partitionText([](json& d) { d["stages"] = json::array(); }),
       ": field \"stages\" is empty; a partition needs at least one stage", false},
      {"a stage ending before it starts", partitionText([](json& d) { d["stages"][1]["last"] = 1; }),
       ": stage 1: field \"last\" is 1, before \"first\" 2; every stage needs at least one layer",
       false},
      {"overlapping stages", partitionText([](json& d) { d["stages"][1]["first"] = 1; }),
       ": stage 1: field \"first\" is 1, expected 2; stages must be contiguous, start at layer 0 "
       "and not overlap",
       false},
      {"NaN as text in a time", partitionWithToken("NaN"),
       ": not valid JSON: parse error at line 15, column 18: syntax error while parsing value - "
       "invalid literal; last read: '\"cost_ms\": N'",
       false},
      {"1e999 in a time", partitionWithToken("1e999"),
       ": not valid JSON: number overflow parsing '1e999'", false},
      {"negative size: memory_bytes", partitionText([](json& d) { d["stages"][0]["memory_bytes"] = -1; }),
       ": stage 0: field \"memory_bytes\" must be >= 0, got -1", false},
      {"huge number: first layer 1e10", partitionText([](json& d) { d["stages"][0]["first"] = 10000000000ll; }),
       ": stage 0: field \"first\" must be between 0 and 2147483646, got 10000000000", false},
      {"huge number: last layer at int's maximum",
       partitionText([](json& d) { d["stages"][0]["last"] = 2147483647; }),
       ": stage 0: field \"last\" must be between 0 and 2147483646, got 2147483647", false},
      {"a bubble above 1", partitionText([](json& d) { d["predicted_bubble"] = 1.5; }),
       ": field \"predicted_bubble\" must be a fraction between 0 and 1, got 1.5", false},
      {"more layers than the profile", partitionText([](json& d) { d["stages"][1]["last"] = 5; }),
       ": the partition covers layers 0..5 but the profile has 4 layers; make the partition from "
       "this profile",
       true},
  };
  return rows;
}

// A PipeDream graph.txt and what `import pipedream` says about it, after "<path>".
struct BadGraph {
  const char* what;
  std::string content;
  std::string message;
};

const std::vector<BadGraph>& badGraphs() {
  static const std::vector<BadGraph> rows = {
      {"empty file", "", ": no node lines; " + kNodeFormat},
      {"only blank lines", "\n \n\t\n", ": no node lines; " + kNodeFormat},
      {"binary garbage (a PNG)", kGarbage, ":1: " + kNodeFormat},
      {"a JSON profile instead", profileText(1), ":1: " + kNodeFormat},
      {"truncated node line", node("node1").substr(0, 40),
       ":1: node node1 has no backward_compute_time; " + kNodeFormat},
      {"a cycle of two nodes", node("node1") + node("node2") + "\tnode1 -- node2\n\tnode2 -- node1\n",
       ":1: node node1 is on a cycle; a PipeDream graph must be acyclic"},
      {"a node feeding itself", node("node1") + node("node2") + "\tnode1 -- node2\n\tnode2 -- node2\n",
       ":2: node node2 is on a cycle; a PipeDream graph must be acyclic"},
      {"a dangling edge", node("node1") + "\tnode1 -- node7\n",
       ":2: edge names node node7, which no node line defines"},
      {"an edge without its target", node("node1") + "\tnode1 -- \n", ":2: " + kNodeFormat},
      {"a repeated node", node("node1") + node("node1", "ReLU"), ":2: node node1 is defined twice"},
      {"only Input nodes", node("node1", "Input0"), ": no compute nodes: every node is an Input node"},
      {"a missing field", "node1 -- Linear -- forward_compute_time=1, backward_compute_time=2, activation_size=3\n",
       ":1: node node1 has no parameter_size; " + kNodeFormat},
      {"NaN in a time", "node1 -- Linear -- forward_compute_time=nan, backward_compute_time=2, "
                        "activation_size=3, parameter_size=4\n",
       ":1: forward_compute_time=nan is not a decimal number >= 0 (digits, a point, an exponent)"},
      {"inf in a time", "node1 -- Linear -- forward_compute_time=1, backward_compute_time=inf, "
                        "activation_size=3, parameter_size=4\n",
       ":1: backward_compute_time=inf is not a decimal number >= 0 (digits, a point, an exponent)"},
      {"1e999 in a time", "node1 -- Linear -- forward_compute_time=1e999, backward_compute_time=2, "
                          "activation_size=3, parameter_size=4\n",
       ":1: forward_compute_time=1e999 is not a number >= 0"},
      {"huge number: a time past a day", "node1 -- Linear -- forward_compute_time=1e9, backward_compute_time=2, "
                                          "activation_size=3, parameter_size=4\n",
       ":1: forward_compute_time=1e9 ms is longer than a day, which no layer of a run takes; the most is 86400000"},
      {"huge number: a parameter size of 1e300", "node1 -- Linear -- forward_compute_time=1, "
                                                 "backward_compute_time=2, activation_size=3, parameter_size=1e300\n",
       ":1: parameter_size=1e300 is too large; the most is 1e12"},
      {"huge number: a list of sizes adding up past the limit",
       "node1 -- Linear -- forward_compute_time=1, backward_compute_time=2, "
       "activation_size=[9e11; 9e11], parameter_size=4\n",
       ":1: activation_size=[9e11; 9e11] adds up to more than 1e12"},
      {"negative size", "node1 -- Linear -- forward_compute_time=1, backward_compute_time=2, "
                        "activation_size=-3, parameter_size=4\n",
       ":1: activation_size=-3 is not a decimal number >= 0 (digits, a point, an exponent)"},
      // Read strictly: what PipeDream never writes is named, not taken.
      {"a field given twice", "node1 -- Linear -- forward_compute_time=1, backward_compute_time=2, "
                              "activation_size=3, parameter_size=4, forward_compute_time=9\n",
       ":1: node node1 gives forward_compute_time twice"},
      {"a size given twice", "node1 -- Linear -- forward_compute_time=1, backward_compute_time=2, "
                             "activation_size=3, activation_size=3, parameter_size=4\n",
       ":1: node node1 gives activation_size twice"},
      {"a time in hex", "node1 -- Linear -- forward_compute_time=0x10, backward_compute_time=2, "
                        "activation_size=3, parameter_size=4\n",
       ":1: forward_compute_time=0x10 is not a decimal number >= 0 (digits, a point, an exponent)"},
      {"a size with a sign", "node1 -- Linear -- forward_compute_time=1, backward_compute_time=2, "
                             "activation_size=+3, parameter_size=4\n",
       ":1: activation_size=+3 is not a decimal number >= 0 (digits, a point, an exponent)"},
      {"an exponent without digits", "node1 -- Linear -- forward_compute_time=1e, backward_compute_time=2, "
                                     "activation_size=3, parameter_size=4\n",
       ":1: forward_compute_time=1e is not a decimal number >= 0 (digits, a point, an exponent)"},
      {"a misspelt field", "node1 -- Linear -- forward_compute_time=1, backward_compute_tme=2, "
                           "activation_size=3, parameter_size=4\n",
       ":1: node node1: 'backward_compute_tme' is not a PipeDream node field; " + kNodeFormat},
      {"a byte-order mark", "\xEF\xBB\xBF" + node("node1"),
       ":1: starts with a UTF-8 byte-order mark (EF BB BF), which PipeDream does not write; save the graph "
       "without it"},
  };
  return rows;
}

// A command line and its one-line rejection: flags and the inputs only a command checks.
struct BadCommand {
  const char* what;
  std::vector<InputFile> files;
  std::string args;
  std::string message;
};

const std::string kP = "{dir}/p.json";
const std::string kPart = "{dir}/part.json";

const std::vector<BadCommand>& badCommands() {
  const InputFile profile{"p.json", profileText(4)};
  const InputFile one_layer{"p.json", profileText(1)};
  const InputFile partition{"part.json", partitionText()};
  // embed, two blocks, loss: a chain Megatron's layout applies to (E t t L).
  const InputFile gpt{"p.json", profileText(4, [](json& d) {
                        d["layers"][0]["name"] = "embed";
                        d["layers"][0]["kind"] = "Embedding";
                        d["layers"][3]["name"] = "loss";
                        d["layers"][3]["kind"] = "CrossEntropyLoss";
                      })};
  const InputFile huge_params{"p.json", profileText(4, [](json& d) {
                                d["layers"][0]["params"] = 9.0e18;
                              })};
  const InputFile graph{"g.txt", node("node1") + node("node2") + "\tnode1 -- node2\n"};
  static const std::vector<BadCommand> rows = {
      // inspect: its own check of the format tag
      {"inspect: format with a line break",
       {{"p.json", profileText(4, [](json& d) { d["format"] = "stagecut.profile/1\n"; })}},
       "inspect " + kP,
       "{dir}/p.json: unknown format \"stagecut.profile/1\\n\"; this stagecut reads "
       "\"stagecut.profile/1\", \"stagecut.profile/2\", \"stagecut.profile/3\" and \"stagecut.partition/1\""},

      // bubble
      {"bubble: 0 microbatches", {}, "bubble --microbatches 0",
       "--microbatches 0: use 1 to 2147483647 microbatches per step"},
      {"bubble: negative stages", {}, "bubble --stages -3", "--stages -3: use 1 to 2147483647 stages"},
      {"bubble: stages beyond int", {}, "bubble --stages 99999999999",
       "--stages 99999999999: use 1 to 2147483647 stages"},

      // partition: the stage count against the profile
      {"partition: 1 layer with 2 stages", {one_layer}, "partition " + kP + " --stages 2",
       "--stages 2: the profile has 1 layer; use --stages 1 or fewer"},
      {"partition: stages in words", {profile}, "partition " + kP + " --stages four",
       "--stages four: use 1 to 4194304 stages"},
      {"partition: a layout of many long stages", {profile}, "partition " + kP + " --split '(t*144032|)*44032'",
       "--split (t*144032|)*44032: the layout expands to more than 1000000 symbols"},
      // partition --split: Megatron's spellings, refused where Megatron refuses them or where a
      // stagecut split cannot hold what Megatron runs (an empty stage)
      {"partition: a layout with --num-virtual-stages-per-pipeline-rank", {gpt},
       "partition " + kP + " --split '--pipeline-model-parallel-layout Et|tL --num-virtual-stages-per-pipeline-rank 1'",
       "--split --pipeline-model-parallel-layout Et|tL --num-virtual-stages-per-pipeline-rank 1: "
       "--pipeline-model-parallel-layout with --num-virtual-stages-per-pipeline-rank: Megatron takes at most one of "
       "--pipeline-model-parallel-layout, --num-virtual-stages-per-pipeline-rank and "
       "--num-layers-per-virtual-pipeline-stage (a layout's length gives its virtual stages); keep one"},
      {"partition: a layout with an empty stage", {gpt}, "partition " + kP + " --split 'Et||tL'",
       "--split Et||tL: stage 1 of the layout's 3 is empty, which Megatron runs (a stage that builds no layer) but "
       "a stagecut split cannot: every stage holds at least one layer; move a layer into it"},
      {"partition: a virtual-pipeline layout on one rank", {gpt},
       "partition " + kP + " --split '--pipeline-model-parallel-layout Et|tL --pipeline-model-parallel-size 1'",
       "--split --pipeline-model-parallel-layout Et|tL --pipeline-model-parallel-size 1: a layout of 2 stages, 2 "
       "model chunks on 1 pipeline rank: Megatron runs a virtual pipeline only on --pipeline-model-parallel-size 2 "
       "or more (its arguments.py asserts it for the interleaved schedule)"},
      {"partition: layers per virtual stage that Megatron cannot place", {gpt},
       "partition " + kP + " --split '--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
       "--account-for-loss-in-pipeline-split'",
       "--split --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 "
       "--account-for-loss-in-pipeline-split: --num-layers-per-virtual-pipeline-stage 1: Megatron divides the 3 "
       "layers (the accounted embedding and loss included) evenly over the 2 pipeline ranks first, and they do "
       "not divide"},
      {"partition: megatron for a virtual pipeline on one rank", {gpt},
       "partition " + kP + " --stages 1 --schedule interleaved-1f1b --chunks 2 --format megatron",
       "--format megatron: 2 model chunks on 1 pipeline rank: Megatron runs a virtual pipeline only on "
       "--pipeline-model-parallel-size 2 or more (its arguments.py asserts it for the interleaved schedule); use "
       "--format torchtitan or pippy"},
      {"partition: stages beyond int", {profile}, "partition " + kP + " --stages 99999999999",
       "--stages 99999999999: use 1 to 4194304 stages"},
      {"partition: negative microbatches", {profile}, "partition " + kP + " --stages 2 --microbatches -5",
       "--microbatches -5: use 1 to 4194304 microbatches per step"},
      {"partition: missing profile", {}, "partition " + kP + " --stages 2",
       "{dir}/p.json: cannot open (No such file or directory); check the path"},
      // partition: units
      {"partition: a memory cap of zero", {profile}, "partition " + kP + " --stages 2 --memory-cap 0",
       "--memory-cap \"0\": must be more than 0 bytes"},
      {"partition: a memory cap of 0GiB", {profile}, "partition " + kP + " --stages 2 --memory-cap 0GiB",
       "--memory-cap \"0GiB\": must be more than 0 bytes"},
      {"partition: a memory cap under a byte", {profile}, "partition " + kP + " --stages 2 --memory-cap 0.4",
       "--memory-cap \"0.4\": less than 1 byte; give at least 1B"},
      {"partition: a negative memory cap", {profile}, "partition " + kP + " --stages 2 --memory-cap -1GB",
       "--memory-cap \"-1GB\": must be more than 0 bytes"},
      {"partition: a huge memory cap", {profile}, "partition " + kP + " --stages 2 --memory-cap 1e30",
       "--memory-cap \"1e30\": too large; the most is 8EiB"},
      {"partition: a memory cap of NaN", {profile}, "partition " + kP + " --stages 2 --memory-cap NaN",
       "--memory-cap \"NaN\": not a memory size; use a number with B, KB, MB, GB, TB, KiB, MiB, GiB "
       "or TiB, e.g. 80GiB"},
      {"partition: a memory cap of inf", {profile}, "partition " + kP + " --stages 2 --memory-cap inf",
       "--memory-cap \"inf\": not a memory size; use a number with B, KB, MB, GB, TB, KiB, MiB, GiB "
       "or TiB, e.g. 80GiB"},
      {"partition: an empty cap in a list", {profile}, "partition " + kP + " --stages 2 --memory-cap 80GiB,",
       "--memory-cap \"\": not a memory size; use a number with B, KB, MB, GB, TB, KiB, MiB, GiB or "
       "TiB, e.g. 80GiB"},
      {"partition: unknown unit gib", {profile}, "partition " + kP + " --stages 2 --memory-cap 80gib",
       "--memory-cap \"80gib\": not a memory size; use a number with B, KB, MB, GB, TB, KiB, MiB, GiB "
       "or TiB, e.g. 80GiB"},
      {"partition: a bandwidth unit for a size", {profile}, "partition " + kP + " --stages 2 --memory-cap 80GB/s",
       "--memory-cap \"80GB/s\": not a memory size; use a number with B, KB, MB, GB, TB, KiB, MiB, "
       "GiB or TiB, e.g. 80GiB"},
      {"partition: a bandwidth of zero", {profile}, "partition " + kP + " --stages 2 --bandwidth 0",
       "--bandwidth \"0\": must be more than 0"},
      {"partition: a negative bandwidth", {profile}, "partition " + kP + " --stages 2 --bandwidth -25GB/s",
       "--bandwidth \"-25GB/s\": must be more than 0"},
      {"partition: a bandwidth past a double", {profile}, "partition " + kP + " --stages 2 --bandwidth 1e308TB/s",
       "--bandwidth \"1e308TB/s\": too large for a bandwidth"},
      {"partition: unknown unit Gbps", {profile}, "partition " + kP + " --stages 2 --bandwidth 25Gbps",
       "--bandwidth \"25Gbps\": not a bandwidth; use bytes per second with B/s, KB/s, MB/s, GB/s, "
       "TB/s, KiB/s, MiB/s or GiB/s, e.g. 25GB/s"},
      {"partition: a tiny bandwidth", {profile}, "partition " + kP + " --stages 2 --bandwidth 1e-300B/s",
       "--bandwidth, --latency: sending the layers' outputs takes longer than stagecut can compute "
       "with; give the link's bandwidth and latency in their units, e.g. 25GB/s and 10us"},
      {"partition: a negative latency", {profile}, "partition " + kP + " --stages 2 --latency -10us",
       "--latency \"-10us\": must not be negative"},
      {"partition: a latency past a double", {profile}, "partition " + kP + " --stages 2 --latency 1e308s",
       "--latency \"1e308s\": too large for a duration"},
      {"partition: a latency without unit", {profile}, "partition " + kP + " --stages 2 --latency 10",
       "--latency \"10\": not a duration; use a number with ns, us, ms or s, e.g. 10us"},
      {"partition: a latency of nan", {profile}, "partition " + kP + " --stages 2 --latency nan",
       "--latency \"nan\": not a duration; use a number with ns, us, ms or s, e.g. 10us"},
      // partition: the other flags
      {"partition: a stage speed of 0", {profile}, "partition " + kP + " --stages 2 --stage-speed 0,1",
       "--stage-speed 0,1: \"0\" is not a speed > 0; use relative speeds, one per stage, e.g. 1,1,0.5,1"},
      {"partition: a stage speed of inf", {profile}, "partition " + kP + " --stages 2 --stage-speed 1,inf",
       "--stage-speed 1,inf: \"inf\" is not a speed > 0; use relative speeds, one per stage, e.g. 1,1,0.5,1"},
      {"partition: a subnormal stage speed", {profile}, "partition " + kP + " --stages 2 --stage-speed 1,1e-320",
       "--stage-speed 1,1e-320: \"1e-320\" is out of range; relative speeds go from 0.001 to 1000, e.g. "
       "1,1,0.5,1"},
      {"partition: an empty stage speed", {profile}, "partition " + kP + " --stages 2 --stage-speed 1,",
       "--stage-speed 1,: \"\" is not a speed > 0; use relative speeds, one per stage, e.g. 1,1,0.5,1"},
      {"partition: negative bytes per parameter", {profile}, "partition " + kP + " --stages 2 --bytes-per-param -1",
       "--bytes-per-param -1: must be a finite number of bytes per parameter above 0 and at most 1e+06"},
      {"partition: NaN bytes per parameter", {profile}, "partition " + kP + " --stages 2 --bytes-per-param nan",
       "--bytes-per-param nan: must be a finite number of bytes per parameter above 0 and at most 1e+06"},
      {"partition: inf bytes per parameter", {profile}, "partition " + kP + " --stages 2 --bytes-per-param inf",
       "--bytes-per-param inf: must be a finite number of bytes per parameter above 0 and at most 1e+06"},
      {"partition: huge bytes per parameter", {profile}, "partition " + kP + " --stages 2 --bytes-per-param 1e300",
       "--bytes-per-param 1e300: must be a finite number of bytes per parameter above 0 and at most 1e+06"},
      {"partition: zero bytes per parameter, once read as not given", {profile},
       "partition " + kP + " --stages 2 --bytes-per-param 0", "--bytes-per-param 0: must be a finite number of bytes per parameter above 0 and at most 1e+06"},
      {"partition: an empty optimizer", {profile}, "partition " + kP + " --stages 2 --optimizer ''",
       "--optimizer: unknown optimizer ''; use one of: none, sgd, sgd-momentum, adam, adam-mixed"},
      {"partition: an empty schedule", {profile}, "partition " + kP + " --stages 2 --schedule ''",
       "--schedule: unknown schedule ''; use one of: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe-v"},
      {"partition: an empty format", {profile}, "partition " + kP + " --stages 2 --format ''",
       "--format: unknown format ''; use one of: list, json, megatron, torchgpipe, fairscale, "
       "deepspeed, pippy, torchtitan"},
      // partition: numbers the reader accepts but no sum survives
      {"partition: memory past 8 EiB", {huge_params}, "partition " + kP + " --stages 2",
       "{dir}/p.json: the model's memory could exceed 8 EiB (params x bytes per parameter + "
       "activation_bytes x 2 microbatches in flight); check the profile's params and "
       "activation_bytes, --bytes-per-param and --microbatches"},
      // partition: outputs
      {"partition: -o into a missing folder", {profile}, "partition " + kP + " --stages 2 -o /nonexistent/x.json",
       "cannot write /nonexistent/x.json (No such file or directory); check that its folder exists "
       "and is writable"},
      {"partition: -o naming a folder", {profile}, "partition " + kP + " --stages 2 -o {dir}",
       "cannot write {dir} (Is a directory); give a file name, not a folder"},

      // compare shares partition's flags; one row per kind of check
      {"compare: 1 layer with 2 stages", {one_layer}, "compare " + kP + " --stages 2",
       "--stages 2: the profile has 1 layer; use --stages 1 or fewer"},
      {"compare: a memory cap of zero", {profile}, "compare " + kP + " --stages 2 --memory-cap 0",
       "--memory-cap \"0\": must be more than 0 bytes"},
      {"compare: a bandwidth of zero", {profile}, "compare " + kP + " --stages 2 --bandwidth 0",
       "--bandwidth \"0\": must be more than 0"},
      {"compare: -o into a missing folder", {profile}, "compare " + kP + " --stages 2 -o /nonexistent/x.json",
       "cannot write /nonexistent/x.json (No such file or directory); check that its folder exists "
       "and is writable"},
      {"compare: -o naming a folder", {profile}, "compare " + kP + " --stages 2 -o {dir}",
       "cannot write {dir} (Is a directory); give a file name, not a folder"},

      // simulate: unit costs
      {"simulate: a pipeline too large to hold", {}, "simulate --stages 3000 --microbatches 3000",
       "--stages 3000 --microbatches 3000: 9000000 forward ops per step; stagecut schedules at most "
       "4194304 (stages x microbatches)"},
      {"simulate: chunks too many to hold", {},
       "simulate --schedule interleaved-1f1b --stages 2 --microbatches 2 --chunks 2000000",
       "--stages 2 --microbatches 2 --chunks 2000000: 8000000 forward ops per step; stagecut "
       "schedules at most 4194304 (stages x microbatches x chunks)"},
      {"simulate: negative chunks", {}, "simulate --schedule interleaved-1f1b --chunks -1",
       "--chunks -1: use 1 to 4194304 model chunks per rank"},
      // Numbers once taken and ignored (0 read as "not given", a width clamped): the one table of
      // flag ranges (cli/flag_bounds.cpp) refuses them as they are parsed.
      {"simulate: negative width", {}, "simulate --width -5", "--width -5: use 40 to 200 columns"},
      {"simulate: zero width", {}, "simulate --width 0", "--width 0: use 40 to 200 columns"},
      {"simulate: width past the widest chart", {}, "simulate --width 100000",
       "--width 100000: use 40 to 200 columns"},
      {"simulate: zero global batch", {profile}, "simulate " + kP + " --ranks 4 --global-batch 0",
       "--global-batch 0: use 1 to 2147483647 samples per step"},
      {"partition: zero microbatch size", {profile}, "partition " + kP + " --stages 2 --microbatch-size 0",
       "--microbatch-size 0: use 1 to 1000000 samples, one of the profile's measured sizes"},
      {"compare: negative microbatch size", {profile}, "compare " + kP + " --stages 2 --microbatch-size -4",
       "--microbatch-size -4: use 1 to 1000000 samples, one of the profile's measured sizes"},
      {"simulate: zero microbatch size", {profile}, "simulate " + kP + " --microbatch-size 0",
       "--microbatch-size 0: use 1 to 1000000 samples, one of the profile's measured sizes"},
      {"simulate: only commas for schedules", {}, "simulate --schedule ,,",
       "--schedule \",,\": no schedule named; use e.g. --schedule gpipe,1f1b or --schedule all"},
      // Outputs of any size: a trace keeps every op, so it refuses what it cannot hold, before
      // anything is printed.
      {"simulate: a trace of two million ops", {}, "simulate --stages 4 --microbatches 250000 --schedule 1f1b "
       "--trace {dir}/t.json",
       "--trace {dir}/t.json: the trace would hold 2000000 ops, over the 1000000 one trace holds (one event each, "
       "about 140 MB); simulate fewer --microbatches or schedules, or leave out --trace"},
      {"simulate: a trace of every schedule at the op limit", {}, "simulate --stages 4 --microbatches 1000000 "
       "--schedule gpipe,1f1b,zb-h1 --trace {dir}/t.json",
       "--trace {dir}/t.json: the trace would hold 28000000 ops, over the 1000000 one trace holds (one event "
       "each, about 140 MB); simulate fewer --microbatches or schedules, or leave out --trace"},
      {"simulate: --trace into a missing folder", {}, "simulate --trace /nonexistent/t.json",
       "cannot write /nonexistent/t.json (No such file or directory); check that its folder exists "
       "and is writable"},
      {"simulate: --svg naming a folder", {}, "simulate --svg {dir}",
       "cannot write {dir} (Is a directory); give a file name, not a folder"},
      // simulate: a profile and its partition
      {"simulate: missing partition file", {profile}, "simulate " + kP + " --partition " + kPart,
       "{dir}/part.json: cannot open (No such file or directory); check the path"},
      {"simulate: 1 layer with a 2-stage partition", {one_layer, partition},
       "simulate " + kP + " --partition " + kPart,
       "{dir}/part.json: the partition covers layers 0..3 but the profile has 1 layer; make the "
       "partition from this profile"},
      {"simulate: a bandwidth past a double", {profile, partition},
       "simulate " + kP + " --partition " + kPart + " --bandwidth 1e308TB/s",
       "--bandwidth \"1e308TB/s\": too large for a bandwidth"},
      {"simulate: a negative latency", {profile, partition},
       "simulate " + kP + " --partition " + kPart + " --latency -1us",
       "--latency \"-1us\": must not be negative"},

      // import pipedream: the command's own inputs
      {"import: missing graph", {}, "import pipedream {dir}/g.txt -o {dir}/x.json",
       "{dir}/g.txt: cannot open (No such file or directory); check the path"},
      {"import: an empty tool name", {graph}, "import '' {dir}/g.txt -o {dir}/x.json",
       "import: unknown tool ''; use one of: pipedream"},
      {"import: -o into a missing folder", {graph}, "import pipedream {dir}/g.txt -o /nonexistent/x.json",
       "cannot write /nonexistent/x.json (No such file or directory); check that its folder exists "
       "and is writable"},
      {"import: -o naming a folder", {graph}, "import pipedream {dir}/g.txt -o {dir}",
       "cannot write {dir} (Is a directory); give a file name, not a folder"},
  };
  return rows;
}

}  // namespace

TEST_CASE("every command that reads a profile rejects each hostile profile in one line",
          "[cli][errors][hostile]") {
  for (const BadProfile& row : badProfiles()) {
    for (const ProfileReader& reader : kProfileReaders) {
      if (reader.is_inspect && row.skip_inspect) continue;
      INFO(row.what);
      expectRejected({{"p.json", row.content}, {"part.json", partitionText()}}, reader.args,
                     "{dir}/p.json" + row.message);
    }
  }
}

TEST_CASE("inspect and simulate reject each hostile partition in one line", "[cli][errors][hostile]") {
  for (const BadPartition& row : badPartitions()) {
    INFO(row.what);
    const std::vector<InputFile> files = {{"p.json", profileText(4)}, {"part.json", row.content}};
    if (!row.only_simulate) expectRejected(files, "inspect {dir}/part.json", "{dir}/part.json" + row.message);
    expectRejected(files, "simulate {dir}/p.json --partition {dir}/part.json",
                   "{dir}/part.json" + row.message);
  }
}

TEST_CASE("import pipedream rejects each hostile graph in one line and writes nothing",
          "[cli][errors][hostile]") {
  for (const BadGraph& row : badGraphs()) {
    INFO(row.what);
    expectRejected({{"g.txt", row.content}}, "import pipedream {dir}/g.txt -o {dir}/x.json",
                   "{dir}/g.txt" + row.message);
  }
}

TEST_CASE("each hostile flag value is rejected in one line naming the flag", "[cli][errors][hostile]") {
  for (const BadCommand& row : badCommands()) {
    INFO(row.what);
    expectRejected(row.files, row.args, row.message);
  }
}

TEST_CASE("every reader looks at a path before reading it: folders, devices, pipes and oversize files",
          "[cli][errors][hostile]") {
  // Each reader of the LibTorch-free commands, its path last but one word.
  const std::vector<std::string> readers = {"inspect {x}", "partition {x} --stages 2",
                                            "simulate {dir}/p.json --partition {x}",
                                            "import pipedream {x} -o {dir}/o.json",
                                            "report {dir}/p.json --comparison {x} -o {dir}/r.html"};
  const auto run = [](const std::string& reader, const std::string& path) {
    std::string args = reader;
    args.replace(args.find("{x}"), 3, path);
    return args;
  };
  for (const std::string& reader : readers) {
    INFO(reader);
    const InputFile profile{"p.json", profileText(4)};
    expectRejected({profile}, run(reader, "/dev/zero"),
                   "/dev/zero: is not a regular file (a device, pipe or socket); give a file stagecut wrote");
    expectRejected({profile}, run(reader, "{dir}"), "{dir}: is a folder; give the file in it");
    {
      const TempDir dir;
      dir.write("p.json", profileText(4));
      const std::string fifo = dir.file("f.json");
      REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
      // A pipe nobody writes: read, it would block for ever; looked at, it is refused.
      const CommandResult result = runStagecut(inDir(run(reader, fifo), dir.path()));
      CHECK(result.exit_code == 2);
      CHECK(result.err == "stagecut: " + fifo + ": is not a regular file (a device, pipe or socket); give a file "
                          "stagecut wrote\n");
    }
    {
      // 1 GiB of nothing, sparse: refused by its size, before a byte is read.
      const TempDir dir;
      dir.write("p.json", profileText(4));
      const std::string big = dir.file("big.json");
      { std::ofstream create(big); }
      std::filesystem::resize_file(big, std::uintmax_t{1} << 30);
      const CommandResult result = runStagecut(inDir(run(reader, big), dir.path()));
      CHECK(result.exit_code == 2);
      CHECK(result.err == "stagecut: " + big + ": is 1.00 GiB, more than any document stagecut writes (at most "
                         "512 MiB); check the path\n");
    }
  }
}

TEST_CASE("bubble takes int's largest stage and microbatch counts without overflow",
          "[cli][bubble][hostile]") {
  const CommandResult result = runStagecut("bubble --stages 2147483647 --microbatches 2147483647");
  CHECK(result.exit_code == 0);
  CHECK(result.err.empty());
  CHECK(result.out.find("(N-1)/(M+N-1) = 2147483646/4294967293 = 50.0%") != std::string::npos);
}

TEST_CASE("count of hostile-input cases, for docs/reliability.md", "[.][hostile-count]") {
  std::size_t profile_cases = 0;
  for (const BadProfile& row : badProfiles()) profile_cases += row.skip_inspect ? 3 : 4;
  std::size_t partition_cases = 0;
  for (const BadPartition& row : badPartitions()) partition_cases += row.only_simulate ? 1 : 2;
  WARN("profile readers " << profile_cases << ", partition readers " << partition_cases
                          << ", PipeDream graphs " << badGraphs().size() << ", flags and outputs "
                          << badCommands().size() << ", total "
                          << profile_cases + partition_cases + badGraphs().size() + badCommands().size());
}
