// A ring of fixed-size slots in POSIX shared memory (shm_open + mmap) that carries batches from
// worker processes to the main process, like PyTorch's DataLoader queues.
//
// Batch b always travels through slot b % slot_count, so delivery is in batch order whatever
// order the workers finish in. Each slot holds two process-shared atomics: `free_for` (the batch
// that may write the slot next) and `written` (the batch it holds). A producer of batch b waits
// for free_for == b, writes, publishes written = b; the consumer of batch b waits for
// written == b, reads, then hands the slot on with free_for = b + slot_count. No locks, no
// futexes: waits spin briefly, then sleep, and call a `keep_waiting` check so a dead peer or a
// stop request ends the wait.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace oomlab::scenarios {

class ShmRing {
 public:
  // Called while waiting (about every millisecond); return false to give up the wait.
  using KeepWaiting = std::function<bool()>;

  // Creates a new shared-memory object `name` ("/oomlab-..."), sized for the slots plus
  // `user_bytes` of zeroed space for the caller's own control block. The creator owns the name:
  // the destructor unlinks it. Throws std::system_error when the name exists or shm fails.
  static ShmRing create(const std::string& name, std::size_t slot_count, std::size_t slot_bytes,
                        std::size_t user_bytes);
  // Maps an existing ring (a worker's side); never unlinks. Throws std::system_error.
  static ShmRing attach(const std::string& name);
  // "/oomlab-<tag>-<pid>-<counter>": unique per process and call.
  static std::string unique_name(const std::string& tag);

  ShmRing(ShmRing&& other) noexcept;
  ShmRing& operator=(ShmRing&& other) = delete;
  ShmRing(const ShmRing&) = delete;
  ~ShmRing();

  const std::string& name() const { return name_; }
  std::size_t slot_count() const;
  std::size_t slot_bytes() const;
  // The caller's control block (zeroed at creation, 64-byte aligned, shared by all processes).
  void* user_area() const;
  std::size_t user_bytes() const;

  // Producer: waits until batch's slot is free and returns its payload (nullptr when
  // keep_waiting said stop); publish with end_write(batch).
  void* begin_write(std::int64_t batch, const KeepWaiting& keep_waiting);
  void end_write(std::int64_t batch);
  // Consumer: waits until `batch` is written and returns its payload (nullptr when keep_waiting
  // said stop); give the slot back with end_read(batch).
  const void* begin_read(std::int64_t batch, const KeepWaiting& keep_waiting);
  void end_read(std::int64_t batch);

  // Removes the name now (mappings stay valid). Done early by the owner once every worker has
  // attached, so even a SIGKILLed parent leaves nothing in /dev/shm. Idempotent.
  void unlink();

 private:
  struct Header;
  struct Slot;
  ShmRing(std::string name, void* base, std::size_t mapped_bytes, bool owner);
  Slot& slot(std::int64_t batch) const;
  void* payload(std::int64_t batch) const;

  std::string name_;
  void* base_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  bool owner_ = false;
  bool unlinked_ = false;
};

// Spins briefly, then sleeps in short naps, until `ready()`; returns false as soon as
// keep_waiting() does (checked about every millisecond).
bool wait_until(const std::function<bool()>& ready, const ShmRing::KeepWaiting& keep_waiting);

}  // namespace oomlab::scenarios
