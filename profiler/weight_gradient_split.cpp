#include "profiler/weight_gradient_split.h"

#include <map>
#include <set>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace stagecut {

namespace {

using torch::autograd::Edge;
using torch::autograd::Node;
using torch::autograd::variable_list;

// Keeps what the engine hands an operation during B, unchanged.
class GradientCapture : public torch::autograd::FunctionPreHook {
 public:
  explicit GradientCapture(std::shared_ptr<variable_list> kept) : kept_(std::move(kept)) {}
  variable_list operator()(const variable_list& grads) override {
    *kept_ = grads;
    return grads;
  }

 private:
  std::shared_ptr<variable_list> kept_;
};

// The operations under a root, each with its parents (the operations nearer the root).
struct OperationGraph {
  std::map<Node*, std::vector<Node*>> parents;
  std::map<Node*, std::shared_ptr<Node>> owner;

  const std::vector<Node*>& parentsOf(Node* node) const {
    static const std::vector<Node*> kNone;
    const auto found = parents.find(node);
    return found == parents.end() ? kNone : found->second;
  }
};

OperationGraph graphUnder(const torch::Tensor& root) {
  OperationGraph graph;
  std::vector<Node*> pending;
  if (root.grad_fn()) {
    graph.owner[root.grad_fn().get()] = root.grad_fn();
    pending.push_back(root.grad_fn().get());
  }
  while (!pending.empty()) {
    Node* node = pending.back();
    pending.pop_back();
    for (const Edge& edge : node->next_edges()) {
      if (!edge.is_valid()) continue;
      Node* child = edge.function.get();
      graph.parents[child].push_back(node);
      if (graph.owner.emplace(child, edge.function).second) pending.push_back(child);
    }
  }
  return graph;
}

// B's path: every operation from which a target (or the root itself) is reached.
std::set<Node*> inputGradientPath(const torch::Tensor& root, const std::vector<torch::Tensor>& targets,
                                  const OperationGraph& graph) {
  std::set<Node*> on_path;
  std::vector<Node*> seeds;
  if (root.grad_fn()) seeds.push_back(root.grad_fn().get());
  for (const auto& target : targets) {
    Node* node = torch::autograd::impl::gradient_edge(target).function.get();
    if (node != nullptr && graph.owner.count(node) > 0) seeds.push_back(node);
  }
  while (!seeds.empty()) {
    Node* node = seeds.back();
    seeds.pop_back();
    if (!on_path.insert(node).second) continue;
    for (Node* parent : graph.parentsOf(node)) seeds.push_back(parent);
  }
  return on_path;
}

}  // namespace

struct WeightGradientSplit::Impl {
  struct Join {
    std::shared_ptr<Node> node;
    std::shared_ptr<variable_list> captured = std::make_shared<variable_list>();
  };
  // Weights whose gradient paths meet B's path at the same operations, differentiated together.
  struct WeightGroup {
    std::vector<torch::Tensor> weights;
    std::vector<int> joins;  // indices into joins
    // One join leads to another (a weight used twice along B's path, as tied embeddings are):
    // starting W from both would count the first's share twice, so W starts from the root.
    bool from_root = false;
  };
  // A weight the root's graph uses, and its joins (indices into joins).
  struct ReachedWeight {
    torch::Tensor weight;
    std::set<int> joins;
  };
  torch::Tensor root;
  std::vector<torch::Tensor> targets;
  std::vector<Join> joins;
  std::vector<WeightGroup> groups;
  std::vector<torch::Tensor> unreached;  // weights the root's graph does not use

  std::vector<ReachedWeight> findJoins(const std::vector<torch::Tensor>& weights, const OperationGraph& graph,
                                       const std::set<Node*>& on_b_path);
  void groupWeights(const std::vector<ReachedWeight>& reached);
  void markGroupsFromRoot();
};

// Each weight's joins: walking up from its accumulator, the first operations on B's path.
std::vector<WeightGradientSplit::Impl::ReachedWeight> WeightGradientSplit::Impl::findJoins(
    const std::vector<torch::Tensor>& weights, const OperationGraph& graph, const std::set<Node*>& on_b_path) {
  std::map<Node*, int> join_index;
  std::vector<ReachedWeight> reached;
  for (const auto& weight : weights) {
    Node* accumulator = torch::autograd::impl::gradient_edge(weight).function.get();
    if (accumulator == nullptr || graph.owner.count(accumulator) == 0) {
      unreached.push_back(weight);
      continue;
    }
    std::set<int> found;
    std::set<Node*> seen;
    std::vector<Node*> walk{accumulator};
    while (!walk.empty()) {
      Node* node = walk.back();
      walk.pop_back();
      if (!seen.insert(node).second) continue;
      if (on_b_path.count(node) > 0) {
        auto [it, added] = join_index.emplace(node, static_cast<int>(joins.size()));
        if (added) joins.push_back({graph.owner.at(node)});
        found.insert(it->second);
        continue;
      }
      for (Node* parent : graph.parentsOf(node)) walk.push_back(parent);
    }
    reached.push_back({weight, found});
  }
  return reached;
}

