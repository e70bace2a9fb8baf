#include <catch2/catch.hpp>

#include <vector>

#include "profiler/clock_warmup.h"

namespace {

// Returns the given durations in turn, as a GPU whose clock ramps up would.
class ScriptedTimer : public stagecut::RegionTimer {
 public:
  explicit ScriptedTimer(std::vector<double> durations) : durations_(std::move(durations)) {}
  void start() override {}
  double stopMs() override {
    const double ms = durations_[std::min(next_, durations_.size() - 1)];
    ++next_;
    return ms;
  }
  std::string name() const override { return "scripted"; }
  std::size_t calls() const { return next_; }

 private:
  std::vector<double> durations_;
  std::size_t next_ = 0;
};

}  // namespace

TEST_CASE("the warm-up runs until the clock's ramp ends and reports the steady time", "[profiler][warmup]") {
  ScriptedTimer timer({40, 30, 20, 12, 10.1, 10.0, 10.05, 50});
  int runs = 0;
  const auto warmup = stagecut::warmUntilSteady(timer, [&] { ++runs; });
  CHECK(warmup.steady);
  CHECK(warmup.samples == 7);
  CHECK(runs == 7);
  CHECK(warmup.first_ms == 40.0);
  CHECK(warmup.steady_ms == 10.0);
  CHECK(warmup.seconds == Approx((40 + 30 + 20 + 12 + 10.1 + 10.0 + 10.05) / 1000.0));
}

TEST_CASE("a warm-up that never settles stops at its time limit and says so", "[profiler][warmup]") {
  // Alternating 10 and 20 ms never agree within 2%.
  std::vector<double> swinging;
  for (int i = 0; i < 1000; ++i) swinging.push_back(i % 2 ? 20.0 : 10.0);
  ScriptedTimer timer(swinging);
  stagecut::ClockWarmupOptions options;
  options.max_seconds = 1.0;
  const auto warmup = stagecut::warmUntilSteady(timer, [] {}, options);
  CHECK_FALSE(warmup.steady);
  CHECK(warmup.seconds >= 1.0);
  CHECK(warmup.seconds < 1.03);
  CHECK(warmup.steady_ms == 10.0);
}

TEST_CASE("a machine already steady needs only the minimum samples", "[profiler][warmup]") {
  ScriptedTimer timer({5, 5, 5, 5, 5, 5, 5});
  const auto warmup = stagecut::warmUntilSteady(timer, [] {});
  CHECK(warmup.steady);
  CHECK(warmup.samples == 5);
  CHECK(timer.calls() == 5u);
}
