// What `oomlab replay` prints for a snapshot without allocation history: the state at the dump
// (harness/replay/dump_state.hpp) and what cannot be done without the history, as text or JSON.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/replay/dump_state.hpp"

namespace oomlab::cli {

std::string dump_state_text(const std::vector<replay::DumpState>& states, const std::string& snapshot_path);
nlohmann::ordered_json dump_state_json(const std::vector<replay::DumpState>& states, const std::string& snapshot_path);

// Why nothing is replayed, and how to record a snapshot that can be.
extern const char* const kNoHistoryAdvice;

}  // namespace oomlab::cli
