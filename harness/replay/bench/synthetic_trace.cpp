#include "synthetic_trace.hpp"

#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::replay::bench {
namespace {

using namespace oomlab::literals;

// Protocol-4 opcodes with the memo: each distinct str or stack is written once, then BINGET.
class PickleWriter {
 public:
  PickleWriter() { out_ = {'\x80', '\x04'}; }

  void str(const std::string& text) {
    const auto it = memo_.find(text);
    if (it != memo_.end()) return get(it->second);
    out_ += '\x8c';  // SHORT_BINUNICODE
    out_ += static_cast<char>(text.size());
    out_ += text;
    memoize(text);
  }
  void integer(std::int64_t value) {
    if (value >= 0 && value < (std::int64_t{1} << 31)) {
      out_ += 'J';  // BININT
      le(static_cast<std::uint64_t>(value), 4);
    } else {
      out_ += "\x8a\x08";  // LONG1, 8 bytes
      le(static_cast<std::uint64_t>(value), 8);
    }
  }
  void boolean(bool value) { out_ += value ? '\x88' : '\x89'; }
  void floating(double) { out_ += "G" + std::string(8, '\0'); }
  void begin_dict() { out_ += "}("; }
  void begin_memoized_dict() {  // as Python writes it: EMPTY_DICT, MEMOIZE, MARK
    out_ += '}';
    memoize_value();
    out_ += '(';
  }
  void end_dict() { out_ += 'u'; }
  void begin_list() { out_ += "]("; }
  void end_list() { out_ += 'e'; }
  void empty_list() { out_ += ']'; }
  // A value shared by name (a frames list): written by `write` once, then referenced.
  template <typename Write>
  void shared(const std::string& name, Write write) {
    const auto it = memo_.find(name);
    if (it != memo_.end()) return get(it->second);
    write();
    memoize(name);
  }
  // Memoizes the value just written (Python memoizes every dict and list); returns its slot.
  std::uint32_t memoize_value() {
    out_ += '\x94';  // MEMOIZE
    return next_memo_++;
  }
  void get(std::uint32_t index) {
    if (index < 256) {
      out_ += 'h';
      out_ += static_cast<char>(index);
    } else {
      out_ += 'j';
      le(index, 4);
    }
  }
  std::vector<std::uint8_t> finish() {
    out_ += '.';
    return {out_.begin(), out_.end()};
  }

 private:
  void le(std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((value >> (8 * i)) & 0xFF);
  }
  void memoize(const std::string& name) {
    out_ += '\x94';  // MEMOIZE
    memo_.emplace(name, next_memo_++);
  }
  std::string out_;
  std::unordered_map<std::string, std::uint32_t> memo_;
  std::uint32_t next_memo_ = 0;
};

// A dry source that notes every segment call, so the trace can say what PyTorch "did".
class NotingSource final : public memory::MemorySource {
 public:
  struct Call {
    const char* action;
    std::uint64_t addr, size;
  };
  std::vector<Call> calls;

 private:
  void* do_allocate(std::size_t bytes) override {
    const std::uint64_t base = next_;
    next_ += bytes + 2_MiB;
    calls.push_back({"segment_alloc", base, bytes});
    return reinterpret_cast<void*>(base);
  }
  void do_deallocate(void* ptr, std::size_t bytes) override {
    calls.push_back({"segment_free", reinterpret_cast<std::uint64_t>(ptr), bytes});
  }
  bool do_supports_expandable() const override { return false; }
  std::size_t do_page_granularity() const override { return 2_MiB; }
  void* do_reserve(std::size_t) override { return nullptr; }
  void do_release(void*, std::size_t) override {}
  bool do_map(void*, std::size_t) override { return false; }
  void do_unmap(void*, std::size_t) override {}
  memory::EventHandle do_record_event(memory::StreamHandle) override { return 1; }
  bool do_event_complete(memory::EventHandle) override { return true; }
  void do_destroy_event(memory::EventHandle) override {}
  std::size_t do_external_bytes() const override { return 0; }
  std::string do_name() const override { return "noting"; }
  bool do_has_backing() const override { return false; }
  std::uint64_t next_ = 0x7f0000000000;
};

class TraceWriter {
 public:
  TraceWriter(std::size_t entries, std::size_t live_blocks, bool torch_density)
      : limit_(entries), live_blocks_(live_blocks), torch_density_(torch_density), allocator_(source_, config()) {}

  std::vector<std::uint8_t> write() {
    pickle_.begin_dict();
    pickle_.str("segments");
    pickle_.empty_list();
    pickle_.str("device_traces");
    pickle_.begin_list();
    pickle_.begin_list();
    run_program();
    pickle_.end_list();
    pickle_.end_list();
    pickle_.str("allocator_settings");
    pickle_.begin_dict();
    pickle_.str("PYTORCH_CUDA_ALLOC_CONF");
    pickle_.str("");
    pickle_.str("max_split_size");
    pickle_.integer(-1);
    pickle_.str("expandable_segments");
    pickle_.boolean(false);
    pickle_.end_dict();
    pickle_.end_dict();
    return pickle_.finish();
  }

 private:
  static memory::AllocatorConfig config() {
    memory::AllocatorConfig config;
    config.ties_by_address = true;  // as the replay breaks them
    config.trace_capacity = 0;
    return config;
  }

