// Hostile torch.save files, hand-built byte by byte (support/torch_pickle_builder.hpp), each
// expecting its own ErrorCode and a message naming what was wrong: forbidden globals, opcodes
// that need code, nesting, cycles, memo and stack abuse, truncations, storage size mismatches,
// out-of-bounds views, zip tricks. Then sweeps that cut and corrupt valid files at every byte.
// None may crash, hang, run anything or allocate more than the file justifies.
#include <gtest/gtest.h>

#include <functional>

#include "ballast/error.hpp"
#include "formats/pytorch/pytorch_parser.hpp"
#include "support/parse_and_read.hpp"
#include "support/test_support.hpp"
#include "support/torch_pickle_builder.hpp"

namespace ballast::test {
namespace {

using namespace std::string_literals;

const std::string kSixFloats(24, '\x01');

// {name: tensor} with one f32 [2, 3] tensor over storage "0" (6 elements).
std::string one_tensor_pickle(const std::string& name = "w", int64_t numel = 6, int64_t offset = 0,
                              std::vector<int64_t> size = {2, 3},
                              std::vector<int64_t> stride = {3, 1}) {
  PickleBuilder p;
  p.proto(2).op('}').str(name).tensor("FloatStorage", "0", numel, offset, size, stride);
  return p.op('s').stop().bytes();
}

// A pickle whose object is `body` (opcodes that leave one value), in a zip.
std::string zip_of(const std::string& body) {
  return torch_zip_file(PickleBuilder().proto(2).raw(body).stop().bytes(), {});
}

std::string legacy_of(const std::string& body) {
  return legacy_torch_file(PickleBuilder().proto(2).raw(body).stop().bytes(), {});
}

std::string call_global(const std::string& module, const std::string& name) {
  return PickleBuilder().global(module, name).mark().str("touch pwned").op('t').op('R').bytes();
}

// Parses with the pytorch parser and reads every tensor's bytes.
void parse_and_read(const std::string& bytes, const Limits& limits, const std::string& name) {
  static const auto parser = make_pytorch_parser();
  test::parse_and_read(*parser, bytes, limits, name);
}

struct Hostile {
  std::string name;
  std::function<std::string()> bytes;
  ErrorCode code;
  std::string message;  // a phrase the message must contain
  Limits limits = {};
};

Limits with(std::function<void(Limits&)> change) {
  Limits l;
  change(l);
  return l;
}

std::vector<Hostile> hostile_files() {
  using B = PickleBuilder;
  return {
      {"os_system", [] { return zip_of(call_global("os", "system")); }, ErrorCode::unsupported,
       "'os.system'"},
      {"builtins_eval_legacy", [] { return legacy_of(call_global("builtins", "eval")); },
       ErrorCode::unsupported, "'builtins.eval'"},
      {"builtins_exec", [] { return zip_of(call_global("builtins", "exec")); },
       ErrorCode::unsupported, "'builtins.exec'"},
      {"subprocess_popen", [] { return zip_of(call_global("subprocess", "Popen")); },
       ErrorCode::unsupported, "'subprocess.Popen'"},
      {"posix_system", [] { return zip_of(call_global("posix", "system")); },
       ErrorCode::unsupported, "'posix.system'"},
      {"builtins_getattr", [] { return zip_of(call_global("builtins", "getattr")); },
       ErrorCode::unsupported, "'builtins.getattr'"},
      {"builtins_import", [] { return zip_of(call_global("builtins", "__import__")); },
       ErrorCode::unsupported, "'builtins.__import__'"},
      {"numpy_reconstruct",
       [] { return zip_of(call_global("numpy.core.multiarray", "_reconstruct")); },
       ErrorCode::unsupported, "'numpy.core.multiarray._reconstruct'"},
      {"torchscript_class", [] { return zip_of(call_global("__torch__.model", "Net")); },
       ErrorCode::unsupported, "'__torch__.model.Net'"},
      {"torch_load_itself", [] { return zip_of(call_global("torch", "load")); },
       ErrorCode::unsupported, "'torch.load'"},
      {"stack_global_os_system",
       [] {
         return zip_of(
             B().str("os").str("system").op('\x93').mark().str("x").op('t').op('R').bytes());
       },
       ErrorCode::unsupported, "'os.system'"},
      {"inst_os_system", [] { return zip_of(B().mark().str("x").raw("ios\nsystem\n").bytes()); },
       ErrorCode::unsupported, "'os.system'"},
      {"storage_type_os_system",
       [] {
         return zip_of(B().mark()
                           .str("storage")
                           .global("os", "system")
                           .str("0")
                           .str("cpu")
                           .integer(1)
                           .op('t')
                           .op('Q')
                           .bytes());
       },
       ErrorCode::unsupported, "'os.system'"},
      {"ext1_opcode", [] { return zip_of("\x82\x01"); }, ErrorCode::unsupported, "EXT1"},
      {"out_of_band_buffer", [] { return zip_of("\x97"); }, ErrorCode::unsupported, "out-of-band"},
      {"protocol_6", [] { return torch_zip_file("\x80\x06N.", {}); }, ErrorCode::unsupported,
       "protocol 6"},
      {"unknown_opcode", [] { return zip_of("\xff"); }, ErrorCode::invalid_format,
       "unknown pickle opcode"},
      {"call_a_storage_class", [] { return zip_of(call_global("torch", "FloatStorage")); },
       ErrorCode::invalid_format, "not called"},
      {"newobj_of_size",
       [] { return zip_of(B().global("torch", "Size").op(')').op('\x81').bytes()); },
       ErrorCode::invalid_format, "NEWOBJ of torch.Size"},
      {"deep_nesting", [] { return zip_of(std::string(5000, ']') + std::string(4999, 'a')); },
       ErrorCode::limit_exceeded, "max_pickle_depth"},
      {"cyclic_list",
       [] {
         return zip_of(
             "]q\x00h\x00"
             "a"s);
       },
       ErrorCode::limit_exceeded, "cyclic"},
      {"billion_laughs",
       [] {
         // L0 = [None]; L(k+1) = [Lk, Lk], 30 times over: 2^30 paths in 300 bytes.
         std::string body = "]Na";
         body += 'q';
         body += '\0';
         for (char k = 0; k < 30; ++k) {
           body += "]h";
           body += k;
           body += "ah";
           body += k;
           body += "aq";
           body += static_cast<char>(k + 1);
         }
         return zip_of(body);
       },
       ErrorCode::limit_exceeded, "shared too often"},
      {"memo_never_stored", [] { return zip_of("h\x07"); }, ErrorCode::invalid_format,
       "memo key 7"},
      {"memo_limit", [] { return zip_of("Nq\x01q\x02q\x03q\x04q\x05"); }, ErrorCode::limit_exceeded,
       "max_pickle_memo", with([](Limits& l) { l.max_pickle_memo = 4; })},
      {"stack_limit", [] { return zip_of(std::string(11, 'N')); }, ErrorCode::limit_exceeded,
       "max_pickle_stack", with([](Limits& l) { l.max_pickle_stack = 10; })},
      {"stack_underflow", [] { return zip_of("a"); }, ErrorCode::invalid_format, "underflow"},
      {"append_to_a_dict", [] { return zip_of("}Na"); }, ErrorCode::invalid_format,
       "adding items to a dict"},
      {"huge_string_length", [] { return zip_of("\x8d" + le64(1ULL << 62)); },
       ErrorCode::limit_exceeded, "max_string_length"},
      {"string_past_the_end",
       [] {
         return torch_zip_file(
             "\x80\x02X\x64\x00\x00\x00"
             "abc"s,
             {});
       },
       ErrorCode::invalid_format, "truncated pickle"},
      {"frame_past_the_end", [] { return torch_zip_file("\x80\x04\x95" + le64(1000) + "N.", {}); },
       ErrorCode::invalid_format, "FRAME"},
      {"no_stop", [] { return torch_zip_file("\x80\x02N", {}); }, ErrorCode::invalid_format,
       "truncated pickle"},
      {"pickle_over_max_pickle_bytes",
       [] {
         return torch_zip_file(one_tensor_pickle(), {{"0", kSixFloats}});
       },
       ErrorCode::limit_exceeded, "max_pickle_bytes",
       with([](Limits& l) { l.max_pickle_bytes = 16; })},
      {"zip_storage_size_mismatch",
       [] {
         return torch_zip_file(one_tensor_pickle("w", 10, 0, {10}, {1}), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "holds 24 bytes"},
      {"zip_storage_missing", [] { return torch_zip_file(one_tensor_pickle(), {}); },
       ErrorCode::invalid_format, "archive/data/0' is missing"},
      {"legacy_count_mismatch",
       [] {
         return legacy_torch_file(one_tensor_pickle(), {{"0", 5, kSixFloats}});
       },
       ErrorCode::invalid_format, "records 5 elements"},
      {"legacy_storage_past_end",
       [] {
         return legacy_torch_file(one_tensor_pickle(), {{"0", 6, kSixFloats.substr(0, 10)}});
       },
       ErrorCode::invalid_format, "truncated: expected"},
      {"legacy_key_never_used",
       [] {
         return legacy_torch_file(one_tensor_pickle(), {{"0", 6, kSixFloats}, {"9", 1, "abcd"}});
       },
       ErrorCode::invalid_format, "never used"},
      {"legacy_storage_not_listed", [] { return legacy_torch_file(one_tensor_pickle(), {}); },
       ErrorCode::invalid_format, "no such storage"},
      {"legacy_bad_protocol_version",
       [] {
         std::string f = legacy_torch_file(one_tensor_pickle(), {{"0", 6, kSixFloats}});
         f[18] = '\xe8';  // 1000 instead of 1001
         return f;
       },
       ErrorCode::invalid_format, "protocol version"},
      {"view_out_of_bounds",
       [] {
         return torch_zip_file(one_tensor_pickle("w", 6, 4), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "reaches past"},
      {"stride_overflow",
       [] {
         return torch_zip_file(one_tensor_pickle("w", 6, 0, {3, 1}, {1LL << 30, 1LL << 30}),
                               {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "reaches past"},
      {"size_stride_rank_mismatch",
       [] {
         return torch_zip_file(one_tensor_pickle("w", 6, 0, {2, 3}, {1}), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "stride has 1"},
      {"negative_size",
       [] {
         return torch_zip_file(one_tensor_pickle("w", 6, 0, {-2, 3}, {3, 1}), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "negative"},
      {"too_many_dims",
       [] {
         return torch_zip_file(
             one_tensor_pickle("w", 6, 0, std::vector<int64_t>(65, 1), std::vector<int64_t>(65, 1)),
             {{"0", kSixFloats}});
       },
       ErrorCode::limit_exceeded, "max_dims"},
      {"duplicate_names",
       [] {
         B p;
         p.proto(2).op('}').mark();
         for (int i = 0; i < 2; ++i) p.str("w").tensor("FloatStorage", "0", 6, 0, {6}, {1});
         return torch_zip_file(p.op('u').stop().bytes(), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "both named 'w'"},
      {"zip_member_dot_dot",
       [] {
         return ZipWriter::build({{.name = "archive/data.pkl", .data = "\x80\x02N."},
                                  {.name = "archive/../../etc/passwd", .data = "x"}})
             .bytes;
       },
       ErrorCode::invalid_format, ".."},
      {"zip_bomb",
       [] {
         return torch_zip_file(one_tensor_pickle("w", 1 << 20, 0, {1 << 20}, {1}),
                               {{"0", std::string(4 << 20, '\0')}}, "archive", true);
       },
       ErrorCode::limit_exceeded, "max_inflated_bytes",
       with([](Limits& l) { l.max_inflated_bytes = 1 << 20; })},
      {"pickle_in_a_nested_folder",
       [] { return ZipWriter::build({{.name = "a/b/data.pkl", .data = "\x80\x02N."}}).bytes; },
       ErrorCode::invalid_format, "no <root>/data.pkl"},
      // torch.load takes the root folder from the directory's first member.
      {"root_is_the_first_members_folder",
       [] {
         return ZipWriter::build({{.name = "other/version", .data = "3\n"},
                                  {.name = "archive/data.pkl", .data = "\x80\x02N."},
                                  {.name = "archive/version", .data = "3\n"}})
             .bytes;
       },
       ErrorCode::invalid_format, "no <root>/data.pkl"},
      {"first_member_in_no_folder",
       [] {
         return ZipWriter::build({{.name = "version", .data = "3\n"},
                                  {.name = "archive/data.pkl", .data = "\x80\x02N."}})
             .bytes;
       },
       ErrorCode::invalid_format, "in no folder"},
      // torch.load finds records case-insensitively: either storage could be read as "0".
      {"storages_differing_only_in_case",
       [] {
         return ZipWriter::build(
                    {{.name = "archive/data.pkl", .data = one_tensor_pickle("w", 6, 0, {6}, {1})},
                     {.name = "archive/data/0", .data = kSixFloats},
                     {.name = "archive/DATA/0", .data = std::string(24, '\0')},
                     {.name = "archive/version", .data = "3\n"}})
             .bytes;
       },
       ErrorCode::invalid_format, "differ only in case"},
      {"torchscript_constants_record",
       [] {
         return ZipWriter::build({{.name = "archive/data.pkl", .data = one_tensor_pickle()},
                                  {.name = "archive/data/0", .data = kSixFloats},
                                  {.name = "archive/constants.pkl", .data = "\x80\x02)."},
                                  {.name = "archive/version", .data = "3\n"}})
             .bytes;
       },
       ErrorCode::unsupported, "TorchScript"},
      {"no_version_record",
       [] { return ZipWriter::build({{.name = "archive/data.pkl", .data = "\x80\x02N."}}).bytes; },
       ErrorCode::invalid_format, "no archive/version record"},
      {"bad_byteorder",
       [] {
         return ZipWriter::build({{.name = "archive/data.pkl", .data = "\x80\x02N."},
                                  {.name = "archive/byteorder", .data = "middle"},
                                  {.name = "archive/version", .data = "3\n"}})
             .bytes;
       },
       ErrorCode::invalid_format, "byteorder"},
      // torch.load decodes names as UTF-8 and refuses what does not decode: ballast must not
      // load, under some other name, a file torch refuses.
      {"name_not_utf8",
       [] {
         return torch_zip_file(one_tensor_pickle("w\xff"), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "not valid UTF-8"},
      {"name_overlong_utf8",
       [] {
         return torch_zip_file(one_tensor_pickle("\xc0\xaf"), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "not valid UTF-8"},
      {"short_binstring_not_utf8",
       [] {
         B p;
         p.proto(2).op('}').op('U').raw("\x01\xfe").tensor("FloatStorage", "0", 6, 0, {6}, {1});
         return torch_zip_file(p.op('s').stop().bytes(), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "not valid UTF-8"},
      {"tensor_key_is_a_tuple",
       [] {
         B p;
         p.proto(2).op('}').op(')').tensor("FloatStorage", "0", 6, 0, {6}, {1}).op('s').stop();
         return torch_zip_file(p.bytes(), {{"0", kSixFloats}});
       },
       ErrorCode::invalid_format, "tuple key"},
  };
}

class PytorchHostile : public ::testing::TestWithParam<Hostile> {};

TEST_P(PytorchHostile, FailsWithItsOwnCode) {
  const Hostile& h = GetParam();
  const std::string name = "hostile/" + h.name + ".pt";
  try {
    parse_and_read(h.bytes(), h.limits, name);
    FAIL() << "parsed without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), h.code) << e.what();
    EXPECT_NE(std::string(e.what()).find(h.message), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
        << "names the file: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, PytorchHostile, ::testing::ValuesIn(hostile_files()),
                         [](const auto& param_info) { return param_info.param.name; });

// BINUNICODE decodes with 'surrogatepass' in torch.load: an encoded surrogate is a name there.
TEST(PytorchHostile, EncodedSurrogateNameLoadsAsTorchReadsIt) {
  const std::string name = "w\xed\xa0\x80";
  const std::string file = torch_zip_file(one_tensor_pickle(name), {{"0", kSixFloats}});
  EXPECT_NO_THROW(parse_and_read(file, {}, "surrogate.pt"));
}

TEST(PytorchHostile, TableIsLarge) { EXPECT_GE(hostile_files().size(), 40u); }

std::string two_tensor_pickle() {
  PickleBuilder p;
  p.proto(2).op('}').mark();
  p.str("a").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1});
  p.str("b").tensor("LongStorage", "1", 2, 1, {1}, {1});
  return p.op('u').stop().bytes();
}

// Every cut of a valid file fails cleanly; every single-byte corruption either parses (and
// then every view reads inside its storage) or fails cleanly.
void sweep(const std::string& valid, const std::string& label) {
  ASSERT_NO_THROW(parse_and_read(valid, {}, label)) << "the valid file must load";
  for (size_t cut = 0; cut < valid.size(); ++cut) {
    EXPECT_THROW(parse_and_read(valid.substr(0, cut), {}, label), Error) << "cut at " << cut;
  }
  for (size_t at = 0; at < valid.size(); ++at) {
    std::string corrupt = valid;
    corrupt[at] = static_cast<char>(corrupt[at] ^ 0xA5);
    try {
      parse_and_read(corrupt, {}, label);
    } catch (const Error&) {
    }
  }
}

TEST(PytorchSweep, LegacyFile) {
  sweep(legacy_torch_file(two_tensor_pickle(),
                          {{"0", 6, kSixFloats}, {"1", 2, std::string(16, '\2')}}),
        "legacy.pt");
}

TEST(PytorchSweep, ZipFile) {
  sweep(torch_zip_file(two_tensor_pickle(), {{"0", kSixFloats}, {"1", std::string(16, '\2')}}),
        "zip.pt");
}

}  // namespace
}  // namespace ballast::test
