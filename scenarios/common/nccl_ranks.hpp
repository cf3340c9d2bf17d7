// A sharded run on GPUs, one process per GPU, seen from one rank (issue 22). Rank 0 (the process
// the user started) makes the NCCL communicator's id, starts ranks 1..N-1 (RunContext::launch_rank:
// the same run again, each in its own process on its own GPU) and watches them: a rank that ends
// before the run does (an OOM, a crash) aborts the communicator, so rank 0 never waits in a
// collective for a rank that is gone, and the run fails naming that rank. A rank > 0 joins with the
// id it was given; rank 0 kills the ranks still running when it fails itself.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness/runner/run_context.hpp"
#include "scenarios/models/transformer/nccl_group.hpp"

namespace oomlab::scenarios {

class NcclRanks {
 public:
  // Rank 0 starts the other ranks; every rank joins the communicator (returns once all have).
  NcclRanks(RunContext& context, int ranks);
  ~NcclRanks();  // stops the watch; kills ranks still running; aborts the communicator if not closed
  NcclRanks(const NcclRanks&) = delete;
  NcclRanks& operator=(const NcclRanks&) = delete;

  int rank() const { return group_->rank(); }
  model::NcclGroup& group() { return *group_; }
  // After this rank's last step: rank 0 waits for the other ranks and returns their records, in
  // rank order (throws std::runtime_error naming the first that failed); every rank closes the
  // communicator. Rank > 0: returns nothing.
  std::vector<RunRecord> finish();

 private:
  void watch();  // the watchdog's loop (rank 0)
  void end();    // stops the watch, kills the ranks still running, aborts an open communicator
  // The record of rank other + 1, waiting for its process (the watchdog, then finish() after the
  // watchdog stopped: never both at once).
  const RunRecord& record_of(std::size_t other);

  std::unique_ptr<model::NcclGroup> group_;
  std::vector<std::unique_ptr<RankProcess>> others_;  // rank 0: ranks 1..N-1
  std::vector<std::optional<RunRecord>> records_;     // theirs, once they ended
  std::atomic<bool> stop_{false};
  std::thread watchdog_;
};

}  // namespace oomlab::scenarios
