// JSON from a checkpoint (a safetensors header, a sharded checkpoint's index) parsed under two
// rules plain JSON lacks, because the text comes from a file anyone can write:
//   - nesting is capped: a header nests 3 deep ({name: {shape: [..]}}), and 100,000 '[' must
//     reach no recursive code (serialising one for a message overflowed the stack);
//   - no key is given twice in an object: nlohmann keeps the last one silently, so a second
//     tensor 'w' would hide the first (the same holds for a field or a metadata key).
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace oomlab::safetensors {

// Generous: a real header needs 3 levels, an index 2.
constexpr int kMaxHeaderJsonDepth = 64;

// What a document is called in messages, and how a repeated key is told: `depth` 1 is a key of
// the root object; `top_level_key` is the root key the repeated one sits under ("" at depth 1).
struct JsonDocument {
  const char* name;         // "header", "index"
  const char* depth_needed; // "a safetensors header needs 3", said when the nesting is too deep
  std::function<std::string(int depth, const std::string& top_level_key, const std::string& key)> repeated_key;
};

// Throws SafetensorsError naming `file` on invalid JSON, deeper nesting or a repeated key.
nlohmann::json parse_checked_json(std::string_view text, const std::string& file, const JsonDocument& document);

// parse_checked_json for a safetensors header: a repeated tensor, field or metadata key named.
nlohmann::json parse_header_json(std::string_view text, const std::string& file);

}  // namespace oomlab::safetensors
