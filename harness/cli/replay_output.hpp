// What `oomlab replay` prints: the report as text, in the order a user reasons (what was
// replayed, does it match PyTorch, what failed and why, where the memory went, what would have
// fixed it), or the same fields as JSON.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/replay/replay_report.hpp"

namespace oomlab::cli {

std::string replay_text(const replay::ReplayReport& report, const std::string& snapshot_path);
nlohmann::ordered_json replay_json(const replay::ReplayReport& report, const std::string& snapshot_path);
// replay_json as text, pretty-printed; never throws on invalid UTF-8 (it becomes U+FFFD).
std::string replay_json_text(const replay::ReplayReport& report, const std::string& snapshot_path);

}  // namespace oomlab::cli
