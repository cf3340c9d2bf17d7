// The pickle virtual machine, cut down to plain data: a value stack, a stack of MARK positions
// and the memo, as in CPython's Modules/_pickle.c (whose "fence" rule is kept: an opcode sees
// only the values pushed since the last MARK).
#include "harness/replay/pickle_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "harness/memory/size.hpp"
#include "harness/replay/pickle_graph.hpp"
#include "harness/replay/pickle_opcodes.hpp"
#include "harness/replay/utf8_text.hpp"

namespace oomlab::replay {

PickleError::PickleError(std::uint64_t offset, const std::string& problem)
    : std::runtime_error("byte " + std::to_string(offset) + ": " + problem), offset_(offset) {}

namespace {

constexpr int kOldestProtocol = 2;  // the first with PROTO and the binary True/False/long forms
constexpr int kNewestProtocol = 5;
constexpr std::size_t kNotATrace = static_cast<std::size_t>(-1);
constexpr std::size_t kNodeCost = sizeof(PickleNode);
constexpr std::size_t kSlotCost = sizeof(PickleValue);
// Lists on the stack between "device_traces" and the trace being filled: the list of devices,
// then the traces of the devices before it in the same APPENDS batch.
constexpr std::size_t kMaxTraceListsOnStack = 64;
// A trace entry handed to the sink is recycled only when no copy of it can be on the stack:
// checked by a scan, done when the stack is as short as a snapshot's is there.
constexpr std::size_t kMaxStackScannedForCopies = 64;

std::string hex_byte(std::uint8_t byte) {
  constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

}  // namespace

int pickle_protocol_of(const std::uint8_t* data, std::size_t size) {
  const auto fail = [](const std::string& problem) -> int { throw PickleError(0, problem); };
  if (size == 0) return fail("the file is empty, not a pickle");
  if (data[0] != opcode::PROTO) {
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
      return fail("the file is gzip-compressed, not a pickle (gunzip it first)");
    }
    return fail("the file starts with " + hex_byte(data[0]) +
                ", not PROTO (0x80): not a binary pickle of protocol 2 or newer "
                "(torch.cuda.memory._dump_snapshot writes protocol 4 or 5)");
  }
  if (size < 2) return fail("the file ends after PROTO, before its protocol number (truncated)");
  const int protocol = data[1];
  if (protocol < kOldestProtocol || protocol > kNewestProtocol) {
    return fail("pickle protocol " + std::to_string(protocol) + " is not read here (only 2 to 5; " +
                "torch.cuda.memory._dump_snapshot writes 4 or 5)");
  }
  return protocol;
}

class PickleDecoder {
 public:
  PickleDecoder(PickleInput& input, const PickleLimits& limits, PickleTraceSink* sink)
      : input_(input), limits_(limits), sink_(sink) {}

  PickleDocument run();

 private:
  struct Mark {
    std::size_t stack_size;
    std::uint64_t offset;
  };

  // --- errors and input ---
  [[noreturn]] void fail(const std::string& problem) const {
    throw PickleError(op_offset_, problem);
  }
  [[noreturn]] void fail_op(const std::string& problem) const {
    fail(std::string(opcode_info(op_).name) + " " + problem);
  }
  [[noreturn]] void fail_truncated(std::uint64_t n, std::uint64_t left) const {
    fail_op("needs " + std::to_string(n) + " bytes after it but the file has " +
            std::to_string(left) + " left (truncated or corrupt)");
  }
  // Where the length of the input is known, a length past its end is refused before anything
  // is read or allocated.
  void require_available(std::uint64_t n) const {
    const auto left = input_.known_left();
    if (left && n > *left) fail_truncated(n, *left);
  }
  const std::uint8_t* take(std::uint64_t n) {
    require_available(n);
    const std::uint8_t* bytes = input_.take(static_cast<std::size_t>(n));
    if (bytes == nullptr) fail_truncated(n, input_.buffered());
    return bytes;
  }
  std::uint64_t read_le(std::size_t width) {
    const std::uint8_t* bytes = take(width);
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < width; ++i) value |= std::uint64_t{bytes[i]} << (8 * i);
    return value;
  }

