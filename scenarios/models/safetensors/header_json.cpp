#include "scenarios/models/safetensors/header_json.hpp"

#include <set>
#include <vector>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::safetensors {
namespace {

using nlohmann::json;

// Follows the parse through nlohmann's callback: the open objects' keys (for repeats) and the
// current top-level key (to name the entry in a message). Throwing from the callback stops the
// parse at once, before any deeper level is built.
class CheckedParse {
 public:
  CheckedParse(const std::string& file, const JsonDocument& document) : file_(file), document_(document) {}

  bool operator()(int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // `depth` counts the containers already open around this one.
        if (depth >= kMaxHeaderJsonDepth) {
          fail(std::string("the ") + document_.name + " is nested deeper than " +
               std::to_string(kMaxHeaderJsonDepth) + " levels (" + document_.depth_needed + ")");
        }
        if (event == json::parse_event_t::object_start) keys_.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys_.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (depth == 1) top_level_key_ = key;
        if (!keys_.back().insert(key).second)
          fail(document_.repeated_key(depth, depth == 1 ? "" : top_level_key_, key));
        break;
      }
      default:
        break;
    }
    return true;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw SafetensorsError(file_ + ": " + what); }

  const std::string& file_;
  const JsonDocument& document_;
  std::vector<std::set<std::string>> keys_;  // one set per object being parsed
  std::string top_level_key_;
};

std::string repeated_header_key(int depth, const std::string& top_level_key, const std::string& key) {
  if (depth == 1 && key == "__metadata__") return "__metadata__ is listed twice";
  if (depth == 1) return "tensor " + quote_user_text(key) + " is listed twice";
  const std::string where =
      top_level_key == "__metadata__" ? std::string("__metadata__") : "tensor " + quote_user_text(top_level_key);
  return where + ": key " + quote_user_text(key) + " is given twice";
}

}  // namespace

json parse_checked_json(std::string_view text, const std::string& file, const JsonDocument& document) {
  CheckedParse rules(file, document);
  json root = json::parse(text.begin(), text.end(), std::ref(rules), /*allow_exceptions=*/false);
  if (root.is_discarded()) throw SafetensorsError(file + ": the " + document.name + " is not valid JSON");
  return root;
}

json parse_header_json(std::string_view text, const std::string& file) {
  static const JsonDocument header{"header", "a safetensors header needs 3", repeated_header_key};
  return parse_checked_json(text, file, header);
}

}  // namespace oomlab::safetensors
