// The ranks of a sharded run inside one process (issue 22): each rank runs its own model on its
// own Device in its own thread, and the collectives meet here. A rank publishes what it shares in
// its slot and waits at the barrier until every rank has; after reading the others' it waits again,
// so no slot is reused while it is read. When one rank fails (an OOM), abort() wakes the others
// with CommunicatorAborted instead of leaving them waiting forever.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace oomlab::model {

struct CommunicatorAborted : std::runtime_error {
  CommunicatorAborted() : std::runtime_error("another rank of the sharded run failed") {}
};

class Communicator {
 public:
  explicit Communicator(int ranks);
  int ranks() const { return ranks_; }
  // Returns when every rank has called it (throws CommunicatorAborted after abort()).
  void barrier();
  void abort();
  // One slot per rank for the collective in progress: what rank r shares.
  const void*& slot(int rank) { return slots_.at(static_cast<std::size_t>(rank)); }

 private:
  const int ranks_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  std::uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<const void*> slots_;
};

class NcclGroup;

// Which rank of how many this model is, and where its collectives meet: the ranks of this process
// (communicator; nullptr with one rank), or NCCL's on GPUs (nccl_group.hpp; one rank per process).
struct ShardGroup {
  int rank = 0;
  int ranks = 1;
  Communicator* communicator = nullptr;
  NcclGroup* nccl = nullptr;
};

}  // namespace oomlab::model
