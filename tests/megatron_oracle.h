#pragma once

// Megatron-LM's rules restated from its source at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553
// (NVIDIA/Megatron-LM), not from stagecut's code: the oracle the tests hold stagecut's Megatron
// text to (tests/partitioner_megatron_reading_test.cpp has the list of what is restated where).

#include <algorithm>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace stagecut::testing::megatron {


// Python's re.sub(pattern, lambda x: x.group(1) * int(x.group(2)), text).
inline std::string pythonRepeatSub(const std::string& text, const std::regex& pattern) {
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    for (int k = std::stoi((*it)[2].str()); k > 0; --k) out += (*it)[1].str();
    last = (*it)[0].second;
  }
  out.append(last, text.cend());
  return out;
}

// parse_str_to_list: the stages, or nullopt where it raises (a character not E, L, t or m).
inline std::optional<std::vector<std::string>> megatronParse(std::string layout) {
  layout.erase(std::remove(layout.begin(), layout.end(), ','), layout.end());
  layout = pythonRepeatSub(layout, std::regex(R"(\(([^)]+)\)\*(\d+))"));
  layout = pythonRepeatSub(layout, std::regex(R"((.)\*(\d+))"));
  std::vector<std::string> stages{""};
  for (char c : layout) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 'L' || c == 't' || c == 'm') {
      stages.back() += c;
    } else {
      return std::nullopt;
    }
  }
  return stages;
}

// validate_layer_layout with --mtp-num-layers unset.
inline bool megatronValidates(const std::vector<std::string>& stages, int num_layers) {
  std::string flat;
  for (const std::string& stage : stages) flat += stage;
  return !flat.empty() && flat.front() == 'E' && flat.back() == 'L' && std::count(flat.begin(), flat.end(), 'E') == 1 &&
         std::count(flat.begin(), flat.end(), 'L') == 1 && std::count(flat.begin(), flat.end(), 't') == num_layers &&
         std::count(flat.begin(), flat.end(), 'm') == 0;
}

// The pipeline flags of a Megatron command line, as its argparse leaves them.
struct MegatronArgs {
  int num_layers = 0;
  int pp = 1;  // --pipeline-model-parallel-size's default
  std::optional<std::string> layout;
  std::optional<int> virtual_stages, layers_per_virtual_stage, first, last;
  bool embedding = false, loss = false;
  // What plan --gpus prints beside the pipeline (arguments.py's defaults where absent).
  int tp = 1, cp = 1, micro_batch_size = 1;
  std::optional<int> global_batch_size, recompute_num_layers;
  bool sequence_parallel = false, distributed_optimizer = false, overlap_grad_reduce = false,
       overlap_param_gather = false;
  std::optional<std::string> recompute_granularity, recompute_method;
};

// argparse over "--flag value" and "--flag=value" words, quotes removed; nullopt for a flag it
// does not know (the test prints only these).
inline std::optional<MegatronArgs> megatronArgparse(const std::string& line, int num_layers) {
  std::vector<std::string> words;
  std::istringstream stream(line);
  for (std::string word; stream >> word;) {
    word.erase(std::remove(word.begin(), word.end(), '"'), word.end());
    const std::size_t equals = word.find('=');
    if (word.rfind("--", 0) == 0 && equals != std::string::npos) {
      words.push_back(word.substr(0, equals));
      words.push_back(word.substr(equals + 1));
    } else {
      words.push_back(word);
    }
  }
  MegatronArgs args;
  args.num_layers = num_layers;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& flag = words[i];
    const auto value = [&] { return std::stoi(words.at(++i)); };
    if (flag == "--pipeline-model-parallel-layout") args.layout = words.at(++i);
    else if (flag == "--pipeline-model-parallel-size") args.pp = value();
    else if (flag == "--num-layers") args.num_layers = value();
    else if (flag == "--num-virtual-stages-per-pipeline-rank") args.virtual_stages = value();
    else if (flag == "--num-layers-per-virtual-pipeline-stage") args.layers_per_virtual_stage = value();
    else if (flag == "--decoder-first-pipeline-num-layers") args.first = value();
    else if (flag == "--decoder-last-pipeline-num-layers") args.last = value();
    else if (flag == "--account-for-embedding-in-pipeline-split") args.embedding = true;
    else if (flag == "--account-for-loss-in-pipeline-split") args.loss = true;
    else if (flag == "--tensor-model-parallel-size") args.tp = value();
    else if (flag == "--context-parallel-size") args.cp = value();
    else if (flag == "--micro-batch-size") args.micro_batch_size = value();
    else if (flag == "--global-batch-size") args.global_batch_size = value();
    else if (flag == "--recompute-num-layers") args.recompute_num_layers = value();
    else if (flag == "--recompute-granularity") args.recompute_granularity = words.at(++i);
    else if (flag == "--recompute-method") args.recompute_method = words.at(++i);
    else if (flag == "--sequence-parallel") args.sequence_parallel = true;
    else if (flag == "--use-distributed-optimizer") args.distributed_optimizer = true;
    else if (flag == "--overlap-grad-reduce") args.overlap_grad_reduce = true;
    else if (flag == "--overlap-param-gather") args.overlap_param_gather = true;
    else return std::nullopt;
  }
  return args;
}

