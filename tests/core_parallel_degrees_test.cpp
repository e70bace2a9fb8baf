#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/parallel_degrees.h"

using stagecut::ParallelDegrees;
using stagecut::readParallelDegrees;
using stagecut::writeParallelDegrees;

TEST_CASE("the parallel degrees a model.config records read back as written", "[core][parallel-degrees]") {
  for (const ParallelDegrees degrees : {ParallelDegrees{2, false}, ParallelDegrees{8, true}, ParallelDegrees{1024, false}}) {
    nlohmann::json config = {{"layers", 4}};
    writeParallelDegrees(degrees, config);
    CHECK(readParallelDegrees(config, "p.json") == degrees);
    CHECK(config["layers"] == 4);
  }
}

TEST_CASE("unsharded layers add nothing to model.config, so older profiles keep their bytes", "[core][parallel-degrees]") {
  nlohmann::json config = {{"layers", 4}};
  writeParallelDegrees(ParallelDegrees{}, config);
  CHECK(config == nlohmann::json{{"layers", 4}});
  CHECK(readParallelDegrees(config, "p.json") == ParallelDegrees{});
}

TEST_CASE("a recorded degree that is no degree is refused naming the file and the field", "[core][parallel-degrees][errors]") {
  const auto refusal = [](const nlohmann::json& config) {
    try {
      readParallelDegrees(config, "p.json");
    } catch (const stagecut::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal({{"tensor_parallel", 0}}) ==
        "p.json: model.config field \"tensor_parallel\" must be a whole number from 1 to 1024, got 0; profile the "
        "model again");
  CHECK(refusal({{"tensor_parallel", 2.5}}) ==
        "p.json: model.config field \"tensor_parallel\" must be a whole number from 1 to 1024, got 2.5; profile the "
        "model again");
  CHECK(refusal({{"tensor_parallel", 4096}}) ==
        "p.json: model.config field \"tensor_parallel\" must be a whole number from 1 to 1024, got 4096; profile "
        "the model again");
  CHECK(refusal({{"tensor_parallel", 2}, {"sequence_parallel", "yes"}}) ==
        "p.json: model.config field \"sequence_parallel\" must be true or false, got \"yes\"; profile the model again");
}
