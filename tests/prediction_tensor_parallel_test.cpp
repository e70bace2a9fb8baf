#include <catch2/catch.hpp>

#include "core/parallel_degrees.h"
#include "core/profile.h"
#include "core/units.h"
#include "prediction/tensor_parallel_comm.h"
#include "tests/test_support.h"

TEST_CASE("a tensor-parallel profile's collectives are priced on a ring, once, into the layers' times",
          "[prediction][tensor-parallel]") {
  stagecut::Profile profile = stagecut::testing::makeProfile(3);
  stagecut::writeParallelDegrees({4, false}, profile.model.config);
  profile.layers[1].backward_input_ms = stagecut::TimeStatsMs::exactly(1.0);
  profile.layers[1].tp_collectives = stagecut::LayerCost::TensorParallelCollectives{2, 1, 1000000};
  const stagecut::Profile unpriced = profile;
  // 4 ranks: 6 ring steps of 0.01 ms, and 6 / 4 x 1 MB at 1 GB/s = 1.5 ms.
  const stagecut::TensorParallelLink link{1e9, 0.01};
  const double one = 6 * 0.01 + 1.5;
  CHECK(stagecut::tensorParallelCollectiveMs(1e6, 4, link) == Approx(one));
  CHECK(stagecut::tensorParallelCollectiveMs(1e6, 1, link) == 0.0);
  CHECK(stagecut::tensorParallelNote(profile, {}).find("not priced") != std::string::npos);
  CHECK(stagecut::tensorParallelNote(profile, link).find(stagecut::formatMs(3 * one) + " ms per microbatch") !=
        std::string::npos);
  // The link as it was given: decimal GB/s.
  CHECK(stagecut::tensorParallelNote(profile, {300e9, 0.005}).find("priced at 300 GB/s, 0.005 ms latency") !=
        std::string::npos);
  stagecut::priceTensorParallelComm(profile, link);
  CHECK(profile.layers[1].forward_ms.median == Approx(unpriced.layers[1].forward_ms.median + 2 * one));
  CHECK(profile.layers[1].forward_ms.min == Approx(unpriced.layers[1].forward_ms.min + 2 * one));
  CHECK(profile.layers[1].backward_ms.median == Approx(unpriced.layers[1].backward_ms.median + one));
  CHECK(profile.layers[1].backward_input_ms->median == Approx(1.0 + one));
  CHECK(profile.layers[0].forward_ms == unpriced.layers[0].forward_ms);
  CHECK(profile.run.extra.contains("tp_link"));
  // Without a bandwidth, or without the degree, nothing moves.
  stagecut::Profile untouched = unpriced;
  stagecut::priceTensorParallelComm(untouched, {});
  CHECK(untouched.layers[1].forward_ms == unpriced.layers[1].forward_ms);
  untouched.model.config = stagecut::testing::makeProfile(3).model.config;
  stagecut::priceTensorParallelComm(untouched, link);
  CHECK(untouched.layers[1].forward_ms == unpriced.layers[1].forward_ms);
  CHECK(stagecut::tensorParallelNote(untouched, link).empty());
}

TEST_CASE("a profile measured at several microbatch sizes has each size's collectives priced by its bytes",
          "[prediction][tensor-parallel][sizes]") {
  stagecut::Profile profile = stagecut::testing::makeSizedProfile(3, {2, 4}, [](stagecut::LayerCost& layer, int size) {
    layer.tp_collectives = stagecut::LayerCost::TensorParallelCollectives{2, 2, 1000000u * static_cast<unsigned>(size)};
  });
  stagecut::writeParallelDegrees({2, false}, profile.model.config);
  const stagecut::Profile unpriced = profile;
  const stagecut::TensorParallelLink link{1e9, 0.0};
  stagecut::priceTensorParallelComm(profile, link);
  REQUIRE(profile.microbatch_sizes.size() == 2u);
  for (std::size_t s = 0; s < 2; ++s) {
    const double bytes = 1e6 * profile.microbatch_sizes[s].microbatch_size;
    const double added = 2 * stagecut::tensorParallelCollectiveMs(bytes, 2, link);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(profile.microbatch_sizes[s].layers[i].forward_ms.median ==
            Approx(unpriced.microbatch_sizes[s].layers[i].forward_ms.median + added));
    }
  }
}
