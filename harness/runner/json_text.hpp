// The one way a JSON document becomes text. Strings from outside (a file name that is not UTF-8,
// a snapshot's frame, a record's field) may hold invalid UTF-8, on which nlohmann's dump()
// throws type_error.316; here such bytes become U+FFFD, so writing a result never fails on them.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace oomlab {

// indent < 0: one line; else pretty-printed with that many spaces. Any nlohmann document type
// (json, ordered_json: its key order is kept).
template <typename Document>
std::string json_text(const Document& document, int indent = -1) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace oomlab
