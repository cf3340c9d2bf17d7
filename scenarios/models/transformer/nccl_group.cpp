#include "scenarios/models/transformer/nccl_group.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/core/check.hpp"
#include "scenarios/models/transformer/sharding.hpp"

#if OOMLAB_WITH_NCCL
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#endif

namespace oomlab::model {

#if OOMLAB_WITH_NCCL
namespace {

// The NCCL calls oomlab makes, looked up in the library loaded at first use.
struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRankConfig) init_rank = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetLastError) last_error = nullptr;
  std::string error;  // why it could not be loaded; empty when every call was found
};

template <class F>
bool look_up(void* library, const char* name, F& into) {
  into = reinterpret_cast<F>(::dlsym(library, name));
  return into != nullptr;
}

NcclApi load_nccl() {
  NcclApi api;
  const char* chosen = std::getenv("OOMLAB_NCCL_LIBRARY");
  const std::string path = chosen && *chosen ? chosen : "libnccl.so.2";
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    api.error = "NCCL's library " + path + " cannot be loaded (" + ::dlerror() +
                "): install NCCL (libnccl2) or set OOMLAB_NCCL_LIBRARY to its path";
    return api;
  }
  // Never closed: NCCL's threads and its CUDA kernels live as long as the process.
  const bool found = look_up(library, "ncclGetUniqueId", api.get_unique_id) &&
                     look_up(library, "ncclCommInitRankConfig", api.init_rank) &&
                     look_up(library, "ncclCommGetAsyncError", api.async_error) &&
                     look_up(library, "ncclCommDestroy", api.destroy) && look_up(library, "ncclCommAbort", api.abort) &&
                     look_up(library, "ncclGroupStart", api.group_start) &&
                     look_up(library, "ncclGroupEnd", api.group_end) &&
                     look_up(library, "ncclBroadcast", api.broadcast) && look_up(library, "ncclReduce", api.reduce) &&
                     look_up(library, "ncclAllReduce", api.all_reduce) &&
                     look_up(library, "ncclAllGather", api.all_gather) &&
                     look_up(library, "ncclReduceScatter", api.reduce_scatter) &&
                     look_up(library, "ncclGetErrorString", api.error_string) &&
                     look_up(library, "ncclGetLastError", api.last_error);
  if (!found) api.error = path + " lacks a call oomlab needs (NCCL 2.14 or newer has them)";
  return api;
}

const NcclApi& nccl() {
  static const NcclApi api = load_nccl();
  return api;
}

const NcclApi& usable_nccl() {
  const NcclApi& api = nccl();
  if (!api.error.empty()) throw std::runtime_error(api.error);
  return api;
}

// NCCL's code and its last message ("Duplicate GPU detected : rank 1 and rank 0 both on ...").
void check(ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return;
  std::string message = std::string("NCCL ") + call + ": " + nccl().error_string(result);
  const char* detail = nccl().last_error(nullptr);
  if (detail && *detail) message += std::string(": ") + detail;
  throw std::runtime_error(message);
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::f16: return ncclFloat16;
    case DType::i8: return ncclInt8;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
  }
  throw std::invalid_argument("NCCL: no type for this dtype");
}

ncclComm_t as_comm(void* comm) { return static_cast<ncclComm_t>(comm); }
cudaStream_t stream_of(const Device& device) { return reinterpret_cast<cudaStream_t>(device.stream()); }

// Each rank's rows of `full` in turn: (rank, first element's byte offset, element count).
template <class Each>
void for_each_rank_rows(const Tensor& full, int ranks, Each each) {
  const std::size_t per_row = static_cast<std::size_t>(full.numel() / full.dim(0));
  for (int r = 0; r < ranks; ++r) {
    const RowRange rows = shard_rows(full.dim(0), r, ranks);
    each(r, static_cast<std::size_t>(rows.begin) * per_row * dtype_size(full.dtype()),
         static_cast<std::size_t>(rows.count) * per_row);
  }
}

char* bytes_of(const Tensor& t) { return static_cast<char*>(t.data()); }

}  // namespace

std::string nccl_unavailable_reason() { return nccl().error; }

std::string nccl_unique_id() {
  ncclUniqueId id;
  check(usable_nccl().get_unique_id(&id), "ncclGetUniqueId");
  static const char* const kHex = "0123456789abcdef";
  std::string hex;
  for (const char byte : id.internal) {
    const auto b = static_cast<unsigned char>(byte);
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

NcclGroup::NcclGroup(Device& device, const std::string& unique_id, int rank, int ranks)
    : device_(device), rank_(rank), ranks_(ranks) {
  OOMLAB_CHECK(device.is_cuda(), "NCCL runs on cuda devices");
  const NcclApi& api = usable_nccl();
  ncclUniqueId id;
  OOMLAB_CHECK(unique_id.size() == 2 * sizeof id.internal, "NCCL id of " << unique_id.size() << " hex digits");
  for (std::size_t i = 0; i < sizeof id.internal; ++i) {
    id.internal[i] = static_cast<char>(std::stoi(unique_id.substr(2 * i, 2), nullptr, 16));
  }
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast off (DEVICE.md)
  // Every connection made while joining (unless the user says otherwise): NCCL's memory is then
  // all there when measured, and a card too full for it fails here, not in the middle of a step.
  ::setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  external_before_ = device.source().external_bytes();
  // Non-blocking: a rank that never joins (it failed to start) must not hang this one; the
  // calls return at once and wait_ready polls, which abort() ends.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t started = api.init_rank(&comm, ranks, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) check(started, "ncclCommInitRankConfig");
  comm_ = comm;
}

NcclGroup::~NcclGroup() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_) (void)nccl().abort(as_comm(comm_));
}

