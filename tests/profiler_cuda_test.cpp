// The GPU timers: CUPTI's record summing with fake records (runs anywhere), the --timer errors,
// and that without a GPU the CUDA timers fail with one Error instead of crashing.
#include <catch2/catch.hpp>

#include <deque>

#include "core/error.h"
#include "profiler/cuda_probe.h"
#include "profiler/profile_request.h"

#ifdef STAGECUT_HAVE_CUDA
#include "profiler/cuda_event_timer.h"
#include "profiler/cupti_timer.h"
#endif

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using stagecut::Error;
using stagecut::ErrorKind;

namespace {

// The message and kind of the Error that runProfile throws for `device` and `timer`.
std::string profileError(const std::string& device, const std::string& timer, ErrorKind* kind = nullptr) {
  stagecut::ProfileRequest request;
  request.zoo.family = "mlp";
  request.device = device;
  request.timer = timer;
  try {
    stagecut::runProfile(request);
  } catch (const Error& error) {
    if (kind != nullptr) *kind = error.kind();
    return error.what();
  }
  return "(no error)";
}

bool gpuPresent() { return stagecut::probeCuda().devices > 0; }

}  // namespace

TEST_CASE("unknown --timer names get one line with a suggestion", "[profiler][cuda][errors]") {
  CHECK(profileError("cpu", "cupty") == "--timer cupty: unknown timer, did you mean 'cupti'?");
  CHECK(profileError("cuda", "cuda-event") == "--timer cuda-event: unknown timer, did you mean 'cuda-events'?");
  CHECK(profileError("cpu", "nvtx") ==
        "--timer nvtx: unknown timer; use one of: auto, steady_clock, cuda-events, cupti");
  ErrorKind kind = ErrorKind::kRuntime;
  profileError("cpu", "cupty", &kind);
  CHECK(kind == ErrorKind::kInput);  // exit code 2
}

TEST_CASE("a timer that does not fit the device is refused before anything runs", "[profiler][cuda][errors]") {
  CHECK(profileError("cpu", "cupti") ==
        "--timer cupti: only steady_clock times CPU work; cuda-events and cupti need --device cuda");
  CHECK(profileError("cuda:0", "steady_clock") ==
        "--timer steady_clock: a host clock does not wait for the GPU's queued kernels; with --device cuda:0 use "
        "cuda-events (the default) or cupti");
  CHECK(profileError("cuda:x", "auto") ==
        "--device cuda:x: unknown device; use cpu, cuda or cuda:K (K a device number, e.g. cuda:0)");
}

TEST_CASE("device cuda without a CUDA LibTorch gives its one clear error for every GPU timer",
          "[profiler][cuda][errors]") {
  if (gpuPresent()) {
    WARN("a GPU is present: the no-GPU error is not checked here (scripts/gpu-check.sh profiles on it)");
    return;
  }
  for (const std::string timer : {"auto", "cuda-events", "cupti"}) {
    ErrorKind kind = ErrorKind::kRuntime;
    const std::string message = profileError("cuda", timer, &kind);
    CHECK_THAT(message, StartsWith("--device cuda: this stagecut is linked against a CPU-only LibTorch"));
    CHECK_THAT(message, Contains("or profile with --device cpu"));
    CHECK(message.find('\n') == std::string::npos);
    CHECK(kind == ErrorKind::kInput);
  }
}

#ifdef STAGECUT_HAVE_CUDA

namespace {

using stagecut::KernelActivity;
using stagecut::KernelActivityBatch;

// CUPTI as the timer sees it: a clock the test sets, and kernel records handed over in the
// batches ("buffers") the test queues, one batch per flush.
struct FakeCuptiState {
  std::uint64_t now_ns = 0;
  std::deque<KernelActivityBatch> flushes;
  bool enabled = false;
  bool fail_enable = false;
  int flush_calls = 0;
};

class FakeCuptiActivityApi : public stagecut::CuptiActivityApi {
 public:
  explicit FakeCuptiActivityApi(FakeCuptiState& state) : state_(state) {}
  void enableKernels() override {
    if (state_.fail_enable) throw Error("CUPTI call cuptiActivityEnable(...) failed: fake", ErrorKind::kRuntime);
    state_.enabled = true;
  }
  void disableKernelsNoThrow() noexcept override { state_.enabled = false; }
  std::uint64_t timestampNs() override { return state_.now_ns; }
  KernelActivityBatch flush() override {
    ++state_.flush_calls;
    if (state_.flushes.empty()) return {};
    KernelActivityBatch batch = std::move(state_.flushes.front());
    state_.flushes.pop_front();
    return batch;
  }

 private:
  FakeCuptiState& state_;
};

// The CUDA-event fence: returns the event times the test queues.
class FakeFence : public stagecut::RegionTimer {
 public:
  explicit FakeFence(std::deque<double>& times) : times_(times) {}
  void start() override {}
  double stopMs() override {
    const double ms = times_.empty() ? 0.0 : times_.front();
    if (!times_.empty()) times_.pop_front();
    return ms;
  }
  std::string name() const override { return "fake-fence"; }

