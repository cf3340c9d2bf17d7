#include "scenarios/common/nccl_ranks.hpp"

#include <chrono>
#include <stdexcept>

namespace oomlab::scenarios {
namespace {

std::string rank_name(std::size_t other, std::size_t others) {
  return "rank " + std::to_string(other + 1) + " of " + std::to_string(others + 1);
}

// One line for a rank that did not end as a finished run.
std::string failure_of(const RunRecord& record, const std::string& rank) {
  return rank + " " + outcome_status_name(record.outcome.status) + ": " + record.outcome.message;
}

}  // namespace

NcclRanks::NcclRanks(RunContext& context, int ranks) {
  const ShardRole& role = context.shard_role();
  if (role.rank > 0) {
    group_ = std::make_unique<model::NcclGroup>(context.device(), role.nccl_id, role.rank, ranks);
    group_->wait_joined();
    return;
  }
  const std::string id = model::nccl_unique_id();
  group_ = std::make_unique<model::NcclGroup>(context.device(), id, 0, ranks);
  try {
    for (int r = 1; r < ranks; ++r) others_.push_back(context.launch_rank(r, id));
    records_.resize(others_.size());
    if (!others_.empty()) watchdog_ = std::thread([this] { watch(); });
    group_->wait_joined();
  } catch (...) {
    end();  // no destructor runs for a constructor that throws
    throw;
  }
}

NcclRanks::~NcclRanks() { end(); }

void NcclRanks::end() {
  stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  others_.clear();  // kills those still running
  group_.reset();   // aborted unless finish() closed it
}

const RunRecord& NcclRanks::record_of(std::size_t other) {
  if (!records_[other]) records_[other] = others_[other]->finish();
  return *records_[other];
}

void NcclRanks::watch() {
  while (!stop_) {
    for (std::size_t i = 0; i < others_.size(); ++i) {
      if (others_[i]->running()) continue;
      const RunRecord& record = record_of(i);
      if (record.outcome.status == OutcomeStatus::ok) continue;  // ended well: its last step is done
      group_->abort(failure_of(record, rank_name(i, others_.size())) + " (the run stopped)");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<RunRecord> NcclRanks::finish() {
  // This rank's collectives are done, so every rank's are: nothing can wait for a lost rank now.
  stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  std::vector<RunRecord> records;
  for (std::size_t i = 0; i < others_.size(); ++i) {
    const RunRecord& record = record_of(i);  // waits for its process, which ends after its last step
    if (record.outcome.status != OutcomeStatus::ok) {
      throw std::runtime_error(failure_of(record, rank_name(i, others_.size())));
    }
    records.push_back(record);
  }
  group_->close();
  return records;
}

}  // namespace oomlab::scenarios
