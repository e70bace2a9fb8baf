#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "partitioner/pipedream_import.h"

namespace {

std::string sampleGraph() {
  std::ifstream in(std::string(STAGECUT_SOURCE_DIR) + "/data/pipedream/residual-block.graph.txt");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const char* const kNode =
    " -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size=100.0, parameter_size=40.0";

}  // namespace

TEST_CASE("the PipeDream importer drops Input nodes and orders the branch topologically", "[partitioner][import]") {
  const stagecut::PipedreamImport imported = stagecut::importPipedreamGraph(sampleGraph(), "graph.txt");
  const stagecut::Profile& profile = imported.profile;
  CHECK(imported.dropped_inputs == std::vector<std::string>{"node1 (Input0, 0.750 ms)"});
  REQUIRE(profile.layerCount() == 7);
  std::vector<std::string> names;
  for (const auto& layer : profile.layers) names.push_back(layer.name);
  CHECK(names == std::vector<std::string>{"node2", "node3", "node4", "node5", "node6", "node7", "node8"});
  CHECK(profile.layers[0].kind == "Conv2d");
  CHECK(profile.layers[0].forward_ms.median == 1.2);
  CHECK(profile.layers[0].backward_ms.median == 2.4);
  CHECK(profile.layers[0].param_bytes == 7168);
  CHECK(profile.layers[0].params == 1792);
  CHECK(profile.model.source == "import:pipedream");
  // A list of activation sizes is summed.
  CHECK(profile.layers[5].activation_bytes == 262144);
}

TEST_CASE("bytes crossing a cut count every tensor produced before it and used after it", "[partitioner][import]") {
  const stagecut::Profile profile = stagecut::importPipedreamGraph(sampleGraph(), "graph.txt").profile;
  const std::uint64_t mib4 = 4194304;
  CHECK(profile.layers[0].output_bytes == mib4);      // conv -> relu
  CHECK(profile.layers[1].output_bytes == mib4);      // relu feeds both branches
  CHECK(profile.layers[2].output_bytes == 2 * mib4);  // relu (for the shortcut) + 3x3 conv
  CHECK(profile.layers[3].output_bytes == 2 * mib4);  // both branches, waiting for the add
  CHECK(profile.layers[4].output_bytes == mib4);
  CHECK(profile.layers[5].output_bytes == 262144);
  CHECK(profile.layers[6].output_bytes == 0);
}

TEST_CASE("the PipeDream importer names the line of a malformed input", "[partitioner][import][errors]") {
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph("node1 -- Linear\n", "g.txt"),
                    "g.txt:1: expected 'nodeK -- Desc -- forward_compute_time=F, "
                    "backward_compute_time=B, activation_size=A, parameter_size=P' or "
                    "'<tab>nodeA -- nodeB'");
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph(std::string("node1 -- A") + kNode + "\n\tnode1 -- node9\n", "g.txt"),
                    "g.txt:2: edge names node node9, which no node line defines");
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph(std::string("node1 -- A") + kNode + "\nnode1 -- B" + kNode + "\n", "g.txt"),
                    "g.txt:2: node node1 is defined twice");
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph(std::string("node1 -- A") + kNode + "\nnode2 -- B" + kNode +
                                                       "\n\tnode1 -- node2\n\tnode2 -- node1\n", "g.txt"),
                    "g.txt:1: node node1 is on a cycle; a PipeDream graph must be acyclic");
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph(std::string("node1 -- Input0") + kNode + "\n", "g.txt"),
                    "g.txt: no compute nodes: every node is an Input node");
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph(
                        "node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=[1; 2, parameter_size=0\n", "g.txt"),
                    "g.txt:1: activation_size=[1; 2 opens a list that does not close");
}

TEST_CASE("the PipeDream importer takes every decimal form Python writes, and nothing else", "[partitioner][import]") {
  // Python's repr of a float: 1.0, 0.5, 1e-05, 1.5e+20; hand edits: 7, 3., .25, 2E3.
  const std::pair<const char*, double> forms[] = {{"1.0", 1.0},     {"0.5", 0.5}, {"1e-05", 1e-05}, {"1.5e+07", 1.5e7},
                                                  {"7", 7.0},       {"3.", 3.0},  {".25", 0.25},    {"2E3", 2000.0}};
  for (const auto& [text, value] : forms) {
    INFO(text);
    const std::string graph = std::string("node1 -- Linear -- forward_compute_time=") + text +
                              ", backward_compute_time=2.0, activation_size=100.0, parameter_size=40.0\n";
    CHECK(stagecut::importPipedreamGraph(graph, "g.txt").profile.layers[0].forward_ms.median == value);
  }
  // A day is the longest op a profile may hold: a longer one would import but not read back.
  CHECK_THROWS_WITH(stagecut::importPipedreamGraph("node1 -- Linear -- forward_compute_time=1, backward_compute_time="
                                                   "86400000.5, activation_size=100.0, parameter_size=40.0\n",
                                                   "g.txt"),
                    "g.txt:1: backward_compute_time=86400000.5 ms is longer than a day, which no layer of a run "
                    "takes; the most is 86400000");
  CHECK(stagecut::importPipedreamGraph("node1 -- Linear -- forward_compute_time=86400000, backward_compute_time=2.0, "
                                       "activation_size=100.0, parameter_size=40.0\n",
                                       "g.txt")
            .profile.layers[0]
            .forward_ms.median == 86400000.0);
  for (const char* text : {"0x10", "+1", "1e", ".", "e5", "1.2.3", "1_000", "１"}) {
    INFO(text);
    const std::string graph = std::string("node1 -- Linear -- forward_compute_time=") + text +
                              ", backward_compute_time=2.0, activation_size=100.0, parameter_size=40.0\n";
    CHECK_THROWS_AS(stagecut::importPipedreamGraph(graph, "g.txt"), stagecut::Error);
  }
}
