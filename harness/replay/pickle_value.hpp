// The values a PyTorch memory snapshot pickle holds: None, bool, int, float, str, bytes, list,
// tuple, dict. Nothing else can be decoded (pickle_decoder.hpp says why), so nothing here can
// stand for a Python object with behaviour.
//
// Scalars live inside a PickleValue (16 bytes); strings, bytes and containers are PickleNodes
// owned by their PickleDocument. A memo reference (BINGET) shares a node instead of copying it,
// as Python does: torch's snapshots reuse one frame list per allocation and one dict per frame,
// so copying would multiply a trace's size, and a hostile file could nest references into an
// exponential tree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlab::replay {

enum class PickleKind : std::uint8_t {
  none,
  boolean,
  integer,
  floating,
  string,
  bytes,
  list,
  tuple,
  dict
};

// "None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict": Python's names.
const char* pickle_kind_name(PickleKind kind);

struct PickleNode;

class PickleValue {
 public:
  PickleValue() = default;  // None
  static PickleValue boolean(bool value);
  // An integer as sign and magnitude, so the whole range a snapshot uses fits: addresses and
  // sizes are unsigned 64-bit, streams and max_split_size (-1) signed.
  static PickleValue integer(bool negative, std::uint64_t magnitude);
  static PickleValue floating(double value);
  static PickleValue node(const PickleNode* node);  // string, bytes or a container

  PickleKind kind() const { return kind_; }
  bool is(PickleKind kind) const { return kind_ == kind; }
  bool as_bool() const { return boolean_; }
  double as_double() const { return double_; }
  // The integer when it fits the type; nullopt for other kinds and out-of-range values.
  std::optional<std::int64_t> to_int64() const;
  std::optional<std::uint64_t> to_uint64() const;
  // The integer's sign and magnitude, whatever its range.
  bool is_negative() const { return negative_; }
  std::uint64_t magnitude() const { return kind_ == PickleKind::integer ? magnitude_ : 0; }

  // Strings (valid UTF-8) and bytes.
  std::string_view text() const;
  // Lists and tuples: items; dicts: entries.
  std::size_t size() const;
  PickleValue item(std::size_t i) const;
  PickleValue key(std::size_t i) const;    // dict entry i
  PickleValue value(std::size_t i) const;  // dict entry i
  // The value of the string key `name` in a dict; nullptr when absent or when not a dict.
  const PickleValue* find(std::string_view name) const;

  // Where the node was made: the byte offset of its opcode, for messages. 0 for scalars.
  std::uint64_t offset() const;
  // How many containers hold this node (the root counts as one). A snapshot's segment, block
  // and trace-entry dicts are each held once; a count above one is a hand-made file.
  std::uint32_t holders() const;
  // The same node reached twice gives the same identity (nullptr for scalars).
  const void* identity() const;

 private:
  PickleKind kind_ = PickleKind::none;
  bool negative_ = false;  // integers: sign of magnitude_
  union {
    bool boolean_;
    std::uint64_t magnitude_;
    double double_;
    const PickleNode* node_ = nullptr;
  };
};
static_assert(sizeof(PickleValue) == 16, "PickleValue is meant to stay two words");

// Storage for strings, bytes and containers; read it through PickleValue.
struct PickleNode {
  static constexpr std::uint32_t kNoMemoSlot = 0xFFFFFFFFu;
  PickleKind kind = PickleKind::none;
  // Scratch for the graph check after decoding (pickle_graph.cpp).
  mutable std::uint8_t visit_state = 0;
  // Streaming (pickle_decoder.hpp's PickleTraceSink): handed to the sink as a trace entry, and
  // put in the memo more than once (so not recycled).
  bool consumed = false;
  bool memoized_twice = false;
  std::uint32_t holders = 0;
  std::uint64_t offset = 0;  // byte offset of the opcode that made it
  mutable std::uint32_t height = 0;
  std::uint32_t memo_slot = kNoMemoSlot;  // the memo slot it was put in, if any
  std::string text;                // string, bytes
  std::vector<PickleValue> items;  // list, tuple; dict: key0, value0, key1, value1, ...
};

// A decoded pickle: the root value and the nodes it reaches. Move-only: values point into it.
class PickleDocument {
 public:
  PickleDocument() = default;
  PickleDocument(PickleDocument&&) = default;
  PickleDocument& operator=(PickleDocument&&) = default;
  PickleDocument(const PickleDocument&) = delete;
  PickleDocument& operator=(const PickleDocument&) = delete;

  const PickleValue& root() const { return root_; }
  int protocol() const { return protocol_; }
  std::size_t node_count() const { return node_count_; }

 private:
  friend class PickleDecoder;
  PickleNode& add_node();
  // A node nothing can reach any more (a trace entry turned into an event): made again by the
  // next add_node, its vectors' capacity kept, so a streamed trace reuses a few nodes.
  void recycle(PickleNode& node);
  std::vector<PickleNode*> free_nodes_;
  // Chunks of nodes, 64 then doubling up to 4096: a node never moves once made (values point
  // at it), a million-event trace costs a few hundred allocations for its nodes, and a tiny
  // pickle a small one.
  std::vector<std::unique_ptr<PickleNode[]>> chunks_;
  std::size_t last_chunk_size_ = 0;
  std::size_t used_in_last_chunk_ = 0;
  std::size_t node_count_ = 0;
  PickleValue root_;
  int protocol_ = 0;
};

}  // namespace oomlab::replay
