#include "harness/replay/pickle_graph.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "harness/memory/user_text.hpp"
#include "harness/replay/pickle_decoder.hpp"

namespace oomlab::replay {
namespace {

enum VisitState : std::uint8_t { kUnseen = 0, kOnPath = 1, kDone = 2 };

bool is_container(const PickleValue& value) {
  return value.is(PickleKind::list) || value.is(PickleKind::tuple) || value.is(PickleKind::dict);
}

bool same_key(const PickleValue& a, const PickleValue& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is(PickleKind::string)) return a.text() == b.text();
  return a.is_negative() == b.is_negative() && a.magnitude() == b.magnitude();
}

std::string key_for_message(const PickleValue& key) {
  if (key.is(PickleKind::string)) return quote_user_text(key.text());
  if (key.is_negative()) return "-" + std::to_string(key.magnitude());
  return std::to_string(key.magnitude());
}

[[noreturn]] void fail_duplicate(const PickleValue& dict, const PickleValue& key) {
  throw PickleError(dict.offset(), "the dict made here has the key " + key_for_message(key) +
                                       " twice (Python's pickler writes each key once)");
}

// Keys a snapshot uses are str; int is allowed too. Python cannot even pickle a dict whose key
// is a list or dict, and a float or tuple key is no part of the snapshot layout.
void check_dict_keys(const PickleValue& dict) {
  const std::size_t n = dict.size();
  for (std::size_t i = 0; i < n; ++i) {
    const PickleValue key = dict.key(i);
    if (!key.is(PickleKind::string) && !key.is(PickleKind::integer)) {
      throw PickleError(dict.offset(), std::string("the dict made here has a key of type ") +
                                           pickle_kind_name(key.kind()) +
                                           "; snapshot dicts have str keys");
    }
  }
  if (n <= 16) {  // the usual case: no allocation
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = i + 1; j < n; ++j) {
        if (same_key(dict.key(i), dict.key(j))) fail_duplicate(dict, dict.key(i));
      }
    }
    return;
  }
  std::vector<PickleValue> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) keys.push_back(dict.key(i));
  const auto less = [](const PickleValue& a, const PickleValue& b) {
    if (a.kind() != b.kind()) return a.kind() < b.kind();
    if (a.is(PickleKind::string)) return a.text() < b.text();
    if (a.is_negative() != b.is_negative()) return a.is_negative();
    return a.is_negative() ? a.magnitude() > b.magnitude() : a.magnitude() < b.magnitude();
  };
  std::sort(keys.begin(), keys.end(), less);
  for (std::size_t i = 1; i < n; ++i) {
    if (same_key(keys[i - 1], keys[i])) fail_duplicate(dict, keys[i]);
  }
}

struct PathStep {
  PickleValue container;
  std::size_t next_item = 0;  // items of a list/tuple; for a dict, entries (keys are scalars)
  std::uint32_t height = 1;   // container levels below and including this one, so far
};

PickleValue child(const PickleValue& container, std::size_t i) {
  return container.is(PickleKind::dict) ? container.value(i) : container.item(i);
}

const PickleNode* node_of(const PickleValue& value) {
  return static_cast<const PickleNode*>(value.identity());
}

[[noreturn]] void fail_depth(const PickleValue& container, std::size_t max_depth) {
  throw PickleError(container.offset(), "containers nest deeper than " + std::to_string(max_depth) +
                                            " here (a snapshot nests 7 deep)");
}

void enter(std::vector<PathStep>& path, const PickleValue& container) {
  node_of(container)->visit_state = kOnPath;
  if (container.is(PickleKind::dict)) check_dict_keys(container);
  path.push_back({container, 0, 1});
}

}  // namespace

void check_pickle_graph(const PickleValue& root, std::size_t max_depth) {
  if (!is_container(root)) return;
  if (max_depth == 0) fail_depth(root, max_depth);
  std::vector<PathStep> path;
  enter(path, root);
  while (!path.empty()) {
    PathStep& step = path.back();
    if (step.next_item < step.container.size()) {
      const PickleValue next = child(step.container, step.next_item++);
      if (!is_container(next)) continue;
      const PickleNode* node = node_of(next);
      if (node->visit_state == kOnPath) {
        throw PickleError(next.offset(), std::string("the ") + pickle_kind_name(next.kind()) +
                                             " made here contains itself (a reference cycle; "
                                             "snapshots have none)");
      }
      if (node->visit_state == kDone) {
        // Reached again through a memo reference: its height is known, only this path is new.
        if (path.size() + node->height > max_depth) fail_depth(next, max_depth);
        step.height = std::max<std::uint32_t>(step.height, node->height + 1);
        continue;
      }
      if (path.size() + 1 > max_depth) fail_depth(next, max_depth);
      enter(path, next);
      continue;
    }
    const PickleNode* node = node_of(step.container);
    node->visit_state = kDone;
    node->height = step.height;
    const std::uint32_t finished_height = step.height;
    path.pop_back();
    if (!path.empty()) {
      path.back().height = std::max<std::uint32_t>(path.back().height, finished_height + 1);
    }
  }
}

}  // namespace oomlab::replay
