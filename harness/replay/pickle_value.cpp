#include "harness/replay/pickle_value.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace oomlab::replay {

const char* pickle_kind_name(PickleKind kind) {
  switch (kind) {
    case PickleKind::none: return "None";
    case PickleKind::boolean: return "bool";
    case PickleKind::integer: return "int";
    case PickleKind::floating: return "float";
    case PickleKind::string: return "str";
    case PickleKind::bytes: return "bytes";
    case PickleKind::list: return "list";
    case PickleKind::tuple: return "tuple";
    case PickleKind::dict: return "dict";
  }
  return "?";
}

PickleValue PickleValue::boolean(bool value) {
  PickleValue v;
  v.kind_ = PickleKind::boolean;
  v.boolean_ = value;
  return v;
}

PickleValue PickleValue::integer(bool negative, std::uint64_t magnitude) {
  PickleValue v;
  v.kind_ = PickleKind::integer;
  v.negative_ = negative && magnitude != 0;  // one zero
  v.magnitude_ = magnitude;
  return v;
}

PickleValue PickleValue::floating(double value) {
  PickleValue v;
  v.kind_ = PickleKind::floating;
  v.double_ = value;
  return v;
}

PickleValue PickleValue::node(const PickleNode* node) {
  PickleValue v;
  v.kind_ = node->kind;
  v.node_ = node;
  return v;
}

std::optional<std::int64_t> PickleValue::to_int64() const {
  if (kind_ != PickleKind::integer) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!negative_) {
    if (magnitude_ > kMax) return std::nullopt;
    return static_cast<std::int64_t>(magnitude_);
  }
  if (magnitude_ > kMax + 1) return std::nullopt;
  if (magnitude_ == kMax + 1) return std::numeric_limits<std::int64_t>::min();
  return -static_cast<std::int64_t>(magnitude_);
}

std::optional<std::uint64_t> PickleValue::to_uint64() const {
  if (kind_ != PickleKind::integer || negative_) return std::nullopt;
  return magnitude_;
}

namespace {
bool is_node_kind(PickleKind kind) {
  return kind == PickleKind::string || kind == PickleKind::bytes || kind == PickleKind::list ||
         kind == PickleKind::tuple || kind == PickleKind::dict;
}

// Out of range, or not a container: a caller's bug, std::out_of_range rather than a wild read.
void require_kind(bool ok, const char* what, PickleKind kind) {
  if (!ok) throw std::out_of_range(std::string(what) + " on a " + pickle_kind_name(kind));
}
}  // namespace

std::string_view PickleValue::text() const {
  if (kind_ != PickleKind::string && kind_ != PickleKind::bytes) return {};
  return node_->text;
}

std::size_t PickleValue::size() const {
  if (kind_ == PickleKind::list || kind_ == PickleKind::tuple) return node_->items.size();
  if (kind_ == PickleKind::dict) return node_->items.size() / 2;
  return 0;
}

PickleValue PickleValue::item(std::size_t i) const {
  require_kind(kind_ == PickleKind::list || kind_ == PickleKind::tuple, "item()", kind_);
  return node_->items.at(i);
}
PickleValue PickleValue::key(std::size_t i) const {
  require_kind(kind_ == PickleKind::dict, "key()", kind_);
  return node_->items.at(2 * i);
}
PickleValue PickleValue::value(std::size_t i) const {
  require_kind(kind_ == PickleKind::dict, "value()", kind_);
  return node_->items.at(2 * i + 1);
}

const PickleValue* PickleValue::find(std::string_view name) const {
  if (kind_ != PickleKind::dict) return nullptr;
  const std::vector<PickleValue>& items = node_->items;
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].kind_ == PickleKind::string && items[i].node_->text == name) return &items[i + 1];
  }
  return nullptr;
}

std::uint64_t PickleValue::offset() const { return is_node_kind(kind_) ? node_->offset : 0; }

std::uint32_t PickleValue::holders() const { return is_node_kind(kind_) ? node_->holders : 0; }

PickleNode& PickleDocument::add_node() {
  if (!free_nodes_.empty()) {
    PickleNode& node = *free_nodes_.back();
    free_nodes_.pop_back();
    return node;
  }
  if (used_in_last_chunk_ == last_chunk_size_) {
    last_chunk_size_ =
        last_chunk_size_ == 0 ? 64 : std::min<std::size_t>(2 * last_chunk_size_, 4096);
    chunks_.push_back(std::make_unique<PickleNode[]>(last_chunk_size_));
    used_in_last_chunk_ = 0;
  }
  ++node_count_;
  return chunks_.back()[used_in_last_chunk_++];
}

void PickleDocument::recycle(PickleNode& node) {
  node.kind = PickleKind::none;
  node.visit_state = 0;
  node.consumed = false;
  node.memoized_twice = false;
  node.holders = 0;
  node.height = 0;
  node.memo_slot = PickleNode::kNoMemoSlot;
  node.text.clear();
  node.items.clear();
  free_nodes_.push_back(&node);
}

const void* PickleValue::identity() const { return is_node_kind(kind_) ? node_ : nullptr; }

}  // namespace oomlab::replay