// validate_args and TransformerConfig on the pipeline flags: the virtual pipeline size Megatron
// runs (1: none), or nullopt where one of them asserts or raises.
inline std::optional<int> megatronVirtualSize(const MegatronArgs& args) {
  if (int(args.layers_per_virtual_stage.has_value()) + int(args.virtual_stages.has_value()) +
          int(args.layout.has_value()) > 1) {
    return std::nullopt;
  }
  int vpp = 1;  // None, and 1, are no virtual pipeline
  if (args.layout) {
    const auto stages = megatronParse(*args.layout);
    if (!stages || stages->size() % static_cast<std::size_t>(args.pp) != 0) return std::nullopt;
    vpp = static_cast<int>(stages->size()) / args.pp;
  } else if (args.virtual_stages) {
    vpp = *args.virtual_stages;
  } else if (args.layers_per_virtual_stage) {
    if (args.first || args.last) return std::nullopt;
    const int layers = args.num_layers + (args.embedding ? 1 : 0) + (args.loss ? 1 : 0);
    if (layers % args.pp != 0 || *args.layers_per_virtual_stage == 0) return std::nullopt;  // 0: ZeroDivisionError
    if ((layers / args.pp) % *args.layers_per_virtual_stage != 0) return std::nullopt;
    vpp = layers / args.pp / *args.layers_per_virtual_stage;
  }
  if (vpp != 1 && args.pp <= 1) return std::nullopt;  // "pipeline-model-parallel size should be greater than 1"
  if (args.layout && (args.first || args.last || args.embedding || args.loss)) return std::nullopt;
  if (args.layout && !megatronValidates(*megatronParse(*args.layout), args.num_layers)) return std::nullopt;
  return vpp;
}


// What validate_args (megatron/training/arguments.py), the microbatch calculator
// (megatron/core/num_microbatches_calculator.py) and TransformerConfig refuse of a training run
// of `args` on `world_size` GPUs at `seq_length`: the reason, or nullopt where all pass.
inline std::optional<std::string> megatronTrainingRefusal(const MegatronArgs& args, int world_size, int seq_length) {
  const int model_size = args.tp * args.pp * args.cp;  // total_model_size (gtp_weight_remat_size 1)
  if (world_size % model_size != 0) return "world size is not divisible by total_model_size";
  const int dp = world_size / model_size;
  const int global_batch = args.global_batch_size.value_or(args.micro_batch_size * dp);
  if (global_batch % (args.micro_batch_size * dp) != 0) {
    return "global batch size is not divisible by micro batch size times data parallel size";
  }
  if (args.overlap_param_gather && !args.distributed_optimizer) return "--overlap-param-gather needs the distributed optimizer";
  if (args.overlap_param_gather && !args.overlap_grad_reduce) return "--overlap-param-gather needs --overlap-grad-reduce";
  if (args.cp > 1 && seq_length % (2 * args.cp) != 0) return "seq_length must be divisible by 2 x context_parallel_size";
  if (args.recompute_granularity == std::optional<std::string>("selective") && args.recompute_method) {
    return "recompute method is not yet supported for selective recomputing granularity";
  }
  if (args.recompute_granularity && *args.recompute_granularity != "selective" && !args.recompute_num_layers) {
    return "recompute_num_layers must be between 1 and the layers per pipeline stage";
  }
  if (!megatronVirtualSize(args)) return "the pipeline flags do not pass validate_args";
  return std::nullopt;
}

}  // namespace stagecut::testing::megatron
