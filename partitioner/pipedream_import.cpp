#include "partitioner/pipedream_import.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <queue>
#include <sstream>

#include "core/error.h"
#include "core/profile_json.h"
#include "core/units.h"

namespace stagecut {

namespace {

struct GraphNode {
  std::string id;
  std::string description;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  double activation_bytes = 0.0;
  double parameter_bytes = 0.0;
  bool is_input = false;
  int line = 0;
};

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t\r");
  return text.substr(begin, end - begin + 1);
}

class LineParser {
 public:
  // 1e12 bytes (a terabyte) per tensor or layer: far past any real model, and far enough below
  // 2^63 bytes that the sums over a million nodes stay in range. Times are bounded lower (time()).
  static constexpr double kMaxValue = 1e12;

  LineParser(const std::string& source, int line) : where_(source + ":" + std::to_string(line)) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(where_ + ": " + what); }

  double number(const std::string& field, const std::string& text) const {
    // PipeDream writes Python floats: decimal digits, a point, an exponent. strtod would also take
    // hex (0x10), "inf", a sign or leading blanks, none of which PipeDream writes.
    if (!isDecimal(text)) fail(field + "=" + text + " is not a decimal number >= 0 (digits, a point, an exponent)");
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !std::isfinite(value) || value < 0) fail(field + "=" + text + " is not a number >= 0");
    // Sizes become byte counts (at most 2^63) and times are summed: bound both well inside.
    if (value > kMaxValue) fail(field + "=" + text + " is too large; the most is 1e12");
    return value;
  }

  // A compute time in ms: at most a day, the longest a profile's op may take (kLongestOpMs), so
  // that the imported profile reads back.
  double time(const std::string& field, const std::string& text) const {
    const double ms = number(field, text);
    if (ms > kLongestOpMs) {
      fail(field + "=" + text + " ms is longer than a day, which no layer of a run takes; the most is 86400000");
    }
    return ms;
  }

  // "123.0" or "[123.0; 456.0]": PipeDream writes a layer with several outputs as a list.
  double sizeSum(const std::string& field, const std::string& text) const {
    if (text.empty() || text.front() != '[') return number(field, text);
    if (text.back() != ']') fail(field + "=" + text + " opens a list that does not close");
    double total = 0.0;
    std::stringstream items(text.substr(1, text.size() - 2));
    std::string item;
    while (std::getline(items, item, ';')) total += number(field, trim(item));
    if (total > kMaxValue) fail(field + "=" + text + " adds up to more than 1e12");
    return total;
  }

 private:
  static bool isDecimal(const std::string& text) {
    std::size_t i = 0;
    const auto digits = [&] {
      const std::size_t from = i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
      return i - from;
    };
    std::size_t mantissa = digits();
    if (i < text.size() && text[i] == '.') {
      ++i;
      mantissa += digits();
    }
    if (mantissa == 0) return false;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
      ++i;
      if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
      if (digits() == 0) return false;
    }
    return i == text.size();
  }

  std::string where_;
};

const char* const kNodeFormat =
    "expected 'nodeK -- Desc -- forward_compute_time=F, backward_compute_time=B, "
    "activation_size=A, parameter_size=P' or '<tab>nodeA -- nodeB'";

bool isNodeField(const std::string& name) {
  return name == "forward_compute_time" || name == "backward_compute_time" || name == "activation_size" ||
         name == "parameter_size";
}

