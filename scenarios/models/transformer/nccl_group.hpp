// A sharded run's collectives on GPUs through NCCL (issue 22): this process's rank of a
// communicator, one GPU per process, the tensors' own memory (oomlab's allocator) as NCCL's send
// and receive buffers. Even shards (rows a multiple of the ranks: every 7B piece on 2, 4 or 8
// GPUs) take ncclAllGather and ncclReduceScatter (average); uneven ones (the last rank holds
// fewer rows) one broadcast or average-reduce per rank, grouped: the same bytes moved.
//
// NCCL is loaded when a run first needs it (dlopen of libnccl.so.2, or OOMLAB_NCCL_LIBRARY), not
// linked: the library is over 200 MB, and the one binary runs where it is missing, saying so in
// one line. NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 before the communicator exists.
#pragma once
#include <cstddef>
#include <mutex>
#include <string>

#include "harness/device/device.hpp"
#include "kernels/core/tensor.hpp"

namespace oomlab::model {

// Empty when NCCL can be used here; else one line saying why (not built in, library missing).
std::string nccl_unavailable_reason();
// A new communicator's id, as hex, for every rank of one run. The process that made it must live
// until every rank joined (NCCL's bootstrap root runs in it).
std::string nccl_unique_id();

// Every call may come from any thread; abort() is meant for another thread than the one that
// waits on the collectives (a watchdog that saw a rank end).
class NcclGroup {
 public:
  // Starts joining the communicator `unique_id` as `rank` of `ranks` on `device` (cuda); the
  // collectives wait until every rank has joined (wait_joined). Throws std::runtime_error with
  // NCCL's message.
  NcclGroup(Device& device, const std::string& unique_id, int rank, int ranks);
  ~NcclGroup();  // a group that was not close()d is aborted: no wait for ranks that are gone
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  // Returns once every rank joined; throws when NCCL failed or the group was aborted.
  void wait_joined();
  // full's rows (dim 0) = every rank's shard in rank order (shard_rows splits them).
  void all_gather_rows(Tensor& full, const Tensor& shard);
  // into = the mean over ranks of their `full`, the rows this rank holds.
  void reduce_mean_rows(Tensor& into, const Tensor& full);
  // t = the sum over ranks of their t, in place.
  void all_reduce_sum(Tensor& t);
  // Device memory NCCL took outside oomlab's allocator while this rank joined (the device's
  // `external` bytes after wait_joined less those before the constructor): its channels, buffers
  // and kernels' state. Measured then, not later, when cuBLAS and lazily loaded kernels add theirs.
  std::size_t external_bytes() const { return external_joined_; }

  // Ends the communicator's work at once (its kernels waiting for a rank that is gone return);
  // every later call throws std::runtime_error(`why`).
  void abort(const std::string& why);
  // Destroys the communicator after a run whose ranks all finished.
  void close();

 private:
  template <class Call>
  void enqueue(const char* what, Call call);  // call(comm) under the lock, then waits for NCCL to take it
  void wait_ready(const char* what);
  bool even(const Tensor& full) const;  // every rank holds as many of full's rows

  Device& device_;
  int rank_, ranks_;
  std::size_t external_before_ = 0, external_joined_ = 0;
  mutable std::mutex mutex_;
  void* comm_ = nullptr;  // ncclComm_t; nullptr after abort() or close()
  std::string aborted_;   // why, once aborted
};

}  // namespace oomlab::model