  void entry(const char* action, std::uint64_t addr, std::uint64_t size, int stack) {
    if (torch_density_) {
      pickle_.begin_memoized_dict();
    } else {
      pickle_.begin_dict();
    }
    pickle_.str("action");
    pickle_.str(action);
    pickle_.str("addr");
    pickle_.integer(static_cast<std::int64_t>(addr));
    pickle_.str("size");
    pickle_.integer(static_cast<std::int64_t>(size));
    pickle_.str("stream");
    pickle_.integer(0);
    pickle_.str("time_us");
    pickle_.integer(1730000000000000 + static_cast<std::int64_t>(written_));
    pickle_.str("frames");
    if (torch_density_ && block_frames(action, addr, stack)) {
      // written by block_frames
    } else {
      frames(stack);
    }
    pickle_.end_dict();
    ++written_;
  }

  // Eight call sites, two frames each (the model's line, the training loop's).
  void frames(int stack) {
    pickle_.shared("stack" + std::to_string(stack), [&] {
      pickle_.begin_list();
      for (int depth = 0; depth < 2; ++depth) {
        pickle_.shared("frame" + std::to_string(stack) + "." + std::to_string(depth), [&] {
          pickle_.begin_dict();
          pickle_.str("filename");
          pickle_.str(depth == 0 ? "model.py" : "train.py");
          pickle_.str("line");
          pickle_.integer(depth == 0 ? 10 + stack : 99);
          pickle_.str("name");
          pickle_.str(depth == 0 ? "forward" : "train_step");
          pickle_.end_dict();
        });
      }
      pickle_.end_list();
    });
  }

  // torch's own layout: each allocation's traceback is a list of its own (Python and C++ frames,
  // kFramesPerStack of them), which its free entries reference through the memo.
  static constexpr int kFramesPerStack = 12;
  bool block_frames(const char* action, std::uint64_t addr, int stack) {
    const std::string name = action;
    if (name == "alloc") {
      pickle_.begin_list();
      for (int depth = 0; depth < kFramesPerStack; ++depth) {
        pickle_.shared("frame" + std::to_string(stack) + "." + std::to_string(depth), [&] {
          pickle_.begin_dict();
          pickle_.str("filename");
          pickle_.str(depth == 0 ? "model.py" : depth == 1 ? "train.py" : "/usr/lib/python3/torch/nn/module.py");
          pickle_.str("line");
          pickle_.integer(depth == 0 ? 10 + stack : 99 + depth);
          pickle_.str("name");
          pickle_.str(depth == 0 ? "forward" : depth == 1 ? "train_step" : "_call_impl");
          pickle_.end_dict();
        });
      }
      pickle_.end_list();
      block_lists_[addr] = pickle_.memoize_value();
      return true;
    }
    const auto it = block_lists_.find(addr);
    if ((name != "free_requested" && name != "free_completed") || it == block_lists_.end()) return false;
    pickle_.get(it->second);
    if (name == "free_completed") block_lists_.erase(it);
    return true;
  }

  void flush_segment_calls(int stack) {
    for (const NotingSource::Call& call : source_.calls) entry(call.action, call.addr, call.size, stack);
    source_.calls.clear();
  }

  void* alloc(std::size_t bytes, int stack) {
    void* block = allocator_.allocate(bytes);
    flush_segment_calls(stack);
    entry("alloc", reinterpret_cast<std::uint64_t>(block), bytes, stack);
    requested_[block] = {bytes, stack};
    return block;
  }

  void free(void* block) {
    const auto [bytes, stack] = requested_.at(block);
    requested_.erase(block);
    entry("free_requested", reinterpret_cast<std::uint64_t>(block), bytes, stack);
    allocator_.deallocate(block);
    entry("free_completed", reinterpret_cast<std::uint64_t>(block), bytes, stack);
  }

  // Long-lived blocks in pairs: a block, then a temporary freed at once whose place the pair's
  // second block takes, 512 bytes smaller. The 512 bytes left between every two pairs stay
  // free for good (no later request is that small): as many free blocks as live ones, half.
  void allocate_long_lived() {
    for (std::size_t i = 0; i + 1 < live_blocks_ && written_ + 64 < limit_; i += 2) {
      alloc(192_KiB + (i % 7) * 512, 5);
      free(alloc(64_KiB, 6));
      alloc(64_KiB - 512, 6);
    }
  }

  void run_program() {
    allocate_long_lived();
    std::vector<void*> weights;
    for (int i = 0; i < 32; ++i) weights.push_back(alloc((3 + i % 5) * 1_MiB + 4096 * i, 0));
    std::uint64_t step = 0;
    while (written_ + 64 < limit_) {
      std::vector<void*> activations;
      for (int layer = 0; layer < 12 && written_ + 16 < limit_; ++layer) {
        const std::size_t batch_wobble = (step % 3) * 64_KiB;
        activations.push_back(alloc(2_MiB + batch_wobble + layer * 128_KiB, 1 + layer % 6));
        activations.push_back(alloc(96_KiB + layer * 512, 7));
      }
      while (!activations.empty()) {
        free(activations.back());
        activations.pop_back();
      }
      ++step;
    }
    for (void* block : weights) free(block);
    allocator_.empty_cache();
    flush_segment_calls(0);
  }

  std::size_t limit_;
  std::size_t live_blocks_;
  bool torch_density_;
  std::unordered_map<std::uint64_t, std::uint32_t> block_lists_;  // torch_density_: a live block's frames list
  std::size_t written_ = 0;
  PickleWriter pickle_;
  NotingSource source_;
  memory::CachingAllocator allocator_;
  std::map<void*, std::pair<std::size_t, int>> requested_;
};

}  // namespace

std::vector<std::uint8_t> synthetic_snapshot(std::size_t entries, std::size_t live_blocks, bool torch_density) {
  return TraceWriter(entries, live_blocks, torch_density).write();
}

}  // namespace oomlab::replay::bench
