// The `mlp` family (fast, for tests) and `vgg16` (conv blocks with few parameters and much
// compute, fully connected layers with the opposite: where equal-parameter splits fail most).
#include "profiler/recorded_config.h"
#include "profiler/zoo_builders.h"
#include "profiler/zoo_family.h"

namespace stagecut {

namespace {

struct LinearReluImpl : torch::nn::Module {
  LinearReluImpl(int64_t in, int64_t out, bool with_relu, bool flatten_input)
      : linear(register_module("linear", torch::nn::Linear(in, out))), relu(with_relu), flatten(flatten_input) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = linear(flatten ? x.flatten(1) : x);
    return relu ? torch::relu(y) : y;
  }
  torch::nn::Linear linear;
  bool relu, flatten;
};
TORCH_MODULE(LinearRelu);

struct ConvReluImpl : torch::nn::Module {
  ConvReluImpl(int64_t in, int64_t out)
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::relu(conv(x)); }
  torch::nn::Conv2d conv;
};
TORCH_MODULE(ConvRelu);

struct MaxPoolImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x) { return torch::max_pool2d(x, 2); }
};
TORCH_MODULE(MaxPool);

ChainLayer crossEntropyLoss() {
  return lossLayer("loss", "CrossEntropyLoss", [](const torch::Tensor& logits, const torch::Tensor& target) {
    return torch::nn::functional::cross_entropy(logits, target);
  });
}

const char* const kMlpName = "mlp";
const char* const kVgg16Name = "vgg16";

LayerChain describeMlp(const ZooOptions& options) {
  const int depth = options.layers ? options.layers : 4;
  const int width = options.hidden ? options.hidden : 256;
  LayerChain chain;
  chain.model_name = kMlpName;
  chain.source = zooSource(kMlpName);
  ZooOptions settings;
  settings.layers = depth;
  settings.hidden = width;
  settings.seed = options.seed;
  chain.config = recordZooConfig(settings);
  for (int i = 0; i < depth; ++i) {
    addLayer(chain, options.seed, "fc." + std::to_string(i), "Linear+ReLU",
             [width] { return LinearRelu(width, width, true, false); });
  }
  chain.layers.push_back(lossLayer("loss", "MSELoss", [](const torch::Tensor& x, const torch::Tensor& target) {
    return torch::mse_loss(x, target);
  }));
  chain.make_batch = [width](int rows, std::uint64_t seed) {
    auto generator = seededGenerator(seed);
    return ChainBatch{torch::randn({rows, width}, generator), torch::randn({rows, width}, generator)};
  };
  return chain;
}

LayerChain describeVgg16(const ZooOptions& options) {
  const int image = options.image_size ? options.image_size : 224;
  const int classes = options.classes ? options.classes : 1000;
  LayerChain chain;
  chain.model_name = kVgg16Name;
  chain.source = zooSource(kVgg16Name);
  ZooOptions settings;
  settings.image_size = image;
  settings.classes = classes;
  settings.seed = options.seed;
  chain.config = recordZooConfig(settings);
  // VGG16's configuration D (Simonyan and Zisserman 2015): channels per conv, 0 for a pool.
  const int plan[] = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  int channels = 3, conv_index = 0, pool_index = 0;
  for (int out : plan) {
    if (out == 0) {
      addLayer(chain, options.seed, "pool." + std::to_string(pool_index++), "MaxPool2d", [] { return MaxPool(); });
    } else {
      addLayer(chain, options.seed, "conv." + std::to_string(conv_index++), "Conv2d+ReLU",
               [channels, out] { return ConvRelu(channels, out); });
      channels = out;
    }
  }
  const int64_t spatial = image / 32;
  addLayer(chain, options.seed, "fc.0", "Linear+ReLU", [spatial] { return LinearRelu(512 * spatial * spatial, 4096, true, true); });
  addLayer(chain, options.seed, "fc.1", "Linear+ReLU", [] { return LinearRelu(4096, 4096, true, false); });
  addLayer(chain, options.seed, "fc.2", "Linear", [classes] { return LinearRelu(4096, classes, false, false); });
  chain.layers.push_back(crossEntropyLoss());
  chain.make_batch = [image, classes](int rows, std::uint64_t seed) {
    auto generator = seededGenerator(seed);
    ChainBatch batch;
    batch.input = torch::randn({rows, 3, image, image}, generator);
    batch.target = torch::randint(0, classes, {rows}, generator, torch::kLong);
    return batch;
  };
  return chain;
}

}  // namespace

ModelFamily mlpFamily() {
  ModelFamily family;
  family.name = kMlpName;
  family.settings = {"layers", "hidden"};
  family.check = checkMlp;
  family.describe = describeMlp;
  return family;
}

ModelFamily vgg16Family() {
  ModelFamily family;
  family.name = kVgg16Name;
  family.settings = {"image_size", "classes"};
  family.check = checkVgg16;
  family.describe = describeVgg16;
  return family;
}

std::uint64_t layerSeed(std::uint64_t seed, std::size_t index) {
  // splitmix64's finalizer over the seed and the index: nearby seeds and indices give unrelated
  // streams.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(index) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::mutex& globalGeneratorLock() {
  static std::mutex lock;
  return lock;
}

}  // namespace stagecut
