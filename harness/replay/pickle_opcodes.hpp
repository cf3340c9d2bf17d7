// Python's pickle opcodes (Lib/pickle.py, protocols 0 to 5), sorted by what oomlab does with
// them: decode the plain-data subset a memory snapshot uses, refuse the rest by name.
#pragma once
#include <cstdint>

namespace oomlab::replay {

enum class OpcodeUse : std::uint8_t {
  decoded,           // plain data or stack/memo bookkeeping: decoded
  runs_code,         // imports, calls or constructs Python objects: refused, always
  text_protocol,     // protocol 0's text opcodes: never in a protocol 2+ snapshot
  not_in_snapshots,  // plain data a snapshot never holds (sets, bytearray, buffers, py2 str)
  unknown,           // no pickle opcode has this byte
};

struct OpcodeInfo {
  const char* name;  // Python's name: "BINUNICODE", "REDUCE", ...
  OpcodeUse use;
  const char* why;  // for refused opcodes, what the opcode would do ("calls a Python callable")
};

// Every byte has an answer: unknown bytes come back as {"unknown", unknown, ...}.
const OpcodeInfo& opcode_info(std::uint8_t byte);

// The bytes the decoder handles, named as in Lib/pickle.py.
namespace opcode {
constexpr std::uint8_t MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2';
constexpr std::uint8_t NONE = 'N', NEWTRUE = 0x88, NEWFALSE = 0x89;
constexpr std::uint8_t BININT = 'J', BININT1 = 'K', BININT2 = 'M', LONG1 = 0x8a, LONG4 = 0x8b;
constexpr std::uint8_t BINFLOAT = 'G';
constexpr std::uint8_t SHORT_BINUNICODE = 0x8c, BINUNICODE = 'X', BINUNICODE8 = 0x8d;
constexpr std::uint8_t SHORT_BINBYTES = 'C', BINBYTES = 'B', BINBYTES8 = 0x8e;
constexpr std::uint8_t EMPTY_LIST = ']', APPEND = 'a', APPENDS = 'e', LIST = 'l';
constexpr std::uint8_t EMPTY_TUPLE = ')', TUPLE = 't', TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87;
constexpr std::uint8_t EMPTY_DICT = '}', DICT = 'd', SETITEM = 's', SETITEMS = 'u';
constexpr std::uint8_t BINPUT = 'q', LONG_BINPUT = 'r', MEMOIZE = 0x94;
constexpr std::uint8_t BINGET = 'h', LONG_BINGET = 'j';
constexpr std::uint8_t PROTO = 0x80, FRAME = 0x95;
}  // namespace opcode

}  // namespace oomlab::replay