  // --- memory ---
  void charge(std::size_t bytes) {
    if (charged_ > limits_.max_decoded_bytes || bytes > limits_.max_decoded_bytes - charged_) {
      fail("the decoded data would take more than " + format_size(limits_.max_decoded_bytes) +
           " (the reader's memory limit)");
    }
    charged_ += bytes;
  }
  PickleNode& new_node(PickleKind kind) {
    charge(kNodeCost);
    PickleNode& node = doc_.add_node();
    node.kind = kind;
    node.offset = op_offset_;
    return node;
  }
  // Values point at nodes as const; the decoder owns them and fills them while it runs.
  static PickleNode& mutable_node(const PickleValue& value) {
    return const_cast<PickleNode&>(*static_cast<const PickleNode*>(value.identity()));
  }
  static void hold(const PickleValue& value) {
    if (value.identity() != nullptr) ++mutable_node(value).holders;
  }

  // --- stack ---
  std::size_t fence() const { return marks_.empty() ? 0 : marks_.back().stack_size; }
  void require(std::size_t n) const {
    const std::size_t available = stack_.size() - fence();
    if (available < n) {
      fail_op("needs " + std::to_string(n) + " value(s) on the stack above the last MARK and " +
              "finds " + std::to_string(available));
    }
  }
  void push(PickleValue value) {
    if (stack_.size() >= stack_charged_) {
      charge(kSlotCost);
      ++stack_charged_;
    }
    stack_.push_back(value);
  }
  Mark pop_mark() {
    if (marks_.empty()) fail_op("has no MARK to close");
    Mark mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  // The container an APPEND-like opcode fills: the value at stack_[index], which must be of
  // `kind` and not below the fence.
  PickleNode& target(std::size_t index, PickleKind kind) {
    if (index == static_cast<std::size_t>(-1) || index < fence()) {
      fail_op("has no " + std::string(pickle_kind_name(kind)) + " to fill below it");
    }
    const PickleValue& value = stack_[index];
    if (!value.is(kind)) {
      fail_op("fills a " + std::string(pickle_kind_name(value.kind())) + "; only a " +
              pickle_kind_name(kind) + " takes it");
    }
    return mutable_node(value);
  }
  void move_into(PickleNode& container, std::size_t first) {
    const std::size_t count = stack_.size() - first;
    charge(count * kSlotCost);
    // Picklers fill a container in batches (APPENDS, SETITEMS): one allocation for the first,
    // doubling after, so one-at-a-time APPENDs stay linear.
    std::vector<PickleValue>& items = container.items;
    if (items.capacity() - items.size() < count) {
      items.reserve(std::max(items.size() + count, 2 * items.capacity()));
    }
    for (std::size_t i = first; i < stack_.size(); ++i) {
      hold(stack_[i]);
      items.push_back(stack_[i]);
    }
    stack_.resize(first);
  }

  // --- opcodes ---
  void read_protocol();
  void push_integer_le(const std::uint8_t* bytes, std::size_t n);
  void append(std::size_t target_index, std::size_t first);
  std::size_t device_of_trace(std::size_t index);
  void hand_over_entries(std::size_t trace_index, std::size_t first);
  void hand_over_finished_entries();
  bool on_stack(const PickleNode* node) const;
  void recycle(PickleNode& node);
  void push_text(PickleKind kind, std::uint64_t length);
  void make_container(PickleKind kind, std::size_t first);
  void memo_put(std::uint64_t index);
  void memo_get(std::uint64_t index);
  // The node remembers its slot, so that recycling it can empty the slot.
  void note_memo_slot(std::uint64_t index) {
    if (stack_.back().identity() == nullptr) return;
    PickleNode& node = mutable_node(stack_.back());
    if (node.memo_slot != PickleNode::kNoMemoSlot && node.memo_slot != index) node.memoized_twice = true;
    node.memo_slot = static_cast<std::uint32_t>(index);
  }
  void refuse() const;
  void finish();

  PickleInput& input_;
  std::uint64_t op_offset_ = 0;
  std::uint8_t op_ = opcode::PROTO;
  const PickleLimits& limits_;
  PickleTraceSink* sink_;
  // The trace list found last (device_of_trace): its node and device.
  const void* trace_node_ = nullptr;
  std::size_t trace_device_ = 0;
  PickleDocument doc_;
  std::vector<PickleValue> stack_;
  std::size_t stack_charged_ = 0;  // stack slots paid for (the high-water mark)
  std::vector<Mark> marks_;
  // In blocks that never move: a vector of 60M slots would hold two copies as it last grew.
  std::deque<PickleValue> memo_;
  std::vector<bool> memo_recycled_;  // slots whose value was a trace entry, recycled
  std::size_t charged_ = 0;
};

void PickleDecoder::read_protocol() {
  const std::uint8_t* head = input_.peek(2);
  if (head != nullptr) {
    doc_.protocol_ = pickle_protocol_of(head, 2);
  } else {
    head = input_.peek(input_.buffered());
    doc_.protocol_ = pickle_protocol_of(head, input_.buffered());
  }
  input_.take(2);
}

// Two's complement, little-endian, n bytes (LONG1/LONG4, BININT*): Python ints are unbounded,
// snapshot integers are 64-bit sizes, addresses and streams.
void PickleDecoder::push_integer_le(const std::uint8_t* bytes, std::size_t n) {
  const bool negative = n > 0 && (bytes[n - 1] & 0x80) != 0;
  std::uint64_t magnitude = 0;
  unsigned carry = negative ? 1 : 0;  // negating: invert every byte, then add one
  for (std::size_t i = 0; i < n; ++i) {
    unsigned byte = negative ? (~bytes[i] & 0xFFu) + carry : bytes[i];
    carry = byte >> 8;
    byte &= 0xFFu;
    if (i < 8) {
      magnitude |= std::uint64_t{byte} << (8 * i);
    } else if (byte != 0) {
      fail_op("holds an integer outside +-(2^64 - 1); snapshot integers are 64-bit");
    }
  }
  push(PickleValue::integer(negative, magnitude));
}

void PickleDecoder::push_text(PickleKind kind, std::uint64_t length) {
  require_available(length);
  if (length > limits_.max_string_bytes) {
    fail_op("holds " + format_size(length) + ", more than the " +
            format_size(limits_.max_string_bytes) + " one string may have here");
  }
  const std::uint64_t start = input_.position();
  const std::uint8_t* bytes = take(length);
  charge(static_cast<std::size_t>(length));
  PickleNode& node = new_node(kind);
  node.text.assign(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(length));
  if (kind == PickleKind::string) {
    const std::size_t bad = repair_python_utf8(node.text);
    if (bad != kValidUtf8) {
      const std::uint64_t at = start + bad;
      fail_op("holds bytes that are not UTF-8 (byte " + std::to_string(at) + " of the file)");
    }
  }
  push(PickleValue::node(&node));
}

void PickleDecoder::make_container(PickleKind kind, std::size_t first) {
  PickleNode& node = new_node(kind);
  move_into(node, first);
  push(PickleValue::node(&node));
}

// Picklers number memo slots 0, 1, 2, ... as they write them; an index past the next free slot
// is refused rather than stored sparsely, so memo memory follows the opcodes read.
void PickleDecoder::memo_put(std::uint64_t index) {
  require(1);
  if (index < memo_.size()) {
    memo_[static_cast<std::size_t>(index)] = stack_.back();
    if (index < memo_recycled_.size()) memo_recycled_[static_cast<std::size_t>(index)] = false;
    note_memo_slot(index);
    return;
  }
  if (index > memo_.size()) {
    fail_op("writes memo slot " + std::to_string(index) + ", but slots are written in order " +
            "and the next is " + std::to_string(memo_.size()));
  }
  if (memo_.size() >= limits_.max_memo_entries) {
    fail_op("would make the memo hold more than " + std::to_string(limits_.max_memo_entries) +
            " values (the decoder's limit)");
  }
  charge(kSlotCost);
  memo_.push_back(stack_.back());
  note_memo_slot(index);
}

void PickleDecoder::memo_get(std::uint64_t index) {
  if (index >= memo_.size()) {
    fail_op("reads memo slot " + std::to_string(index) + ", which was never written");
  }
  if (index < memo_recycled_.size() && memo_recycled_[static_cast<std::size_t>(index)]) {
    fail_op("reads memo slot " + std::to_string(index) + ", a trace entry already read: torch " +
            "writes each trace entry once");
  }
  push(memo_[static_cast<std::size_t>(index)]);
}

void PickleDecoder::append(std::size_t target_index, std::size_t first) {
  PickleNode& list = target(target_index, PickleKind::list);
  if (sink_ != nullptr && first < stack_.size() && device_of_trace(target_index) != kNotATrace) {
    hand_over_entries(target_index, first);
    return;
  }
  move_into(list, first);
}

// The device whose trace stack_[index] is, or kNotATrace: above it, lists only (the list of
// devices, earlier devices' traces), then the str "device_traces" with the root dict at the
// bottom. The last list found is remembered, so each batch of entries costs a comparison.
std::size_t PickleDecoder::device_of_trace(std::size_t index) {
  const PickleValue& list = stack_[index];
  if (list.identity() == trace_node_) return trace_device_;
  if (!list.is(PickleKind::list) || !stack_[0].is(PickleKind::dict)) return kNotATrace;
  for (std::size_t k = index; k-- > 1 && index - k <= kMaxTraceListsOnStack;) {
    const PickleValue& below = stack_[k];
    if (below.is(PickleKind::string)) {
      if (below.text() != "device_traces" || k + 2 > index) return kNotATrace;
      trace_node_ = list.identity();
      trace_device_ = (index - (k + 2)) + stack_[k + 1].size();
      return trace_device_;
    }
    if (!below.is(PickleKind::list)) return kNotATrace;
  }
  return kNotATrace;
}

// A new dict starts: the dicts above a trace list's MARK are finished entries (every opcode
// that fills a dict works on the top values), so they are handed over now, not at APPENDS, which
// a pickler may write once for the whole trace.
void PickleDecoder::hand_over_finished_entries() {
  if (marks_.empty()) return;
  const std::size_t first = marks_.back().stack_size;
  if (first == 0 || first >= stack_.size()) return;
  if (device_of_trace(first - 1) == kNotATrace) return;
  hand_over_entries(first - 1, first);
}

bool PickleDecoder::on_stack(const PickleNode* node) const {
  for (const PickleValue& value : stack_) {
    if (value.identity() == node) return true;
  }
  return false;
}

// Forgets a node handed over: it and what only it held go back to the document for reuse,
// their memo slots closed, their memory no longer counted.
void PickleDecoder::recycle(PickleNode& node) {
  for (const PickleValue& child : node.items) {
    if (child.identity() == nullptr) continue;
    PickleNode& inner = mutable_node(child);
    if (--inner.holders != 0 || inner.memo_slot != PickleNode::kNoMemoSlot ||
        inner.kind == PickleKind::list || inner.kind == PickleKind::tuple ||
        inner.kind == PickleKind::dict || on_stack(&inner)) {
      continue;  // a str or bytes that this entry alone holds goes with it
    }
    charged_ -= std::min(charged_, kNodeCost + inner.text.size());
    doc_.recycle(inner);
  }
  if (node.memo_slot != PickleNode::kNoMemoSlot) {
    if (memo_recycled_.size() < memo_.size()) memo_recycled_.resize(memo_.size());
    memo_recycled_[node.memo_slot] = true;
    memo_[node.memo_slot] = PickleValue();
  }
  charged_ -= std::min(charged_, kNodeCost + node.items.size() * kSlotCost);
  doc_.recycle(node);
}

void PickleDecoder::hand_over_entries(std::size_t trace_index, std::size_t first) {
  const std::size_t count = stack_.size() - first;
  for (std::size_t i = first; i < stack_.size(); ++i) {
    if (stack_[i].identity() == nullptr) continue;
    PickleNode& node = mutable_node(stack_[i]);
    if (node.consumed || node.holders != 0) {
      op_offset_ = node.offset;
      fail("this trace entry appears twice through memo references; torch writes each entry once");
    }
    node.consumed = true;
  }
  charge(sink_->take_entries(stack_[trace_index], device_of_trace(trace_index), &stack_[first], count));
  std::vector<PickleNode*> done;
  done.reserve(count);
  for (std::size_t i = first; i < stack_.size(); ++i) {
    if (stack_[i].identity() != nullptr) done.push_back(&mutable_node(stack_[i]));
  }
  stack_.resize(first);
  for (PickleNode* node : done) {
    for (const PickleValue& child : node->items) {
      if (!child.is(PickleKind::list) || child.size() == 0 || !sink_->read_for_good(child)) continue;
      PickleNode& list = mutable_node(child);
      charged_ -= std::min(charged_, list.items.size() * kSlotCost);
      std::vector<PickleValue>().swap(list.items);
    }
  }
  if (stack_.size() > kMaxStackScannedForCopies) return;
  for (PickleNode* node : done) {
    if (node->memoized_twice || on_stack(node)) continue;
    recycle(*node);
  }
}

void PickleDecoder::refuse() const {
  const OpcodeInfo& info = opcode_info(op_);
  const std::string named = std::string("opcode ") + info.name + " (" + hex_byte(op_) + ")";
  switch (info.use) {
    case OpcodeUse::runs_code:
      fail(named + " " + info.why + "; a memory snapshot is plain data, so the file is refused " +
           "(it could run code in pickle.load)");
    case OpcodeUse::text_protocol:
      fail(named + " belongs to text protocol 0, which a protocol " +
           std::to_string(doc_.protocol()) + " snapshot does not use");
    case OpcodeUse::not_in_snapshots:
      fail(named + " " + info.why + ", which a memory snapshot never holds");
    case OpcodeUse::unknown:
    case OpcodeUse::decoded: break;
  }
  fail("byte " + hex_byte(op_) + " is not a pickle opcode (corrupt file)");
}

void PickleDecoder::finish() {
  if (!marks_.empty()) {
    fail("STOP while the MARK at byte " + std::to_string(marks_.back().offset) + " is open");
  }
  if (stack_.size() != 1) {
    fail("STOP with " + std::to_string(stack_.size()) +
         " values on the stack; a pickle ends with exactly one");
  }
  if (!input_.at_end()) {
    op_offset_ = input_.position();
    const auto left = input_.known_left();
    fail((left ? std::to_string(*left) + " bytes follow" : std::string("more bytes follow")) +
         " STOP; a snapshot file holds one pickle");
  }
  doc_.root_ = stack_.back();
  hold(doc_.root_);
  check_pickle_graph(doc_.root_, limits_.max_depth);
}

PickleDocument PickleDecoder::run() {
  read_protocol();
  for (;;) {
    op_offset_ = input_.position();
    const std::uint8_t* op = input_.take(1);
    if (op == nullptr) fail("the file ends without STOP (truncated)");
    op_ = *op;
    switch (op_) {
      case opcode::STOP: finish(); return std::move(doc_);
      case opcode::PROTO: fail_op("appears after the start; a pickle names its protocol once");
      case opcode::FRAME: {
        // Protocol 4 groups opcodes in frames of up to 64 KiB; only the length needs checking.
        const std::uint64_t length = read_le(8);
        const auto left = input_.known_left();
        if (left && length > *left) {
          fail_op("declares " + std::to_string(length) + " bytes but the file has " +
                  std::to_string(*left) + " left (truncated)");
        }
        break;
      }
      // Stack bookkeeping.
      case opcode::MARK:
        if (marks_.size() >= limits_.max_depth) {
          fail_op("opens more than " + std::to_string(limits_.max_depth) + " nested MARKs");
        }
        marks_.push_back({stack_.size(), op_offset_});
        break;
      case opcode::POP:
        if (stack_.size() > fence()) {
          stack_.pop_back();
        } else {
          pop_mark();  // Python's load_pop: an empty frame pops its MARK
        }
        break;
      case opcode::POP_MARK: stack_.resize(pop_mark().stack_size); break;
      case opcode::DUP:
        require(1);
        push(stack_.back());
        break;
      // Scalars.
      case opcode::NONE: push(PickleValue()); break;
      case opcode::NEWTRUE: push(PickleValue::boolean(true)); break;
      case opcode::NEWFALSE: push(PickleValue::boolean(false)); break;
      case opcode::BININT1: push(PickleValue::integer(false, read_le(1))); break;  // unsigned
      case opcode::BININT2: push(PickleValue::integer(false, read_le(2))); break;  // unsigned
      case opcode::BININT: push_integer_le(take(4), 4); break;
      case opcode::LONG1: {
        const std::size_t n = *take(1);
        push_integer_le(take(n), n);
        break;
      }
      case opcode::LONG4: {
        const std::uint64_t n = read_le(4);
        if (n & 0x80000000u) fail_op("has a negative length");
        require_available(n);
        if (n > limits_.max_string_bytes) {
          fail_op("holds an integer of " + format_size(n) + "; snapshot integers are 64-bit");
        }
        push_integer_le(take(n), static_cast<std::size_t>(n));
        break;
      }
      case opcode::BINFLOAT: {
        const std::uint8_t* bytes = take(8);
        std::uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | bytes[i];  // big-endian
        double value = 0;
        std::memcpy(&value, &bits, sizeof value);
        push(PickleValue::floating(value));
        break;
      }
      // Strings and bytes.
      case opcode::SHORT_BINUNICODE: push_text(PickleKind::string, read_le(1)); break;
      case opcode::BINUNICODE: push_text(PickleKind::string, read_le(4)); break;
      case opcode::BINUNICODE8: push_text(PickleKind::string, read_le(8)); break;
      case opcode::SHORT_BINBYTES: push_text(PickleKind::bytes, read_le(1)); break;
      case opcode::BINBYTES: push_text(PickleKind::bytes, read_le(4)); break;
      case opcode::BINBYTES8: push_text(PickleKind::bytes, read_le(8)); break;
      // Containers.
      case opcode::EMPTY_LIST: make_container(PickleKind::list, stack_.size()); break;
      case opcode::EMPTY_TUPLE: make_container(PickleKind::tuple, stack_.size()); break;
      case opcode::EMPTY_DICT:
        if (sink_ != nullptr) hand_over_finished_entries();
        make_container(PickleKind::dict, stack_.size());
        break;
      case opcode::LIST: make_container(PickleKind::list, pop_mark().stack_size); break;
      case opcode::TUPLE: make_container(PickleKind::tuple, pop_mark().stack_size); break;
      case opcode::TUPLE1:
      case opcode::TUPLE2:
      case opcode::TUPLE3: {
        const std::size_t n = op_ - opcode::TUPLE1 + 1;
        require(n);
        make_container(PickleKind::tuple, stack_.size() - n);
        break;
      }
      case opcode::DICT: {
        const std::size_t first = pop_mark().stack_size;
        if ((stack_.size() - first) % 2 != 0) fail_op("has an odd number of keys and values");
        make_container(PickleKind::dict, first);
        break;
      }
      case opcode::APPEND:
        require(2);
        append(stack_.size() - 2, stack_.size() - 1);
        break;
      case opcode::APPENDS: {
        const std::size_t first = pop_mark().stack_size;
        append(first - 1, first);
        break;
      }
      case opcode::SETITEM:
        require(3);
        move_into(target(stack_.size() - 3, PickleKind::dict), stack_.size() - 2);
        break;
      case opcode::SETITEMS: {
        const std::size_t first = pop_mark().stack_size;
        if ((stack_.size() - first) % 2 != 0) fail_op("has an odd number of keys and values");
        move_into(target(first - 1, PickleKind::dict), first);
        break;
      }
      // The memo.
      case opcode::BINPUT: memo_put(read_le(1)); break;
      case opcode::LONG_BINPUT: memo_put(read_le(4)); break;
      case opcode::MEMOIZE: memo_put(memo_.size()); break;
      case opcode::BINGET: memo_get(read_le(1)); break;
      case opcode::LONG_BINGET: memo_get(read_le(4)); break;
      default: refuse();
    }
  }
}

PickleDocument decode_pickle(const std::uint8_t* data, std::size_t size,
                             const PickleLimits& limits) {
  PickleInput input(data, size);
  return PickleDecoder(input, limits, nullptr).run();
}

PickleDocument decode_pickle(PickleInput& input, const PickleLimits& limits,
                             PickleTraceSink* sink) {
  return PickleDecoder(input, limits, sink).run();
}

}  // namespace oomlab::replay