GraphNode parseNodeLine(const std::string& line, const LineParser& parser) {
  const std::string separator = " -- ";
  const auto id_end = line.find(separator);
  const auto attributes_begin = line.find(separator + "forward_compute_time=");
  if (id_end == std::string::npos || attributes_begin == std::string::npos || attributes_begin < id_end) {
    parser.fail(kNodeFormat);
  }
  GraphNode node;
  node.id = trim(line.substr(0, id_end));
  node.description = trim(line.substr(id_end + separator.size(),
                                      attributes_begin - id_end - separator.size()));
  std::string attributes = line.substr(attributes_begin + separator.size());
  const auto stage_id = attributes.find(separator);
  if (stage_id != std::string::npos) attributes = attributes.substr(0, stage_id);
  std::map<std::string, std::string> values;
  std::stringstream fields(attributes);
  std::string field;
  while (std::getline(fields, field, ',')) {
    field = trim(field);
    const auto equals = field.find('=');
    if (equals == std::string::npos) parser.fail("field '" + field + "' has no '='; " + kNodeFormat);
    const std::string name = field.substr(0, equals);
    if (!isNodeField(name)) {
      parser.fail("node " + node.id + ": '" + name + "' is not a PipeDream node field; " + kNodeFormat);
    }
    // A second value would silently replace the first: which one the graph meant is unknown.
    if (values.count(name)) parser.fail("node " + node.id + " gives " + name + " twice");
    values[name] = trim(field.substr(equals + 1));
  }
  for (const char* name : {"forward_compute_time", "backward_compute_time", "activation_size", "parameter_size"}) {
    if (!values.count(name)) parser.fail("node " + node.id + " has no " + name + "; " + kNodeFormat);
  }
  node.forward_ms = parser.time("forward_compute_time", values["forward_compute_time"]);
  node.backward_ms = parser.time("backward_compute_time", values["backward_compute_time"]);
  node.activation_bytes = parser.sizeSum("activation_size", values["activation_size"]);
  node.parameter_bytes = parser.number("parameter_size", values["parameter_size"]);
  // PipeDream names data-loading nodes Input0, Input1, ...
  node.is_input = node.description.rfind("Input", 0) == 0;
  return node;
}

std::string stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const auto dot = name.find('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// The graph as written: node lines, and edges by their nodes' positions in `nodes`.
struct Graph {
  std::vector<GraphNode> nodes;
  std::vector<std::pair<int, int>> edges;
};

Graph readGraph(const std::string& text, const std::string& source) {
  Graph graph;
  std::map<std::string, int> index_of;
  std::vector<int> edge_lines;
  std::vector<std::pair<std::string, std::string>> edge_names;
  std::stringstream lines(text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // PipeDream's own reader (Python's open(), utf-8) would take the mark into the first node's id.
    if (line_number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) {
      LineParser(source, 1).fail("starts with a UTF-8 byte-order mark (EF BB BF), which PipeDream does not "
                                 "write; save the graph without it");
    }
    if (trim(line).empty()) continue;
    const LineParser parser(source, line_number);
    if (line.front() == '\t' || line.front() == ' ') {
      const std::string edge = trim(line);
      const auto arrow = edge.find(" -- ");
      if (arrow == std::string::npos) parser.fail(kNodeFormat);
      edge_names.emplace_back(trim(edge.substr(0, arrow)), trim(edge.substr(arrow + 4)));
      edge_lines.push_back(line_number);
      continue;
    }
    GraphNode node = parseNodeLine(line, parser);
    node.line = line_number;
    if (index_of.count(node.id)) parser.fail("node " + node.id + " is defined twice");
    index_of[node.id] = static_cast<int>(graph.nodes.size());
    graph.nodes.push_back(node);
  }
  for (std::size_t e = 0; e < edge_names.size(); ++e) {
    const LineParser parser(source, edge_lines[e]);
    for (const std::string* name : {&edge_names[e].first, &edge_names[e].second}) {
      if (!index_of.count(*name)) parser.fail("edge names node " + *name + ", which no node line defines");
    }
    graph.edges.emplace_back(index_of[edge_names[e].first], index_of[edge_names[e].second]);
  }
  return graph;
}

// Kahn's algorithm, smallest position of appearance first, so the order is deterministic.
// `consumers` is filled with each node's successors.
std::vector<int> topologicalOrder(const Graph& graph, const std::string& source,
                                  std::vector<std::vector<int>>& consumers) {
  const int count = static_cast<int>(graph.nodes.size());
  consumers.assign(static_cast<std::size_t>(count), {});
  std::vector<int> pending(count, 0);
  for (const auto& [from, to] : graph.edges) {
    consumers[from].push_back(to);
    ++pending[to];
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int n = 0; n < count; ++n) {
    if (pending[n] == 0) ready.push(n);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int next : consumers[n]) {
      if (--pending[next] == 0) ready.push(next);
    }
  }
  if (static_cast<int>(order.size()) != count) {
    for (int n = 0; n < count; ++n) {
      if (pending[n] > 0) {
        throw Error(source + ":" + std::to_string(graph.nodes[n].line) + ": node " + graph.nodes[n].id +
                    " is on a cycle; a PipeDream graph must be acyclic");
      }
    }
  }
  return order;
}

