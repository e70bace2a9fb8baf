#include "profiler/cupti_activity_api.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <string>

#include <cupti.h>

#include "core/error.h"

namespace stagecut {

namespace {

// The CUPTI entry points the timer uses, named as CUPTI names them so that STAGECUT_CUPTI_CALL
// can print the call as written.
struct CuptiLibrary {
  void* handle = nullptr;
  std::string path;
  CUptiResult (*cuptiGetResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*cuptiActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*cuptiActivityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*cuptiActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*cuptiActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                                CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*cuptiActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*cuptiActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*cuptiGetTimestamp)(uint64_t*) = nullptr;
};

// The audited place for CUPTI errors (kineto's CUPTI_CALL_THROW): throws Error (kRuntime) with
// the call as written, CUPTI's message and the library it came from.
void checkCupti(const CuptiLibrary& library, CUptiResult status, const char* call) {
  if (status == CUPTI_SUCCESS) return;
  const char* message = nullptr;
  if (library.cuptiGetResultString(status, &message) != CUPTI_SUCCESS || message == nullptr) message = "no message";
  throw Error(std::string("CUPTI call ") + call + " failed: " + message + " (" + std::to_string(status) + ", " +
                  library.path + ")",
              ErrorKind::kRuntime);
}

#define STAGECUT_CUPTI_CALL(library, call) checkCupti((library), (library).call, #call)

template <typename Function>
void resolve(CuptiLibrary& library, const char* symbol, Function& function) {
  void* address = dlsym(library.handle, symbol);
  if (address == nullptr) {
    throw Error(library.path + " has no " + symbol + ": this CUPTI is too old; use the CUPTI of CUDA 11 or newer",
                ErrorKind::kRuntime);
  }
  function = reinterpret_cast<Function>(address);
}

std::vector<std::string> cuptiCandidates() {
  std::vector<std::string> candidates = {"libcupti.so"};
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') {
    candidates.push_back(std::string(home) + "/extras/CUPTI/lib64/libcupti.so");
    candidates.push_back(std::string(home) + "/lib64/libcupti.so");
  }
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  candidates.push_back("/usr/local/cuda/lib64/libcupti.so");
  return candidates;
}

CuptiLibrary openCupti() {
  CuptiLibrary library;
  std::string tried;
  for (const auto& candidate : cuptiCandidates()) {
    library.handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library.handle != nullptr) {
      library.path = candidate;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  if (library.handle == nullptr) {
    throw Error("cannot load CUPTI (tried " + tried +
                    "): --timer cupti needs the CUDA toolkit's CUPTI; set CUDA_HOME or LD_LIBRARY_PATH to it, "
                    "or use --timer cuda-events",
                ErrorKind::kRuntime);
  }
  resolve(library, "cuptiGetResultString", library.cuptiGetResultString);
  resolve(library, "cuptiActivityEnable", library.cuptiActivityEnable);
  resolve(library, "cuptiActivityDisable", library.cuptiActivityDisable);
  resolve(library, "cuptiActivityFlushAll", library.cuptiActivityFlushAll);
  resolve(library, "cuptiActivityRegisterCallbacks", library.cuptiActivityRegisterCallbacks);
  resolve(library, "cuptiActivityGetNextRecord", library.cuptiActivityGetNextRecord);
  resolve(library, "cuptiActivityGetNumDroppedRecords", library.cuptiActivityGetNumDroppedRecords);
  resolve(library, "cuptiGetTimestamp", library.cuptiGetTimestamp);
  return library;
}

// CUPTI delivers kernel records in the newest layout it knows (CUpti_ActivityKernel10 for
// CUDA 13, 9 for CUDA 12, ...), which may be newer than the headers this was built with. Every
// layout since CUpti_ActivityKernel4 (CUDA 9) starts with the same fields up to streamId, and
// only those are read, through the oldest of them.
using KernelRecordPrefix = CUpti_ActivityKernel4;
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
static_assert(offsetof(KernelRecordPrefix, start) == offsetof(CUpti_ActivityKernel10, start));
static_assert(offsetof(KernelRecordPrefix, end) == offsetof(CUpti_ActivityKernel10, end));
static_assert(offsetof(KernelRecordPrefix, deviceId) == offsetof(CUpti_ActivityKernel10, deviceId));
static_assert(offsetof(KernelRecordPrefix, streamId) == offsetof(CUpti_ActivityKernel10, streamId));
#endif

// 4 MiB holds about 10,000 kernel records: more than a layer's region launches between two flushes.
constexpr std::size_t kBufferBytes = 4u << 20;
// CUPTI requires activity buffers aligned to 8 bytes.
constexpr std::size_t kBufferAlignment = 8;

class RealCuptiActivityApi;

// CUPTI's buffer callbacks are process-wide C functions with no user pointer, so the one live
// API object is found through this pointer; the mutex keeps a buffer that CUPTI completes on its
// own thread from racing the object's destruction.
std::mutex active_mutex;
RealCuptiActivityApi* active_api = nullptr;

class RealCuptiActivityApi : public CuptiActivityApi {
 public:
  explicit RealCuptiActivityApi(CuptiLibrary library) : library_(std::move(library)) {
    std::lock_guard<std::mutex> lock(active_mutex);
    if (active_api != nullptr) {
      throw Error("CUPTI is already in use by another stagecut CUPTI timer in this process; use one at a time",
                  ErrorKind::kRuntime);
    }
    STAGECUT_CUPTI_CALL(library_, cuptiActivityRegisterCallbacks(&bufferRequested, &bufferCompleted));
    active_api = this;
  }

  ~RealCuptiActivityApi() override {
    disableKernelsNoThrow();
    library_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(active_mutex);
    active_api = nullptr;
  }

  void enableKernels() override {
    STAGECUT_CUPTI_CALL(library_, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    enabled_ = true;
  }

  void disableKernelsNoThrow() noexcept override {
    if (enabled_) library_.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    enabled_ = false;
  }

  std::uint64_t timestampNs() override {
    std::uint64_t now = 0;
    STAGECUT_CUPTI_CALL(library_, cuptiGetTimestamp(&now));
    return now;
  }

  KernelActivityBatch flush() override {
    // A forced flush also hands over buffers that are only partly filled; the completion
    // callbacks have run by the time it returns.
    STAGECUT_CUPTI_CALL(library_, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::lock_guard<std::mutex> lock(active_mutex);
    KernelActivityBatch batch;
    std::swap(batch, pending_);
    return batch;
  }

 private:
  static void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
    *size = *buffer != nullptr ? kBufferBytes : 0;
    *max_records = 0;
  }

  static void CUPTIAPI bufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                                       size_t valid_bytes) {
    {
      std::lock_guard<std::mutex> lock(active_mutex);
      if (active_api != nullptr) active_api->takeRecords(context, stream_id, buffer, valid_bytes);
    }
    std::free(buffer);
  }

  // Called with active_mutex held, possibly on a CUPTI thread: must not throw.
  void takeRecords(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t valid_bytes) noexcept {
    CUpti_Activity* record = nullptr;
    while (valid_bytes > 0 &&
           library_.cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
      const auto* kernel = reinterpret_cast<const KernelRecordPrefix*>(record);
      KernelActivity activity;
      activity.start_ns = kernel->start;
      activity.end_ns = kernel->end;
      activity.device_id = kernel->deviceId;
      activity.stream_id = kernel->streamId;
      pending_.kernels.push_back(activity);
    }
    size_t dropped = 0;
    if (library_.cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
      pending_.dropped += dropped;
    }
  }

  CuptiLibrary library_;
  bool enabled_ = false;
  KernelActivityBatch pending_;  ///< guarded by active_mutex
};

}  // namespace

std::unique_ptr<CuptiActivityApi> loadCuptiActivityApi() {
  return std::make_unique<RealCuptiActivityApi>(openCupti());
}

}  // namespace stagecut
