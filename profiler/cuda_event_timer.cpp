#include "profiler/cuda_event_timer.h"

#include "core/error.h"
#include "profiler/cuda_driver.h"

namespace stagecut {

struct CudaEventTimer::State {
  std::shared_ptr<const CudaDriver> driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  bool context_retained = false;
  CUstream stream = nullptr;
  CUevent start = nullptr;
  CUevent end = nullptr;
  bool started = false;

  ~State() {
    if (!driver) return;
    driver->destroyEventNoThrow(start);
    driver->destroyEventNoThrow(end);
    if (context_retained) driver->releasePrimaryContextNoThrow(device);
  }
};

CudaEventTimer::CudaEventTimer(int device_ordinal, void* stream) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.driver = CudaDriver::load();
  s.device = s.driver->device(device_ordinal);
  // Retaining the primary context (rather than creating one) shares it with LibTorch: events
  // must live in the context whose streams run the kernels they bracket.
  s.context = s.driver->retainPrimaryContext(s.device);
  s.context_retained = true;
  s.stream = static_cast<CUstream>(stream);
  ScopedCudaContext scope(*s.driver, s.context);
  // CU_EVENT_DEFAULT keeps timing on; BLOCKING_SYNC would trade the wait's latency for CPU time.
  s.start = s.driver->createEvent(CU_EVENT_DEFAULT);
  s.end = s.driver->createEvent(CU_EVENT_DEFAULT);
}

CudaEventTimer::~CudaEventTimer() = default;

void CudaEventTimer::start() {
  State& s = *state_;
  ScopedCudaContext scope(*s.driver, s.context);
  s.driver->recordEvent(s.start, s.stream);
  s.started = true;
}

double CudaEventTimer::stopMs() {
  State& s = *state_;
  if (!s.started) throw Error("CudaEventTimer::stopMs called without start()", ErrorKind::kRuntime);
  ScopedCudaContext scope(*s.driver, s.context);
  s.driver->recordEvent(s.end, s.stream);
  s.driver->synchronizeEvent(s.end);
  s.started = false;
  return static_cast<double>(s.driver->elapsedMs(s.start, s.end));
}

void CudaEventTimer::synchronizeDevice() {
  State& s = *state_;
  ScopedCudaContext scope(*s.driver, s.context);
  s.driver->synchronizeContext();
}

std::string CudaEventTimer::deviceName() const { return state_->driver->deviceName(state_->device); }

int CudaEventTimer::driverVersion() const { return state_->driver->driverVersion(); }

}  // namespace stagecut