// The compute nodes in `kept` order as the profile's layers: a tensor produced at position p
// and last consumed at q crosses every cut p..q-1, so it counts in the output of layers p..q-1.
void addLayers(const Graph& graph, const std::vector<int>& kept, const std::vector<int>& position,
               const std::vector<std::vector<int>>& consumers, const std::string& source, Profile& profile) {
  std::vector<double> crossing(kept.size() + 1, 0.0);
  for (int n : kept) {
    int last_use = position[n];
    for (int next : consumers[n]) last_use = std::max(last_use, position[next]);
    crossing[position[n]] += graph.nodes[n].activation_bytes;
    crossing[last_use] -= graph.nodes[n].activation_bytes;
  }
  double running = 0.0;
  for (std::size_t p = 0; p < kept.size(); ++p) {
    const GraphNode& node = graph.nodes[kept[p]];
    running += crossing[p];
    if (running >= 9.2e18) {
      throw Error(source + ":" + std::to_string(node.line) + ": node " + node.id +
                  ": the tensors crossing the cut after it add up to more than 8 EiB");
    }
    LayerCost layer;
    layer.index = static_cast<int>(p);
    layer.name = node.id;
    layer.kind = trim(node.description.substr(0, node.description.find('(')));
    layer.forward_ms = TimeStatsMs::exactly(node.forward_ms);
    layer.backward_ms = TimeStatsMs::exactly(node.backward_ms);
    layer.param_bytes = static_cast<std::uint64_t>(std::llround(node.parameter_bytes));
    layer.params = layer.param_bytes / 4;
    layer.activation_bytes = static_cast<std::uint64_t>(std::llround(node.activation_bytes));
    layer.output_bytes = static_cast<std::uint64_t>(std::llround(std::max(0.0, running)));
    profile.layers.push_back(layer);
  }
}

}  // namespace

PipedreamImport importPipedreamGraph(const std::string& text, const std::string& source) {
  const Graph graph = readGraph(text, source);
  std::vector<std::vector<int>> consumers;
  const std::vector<int> order = topologicalOrder(graph, source, consumers);
  const int count = static_cast<int>(graph.nodes.size());

  PipedreamImport result;
  std::vector<int> position(count, -1);
  std::vector<int> kept;
  for (int n : order) {
    const GraphNode& node = graph.nodes[n];
    if (node.is_input) {
      result.dropped_inputs.push_back(node.id + " (" + node.description + ", " +
                                      formatMs(node.forward_ms + node.backward_ms) + " ms)");
      continue;
    }
    position[n] = static_cast<int>(kept.size());
    kept.push_back(n);
  }
  if (graph.nodes.empty()) {
    throw Error(source + ": no node lines; " + kNodeFormat);
  }
  if (kept.empty()) throw Error(source + ": no compute nodes: every node is an Input node");

  Profile& profile = result.profile;
  profile.model.name = stem(source);
  profile.model.source = "import:pipedream";
  profile.model.config = {{"graph", source},
                          {"nodes", count},
                          {"dropped_input_nodes", static_cast<int>(result.dropped_inputs.size())}};
  addLayers(graph, kept, position, consumers, source, profile);
  return result;
}

}  // namespace stagecut
