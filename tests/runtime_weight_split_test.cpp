#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

#include "profiler/layer_chain.h"
#include "profiler/torch_runtime.h"
#include "profiler/zoo.h"
#include "profiler/weight_gradient_split.h"
#include "tests/gradient_check.h"

using stagecut::LayerChain;
using stagecut::WeightGradientSplit;
using stagecut::testing::checkSameGradients;
using torch::autograd::Node;

namespace {

LayerChain tinyGpt() {
  stagecut::ZooOptions options;
  options.family = "gpt";
  options.preset = "gpt-tiny";
  options.layers = 2;
  options.seq = 16;
  options.vocab = 256;
  options.seed = 5;
  return stagecut::buildZooModel(options);  // embed, block.0, block.1, head, loss
}

std::vector<torch::Tensor> parametersOf(const LayerChain& chain, int first, int last) {
  std::vector<torch::Tensor> all;
  for (int i = first; i <= last; ++i) {
    all.insert(all.end(), chain.layers[i].parameters.begin(), chain.layers[i].parameters.end());
  }
  return all;
}

// Counts how often each operation of a graph runs, phase by phase.
class RunCounter : public torch::autograd::FunctionPreHook {
 public:
  RunCounter(std::map<Node*, int>& runs, Node* node) : runs_(runs), node_(node) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    ++runs_[node_];
    return grads;
  }

 private:
  std::map<Node*, int>& runs_;
  Node* node_;
};

int hookEveryOperation(const torch::Tensor& root, std::map<Node*, int>& runs) {
  std::vector<Node*> pending{root.grad_fn().get()};
  std::set<Node*> seen;
  while (!pending.empty()) {
    Node* node = pending.back();
    pending.pop_back();
    if (node == nullptr || !seen.insert(node).second) continue;
    node->add_pre_hook(std::make_unique<RunCounter>(runs, node));
    for (const auto& edge : node->next_edges()) pending.push_back(edge.function.get());
  }
  return static_cast<int>(seen.size());
}

// One stage of the chain, layers first..last, split into B and W as the zero-bubble executor
// does; returns its input gradient, and leaves the weights' gradients in .grad().
struct SplitRun {
  torch::Tensor input_grad;
  int operations = 0;
  int joins = 0;
  int run_in_b = 0;
  int run_in_w = 0;
};

SplitRun runSplit(const LayerChain& chain, int first, int last, torch::Tensor input, const torch::Tensor& target) {
  SplitRun run;
  if (input.is_floating_point()) input.requires_grad_(true);
  std::vector<torch::Tensor> outputs;
  torch::Tensor activation = input;
  for (int i = first; i <= last; ++i) outputs.push_back(activation = chain.layers[i].forward(activation, target));
  const torch::Tensor root = outputs.back();
  std::vector<torch::Tensor> targets;
  if (input.requires_grad()) targets.push_back(input);
  for (std::size_t j = 0; j + 1 < outputs.size(); ++j) targets.push_back(outputs[j]);
  WeightGradientSplit split(root, targets, parametersOf(chain, first, last));
  std::map<Node*, int> runs;
  run.operations = hookEveryOperation(root, runs);
  run.joins = split.joinCount();
  const torch::Tensor root_grad = torch::ones_like(root);
  std::vector<torch::Tensor> target_grads;
  if (!targets.empty()) target_grads = torch::autograd::grad({root}, targets, {root_grad}, true, false, true);
  for (const auto& [node, count] : runs) run.run_in_b += count > 0;
  runs.clear();
  split.runWeightBackward(root_grad, target_grads);
  for (const auto& [node, count] : runs) run.run_in_w += count > 0;
  if (input.requires_grad()) run.input_grad = target_grads[0];
  return run;
}

}  // namespace

TEST_CASE("B then W at operation level gives a transformer stage's full gradients", "[runtime][weight-split]") {
  stagecut::pinThreads(1);
  const LayerChain split_chain = tinyGpt();
  const LayerChain reference = tinyGpt();
  const auto batch = reference.make_batch(2, 9);
  // The stage after the embedding: a float input that needs its gradient, then blocks, head, loss.
  torch::Tensor hidden;
  {
    torch::NoGradGuard no_grad;
    hidden = reference.layers[0].forward(batch.input, batch.target);
  }
  const SplitRun run = runSplit(split_chain, 1, 4, hidden.clone(), batch.target);

  torch::Tensor reference_input = hidden.clone().requires_grad_(true);
  torch::Tensor activation = reference_input;
  for (int i = 1; i <= 4; ++i) activation = reference.layers[i].forward(activation, batch.target);
  activation.backward();
  checkSameGradients(parametersOf(split_chain, 1, 4), parametersOf(reference, 1, 4));
  CHECK(torch::allclose(run.input_grad, reference_input.grad(), 1e-5, 1e-7));

  // W starts where each weight meets B's path (one per Linear, LayerNorm, ...) and runs the
  // weight side only: far fewer operations than B, which ran the whole backward's input side.
  CHECK(run.joins >= 2 * 6);  // each block: 2 LayerNorms and at least 4 Linears
  CHECK(run.run_in_b > run.operations / 2);
  CHECK(run.run_in_w < run.run_in_b / 2);
}

TEST_CASE("a first stage, whose integer input has no gradient, gets its weights' gradients from W",
          "[runtime][weight-split]") {
  const LayerChain split_chain = tinyGpt();
  const LayerChain reference = tinyGpt();
  const auto batch = reference.make_batch(2, 4);
  // Embed alone: B has no target at all, so W starts from the root with the gradient B was given.
  runSplit(split_chain, 0, 0, batch.input, batch.target);
  const torch::Tensor embedded = reference.layers[0].forward(batch.input, batch.target);
  embedded.backward(torch::ones_like(embedded));
  // Embed and a block: the embedding's weights meet B's path where the embedding's output is a target.
  const LayerChain split_two = tinyGpt();
  const LayerChain reference_two = tinyGpt();
  runSplit(split_two, 0, 1, batch.input, batch.target);
  const torch::Tensor block_output =
      reference_two.layers[1].forward(reference_two.layers[0].forward(batch.input, batch.target), batch.target);
  block_output.backward(torch::ones_like(block_output));
  checkSameGradients(parametersOf(split_chain, 0, 0), parametersOf(reference, 0, 0));
  checkSameGradients(parametersOf(split_two, 0, 1), parametersOf(reference_two, 0, 1));
}

TEST_CASE("a weight used twice along B's path is not counted twice", "[runtime][weight-split]") {
  // y = sum(tanh(tanh(x W) W)): W's first use leads to its second, as tied embeddings do.
  torch::manual_seed(3);
  const torch::Tensor weight = torch::randn({8, 8}, torch::requires_grad());
  const torch::Tensor reference_weight = weight.detach().clone().requires_grad_(true);
  const torch::Tensor x = torch::randn({4, 8});
  torch::Tensor input = x.clone().requires_grad_(true);
  const torch::Tensor root = torch::tanh(torch::matmul(torch::tanh(torch::matmul(input, weight)), weight)).sum();
  WeightGradientSplit split(root, {input}, {weight});
  const torch::Tensor root_grad = torch::ones_like(root);
  const auto target_grads = torch::autograd::grad({root}, {input}, {root_grad}, true, false, true);
  split.runWeightBackward(root_grad, target_grads);
  torch::tanh(torch::matmul(torch::tanh(torch::matmul(x, reference_weight)), reference_weight)).sum().backward();
  REQUIRE(weight.grad().defined());
  CHECK(torch::allclose(weight.grad(), reference_weight.grad(), 1e-5, 1e-7));
}
