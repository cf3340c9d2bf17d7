#include "scenarios/models/transformer/communicator.hpp"

namespace oomlab::model {

Communicator::Communicator(int ranks) : ranks_(ranks), slots_(static_cast<std::size_t>(ranks), nullptr) {}

void Communicator::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) throw CommunicatorAborted();
  const std::uint64_t generation = generation_;
  if (++waiting_ == ranks_) {
    waiting_ = 0;
    ++generation_;
    arrived_.notify_all();
    return;
  }
  arrived_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (generation_ == generation) throw CommunicatorAborted();  // woken by abort()
}

void Communicator::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  arrived_.notify_all();
}

}  // namespace oomlab::model