 private:
  std::deque<double>& times_;
};

KernelActivity kernel(std::uint64_t start_ns, std::uint64_t end_ns) { return {start_ns, end_ns, 0, 7}; }

struct FakeRig {
  FakeCuptiState cupti;
  std::deque<double> event_ms;
  std::unique_ptr<stagecut::CuptiTimer> timer;
  FakeRig() {
    timer = std::make_unique<stagecut::CuptiTimer>(std::make_unique<FakeCuptiActivityApi>(cupti),
                                                   std::make_unique<FakeFence>(event_ms));
  }
  // One region from start_ns to end_ns: `before` is what the flush at start() hands over,
  // `during` the batches that the flush at stopMs() hands over (here all in the first).
  double region(std::uint64_t start_ns, std::uint64_t end_ns, KernelActivityBatch before,
                KernelActivityBatch during, double fence_ms, const std::vector<int>& forwards = {}) {
    cupti.flushes.push_back(std::move(before));
    cupti.flushes.push_back(std::move(during));
    event_ms.push_back(fence_ms);
    cupti.now_ns = start_ns;
    timer->start();
    for (int layer : forwards) timer->noteLayerForward(layer);
    cupti.now_ns = end_ns;
    return timer->stopMs();
  }
};

}  // namespace

TEST_CASE("sumKernelsInside counts the kernels that started in the window, whole", "[profiler][cuda][cupti]") {
  const std::vector<KernelActivity> kernels = {
      kernel(900, 1'100'000),         // started before the window: an earlier region's
      kernel(1'000, 501'000),         // starts on the window's first nanosecond: 0.5 ms
      kernel(600'000, 850'000),       // 0.25 ms
      kernel(1'990'000, 2'200'000),   // started inside, ends after the window's end: counted whole
      kernel(2'000'001, 2'100'000),   // after the window
      kernel(700'000, 600'000)};      // end before start: counted, as 0 ms
  const stagecut::KernelSum sum = stagecut::sumKernelsInside(kernels, 1'000, 2'000'000);
  CHECK(sum.kernels == 4);
  CHECK(sum.kernel_ms == Approx(0.5 + 0.25 + 0.21));
  CHECK(stagecut::sumKernelsInside({}, 0, 10).kernels == 0);
}

TEST_CASE("the CUPTI timer returns each region's kernel time and keeps its event time", "[profiler][cuda][cupti]") {
  FakeRig rig;
  CHECK(rig.cupti.enabled);
  // Records flushed at start() are of earlier work and never count; the region's records come
  // in two buffers, and one record that CUPTI dropped is reported.
  KernelActivityBatch before{{kernel(10, 900)}, 0};
  KernelActivityBatch during{{kernel(1'200, 1'001'200), kernel(2'000'000, 2'500'000), kernel(500, 1'500)}, 1};
  const double ms = rig.region(1'000, 3'000'000, before, during, 2.75);
  CHECK(ms == Approx(1.5));
  CHECK(rig.timer->lastKernelCount() == 2);
  CHECK(rig.timer->lastEventMs() == Approx(2.75));
  CHECK(rig.timer->droppedRecords() == 1u);
  CHECK(rig.cupti.flush_calls == 2);
}

TEST_CASE("a record that starts after a region's window is kept for the next region", "[profiler][cuda][cupti]") {
  FakeRig rig;
  // Delivered at the first region's stop but starting at 5 ms, inside the second region.
  KernelActivityBatch early{{kernel(1'000'000, 1'500'000), kernel(5'000'000, 5'250'000)}, 0};
  CHECK(rig.region(0, 2'000'000, {}, early, 2.0) == Approx(0.5));
  CHECK(rig.region(4'000'000, 6'000'000, {}, {}, 2.0) == Approx(0.25));
  // And one that starts before a window is dropped even if it arrives late.
  KernelActivityBatch stale{{kernel(7'500'000, 8'500'000)}, 0};
  CHECK(rig.region(8'000'000, 9'000'000, stale, {}, 1.0) == Approx(0.0));
}

TEST_CASE("the CUPTI timer attributes regions to layers by the forwards that ran in them",
          "[profiler][cuda][cupti]") {
  FakeRig rig;
  auto k = [](std::uint64_t start, std::uint64_t ms_x100) { return kernel(start, start + ms_x100 * 10'000); };
  rig.timer->setWarmup(true);
  rig.region(0, 1'000'000, {}, {{k(10, 50)}, 0}, 0.9, {0});  // warm-up: left out
  rig.timer->setWarmup(false);
  // The whole model: several forwards in one region, then its backward: left out.
  rig.region(1'000'000, 2'000'000, {}, {{k(1'000'010, 80)}, 0}, 0.95, {0, 1});
  rig.region(2'000'000, 3'000'000, {}, {{k(2'000'010, 80)}, 0}, 0.95);
  // Layer 0: forward (kernels 0.2 of 1.0 ms of events), then two backward regions.
  rig.region(3'000'000, 4'000'000, {}, {{k(3'000'010, 20)}, 0}, 1.0, {0});
  rig.region(4'000'000, 5'000'000, {}, {{k(4'000'010, 30)}, 0}, 0.5);
  rig.region(5'000'000, 6'000'000, {}, {{k(5'000'010, 30)}, 0}, 1.5);
  // Layer 1: forward only.
  rig.region(6'000'000, 7'000'000, {}, {{k(6'000'010, 40)}, 0}, 0.8, {1});

  const auto breakdown = rig.timer->layerBreakdown(3);
  REQUIRE(breakdown.size() == 3u);
  CHECK(breakdown[0].forward_samples == 1);
  CHECK(breakdown[0].forward_event_ms == Approx(1.0));
  CHECK(breakdown[0].forward_kernel_ms == Approx(0.2));
  CHECK(breakdown[0].backwardKernelShare() == Approx(0.6 / 2.0));
  CHECK(breakdown[1].forward_kernel_ms == Approx(0.4));
  CHECK(breakdown[1].backwardKernelShare() == 0.0);
  CHECK(breakdown[2].forward_samples == 0);

  const nlohmann::json json = stagecut::layerBreakdownJson(breakdown, {"embed", "block.0", "head"});
  CHECK(json[0]["name"] == "embed");
  CHECK(json[0]["forward_kernel_ms"].get<double>() == Approx(0.2));
  CHECK(json[2]["name"] == "head");
}

TEST_CASE("a CUPTI that refuses to record fails the timer's construction with its Error",
          "[profiler][cuda][cupti][errors]") {
  FakeCuptiState state;
  state.fail_enable = true;
  std::deque<double> times;
  CHECK_THROWS_WITH(stagecut::CuptiTimer(std::make_unique<FakeCuptiActivityApi>(state),
                                         std::make_unique<FakeFence>(times)),
                    StartsWith("CUPTI call cuptiActivityEnable"));
}

TEST_CASE("without a GPU, the CUDA event timer fails with one Error naming the driver",
          "[profiler][cuda][errors]") {
  if (gpuPresent()) {
    WARN("a GPU is present: the no-driver error is not checked here");
    return;
  }
  try {
    stagecut::CudaEventTimer timer(0);
    FAIL("CudaEventTimer(0) constructed without a GPU");
  } catch (const Error& error) {
    const std::string message = error.what();
    INFO(message);
    CHECK(error.kind() == ErrorKind::kRuntime);
    CHECK(message.find('\n') == std::string::npos);
    // No driver: the library is missing; a driver without a device: cuInit or cuDeviceGet fails.
    const bool named = message.find("libcuda.so.1") != std::string::npos ||
                       message.find("CUDA driver call cu") != std::string::npos;
    CHECK(named);
  }
}

TEST_CASE("without a GPU, the real CUPTI either is missing or refuses to record, with one Error",
          "[profiler][cuda][cupti][errors]") {
  if (gpuPresent()) {
    WARN("a GPU is present: the no-GPU CUPTI error is not checked here");
    return;
  }
  try {
    auto api = stagecut::loadCuptiActivityApi();
    api->enableKernels();
    // Some CUPTI versions accept the request and simply never record without a device.
    WARN("this CUPTI enabled kernel recording without a GPU; nothing to check");
  } catch (const Error& error) {
    INFO(error.what());
    CHECK(error.kind() == ErrorKind::kRuntime);
    CHECK_THAT(std::string(error.what()), Contains("CUPTI"));
  }
}

TEST_CASE("on a GPU, empty regions time as zero-ish with events and as no kernels with CUPTI", "[.gpu][cuda]") {
  if (!gpuPresent()) {
    WARN("no GPU here: nothing to check");
    return;
  }
  auto events = std::make_unique<stagecut::CudaEventTimer>(0);
  events->start();
  const double event_ms = events->stopMs();
  CHECK(event_ms >= 0.0);
  CHECK(event_ms < 5.0);
  stagecut::CuptiTimer cupti(stagecut::loadCuptiActivityApi(), std::move(events));
  cupti.start();
  CHECK(cupti.stopMs() == 0.0);
  CHECK(cupti.lastKernelCount() == 0);
  CHECK(cupti.droppedRecords() == 0u);
}

#else

TEST_CASE("the GPU timers are not built here", "[profiler][cuda]") {
  WARN("built with STAGECUT_CUDA=OFF or without a CUDA toolkit: the CUDA and CUPTI timer tests did not run");
}

#endif  // STAGECUT_HAVE_CUDA
