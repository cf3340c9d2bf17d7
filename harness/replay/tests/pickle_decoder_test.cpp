// The decoder on what Python writes: values_protocol{2,3,4,5}.pickle hold every type and the
// edges of each integer and string opcode, as pickle.dumps wrote them; hand-written bytes cover
// the opcodes Python uses rarely (DUP, POP, LIST, DICT, TUPLE, BINPUT over a slot).
#include "harness/replay/pickle_decoder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "harness/replay/tests/fixture_files.hpp"
#include "harness/replay/tests/pickle_builder.hpp"

namespace oomlab::replay {
namespace {

using testing::bytes_of;
using testing::decode;
using testing::decode_error;
using testing::expect_one_line;
using testing::read_fixture;

PickleValue at(const PickleValue& dict, const std::string& key) {
  const PickleValue* value = dict.find(key);
  EXPECT_NE(value, nullptr) << key;
  return value != nullptr ? *value : PickleValue();
}

class PythonValues : public ::testing::TestWithParam<int> {};

TEST_P(PythonValues, EveryIntegerEdgeReadsAsPythonWroteIt) {
  const PickleDocument doc =
      decode(read_fixture("values_protocol" + std::to_string(GetParam()) + ".pickle"));
  EXPECT_EQ(doc.protocol(), GetParam());
  const PickleValue ints = at(doc.root(), "ints");
  ASSERT_TRUE(ints.is(PickleKind::list));
  ASSERT_EQ(ints.size(), 17u);
  const std::int64_t as_int64[] = {0,
                                   1,
                                   255,
                                   256,
                                   65535,
                                   65536,
                                   -1,
                                   -256,
                                   2147483647,
                                   -2147483648LL,
                                   2147483648LL,
                                   4294967296LL,
                                   std::numeric_limits<std::int64_t>::max(),
                                   std::numeric_limits<std::int64_t>::min()};
  for (std::size_t i = 0; i < std::size(as_int64); ++i) {
    EXPECT_EQ(ints.item(i).to_int64(), as_int64[i]) << "item " << i;
  }
  EXPECT_EQ(ints.item(14).to_uint64(), std::uint64_t{1} << 63);  // 2**63: uint64 only
  EXPECT_FALSE(ints.item(14).to_int64());
  EXPECT_EQ(ints.item(15).to_uint64(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(ints.item(16).is_negative());  // -(2**64 - 1)
  EXPECT_EQ(ints.item(16).magnitude(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(ints.item(16).to_int64());
  EXPECT_FALSE(ints.item(6).to_uint64());  // -1 is no size
}

TEST_P(PythonValues, FloatsStringsBytesAndSingletons) {
  const PickleDocument doc =
      decode(read_fixture("values_protocol" + std::to_string(GetParam()) + ".pickle"));
  const PickleValue floats = at(doc.root(), "floats");
  EXPECT_EQ(floats.item(0).as_double(), 0.0);
  EXPECT_EQ(floats.item(1).as_double(), -1.5);
  EXPECT_EQ(floats.item(2).as_double(), 1e300);
  EXPECT_EQ(floats.item(3).as_double(), 5e-324);  // denormal: bits copied, not parsed

  const PickleValue strings = at(doc.root(), "strings");
  EXPECT_EQ(strings.item(0).text(), "");
  EXPECT_EQ(strings.item(2).text(), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");  // é€😀
  EXPECT_EQ(strings.item(3).text(), std::string(255, 'x'));  // SHORT_BINUNICODE's longest
  EXPECT_EQ(strings.item(4).text(), std::string(256, 'y'));  // BINUNICODE
  if (GetParam() == 4) {  // over 64 KiB: written outside protocol 4's frames
    EXPECT_EQ(strings.item(5).text(), std::string(70000, 'z'));
  }

  if (GetParam() >= 3) {  // protocol 2 pickles bytes through REDUCE: left out of that fixture
    const PickleValue bytes = at(doc.root(), "bytes");
    EXPECT_TRUE(bytes.item(0).is(PickleKind::bytes));
    EXPECT_EQ(bytes.item(1).text(), std::string("\x00\xff", 2));
    EXPECT_EQ(bytes.item(2).text(), std::string(300, 'b'));
  }
  const PickleValue singletons = at(doc.root(), "singletons");
  EXPECT_TRUE(singletons.item(0).is(PickleKind::none));
  EXPECT_TRUE(singletons.item(1).as_bool());
  EXPECT_FALSE(singletons.item(2).as_bool());
}

TEST_P(PythonValues, TuplesNestingSharingAndIntKeys) {
  const PickleDocument doc =
      decode(read_fixture("values_protocol" + std::to_string(GetParam()) + ".pickle"));
  const PickleValue tuples = at(doc.root(), "tuples");
  for (std::size_t n = 0; n <= 4; ++n) {  // EMPTY_TUPLE, TUPLE1..3, MARK..TUPLE
    ASSERT_TRUE(tuples.item(n).is(PickleKind::tuple)) << n;
    EXPECT_EQ(tuples.item(n).size(), n);
    if (n > 0) {
      EXPECT_EQ(tuples.item(n).item(n - 1).to_int64(), static_cast<std::int64_t>(n));
    }
  }
  const PickleValue nested = at(doc.root(), "nested");
  const PickleValue inner = at(at(nested, "a").item(0), "b");
  ASSERT_TRUE(inner.is(PickleKind::tuple));
  EXPECT_TRUE(at(inner.item(0), "c").is(PickleKind::list));

  // [shared, shared]: one list, reached twice through the memo.
  const PickleValue shared = at(doc.root(), "shared");
  EXPECT_EQ(shared.item(0).identity(), shared.item(1).identity());
  EXPECT_EQ(shared.item(0).holders(), 2u);

  bool found_int_key = false;
  for (std::size_t i = 0; i < doc.root().size(); ++i) {
    if (doc.root().key(i).to_int64() == 7) {
      found_int_key = true;
      EXPECT_EQ(doc.root().value(i).text(), "int key");
    }
  }
  EXPECT_TRUE(found_int_key);
}

INSTANTIATE_TEST_SUITE_P(Protocols, PythonValues, ::testing::Values(2, 3, 4, 5));

// PROTO 4, `body`, STOP. From a literal, every byte counts, embedded NULs included.
std::vector<std::uint8_t> ops(const std::string& body) {
  return bytes_of(std::string("\x80\x04", 2) + body + ".");
}
template <std::size_t N>
std::vector<std::uint8_t> ops(const char (&body)[N]) {
  return ops(std::string(body, N - 1));
}

TEST(PickleOpcodes, StackOpcodesFollowPythonsRules) {
  // DUP, then TUPLE2 of the two copies.
  PickleDocument dup =
      decode(ops("K\x05"
                 "2\x86"));
  EXPECT_EQ(dup.root().size(), 2u);
  EXPECT_EQ(dup.root().item(1).to_int64(), 5);
  // POP drops the top; POP_MARK drops back to the MARK.
  EXPECT_EQ(decode(ops("K\x01K\x02"
                       "0"))
                .root()
                .to_int64(),
            1);
  EXPECT_EQ(decode(ops("K\x01(K\x02K\x03"
                       "1"))
                .root()
                .to_int64(),
            1);
  // POP with nothing above a MARK pops the MARK (load_pop): then LIST has no MARK left.
  expect_one_line(decode_error(ops("(0l")), "LIST has no MARK to close");
}

TEST(PickleOpcodes, MarkBasedContainersAndSetItem) {
  const PickleDocument list = decode(ops("(K\x01K\x02l"));
  EXPECT_TRUE(list.root().is(PickleKind::list));
  EXPECT_EQ(list.root().size(), 2u);
  const PickleDocument dict =
      decode(ops("(\x8c\x01"
                 "aK\x01\x8c\x01"
                 "bK\x02"
                 "d"));
  EXPECT_EQ(dict.root().find("b")->to_int64(), 2);
  const PickleDocument set_item = decode(ops("}\x8c\x01kK\x09s"));
  EXPECT_EQ(set_item.root().find("k")->to_int64(), 9);
  expect_one_line(decode_error(ops("(\x8c\x01"
                                   "ad")),
                  "DICT has an odd number of keys and values");
  expect_one_line(decode_error(ops("]K\x01K\x02s")), "SETITEM fills a list; only a dict takes it");
}

TEST(PickleOpcodes, MemoSlotsCanBeRewrittenButNotSkipped) {
  // BINPUT 0 twice: the second value replaces the first, as in Python.
  EXPECT_EQ(decode(ops("K\x01q\x00"
                       "0K\x02q\x00"
                       "0h\x00"))
                .root()
                .to_int64(),
            2);
  EXPECT_EQ(decode(ops("K\x01\x94"
                       "0h\x00"))
                .root()
                .to_int64(),
            1);  // MEMOIZE takes slot 0
  expect_one_line(decode_error(ops("K\x01q\x01")),
                  "writes memo slot 1, but slots are written in order and the next is 0");
}

TEST(PickleOpcodes, BytesAndFramesOfEveryWidth) {
  EXPECT_EQ(decode(ops("C\x02hi")).root().text(), "hi");
  EXPECT_EQ(decode(ops(std::string("B\x02\x00\x00\x00hi", 7))).root().text(), "hi");
  EXPECT_EQ(decode(ops(std::string("\x8e\x02\x00\x00\x00\x00\x00\x00\x00hi", 11))).root().text(),
            "hi");
  EXPECT_EQ(decode(ops(std::string("\x8d\x02\x00\x00\x00\x00\x00\x00\x00hi", 11))).root().text(),
            "hi");
  // A FRAME is only a length hint; nothing changes inside it.
  EXPECT_EQ(
      decode(ops(std::string("\x95\x02\x00\x00\x00\x00\x00\x00\x00K\x03", 11))).root().to_int64(),
      3);
}

TEST(PickleOpcodes, LongIntegersKeepTheirSignAndRefuseMoreThan64Bits) {
  // LONG1 with redundant sign bytes still fits.
  EXPECT_EQ(decode(ops(std::string("\x8a\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12)))
                .root()
                .to_int64(),
            -1);
  EXPECT_EQ(decode(ops(std::string("\x8a\x00", 2))).root().to_int64(), 0);  // Python's 0L
  EXPECT_EQ(decode(ops(std::string("\x8b\x01\x00\x00\x00\x80", 6))).root().to_int64(), -128);
  expect_one_line(
      decode_error(ops(std::string("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01", 11))),
      "LONG1 holds an integer outside +-(2^64 - 1)");
}

TEST(PickleOpcodes, LoneSurrogatesBecomeReplacementCharacters) {
  // "a\udcff" as pickle writes it with surrogatepass: ED B3 BF.
  const PickleDocument doc =
      decode(ops("\x8c\x04"
                 "a\xed\xb3\xbf"));
  EXPECT_EQ(doc.root().text(), "a\xef\xbf\xbd");
}

TEST(PickleLimits, DepthStringsMemoAndMemoryAreCapped) {
  PickleLimits limits;
  limits.max_depth = 3;
  EXPECT_NO_THROW(decode(ops("]]]aa"), limits));  // [[[]]]: three deep
  expect_one_line(decode_error(ops("]]]]aaa"), limits), "containers nest deeper than 3");

  limits = {};
  limits.max_string_bytes = 4;
  expect_one_line(decode_error(ops("\x8c\x05hello"), limits),
                  "more than the 4B one string may have");

  limits = {};
  limits.max_memo_entries = 1;
  expect_one_line(decode_error(ops("N\x94N\x94"
                                   "0"),
                               limits),
                  "more than 1 values");

  limits = {};
  limits.max_decoded_bytes = 1000;
  std::string many_lists;
  for (int i = 0; i < 100; ++i) many_lists += "]";
  expect_one_line(decode_error(ops(many_lists), limits), "would take more than 1000B");
}

TEST(PickleErrors, NameTheOpcodeAndItsByte) {
  const std::string message = decode_error(ops("K\x01R"));  // REDUCE at byte 4
  EXPECT_EQ(message.rfind("byte 4: opcode REDUCE (0x52) calls a Python callable", 0), 0u)
      << message;
  try {
    decode(ops("K\x01R"));
  } catch (const PickleError& error) {
    EXPECT_EQ(error.offset(), 4u);
  }
}

}  // namespace
}  // namespace oomlab::replay
