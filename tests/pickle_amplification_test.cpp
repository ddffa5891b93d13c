// A small torch.save file cannot make ballast materialise or allocate much (issue 30): a value
// reached many times through the memo, repeated calls of allowed functions on one value and
// nested containers sharing a big key are shared, or charged to the pickle's budget (16 MiB
// plus max_pickle_amplification bytes per pickle byte) and refused past it, never multiplied;
// a stride-0 view cannot expand its storage past max_view_expansion. Files hand-built with
// support/torch_pickle_builder.hpp.
#include <gtest/gtest.h>

#include <functional>

#include "ballast/error.hpp"
#include "formats/pytorch/pytorch_parser.hpp"
#include "support/parse_and_read.hpp"
#include "support/torch_pickle_builder.hpp"

namespace ballast::test {
namespace {

using B = PickleBuilder;

std::string memo_put(int index) { return std::string("q") + static_cast<char>(index); }
std::string memo_get(int index) { return std::string("h") + static_cast<char>(index); }

std::string times(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// A torch zip whose object is what `body` leaves on the stack.
std::string zip_of(const std::string& body) {
  return torch_zip_file(B().proto(2).raw(body).stop().bytes(), {});
}

// Memoises `value` (memo 0) and module.name (memo 1), then calls module.name(value, *extra)
// `n` times, dropping each result; the object is None.
std::string call_again_and_again(const std::string& value, const std::string& module,
                                 const std::string& name, size_t n, const std::string& extra = {}) {
  const std::string call = memo_get(1) + "(" + memo_get(0) + extra + "tR0";
  return zip_of(value + memo_put(0) + B().global(module, name).bytes() + memo_put(1) +
                times(call, n) + "N");
}

// A list of `n` small ints.
std::string int_list(size_t n) { return "](" + times("K\x01", n) + "e"; }

void parse(const std::string& bytes, const Limits& limits, const std::string& name) {
  static const auto parser = make_pytorch_parser();
  parse_and_read(*parser, bytes, limits, name);
}

struct Case {
  std::string name;
  std::function<std::string()> bytes;
  std::string message;  // empty: the file must parse
};

// Each would have materialised gigabytes from a file of a megabyte or two.
std::vector<Case> multiplying_files() {
  const std::string big = B().str(std::string(1 << 20, 'a')).bytes();
  return {
      {"a_string_listed_many_times_through_the_memo",
       [big] {
         // Cheap empty lists first, so that the object graph may be visited often enough.
         return zip_of(big + memo_put(0) + times("]0", 100'000) + "](" +
                       times(memo_get(0), 100'000) + "e");
       },
       "max_pickle_amplification"},
      {"torch_size_of_one_list_again_and_again",
       [] { return call_again_and_again(int_list(100'000), "torch", "Size", 100'000); },
       "max_pickle_amplification"},
      {"set_of_one_list_again_and_again",
       [] { return call_again_and_again(int_list(100'000), "builtins", "set", 100'000); },
       "max_pickle_amplification"},
      {"ordered_dict_of_one_pair_list_again_and_again",
       [] {
         return call_again_and_again("](" + times("K\x01K\x02\x86", 50'000) + "e", "collections",
                                     "OrderedDict", 100'000);
       },
       "max_pickle_amplification"},
      {"device_of_one_big_string_with_an_index_again_and_again",
       [big] { return call_again_and_again(big, "torch", "device", 100'000, "K\x01"); },
       "max_pickle_amplification"},
      {"nested_dicts_sharing_one_big_key",
       [] {
         const std::string key = B().str(std::string(256 << 10, 'k')).bytes();
         return zip_of(key + memo_put(0) + times("}" + memo_get(0), 100) + "N" + times("s", 100));
       },
       "max_pickle_amplification"},
  };
}

class MultiplyingPickle : public ::testing::TestWithParam<Case> {};

TEST_P(MultiplyingPickle, IsRefusedWithinItsBudget) {
  const Case& c = GetParam();
  const std::string name = "hostile/" + c.name + ".pt";
  try {
    parse(c.bytes(), Limits{}, name);
    FAIL() << "parsed without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
        << "names the file: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, MultiplyingPickle, ::testing::ValuesIn(multiplying_files()),
                         [](const auto& param_info) { return param_info.param.name; });

// Calls on immutable values share their result: each file would copy a megabyte thousands of
// times, yet parses within a budget of 16 MiB plus 8 bytes per pickle byte.
std::vector<Case> sharing_files() {
  const std::string big = B().str(std::string(1 << 20, 'a')).bytes();
  const std::string big_bytes =
      "B" + std::string("\x00\x00\x10\x00", 4) + std::string(1 << 20, 'b');
  return {
      {"codecs_encode_of_one_string",
       [big] {
         return call_again_and_again(big, "_codecs", "encode", 20'000, B().str("latin1").bytes());
       }},
      {"bytearray_of_one_bytes",
       [big_bytes] { return call_again_and_again(big_bytes, "builtins", "bytearray", 20'000); }},
      {"torch_size_of_one_tuple",
       [] {
         return call_again_and_again("(" + times("K\x01", 100'000) + "t", "torch", "Size", 20'000);
       }},
      {"torch_device_of_one_string",
       [big] { return call_again_and_again(big, "torch", "device", 20'000); }},
      {"layout_of_one_string",
       [big] { return call_again_and_again(big, "torch.serialization", "_get_layout", 20'000); }},
  };
}

class SharingPickle : public ::testing::TestWithParam<Case> {};

TEST_P(SharingPickle, ParsesWithoutCopies) {
  const Case& c = GetParam();
  Limits tight;
  tight.max_pickle_amplification = 8;
  EXPECT_NO_THROW(parse(c.bytes(), tight, "shared/" + c.name + ".pt"));
}

INSTANTIATE_TEST_SUITE_P(Table, SharingPickle, ::testing::ValuesIn(sharing_files()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(PickleBudget, AnAbsoluteCapHoldsWhateverTheFileSize) {
  Limits capped;
  capped.max_pickle_materialized_bytes = 1 << 20;
  try {
    parse(zip_of(B().str(std::string(2 << 20, 'a')).bytes()), capped, "capped.pt");
    FAIL() << "a 2 MiB string fits a 1 MiB budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
    EXPECT_NE(std::string(e.what()).find("max_pickle_materialized_bytes"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("capped.pt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at byte"), std::string::npos)
        << "names the offset: " << e.what();
  }
}

// {"w": a view of storage "0" (`numel` floats) with the given size and stride}.
std::string view_file(int64_t numel, const std::vector<int64_t>& size,
                      const std::vector<int64_t>& stride) {
  B p;
  p.proto(2).op('}').str("w").tensor("FloatStorage", "0", numel, 0, size, stride).op('s').stop();
  return torch_zip_file(p.bytes(), {{"0", std::string(4 * static_cast<size_t>(numel), '\1')}});
}

TEST(ViewExpansion, AStrideZeroViewOfOneFloatCannotDemandGigabytes) {
  const std::string file = view_file(1, {1 << 30, 2}, {0, 0});  // 8 GiB of one float
  EXPECT_LT(file.size(), 1024u);
  try {
    parse(file, Limits{}, "expand.pt");
    FAIL() << "an 8 GiB view of a 4-byte storage parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::limit_exceeded) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("max_view_expansion"), std::string::npos) << what;
    EXPECT_NE(what.find("expand.pt"), std::string::npos) << what;
    EXPECT_EQ(e.context().tensor, "w") << what;
  }
}

TEST(ViewExpansion, ExpandsUpToTheRatioOrOneMiBLoad) {
  // 16384 floats (64 KiB): 64 rows of them is 64x, the most allowed; 65 rows is refused.
  EXPECT_NO_THROW(parse(view_file(16384, {64, 16384}, {0, 1}), Limits{}, "x64.pt"));
  EXPECT_THROW(parse(view_file(16384, {65, 16384}, {0, 1}), Limits{}, "x65.pt"), Error);
  // Any view of up to 1 MiB passes, whatever its storage.
  EXPECT_NO_THROW(parse(view_file(1, {512, 512}, {0, 0}), Limits{}, "small.pt"));
}

}  // namespace
}  // namespace ballast::test
