// Protocol-4 pickle bytes written by hand in tests: each function returns the opcodes that push
// one value, and pickled() wraps a value into a whole pickle. No memo: shared values are written
// out where a test needs BINGET.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace oomlab::replay::testing {

inline std::string le_bytes(std::uint64_t value, int width) {
  std::string out;
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  return out;
}

inline std::string py_none() { return "N"; }
inline std::string py_bool(bool value) { return value ? "\x88" : "\x89"; }

// LONG1 with 8 bytes, two's complement: any int64.
inline std::string py_int(std::int64_t value) {
  return std::string("\x8a\x08", 2) + le_bytes(static_cast<std::uint64_t>(value), 8);
}

inline std::string py_float(double value) {
  std::uint64_t bits = 0;
  static_assert(sizeof bits == sizeof value, "double is 64-bit");
  std::memcpy(&bits, &value, sizeof bits);
  std::string out = "G";
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  return out;
}

inline std::string py_str(const std::string& text) {
  return "X" + le_bytes(text.size(), 4) + text;  // BINUNICODE
}

inline std::string py_list(const std::vector<std::string>& items) {
  std::string out = "](";
  for (const std::string& item : items) out += item;
  return out + "e";
}

inline std::string py_tuple(const std::vector<std::string>& items) {
  std::string out = "(";
  for (const std::string& item : items) out += item;
  return out + "t";
}

inline std::string py_dict(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out = "}(";
  for (const auto& [key, value] : entries) out += py_str(key) + value;
  return out + "u";
}

inline std::string pickled(const std::string& value) {
  return std::string("\x80\x04", 2) + value + ".";
}

}  // namespace oomlab::replay::testing
