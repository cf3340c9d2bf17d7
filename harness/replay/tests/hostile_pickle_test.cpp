// Files made to hurt the decoder (fixtures/bad_*.pickle): each must give one short PickleError
// line naming the problem and the byte, never a crash, a hang or a huge allocation. Then every
// prefix of real fixtures and a sweep of single-byte corruptions, through decoder, snapshot
// parser and event builder: each either reads or throws one of their two errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/replay/snapshot_events.hpp"
#include "harness/replay/snapshot_parse.hpp"
#include "harness/replay/tests/fixture_files.hpp"

namespace oomlab::replay {
namespace {

using testing::decode;
using testing::decode_error;
using testing::expect_one_line;
using testing::read_fixture;

std::string bad(const std::string& name) {
  return decode_error(read_fixture("bad_" + name + ".pickle"));
}

TEST(HostilePickle, EveryOpcodeThatRunsCodeIsRefusedByName) {
  const std::vector<std::string> refused = {
      "GLOBAL",    "STACK_GLOBAL", "REDUCE",    "BUILD", "INST", "OBJ", "NEWOBJ",
      "NEWOBJ_EX", "PERSID",       "BINPERSID", "EXT1",  "EXT2", "EXT4"};
  for (const std::string& name : refused) {
    const std::string message = bad("refuse_" + name);
    expect_one_line(message, "opcode " + name + " (0x");
    expect_one_line(message, "so the file is refused");
  }
}

// bad_<fixture>.pickle, and a piece of the one line it must give.
struct BadFile {
  const char* fixture;
  const char* message_part;
};

const BadFile kBadFiles[] = {
    // Real exploits stop at their import: an os.system __reduce__ (protocol 4), and protocol 2's
    // _codecs.encode for bytes, a GLOBAL even in harmless data.
    {"exploit_os_system", "opcode STACK_GLOBAL (0x93) imports a Python name"},
    {"exploit_protocol2_bytes", "opcode GLOBAL (0x63) imports a Python name"},
    // Wrong protocols and non-pickles.
    {"protocol0", "not a binary pickle of protocol 2 or newer"},
    {"protocol1", "not a binary pickle of protocol 2 or newer"},
    {"protocol6", "byte 0: pickle protocol 6 is not read here (only 2 to 5"},
    {"empty", "byte 0: the file is empty"},
    {"not_in_snapshots_set", "opcode EMPTY_SET (0x8f) makes a set"},
    // Truncation. Protocol 4's FRAME declares the bytes up to STOP, so a cut shows there first.
    {"truncated_half", "(truncated)"},
    {"truncated_no_stop", "byte 2: FRAME declares"},
    // Huge lengths, checked before anything is allocated.
    {"huge_binunicode8", "byte 2: BINUNICODE8 needs 9223372036854775808 bytes"},
    {"huge_binbytes", "byte 2: BINBYTES needs 4294967295 bytes"},
    {"huge_long4", "byte 2: LONG4 needs 2147483647 bytes"},
    {"huge_frame", "byte 2: FRAME declares 1152921504606846976 bytes"},
    {"wide_long1", "LONG1 holds an integer outside +-(2^64 - 1)"},
    // Deep nesting: an error, not a stack overflow.
    {"deep_lists", "containers nest deeper than 64"},
    {"deep_marks", "MARK opens more than 64 nested MARKs"},
    // Memo abuse, cycles, keys, text.
    {"memo_sparse_put", "LONG_BINPUT writes memo slot 4294967295"},
    {"memo_unset_get", "BINGET reads memo slot 5, which was never written"},
    {"cycle", "byte 2: the list made here contains itself"},
    {"duplicate_key", "has the key 'k' twice"},
    {"list_key", "has a key of type list"},
    {"bad_utf8", "byte 2: SHORT_BINUNICODE holds bytes that are not UTF-8 (byte 4 of"},
    // The stack must end with one value, and nothing may follow STOP.
    {"trailing_garbage", "4 bytes follow STOP"},
    {"stack_underflow", "APPEND needs 2 value(s) on the stack above the last MARK and finds 0"},
    {"two_values_at_stop", "STOP with 2 values on the stack"},
};

class BadFiles : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadFiles, GiveOneLineNamingTheProblemAndItsByte) {
  expect_one_line(bad(GetParam().fixture), GetParam().message_part);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BadFiles, ::testing::ValuesIn(kBadFiles),
                         [](const ::testing::TestParamInfo<BadFile>& info) {
                           return std::string(info.param.fixture);
                         });

TEST(HostilePickle, NonPicklesNamedInline) {
  expect_one_line(decode_error(read_fixture("training_protocol4.pickle.gz")), "gzip-compressed");
  const std::vector<std::uint8_t> no_stop = {0x80, 0x02, 'N'};
  expect_one_line(decode_error(no_stop), "byte 3: the file ends without STOP (truncated)");
}

TEST(HostilePickle, ARepeatedMemoReferenceCannotInflateTheSnapshot) {
  // Valid as a pickle (5,000 references to one dict), refused as a snapshot.
  const PickleDocument doc = decode(read_fixture("bad_memo_repeated_segment.pickle"));
  try {
    parse_snapshot(doc);
    FAIL() << "parsed";
  } catch (const SnapshotError& error) {
    expect_one_line(error.what(),
                    "segments[0]: this segment appears 5000 times through memo references");
  }
}

// Decoding, parsing and building events may only end in a value or one of the two errors.
void read_all_the_way(const std::vector<std::uint8_t>& bytes) {
  PickleLimits limits;
  limits.max_decoded_bytes = 64u << 20;
  try {
    const Snapshot snapshot = parse_snapshot(decode(bytes, limits));
    snapshot_events(snapshot);
  } catch (const PickleError& error) {
    expect_one_line(error.what(), "byte ");
  } catch (const SnapshotError& error) {
    expect_one_line(error.what(), "");
  }
}

TEST(HostilePickle, EveryPrefixOfARealSnapshotFailsCleanly) {
  for (const char* name :
       {"training_protocol4.pickle", "training_protocol2.pickle", "expandable_segments.pickle"}) {
    const std::vector<std::uint8_t> whole = read_fixture(name);
    for (std::size_t length = 0; length < whole.size(); ++length) {
      const std::vector<std::uint8_t> prefix(whole.begin(), whole.begin() + length);
      EXPECT_THROW(decode(prefix), PickleError) << name << " cut at " << length;
    }
  }
}

// A deterministic sweep that stays quick under ASan; the fuzzer (fuzz/) goes much further.
TEST(HostilePickle, SingleByteCorruptionsNeverCrash) {
  for (const char* name : {"training_protocol2.pickle", "oom_fragmentation.pickle",
                           "newer_torch_keys.pickle", "values_protocol3.pickle"}) {
    const std::vector<std::uint8_t> whole = read_fixture(name);
    const std::size_t stride = whole.size() > 2000 ? 7 : 1;
    for (std::size_t at = 0; at < whole.size(); at += stride) {
      for (std::uint8_t value : {std::uint8_t{0x00}, std::uint8_t{0xff}, std::uint8_t{'h'}}) {
        std::vector<std::uint8_t> corrupt = whole;
        corrupt[at] = value;
        read_all_the_way(corrupt);
      }
    }
  }
}

}  // namespace
}  // namespace oomlab::replay
