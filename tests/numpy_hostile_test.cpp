// Hostile .npy and .npz inputs, each expecting its own ErrorCode from the numpy parser (called
// directly through ParseContext, then reading every tensor's bytes), plus truncation sweeps.
// None may crash, hang or allocate without bound.
#include <gtest/gtest.h>

#include <functional>

#include "ballast/ballast.hpp"
#include "formats/numpy/numpy_parser.hpp"
#include "support/parse_and_read.hpp"
#include "support/test_support.hpp"
#include "support/zip_writer.hpp"

namespace ballast::test {
namespace {

// A .npy file: preamble of `version`, the header text padded to 64 bytes, then `data`.
std::string npy(const std::string& dict, const std::string& data, int version = 1) {
  const size_t preamble = version == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape,
                 const char* fortran = "False") {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

const std::string kF32x6 = npy(dict("'<f4'", "(2, 3)"), std::string(24, '\1'));

std::string npz(std::vector<ZipEntrySpec> entries) { return ZipWriter::build(entries).bytes; }

// Parses with the numpy parser and reads every tensor's bytes.
void parse_and_read(const std::string& bytes, const Limits& limits, const std::string& name) {
  static const auto parser = make_numpy_parser();
  test::parse_and_read(*parser, bytes, limits, name);
}

struct Hostile {
  std::string name;
  std::function<std::string()> bytes;
  ErrorCode code;
  Limits limits = {};
  std::string message = {};  // a phrase the message must contain
};

std::vector<Hostile> hostile_files() {
  Limits small_inflate;
  small_inflate.max_inflated_bytes = 100'000;
  std::string deep = "'<f4'";
  for (int i = 0; i < 100; ++i) deep = "[" + deep + "]";
  std::string many_dims = "(";
  for (int i = 0; i < 65; ++i) many_dims += "1,";
  many_dims += ")";
  return {
      {"truncated_magic", [] { return std::string("\x93NUM"); }, ErrorCode::invalid_format},
      {"wrong_magic", [] { return "\x93NUMPX" + kF32x6.substr(6); }, ErrorCode::invalid_format},
      {"bad_version_4_0",
       [] {
         auto b = kF32x6;
         b[6] = 4;
         return b;
       },
       ErrorCode::unsupported},
      {"bad_minor_version",
       [] {
         auto b = kF32x6;
         b[7] = 1;
         return b;
       },
       ErrorCode::unsupported},
      {"header_length_past_eof", [] { return kF32x6.substr(0, 100); }, ErrorCode::invalid_format},
      {"huge_header_length_v2",
       [] { return std::string("\x93NUMPY\x02\x00\xf0\xff\xff\xff{", 13); },
       ErrorCode::limit_exceeded},
      {"malformed_dict", [] { return npy("{'descr': '<f4', 'shape': (2,3}", ""); },
       ErrorCode::invalid_format},
      {"header_not_a_dict", [] { return npy("[1, 2]", ""); }, ErrorCode::invalid_format},
      {"unterminated_string", [] { return npy("{'descr: '<f4'}", ""); }, ErrorCode::invalid_format},
      {"missing_shape", [] { return npy("{'descr': '<f4', 'fortran_order': False}", ""); },
       ErrorCode::invalid_format},
      {"unknown_key", [] { return npy(dict("'<f4'", "()").insert(1, "'x': 1, "), "1234"); },
       ErrorCode::invalid_format},
      {"duplicate_key", [] { return npy(dict("'<f4'", "()").insert(1, "'shape': (), "), "1234"); },
       ErrorCode::invalid_format},
      {"fortran_order_not_bool", [] { return npy(dict("'<f4'", "()", "1"), "1234"); },
       ErrorCode::invalid_format},
      {"unknown_descr", [] { return npy(dict("'<q7'", "(1,)"), "1234567"); },
       ErrorCode::invalid_format},
      {"descr_not_a_string", [] { return npy(dict("4", "(1,)"), "1234"); },
       ErrorCode::invalid_format},
      {"negative_dim", [] { return npy(dict("'<f4'", "(-1,)"), ""); }, ErrorCode::invalid_format},
      {"huge_dim", [] { return npy(dict("'<f4'", "(99999999999999999999,)"), ""); },
       ErrorCode::invalid_format},
      {"overflowing_shape_product",
       [] { return npy(dict("'<f4'", "(4294967296, 4294967296, 16)"), ""); },
       ErrorCode::invalid_format},
      {"tensor_over_max_tensor_bytes",
       [] { return npy(dict("'<f4'", "(1073741824, 1048576)"), ""); }, ErrorCode::limit_exceeded},
      {"too_many_dims", [many_dims] { return npy(dict("'<f4'", many_dims), "1234"); },
       ErrorCode::limit_exceeded},
      {"descr_nested_too_deep", [deep] { return npy(dict(deep, "(1,)"), "1234"); },
       ErrorCode::limit_exceeded},
      {"data_shorter_than_shape",
       [] { return kF32x6.substr(0, kF32x6.size() - 1); },
       ErrorCode::invalid_format,
       {},
       "23 data bytes"},
      {"data_longer_than_shape",
       [] { return kF32x6 + "x"; },
       ErrorCode::invalid_format,
       {},
       "need 24"},
      {"object_dtype",
       [] { return npy(dict("'|O'", "(1,)"), "\x80\x02N."); },
       ErrorCode::unsupported,
       {},
       "pickle"},
      {"structured_dtype",
       [] { return npy(dict("[('a', '<i4'), ('b', '<f8')]", "(1,)"), std::string(12, '\0')); },
       ErrorCode::unsupported,
       {},
       "structured"},
      {"string_dtype_npy", [] { return npy(dict("'<U3'", "()"), std::string(12, 'a')); },
       ErrorCode::unsupported},
      {"npz_truncated_eocd",
       [] {
         auto b = npz({{.name = "a.npy", .data = kF32x6}});
         return b.substr(0, b.size() - 4);
       },
       ErrorCode::invalid_format},
      {"npz_central_directory_out_of_bounds",
       [] {
         auto z = ZipWriter::build({{.name = "a.npy", .data = kF32x6}});
         ZipWriter::put_u32(z.bytes, z.eocd_offset + 16, 0x7fffffff);
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"npz_member_offset_past_eof",
       [] {
         auto z = ZipWriter::build({{.name = "a.npy", .data = kF32x6}});
         ZipWriter::put_u32(z.bytes, z.cd_offset + 42, 0x7fffffff);
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"npz_dotdot_name", [] { return npz({{.name = "../a.npy", .data = kF32x6}}); },
       ErrorCode::invalid_format},
      {"npz_absolute_name", [] { return npz({{.name = "/tmp/a.npy", .data = kF32x6}}); },
       ErrorCode::invalid_format},
      {"npz_zip_bomb",
       [] {
         return npz({{.name = "a.npy",
                      .data = npy(dict("'|u1'", "(1000000,)"), std::string(1'000'000, '\0')),
                      .deflate = true}});
       },
       ErrorCode::limit_exceeded, small_inflate},
      {"npz_crc_mismatch",
       [] { return npz({{.name = "a.npy", .data = kF32x6, .deflate = true, .crc = 7}}); },
       ErrorCode::integrity},
      {"npz_duplicate_names",
       [] {
         return npz({{.name = "a.npy", .data = kF32x6}, {.name = "a.npy", .data = kF32x6}});
       },
       ErrorCode::invalid_format},
      {"npz_member_not_npy", [] { return npz({{.name = "a.npy", .data = "not an array"}}); },
       ErrorCode::invalid_format},
      // numpy.load's key "a" is the member "a" (an .npy without its suffix), not "a.npy".
      {"npz_member_shadowed_by_its_bare_name",
       [] {
         return npz({{.name = "a.npy", .data = kF32x6}, {.name = "a", .data = kF32x6}});
       },
       ErrorCode::invalid_format,
       {},
       "numpy's key 'a'"},
      {"npz_object_member",
       [] {
         return npz({{.name = "x.npy", .data = kF32x6},
                     {.name = "o.npy", .data = npy(dict("'|O'", "(1,)"), "\x80\x02N.")}});
       },
       ErrorCode::unsupported,
       {},
       "pickle"},
      {"npz_member_data_short",
       [] {
         return npz(
             {{.name = "a.npy", .data = kF32x6.substr(0, kF32x6.size() - 2), .deflate = true}});
       },
       ErrorCode::invalid_format},
  };
}

class NumpyHostile : public testing::TestWithParam<Hostile> {};

TEST_P(NumpyHostile, FailsWithItsOwnCode) {
  const Hostile& h = GetParam();
  try {
    parse_and_read(h.bytes(), h.limits, "hostile.npy");
    FAIL() << "parsed without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), h.code) << e.what();
    EXPECT_EQ(e.context().source.rfind("hostile.npy", 0), 0u) << e.what();
    EXPECT_TRUE(e.context().offset.has_value()) << e.what();
    if (!h.message.empty()) {
      EXPECT_NE(e.message().find(h.message), std::string::npos) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, NumpyHostile, testing::ValuesIn(hostile_files()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(NumpyHostile, EveryTruncationFailsCleanly) {
  const std::string archive =
      npz({{.name = "a.npy", .data = kF32x6, .deflate = true}, {.name = "b.npy", .data = kF32x6}});
  for (const std::string& file :
       {kF32x6, npy(dict("'<f4'", "(2, 3)"), std::string(24, 'x'), 3), archive}) {
    for (size_t n = 0; n < file.size(); ++n) {
      try {
        parse_and_read(file.substr(0, n), Limits{}, "cut.npy");
        ADD_FAILURE() << "a " << n << "-byte prefix parsed";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::invalid_format) << n << ": " << e.what();
      }
    }
  }
}

// Member names are the archive's bytes, not necessarily UTF-8: the list of skipped arrays in
// the metadata, and the CLI's JSON, show them with U+FFFD (found by fuzz_numpy); `convert`
// refuses to write such a name into a safetensors header, and leaves no file behind.
// numpy.load decodes a member name as cp437 unless the archive flags it UTF-8 (and fails on a
// flagged name that is not), so a name that is not ASCII must be flagged and valid UTF-8:
// otherwise numpy's key and ballast's tensor name would differ.
TEST(NumpyHostile, NamesThatAreNotUtf8AreRefused) {
  TempDir dir;
  const auto unflagged = dir / "unflagged.npz";
  write_file(unflagged,
             npz({{.name = "ok.npy", .data = kF32x6}, {.name = "\xfd.npy", .data = kF32x6}}));
  const auto flagged = dir / "flagged.npz";
  write_file(flagged, npz({{.name = "\xff\xfe.npy", .data = kF32x6, .flags = 0x800}}));
  for (const auto& path : {unflagged, flagged}) {
    try {
      make_weight_loader()->get_metadata(WeightSource::file(path));
      ADD_FAILURE() << path << " opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_format) << e.what();
      EXPECT_TRUE(e.context().offset.has_value()) << e.what();
      EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
    }
    const auto r = run_command(cli_path() + " inspect --json " + shell_quote(path.string()));
    EXPECT_EQ(r.exit_code, 1) << r.out;
  }
  const auto utf8 = dir / "utf8.npz";
  write_file(utf8, npz({{.name = "caf\xc3\xa9.npy", .data = kF32x6, .flags = 0x800}}));
  EXPECT_EQ(
      make_weight_loader()->get_metadata(WeightSource::file(utf8)).tensors.count("caf\xc3\xa9"),
      1u);
}

TEST(NumpyHostile, ProbeClaimsNpyAndNpzButNotTorchZips) {
  auto parser = make_numpy_parser();
  auto probe = [&](const std::string& b) {
    return parser->probe(std::as_bytes(std::span(b)), b.size());
  };
  EXPECT_TRUE(probe(kF32x6));
  EXPECT_TRUE(probe(npz({{.name = "w.npy", .data = kF32x6}})));
  EXPECT_TRUE(probe(npz({})));
  EXPECT_FALSE(
      probe(npz({{.name = "archive/data.pkl", .data = "x"}, {.name = "w.npy", .data = ""}})));
  EXPECT_FALSE(probe("\x93NUM"));
  EXPECT_FALSE(probe(""));
}

}  // namespace
}  // namespace ballast::test
