#include "harness/replay/pickle_opcodes.hpp"

#include <array>

namespace oomlab::replay {
namespace {

struct OpcodeEntry {
  std::uint8_t byte;
  OpcodeInfo info;
};

constexpr const char* kImports = "imports a Python name";
constexpr const char* kConstructs = "creates a Python class instance";

// All of Lib/pickle.py's opcodes, protocol 0 to 5.
constexpr OpcodeEntry kOpcodes[] = {
    // Plain data and bookkeeping: decoded.
    {'(', {"MARK", OpcodeUse::decoded, ""}},
    {'.', {"STOP", OpcodeUse::decoded, ""}},
    {'0', {"POP", OpcodeUse::decoded, ""}},
    {'1', {"POP_MARK", OpcodeUse::decoded, ""}},
    {'2', {"DUP", OpcodeUse::decoded, ""}},
    {'N', {"NONE", OpcodeUse::decoded, ""}},
    {0x88, {"NEWTRUE", OpcodeUse::decoded, ""}},
    {0x89, {"NEWFALSE", OpcodeUse::decoded, ""}},
    {'J', {"BININT", OpcodeUse::decoded, ""}},
    {'K', {"BININT1", OpcodeUse::decoded, ""}},
    {'M', {"BININT2", OpcodeUse::decoded, ""}},
    {0x8a, {"LONG1", OpcodeUse::decoded, ""}},
    {0x8b, {"LONG4", OpcodeUse::decoded, ""}},
    {'G', {"BINFLOAT", OpcodeUse::decoded, ""}},
    {0x8c, {"SHORT_BINUNICODE", OpcodeUse::decoded, ""}},
    {'X', {"BINUNICODE", OpcodeUse::decoded, ""}},
    {0x8d, {"BINUNICODE8", OpcodeUse::decoded, ""}},
    {'C', {"SHORT_BINBYTES", OpcodeUse::decoded, ""}},
    {'B', {"BINBYTES", OpcodeUse::decoded, ""}},
    {0x8e, {"BINBYTES8", OpcodeUse::decoded, ""}},
    {']', {"EMPTY_LIST", OpcodeUse::decoded, ""}},
    {'a', {"APPEND", OpcodeUse::decoded, ""}},
    {'e', {"APPENDS", OpcodeUse::decoded, ""}},
    {'l', {"LIST", OpcodeUse::decoded, ""}},
    {')', {"EMPTY_TUPLE", OpcodeUse::decoded, ""}},
    {'t', {"TUPLE", OpcodeUse::decoded, ""}},
    {0x85, {"TUPLE1", OpcodeUse::decoded, ""}},
    {0x86, {"TUPLE2", OpcodeUse::decoded, ""}},
    {0x87, {"TUPLE3", OpcodeUse::decoded, ""}},
    {'}', {"EMPTY_DICT", OpcodeUse::decoded, ""}},
    {'d', {"DICT", OpcodeUse::decoded, ""}},
    {'s', {"SETITEM", OpcodeUse::decoded, ""}},
    {'u', {"SETITEMS", OpcodeUse::decoded, ""}},
    {'q', {"BINPUT", OpcodeUse::decoded, ""}},
    {'r', {"LONG_BINPUT", OpcodeUse::decoded, ""}},
    {0x94, {"MEMOIZE", OpcodeUse::decoded, ""}},
    {'h', {"BINGET", OpcodeUse::decoded, ""}},
    {'j', {"LONG_BINGET", OpcodeUse::decoded, ""}},
    {0x80, {"PROTO", OpcodeUse::decoded, ""}},
    {0x95, {"FRAME", OpcodeUse::decoded, ""}},
    // Objects and code: what makes pickle.load unsafe on an untrusted file.
    {'c', {"GLOBAL", OpcodeUse::runs_code, kImports}},
    {0x93, {"STACK_GLOBAL", OpcodeUse::runs_code, kImports}},
    {'R', {"REDUCE", OpcodeUse::runs_code, "calls a Python callable"}},
    {'b', {"BUILD", OpcodeUse::runs_code, "sets an object's state (__setstate__)"}},
    {'i', {"INST", OpcodeUse::runs_code, kConstructs}},
    {'o', {"OBJ", OpcodeUse::runs_code, kConstructs}},
    {0x81, {"NEWOBJ", OpcodeUse::runs_code, kConstructs}},
    {0x92, {"NEWOBJ_EX", OpcodeUse::runs_code, kConstructs}},
    {'P', {"PERSID", OpcodeUse::runs_code, "asks the reader for a persistent object"}},
    {'Q', {"BINPERSID", OpcodeUse::runs_code, "asks the reader for a persistent object"}},
    {0x82, {"EXT1", OpcodeUse::runs_code, "imports a registered extension object"}},
    {0x83, {"EXT2", OpcodeUse::runs_code, "imports a registered extension object"}},
    {0x84, {"EXT4", OpcodeUse::runs_code, "imports a registered extension object"}},
    // Protocol 0's text forms.
    {'I', {"INT", OpcodeUse::text_protocol, ""}},
    {'L', {"LONG", OpcodeUse::text_protocol, ""}},
    {'F', {"FLOAT", OpcodeUse::text_protocol, ""}},
    {'S', {"STRING", OpcodeUse::text_protocol, ""}},
    {'V', {"UNICODE", OpcodeUse::text_protocol, ""}},
    {'p', {"PUT", OpcodeUse::text_protocol, ""}},
    {'g', {"GET", OpcodeUse::text_protocol, ""}},
    // Data that torch's snapshot dict never contains.
    {'T', {"BINSTRING", OpcodeUse::not_in_snapshots, "makes a Python 2 str"}},
    {'U', {"SHORT_BINSTRING", OpcodeUse::not_in_snapshots, "makes a Python 2 str"}},
    {0x8f, {"EMPTY_SET", OpcodeUse::not_in_snapshots, "makes a set"}},
    {0x90, {"ADDITEMS", OpcodeUse::not_in_snapshots, "fills a set"}},
    {0x91, {"FROZENSET", OpcodeUse::not_in_snapshots, "makes a frozenset"}},
    {0x96, {"BYTEARRAY8", OpcodeUse::not_in_snapshots, "makes a bytearray"}},
    {0x97, {"NEXT_BUFFER", OpcodeUse::not_in_snapshots, "reads an out-of-band buffer"}},
    {0x98, {"READONLY_BUFFER", OpcodeUse::not_in_snapshots, "makes a read-only buffer"}},
};

constexpr OpcodeInfo kUnknown = {"unknown", OpcodeUse::unknown, "is not a pickle opcode"};

std::array<const OpcodeInfo*, 256> build_table() {
  std::array<const OpcodeInfo*, 256> table{};
  table.fill(&kUnknown);
  for (const OpcodeEntry& entry : kOpcodes) table[entry.byte] = &entry.info;
  return table;
}

}  // namespace

const OpcodeInfo& opcode_info(std::uint8_t byte) {
  static const std::array<const OpcodeInfo*, 256> table = build_table();
  return *table[byte];
}

}  // namespace oomlab::replay
