#pragma once

#include <chrono>
#include <string>

namespace stagecut {

/// Times one region of work (a layer's forward, a backward). The CPU timer reads a steady clock;
/// device timers record events around the region and wait for them.
class RegionTimer {
 public:
  virtual ~RegionTimer() = default;
  virtual void start() = 0;
  /// Ends the region and returns its duration in milliseconds.
  virtual double stopMs() = 0;
  /// The name recorded in the profile's run.timer.
  virtual std::string name() const = 0;
};

/// Wall-clock time on the host: right for CPU work, which is synchronous.
class SteadyClockTimer : public RegionTimer {
 public:
  void start() override { start_ = std::chrono::steady_clock::now(); }
  double stopMs() override {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  std::string name() const override { return "steady_clock"; }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace stagecut
