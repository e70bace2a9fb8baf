#include "profiler/cuda_driver.h"

#include <dlfcn.h>

#include "core/error.h"

namespace stagecut {

// The symbols are looked up by their exported names, not through cuda.h's macros: cuda.h maps
// e.g. cuEventDestroy to cuEventDestroy_v2 and, since CUDA 12.8, cuEventElapsedTime to
// cuEventElapsedTime_v2, which older drivers do not export. The names below are exported by
// every driver since CUDA 11, so a binary built against the CUDA 13 headers runs on them too.
struct CudaDriver::Functions {
  void* library = nullptr;
  CUresult (*getErrorName)(CUresult, const char**) = nullptr;
  CUresult (*getErrorString)(CUresult, const char**) = nullptr;
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*driverGetVersion)(int*) = nullptr;
  CUresult (*deviceGetCount)(int*) = nullptr;
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*deviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*primaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*ctxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxPushCurrent)(CUcontext) = nullptr;
  CUresult (*ctxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*eventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*eventSynchronize)(CUevent) = nullptr;
  CUresult (*eventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*eventDestroy)(CUevent) = nullptr;
};

namespace {

constexpr const char* kDriverLibrary = "libcuda.so.1";

template <typename Function>
void resolve(void* library, const char* symbol, Function& function) {
  void* address = dlsym(library, symbol);
  if (address == nullptr) {
    throw Error(std::string(kDriverLibrary) + " has no " + symbol +
                    ": the NVIDIA driver is too old for stagecut's GPU timers; install a driver for CUDA 11 or newer",
                ErrorKind::kRuntime);
  }
  function = reinterpret_cast<Function>(address);
}

}  // namespace

CudaDriver::CudaDriver() : functions_(std::make_unique<Functions>()) {}

CudaDriver::~CudaDriver() = default;

std::shared_ptr<const CudaDriver> CudaDriver::load() {
  // The library is never dlclose'd: the driver keeps threads and state that outlive any handle.
  void* library = dlopen(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    throw Error(std::string("cannot load the CUDA driver (") + kDriverLibrary + "): " +
                    (reason ? reason : "unknown reason") +
                    "; GPU timing needs an NVIDIA GPU with its driver installed (check with nvidia-smi)",
                ErrorKind::kRuntime);
  }
  std::shared_ptr<CudaDriver> driver(new CudaDriver());
  Functions& f = *driver->functions_;
  f.library = library;
  resolve(library, "cuGetErrorName", f.getErrorName);
  resolve(library, "cuGetErrorString", f.getErrorString);
  resolve(library, "cuInit", f.init);
  resolve(library, "cuDriverGetVersion", f.driverGetVersion);
  resolve(library, "cuDeviceGetCount", f.deviceGetCount);
  resolve(library, "cuDeviceGet", f.deviceGet);
  resolve(library, "cuDeviceGetName", f.deviceGetName);
  resolve(library, "cuDevicePrimaryCtxRetain", f.primaryCtxRetain);
  resolve(library, "cuDevicePrimaryCtxRelease_v2", f.primaryCtxRelease);
  resolve(library, "cuCtxGetCurrent", f.ctxGetCurrent);
  resolve(library, "cuCtxPushCurrent_v2", f.ctxPushCurrent);
  resolve(library, "cuCtxPopCurrent_v2", f.ctxPopCurrent);
  resolve(library, "cuCtxSynchronize", f.ctxSynchronize);
  resolve(library, "cuEventCreate", f.eventCreate);
  resolve(library, "cuEventRecord", f.eventRecord);
  resolve(library, "cuEventSynchronize", f.eventSynchronize);
  resolve(library, "cuEventElapsedTime", f.eventElapsedTime);
  resolve(library, "cuEventDestroy_v2", f.eventDestroy);
  driver->check(f.init(0), "cuInit");
  return driver;
}

