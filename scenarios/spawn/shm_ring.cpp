#include "scenarios/spawn/shm_ring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace oomlab::scenarios {
namespace {

constexpr std::uint64_t kMagic = 0x6f6f6d6c61627231;  // "oomlabr1"
constexpr std::size_t kAlign = 64;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::system_error errno_error(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

static_assert(std::atomic<std::int64_t>::is_always_lock_free,
              "process-shared atomics must be lock-free (address-free)");

}  // namespace

struct ShmRing::Header {
  std::uint64_t magic;
  std::uint64_t slot_count;
  std::uint64_t slot_bytes;
  std::uint64_t user_bytes;
  std::uint64_t total_bytes;
};

struct alignas(64) ShmRing::Slot {
  std::atomic<std::int64_t> free_for;  // the batch allowed to write this slot next
  std::atomic<std::int64_t> written;   // the batch this slot holds (-1: none yet)
};

// Layout: Header | user area | Slot[slot_count] | payloads (each 64-byte aligned).
namespace {
std::size_t user_offset() { return align_up(sizeof(std::uint64_t) * 5); }
}  // namespace

bool wait_until(const std::function<bool()>& ready, const ShmRing::KeepWaiting& keep_waiting) {
  for (int spin = 0; spin < 200; ++spin) {
    if (ready()) return true;
  }
  auto last_check = std::chrono::steady_clock::now();
  for (;;) {
    if (ready()) return true;
    auto now = std::chrono::steady_clock::now();
    if (now - last_check >= std::chrono::milliseconds(1)) {
      if (keep_waiting && !keep_waiting()) return false;
      last_check = now;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::string ShmRing::unique_name(const std::string& tag) {
  static std::atomic<int> counter{0};
  return "/oomlab-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

ShmRing ShmRing::create(const std::string& name, std::size_t slot_count, std::size_t slot_bytes,
                        std::size_t user_bytes) {
  if (slot_count == 0 || slot_bytes == 0) {
    throw std::invalid_argument("ShmRing: slot_count and slot_bytes must be positive");
  }
  const std::size_t slots_offset = user_offset() + align_up(user_bytes);
  const std::size_t payload_offset = slots_offset + align_up(slot_count * sizeof(Slot));
  const std::size_t total = payload_offset + slot_count * align_up(slot_bytes);

  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw errno_error("shm_open(" + name + ")");
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) {
    int saved = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    errno = saved;
    throw errno_error("ftruncate(" + name + ")");
  }
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int saved = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    errno = saved;
    throw errno_error("mmap(" + name + ")");
  }
  ShmRing ring(name, base, total, /*owner=*/true);
  auto* header = static_cast<Header*>(base);
  header->slot_count = slot_count;
  header->slot_bytes = slot_bytes;
  header->user_bytes = user_bytes;
  header->total_bytes = total;
  for (std::size_t i = 0; i < slot_count; ++i) {
    Slot* s = new (static_cast<char*>(base) + slots_offset + i * sizeof(Slot)) Slot;
    s->free_for.store(static_cast<std::int64_t>(i));
    s->written.store(-1);
  }
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kMagic;  // last: an attacher that sees the magic sees a complete ring
  return ring;
}

ShmRing ShmRing::attach(const std::string& name) {
  int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) throw errno_error("shm_open(" + name + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw errno_error("fstat(" + name + ")");
  }
  const auto total = static_cast<std::size_t>(st.st_size);
  void* base = total >= sizeof(Header)
                   ? ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  int saved = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    errno = saved;
    throw errno_error("mmap(" + name + ")");
  }
  ShmRing ring(name, base, total, /*owner=*/false);
  const auto* header = static_cast<const Header*>(base);
  if (header->magic != kMagic || header->total_bytes != total) {
    throw std::runtime_error("ShmRing: '" + name + "' is not an oomlab ring");
  }
  return ring;
}

ShmRing::ShmRing(std::string name, void* base, std::size_t mapped_bytes, bool owner)
    : name_(std::move(name)), base_(base), mapped_bytes_(mapped_bytes), owner_(owner) {}

ShmRing::ShmRing(ShmRing&& other) noexcept
    : name_(std::move(other.name_)), base_(other.base_), mapped_bytes_(other.mapped_bytes_),
      owner_(other.owner_), unlinked_(other.unlinked_) {
  other.base_ = nullptr;
  other.owner_ = false;
}

ShmRing::~ShmRing() {
  if (owner_) unlink();
  if (base_) ::munmap(base_, mapped_bytes_);
}

void ShmRing::unlink() {
  if (owner_ && !unlinked_) {
    ::shm_unlink(name_.c_str());
    unlinked_ = true;
  }
}

std::size_t ShmRing::slot_count() const { return static_cast<const Header*>(base_)->slot_count; }
std::size_t ShmRing::slot_bytes() const { return static_cast<const Header*>(base_)->slot_bytes; }
std::size_t ShmRing::user_bytes() const { return static_cast<const Header*>(base_)->user_bytes; }
void* ShmRing::user_area() const { return static_cast<char*>(base_) + user_offset(); }

ShmRing::Slot& ShmRing::slot(std::int64_t batch) const {
  const std::size_t slots_offset = user_offset() + align_up(user_bytes());
  const std::size_t index = static_cast<std::size_t>(batch) % slot_count();
  return *reinterpret_cast<Slot*>(static_cast<char*>(base_) + slots_offset + index * sizeof(Slot));
}

void* ShmRing::payload(std::int64_t batch) const {
  const std::size_t slots_offset = user_offset() + align_up(user_bytes());
  const std::size_t payload_offset = slots_offset + align_up(slot_count() * sizeof(Slot));
  const std::size_t index = static_cast<std::size_t>(batch) % slot_count();
  return static_cast<char*>(base_) + payload_offset + index * align_up(slot_bytes());
}

void* ShmRing::begin_write(std::int64_t batch, const KeepWaiting& keep_waiting) {
  if (batch < 0) throw std::invalid_argument("ShmRing: negative batch index");
  Slot& s = slot(batch);
  if (!wait_until([&] { return s.free_for.load(std::memory_order_acquire) == batch; },
                  keep_waiting)) {
    return nullptr;
  }
  return payload(batch);
}

void ShmRing::end_write(std::int64_t batch) {
  slot(batch).written.store(batch, std::memory_order_release);
}

const void* ShmRing::begin_read(std::int64_t batch, const KeepWaiting& keep_waiting) {
  if (batch < 0) throw std::invalid_argument("ShmRing: negative batch index");
  Slot& s = slot(batch);
  if (!wait_until([&] { return s.written.load(std::memory_order_acquire) == batch; },
                  keep_waiting)) {
    return nullptr;
  }
  return payload(batch);
}

void ShmRing::end_read(std::int64_t batch) {
  slot(batch).free_for.store(batch + static_cast<std::int64_t>(slot_count()),
                             std::memory_order_release);
}

}  // namespace oomlab::scenarios