// Weights sharing a join go in one group (a Linear's weight and bias meet B at one addmm).
void WeightGradientSplit::Impl::groupWeights(const std::vector<ReachedWeight>& reached) {
  std::vector<int> group_of_join(joins.size(), -1);
  for (const ReachedWeight& weight : reached) {
    int group = -1;
    for (int join : weight.joins) {
      if (group_of_join[join] >= 0) group = group_of_join[join];
    }
    if (group < 0) {
      group = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    WeightGroup& target_group = groups[group];
    target_group.weights.push_back(weight.weight);
    for (int join : weight.joins) {
      const int previous = group_of_join[join];
      if (previous >= 0 && previous != group) {
        // Two groups meet at this join: fold the older one into this.
        WeightGroup& old = groups[previous];
        target_group.weights.insert(target_group.weights.end(), old.weights.begin(), old.weights.end());
        for (int moved : old.joins) group_of_join[moved] = group;
        target_group.joins.insert(target_group.joins.end(), old.joins.begin(), old.joins.end());
        old = WeightGroup{};
      }
      if (group_of_join[join] != group) {
        group_of_join[join] = group;
        target_group.joins.push_back(join);
      }
    }
  }
}

// This runs in every B, on the stage's whole graph below each join: only groups with several
// joins (a weight used twice) can have one lead to another, so only those are walked.
void WeightGradientSplit::Impl::markGroupsFromRoot() {
  for (auto& group : groups) {
    if (group.joins.size() < 2) continue;
    std::set<Node*> group_joins;
    for (int index : group.joins) group_joins.insert(joins[index].node.get());
    for (int index : group.joins) {
      std::set<Node*> seen;
      std::vector<Node*> walk;
      for (const Edge& edge : joins[index].node->next_edges()) walk.push_back(edge.function.get());
      while (!walk.empty() && !group.from_root) {
        Node* node = walk.back();
        walk.pop_back();
        if (node == nullptr || !seen.insert(node).second) continue;
        if (group_joins.count(node) > 0) group.from_root = true;
        for (const Edge& edge : node->next_edges()) walk.push_back(edge.function.get());
      }
    }
  }
}

WeightGradientSplit::WeightGradientSplit(const torch::Tensor& root, const std::vector<torch::Tensor>& targets,
                                         const std::vector<torch::Tensor>& weights)
    : impl_(std::make_unique<Impl>()) {
  impl_->root = root;
  impl_->targets = targets;
  const OperationGraph graph = graphUnder(root);
  impl_->groupWeights(impl_->findJoins(weights, graph, inputGradientPath(root, targets, graph)));
  impl_->markGroupsFromRoot();
  for (auto& join : impl_->joins) join.node->add_pre_hook(std::make_unique<GradientCapture>(join.captured));
}

WeightGradientSplit::~WeightGradientSplit() = default;

int WeightGradientSplit::joinCount() const { return static_cast<int>(impl_->joins.size()); }

void WeightGradientSplit::runWeightBackward(const torch::Tensor& root_grad,
                                            const std::vector<torch::Tensor>& target_grads,
                                            const GradientSink& add_gradient) {
  // A join B did not run (it is a target's or the root's own operation, where B stops) gets the
  // gradient B started from or returned for that tensor.
  const auto known_gradients = [&](const Impl::Join& join) {
    variable_list grads(join.node->num_inputs());
    const auto place = [&](const torch::Tensor& tensor, const torch::Tensor& grad) {
      const Edge edge = torch::autograd::impl::gradient_edge(tensor);
      if (edge.function.get() == join.node.get() && grad.defined()) grads[edge.input_nr] = grad;
    };
    place(impl_->root, root_grad);
    for (std::size_t t = 0; t < impl_->targets.size() && t < target_grads.size(); ++t) {
      place(impl_->targets[t], target_grads[t]);
    }
    return grads;
  };
  auto& engine = torch::autograd::Engine::get_default_engine();
  for (const auto& group : impl_->groups) {
    if (group.weights.empty()) continue;
    torch::autograd::edge_list roots;
    variable_list root_grads;
    if (group.from_root) {
      roots.push_back(torch::autograd::impl::gradient_edge(impl_->root));
      root_grads.push_back(root_grad);
    }
    for (int index : group.from_root ? std::vector<int>{} : group.joins) {
      const Impl::Join& join = impl_->joins[index];
      const variable_list grads = join.captured->empty() ? known_gradients(join) : *join.captured;
      for (std::size_t input = 0; input < grads.size(); ++input) {
        if (!grads[input].defined()) continue;
        roots.emplace_back(join.node, static_cast<std::uint32_t>(input));
        root_grads.push_back(grads[input]);
      }
    }
    if (roots.empty()) continue;  // no gradient reached these weights: they stay as they are
    torch::autograd::edge_list outputs;
    for (const auto& weight : group.weights) outputs.push_back(torch::autograd::impl::gradient_edge(weight));
    const variable_list weight_grads = engine.execute(roots, root_grads, /*keep_graph=*/true,
                                                      /*create_graph=*/false, /*accumulate_grad=*/false, outputs);
    for (std::size_t w = 0; w < group.weights.size(); ++w) {
      if (!weight_grads[w].defined()) continue;
      torch::Tensor weight = group.weights[w];
      if (add_gradient) {
        add_gradient(weight, weight_grads[w]);
      } else if (weight.grad().defined()) {
        weight.mutable_grad().add_(weight_grads[w]);
      } else {
        weight.mutable_grad() = weight_grads[w];  // autograd's own new tensor: no copy
      }
    }
  }
}

}  // namespace stagecut