namespace {

// The toolkit's stub libcuda (installed as libcuda.so.1 by mistake, e.g. in a container) and
// drivers without a device cannot name their own errors; these are the codes met there.
const char* fallbackErrorMessage(CUresult status) {
  switch (status) {
    case CUDA_ERROR_STUB_LIBRARY:
      return "the libcuda.so.1 found is the CUDA toolkit's stub, not an NVIDIA driver; install the driver "
             "or take the stubs folder out of LD_LIBRARY_PATH";
    case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "the NVIDIA kernel module and user-space driver versions differ";
    default: return "the driver gave no message";
  }
}

}  // namespace

void CudaDriver::check(CUresult status, const char* call) const {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* message = nullptr;
  if (functions_->getErrorName(status, &name) != CUDA_SUCCESS || name == nullptr) name = "CUresult";
  if (functions_->getErrorString(status, &message) != CUDA_SUCCESS || message == nullptr) {
    message = fallbackErrorMessage(status);
  }
  throw Error(std::string("CUDA driver call ") + call + " failed: " + name + " (" + std::to_string(status) +
                  "): " + message,
              ErrorKind::kRuntime);
}

int CudaDriver::driverVersion() const {
  int version = 0;
  check(functions_->driverGetVersion(&version), "cuDriverGetVersion");
  return version;
}

int CudaDriver::deviceCount() const {
  int count = 0;
  check(functions_->deviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

CUdevice CudaDriver::device(int ordinal) const {
  const int count = deviceCount();
  if (ordinal < 0 || ordinal >= count) {
    throw Error("cuda:" + std::to_string(ordinal) + ": the driver sees " + std::to_string(count) +
                    " CUDA device(s); use cuda:0" + (count > 1 ? " to cuda:" + std::to_string(count - 1) : ""),
                ErrorKind::kRuntime);
  }
  CUdevice device = 0;
  check(functions_->deviceGet(&device, ordinal), "cuDeviceGet");
  return device;
}

std::string CudaDriver::deviceName(CUdevice device) const {
  char name[256] = {};
  check(functions_->deviceGetName(name, static_cast<int>(sizeof(name)) - 1, device), "cuDeviceGetName");
  return name;
}

CUcontext CudaDriver::retainPrimaryContext(CUdevice device) const {
  CUcontext context = nullptr;
  check(functions_->primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  return context;
}

void CudaDriver::releasePrimaryContextNoThrow(CUdevice device) const noexcept {
  functions_->primaryCtxRelease(device);
}

CUcontext CudaDriver::currentContext() const {
  CUcontext context = nullptr;
  check(functions_->ctxGetCurrent(&context), "cuCtxGetCurrent");
  return context;
}

void CudaDriver::pushContext(CUcontext context) const {
  check(functions_->ctxPushCurrent(context), "cuCtxPushCurrent");
}

void CudaDriver::popContextNoThrow() const noexcept {
  CUcontext popped = nullptr;
  functions_->ctxPopCurrent(&popped);
}

void CudaDriver::synchronizeContext() const { check(functions_->ctxSynchronize(), "cuCtxSynchronize"); }

CUevent CudaDriver::createEvent(unsigned int flags) const {
  CUevent event = nullptr;
  check(functions_->eventCreate(&event, flags), "cuEventCreate");
  return event;
}

void CudaDriver::destroyEventNoThrow(CUevent event) const noexcept {
  if (event != nullptr) functions_->eventDestroy(event);
}

void CudaDriver::recordEvent(CUevent event, CUstream stream) const {
  check(functions_->eventRecord(event, stream), "cuEventRecord");
}

void CudaDriver::synchronizeEvent(CUevent event) const {
  check(functions_->eventSynchronize(event), "cuEventSynchronize");
}

float CudaDriver::elapsedMs(CUevent start, CUevent end) const {
  float ms = 0.0f;
  check(functions_->eventElapsedTime(&ms, start, end), "cuEventElapsedTime");
  return ms;
}

ScopedCudaContext::ScopedCudaContext(const CudaDriver& driver, CUcontext context) : driver_(driver) {
  if (driver.currentContext() != context) {
    driver.pushContext(context);
    pushed_ = true;
  }
}

ScopedCudaContext::~ScopedCudaContext() {
  if (pushed_) driver_.popContextNoThrow();
}

}  // namespace stagecut
