#include "harness/parallel/thread_team.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "harness/memory/size.hpp"

namespace oomlab {

ThreadTeam::ThreadTeam(std::size_t threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t t = 1; t < threads; ++t) workers_.emplace_back([this, t] { loop(t); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadTeam::run(const std::function<void(std::size_t)>& job) {
  if (workers_.empty()) {
    job(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    pending_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  job(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
}

void ThreadTeam::for_each(std::size_t count, const std::function<void(std::size_t)>& task) {
  std::atomic<std::size_t> next{0};
  run([&](std::size_t) {
    for (std::size_t i = next++; i < count; i = next++) task(i);
  });
}

void ThreadTeam::loop(std::size_t index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadTeam::copy(void* dst, const void* src, std::size_t bytes) {
  // Waking a thread costs ~10 us, a core copies 256 KiB in ~60 us: copies under 512 KiB stay on
  // the caller. Larger ones go in page-aligned blocks that the threads take in turn, about four
  // per thread, so a thread slowed by its pages (or the scheduler) does not hold up the others
  // at the end of the copy (the weights7b loader's copy speed varied by 20 % from load to load
  // with one fixed piece per thread).
  constexpr std::size_t kPage = 4096;
  if (bytes < 512 * KiB || workers_.empty()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t block =
      std::clamp((bytes / (4 * size()) + kPage - 1) / kPage * kPage, std::size_t{128 * KiB}, std::size_t{2 * MiB});
  for_each((bytes + block - 1) / block, [&](std::size_t i) {
    const std::size_t begin = i * block, n = std::min(block, bytes - begin);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, n);
  });
}

}  // namespace oomlab