void NcclGroup::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!comm_) return;
  (void)nccl().abort(as_comm(comm_));
  comm_ = nullptr;
  aborted_ = why;
}

void NcclGroup::close() {
  wait_ready("close");
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_) check(nccl().destroy(as_comm(comm_)), "ncclCommDestroy");
  comm_ = nullptr;
}

void NcclGroup::wait_ready(const char* what) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!comm_) throw std::runtime_error(aborted_.empty() ? std::string("NCCL communicator closed") : aborted_);
      ncclResult_t state = ncclSuccess;
      check(nccl().async_error(as_comm(comm_), &state), "ncclCommGetAsyncError");
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) check(state, what);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void NcclGroup::wait_joined() {
  wait_ready("ncclCommInitRankConfig");
  const std::size_t now = device_.source().external_bytes();
  external_joined_ = now > external_before_ ? now - external_before_ : 0;
}

template <class Call>
void NcclGroup::enqueue(const char* what, Call call) {
  {  // the communicator is ready: wait_joined, then every call's own wait below
    std::lock_guard<std::mutex> lock(mutex_);
    if (!comm_) throw std::runtime_error(aborted_);
    const ncclResult_t result = call(as_comm(comm_));
    if (result != ncclSuccess && result != ncclInProgress) check(result, what);
  }
  wait_ready(what);
}

bool NcclGroup::even(const Tensor& full) const { return full.dim(0) % ranks_ == 0; }

void NcclGroup::all_gather_rows(Tensor& full, const Tensor& shard) {
  enqueue("all-gather", [&](ncclComm_t comm) {
    const NcclApi& api = nccl();
    if (even(full)) {
      return api.all_gather(shard.data(), full.data(), static_cast<std::size_t>(shard.numel()),
                            nccl_type(full.dtype()), comm, stream_of(device_));
    }
    ncclResult_t result = api.group_start();
    for_each_rank_rows(full, ranks_, [&](int r, std::size_t offset, std::size_t count) {
      const void* send = r == rank_ ? shard.data() : bytes_of(full) + offset;  // read on the root only
      if (result == ncclSuccess) {
        result = api.broadcast(send, bytes_of(full) + offset, count, nccl_type(full.dtype()), r, comm,
                               stream_of(device_));
      }
    });
    const ncclResult_t ended = api.group_end();
    return result != ncclSuccess ? result : ended;
  });
}

void NcclGroup::reduce_mean_rows(Tensor& into, const Tensor& full) {
  enqueue("reduce-scatter", [&](ncclComm_t comm) {
    const NcclApi& api = nccl();
    if (even(full)) {
      return api.reduce_scatter(full.data(), into.data(), static_cast<std::size_t>(into.numel()),
                                nccl_type(full.dtype()), ncclAvg, comm, stream_of(device_));
    }
    ncclResult_t result = api.group_start();
    for_each_rank_rows(full, ranks_, [&](int r, std::size_t offset, std::size_t count) {
      if (result == ncclSuccess) {  // the receive buffer is written on the root only
        result = api.reduce(bytes_of(full) + offset, into.data(), count, nccl_type(full.dtype()), ncclAvg, r, comm,
                            stream_of(device_));
      }
    });
    const ncclResult_t ended = api.group_end();
    return result != ncclSuccess ? result : ended;
  });
}

void NcclGroup::all_reduce_sum(Tensor& t) {
  enqueue("all-reduce", [&](ncclComm_t comm) {
    return nccl().all_reduce(t.data(), t.data(), static_cast<std::size_t>(t.numel()), nccl_type(t.dtype()), ncclSum,
                             comm, stream_of(device_));
  });
}

#else  // built without NCCL's header

std::string nccl_unavailable_reason() {
  return OOMLAB_WITH_CUDA ? "this oomlab was built without NCCL (nccl.h was not found beside the CUDA toolkit)"
                          : "this oomlab was built without CUDA";
}

std::string nccl_unique_id() { throw std::runtime_error(nccl_unavailable_reason()); }

NcclGroup::NcclGroup(Device& device, const std::string&, int rank, int ranks)
    : device_(device), rank_(rank), ranks_(ranks) {
  throw std::runtime_error(nccl_unavailable_reason());
}
NcclGroup::~NcclGroup() = default;
void NcclGroup::wait_joined() {}
void NcclGroup::all_gather_rows(Tensor&, const Tensor&) {}
void NcclGroup::reduce_mean_rows(Tensor&, const Tensor&) {}
void NcclGroup::all_reduce_sum(Tensor&) {}
void NcclGroup::abort(const std::string&) {}
void NcclGroup::close() {}

#endif

}  // namespace oomlab::model
