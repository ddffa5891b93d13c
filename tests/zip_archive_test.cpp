// ZipArchive: members from the central directory (plain, data descriptors, ZIP64), zero-copy
// stored members, lazy bounded inflation, archives written by Python's zipfile, and a table of
// hostile archives each failing with its own error code.
#include "formats/zip/zip_archive.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "ballast/error.hpp"
#include "support/parse_and_read.hpp"
#include "support/test_support.hpp"
#include "support/zip_writer.hpp"

namespace ballast::test {
namespace {

std::shared_ptr<ByteSource> memory(const std::string& bytes) {
  return memory_source_of(bytes, "test.zip");
}

std::string read_all(const ByteSource& s) {
  std::string out(s.size(), '\0');
  s.read_at(0, std::as_writable_bytes(std::span(out)));
  return out;
}

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7) % 251);
  return s;
}

TEST(ZipArchive, StoredMembersAreZeroCopySlices) {
  auto zip = ZipWriter::build({{.name = "archive/data.pkl", .data = "pickle"},
                               {.name = "archive/data/0", .data = pattern(1000)}});
  auto source = memory(zip.bytes);
  ZipArchive archive = ZipArchive::open(source, Limits{});
  ASSERT_EQ(archive.members().size(), 2u);
  const ZipMember* m = archive.find("archive/data/0");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(archive.find("data/0"), nullptr);
  EXPECT_EQ(m->data_offset, zip.local_offsets[1] + 30 + m->name.size());
  auto member = archive.member_source(*m);
  EXPECT_EQ(read_all(*member), pattern(1000));
  auto region = member->mapping();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->data(), source->mapping()->data() + m->data_offset);
  EXPECT_NE(member->name().find("archive/data/0"), std::string::npos);
}

TEST(ZipArchive, DeflatedMembersInflateLazilyAndCompletely) {
  const std::string data = pattern(300'000);
  auto zip = ZipWriter::build({{.name = "x.npy", .data = data, .deflate = true}});
  ZipArchive archive = ZipArchive::open(memory(zip.bytes), Limits{});
  auto member = archive.member_source(archive.members().at(0));
  EXPECT_EQ(member->size(), data.size());
  std::string head(16, '\0');
  member->read_at(100, std::as_writable_bytes(std::span(head)));
  EXPECT_EQ(head, data.substr(100, 16));
  EXPECT_EQ(read_all(*member), data);
  auto region = member->mapping();
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(region->data()), region->size()), data);
}

TEST(ZipArchive, ConcurrentReadsOfADeflatedMemberAgree) {
  const std::string data = pattern(2'000'000);
  auto zip = ZipWriter::build({{.name = "w", .data = data, .deflate = true}});
  ZipArchive archive = ZipArchive::open(memory(zip.bytes), Limits{});
  auto member = archive.member_source(archive.members().at(0));
  std::vector<std::thread> threads;
  std::vector<int> bad(8, 0);
  for (size_t t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t at = t * 1000; at + 4096 < data.size(); at += 250'000) {
        std::string got(4096, '\0');
        member->read_at(at, std::as_writable_bytes(std::span(got)));
        if (got != data.substr(at, 4096)) ++bad[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(8, 0));
}

TEST(ZipArchive, DataDescriptorsAndZip64RecordsReadFromTheCentralDirectory) {
  for (bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64 ? "zip64" : "plain");
    auto zip = ZipWriter::build(
        {{.name = "a", .data = "hello", .descriptor = true},
         {.name = "b/c", .data = pattern(5000), .deflate = true, .descriptor = true}},
        zip64);
    ZipArchive archive = ZipArchive::open(memory(zip.bytes), Limits{});
    ASSERT_EQ(archive.members().size(), 2u);
    EXPECT_EQ(archive.members()[0].uncompressed_size, 5u);
    EXPECT_EQ(read_all(*archive.member_source(archive.members()[0])), "hello");
    EXPECT_EQ(read_all(*archive.member_source(archive.members()[1])), pattern(5000));
  }
}

TEST(ZipArchive, ReadsWhatPythonZipfileWrites) {
  BALLAST_REQUIRE_PYTHON("zipfile");
  TempDir dir;
  run_python(R"(
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.writestr('root/stored.bin', bytes(range(256)) * 40, zipfile.ZIP_STORED)
    z.writestr('root/deflated.bin', b'ballast ' * 5000, zipfile.ZIP_DEFLATED)
    with z.open('root/streamed.bin', 'w', force_zip64=True) as f:
        f.write(b'z' * 777)
)",
             {(dir / "p.zip").string()});
  std::string bytes = read_file(dir / "p.zip");
  ZipArchive archive = ZipArchive::open(memory(bytes), Limits{});
  ASSERT_EQ(archive.members().size(), 3u);
  std::string stored;
  for (int i = 0; i < 40; ++i)
    for (int c = 0; c < 256; ++c) stored += static_cast<char>(c);
  std::string deflated;
  for (int i = 0; i < 5000; ++i) deflated += "ballast ";
  EXPECT_EQ(read_all(*archive.member_source(*archive.find("root/stored.bin"))), stored);
  EXPECT_EQ(read_all(*archive.member_source(*archive.find("root/deflated.bin"))), deflated);
  EXPECT_EQ(read_all(*archive.member_source(*archive.find("root/streamed.bin"))),
            std::string(777, 'z'));
}

TEST(ZipArchive, LooksLikeZip) {
  auto zip = ZipWriter::build({{.name = "a", .data = "x"}});
  EXPECT_TRUE(looks_like_zip(std::as_bytes(std::span(zip.bytes))));
  auto empty = ZipWriter::build({});
  EXPECT_TRUE(looks_like_zip(std::as_bytes(std::span(empty.bytes))));
  EXPECT_EQ(ZipArchive::open(memory(empty.bytes), Limits{}).members().size(), 0u);
  std::string npy = "\x93NUMPY";
  EXPECT_FALSE(looks_like_zip(std::as_bytes(std::span(npy))));
}

struct Hostile {
  std::string name;
  std::function<std::string()> bytes;
  ErrorCode code;
  bool on_read = false;  // fails when the member is read, not when the archive opens
  Limits limits = {};
};

std::string built(std::vector<ZipEntrySpec> entries) { return ZipWriter::build(entries).bytes; }

std::vector<Hostile> hostile_archives() {
  const std::string data = pattern(4096);
  Limits small_inflate;
  small_inflate.max_inflated_bytes = 100'000;
  Limits tight_ratio;
  tight_ratio.max_inflate_ratio = 10;
  return {
      {"empty_file", [] { return std::string(); }, ErrorCode::invalid_format},
      {"truncated_eocd",
       [] {
         auto b = built({{.name = "a", .data = "x"}});
         return b.substr(0, b.size() - 5);
       },
       ErrorCode::invalid_format},
      {"central_directory_out_of_bounds",
       [] {
         auto z = ZipWriter::build({{.name = "a", .data = "x"}});
         ZipWriter::put_u32(z.bytes, z.eocd_offset + 16, 0x7fff0000);
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"central_directory_size_past_eocd",
       [] {
         auto z = ZipWriter::build({{.name = "a", .data = "x"}});
         ZipWriter::put_u32(z.bytes, z.eocd_offset + 12, 0x10000);
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"member_offset_past_eof",
       [] {
         auto z = ZipWriter::build({{.name = "a", .data = "x"}});
         ZipWriter::put_u32(z.bytes, z.cd_offset + 42, 0x00ffffff);
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"bad_local_signature",
       [] {
         auto z = ZipWriter::build({{.name = "a", .data = "x"}});
         z.bytes[0] = 'X';
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"member_data_past_eof",
       [] {
         auto z = ZipWriter::build({{.name = "a", .data = "xyz"}});
         ZipWriter::put_u32(z.bytes, z.cd_offset + 20, 0x100000);
         ZipWriter::put_u32(z.bytes, z.cd_offset + 24, 0x100000);
         return z.bytes;
       },
       ErrorCode::invalid_format},
      {"dotdot_name", [] { return built({{.name = "../evil.npy", .data = "x"}}); },
       ErrorCode::invalid_format},
      {"inner_dotdot_name", [] { return built({{.name = "a/../../b", .data = "x"}}); },
       ErrorCode::invalid_format},
      {"absolute_name", [] { return built({{.name = "/etc/passwd", .data = "x"}}); },
       ErrorCode::invalid_format},
      {"backslash_name", [] { return built({{.name = "a\\b.npy", .data = "x"}}); },
       ErrorCode::invalid_format},
      {"nul_in_name", [] { return built({{.name = std::string("a\0b", 3), .data = "x"}}); },
       ErrorCode::invalid_format},
      {"duplicate_names",
       [] {
         return built({{.name = "a.npy", .data = "x"}, {.name = "a.npy", .data = "y"}});
       },
       ErrorCode::invalid_format},
      {"encrypted_member", [] { return built({{.name = "a", .data = "x", .flags = 1}}); },
       ErrorCode::unsupported},
      {"bzip2_member", [] { return built({{.name = "a", .data = "x", .method = 12}}); },
       ErrorCode::unsupported},
      {"stored_sizes_disagree",
       [] { return built({{.name = "a", .data = "xyz", .uncompressed_size = 2}}); },
       ErrorCode::invalid_format},
      {"zip_bomb_over_max_inflated_bytes",
       [] { return built({{.name = "a", .data = std::string(1'000'000, '\0'), .deflate = true}}); },
       ErrorCode::limit_exceeded, true, small_inflate},
      {"inflate_ratio_over_limit",
       [] { return built({{.name = "a", .data = std::string(100'000, '\0'), .deflate = true}}); },
       ErrorCode::limit_exceeded, true, tight_ratio},
      {"inflates_past_declared_size",
       [data] {
         return built({{.name = "a", .data = data, .deflate = true, .uncompressed_size = 100}});
       },
       ErrorCode::limit_exceeded, true},
      {"stream_shorter_than_declared",
       [data] {
         return built({{.name = "a", .data = data, .deflate = true, .uncompressed_size = 5000}});
       },
       ErrorCode::invalid_format, true},
      {"crc_mismatch",
       [data] { return built({{.name = "a", .data = data, .deflate = true, .crc = 0x1234}}); },
       ErrorCode::integrity, true},
      {"corrupt_deflate_stream",
       [] {
         auto z = ZipWriter::build({{.name = "a", .data = pattern(4096), .deflate = true}});
         for (size_t i = 0; i < 8; ++i) z.bytes[z.local_offsets[0] + 31 + i] = '\xff';
         return z.bytes;
       },
       ErrorCode::invalid_format, true},
  };
}

class ZipHostile : public testing::TestWithParam<Hostile> {};

TEST_P(ZipHostile, FailsWithItsOwnCode) {
  const Hostile& h = GetParam();
  auto source = memory(h.bytes());
  try {
    ZipArchive archive = ZipArchive::open(source, h.limits);
    ASSERT_TRUE(h.on_read) << "opened without error";
    for (const auto& m : archive.members()) read_all(*archive.member_source(m));
    FAIL() << "read without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), h.code) << e.what();
    EXPECT_EQ(e.context().source, "test.zip") << e.what();
    EXPECT_TRUE(e.context().offset.has_value()) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ZipHostile, testing::ValuesIn(hostile_archives()),
                         [](const auto& param_info) { return param_info.param.name; });

TEST(ZipArchive, EveryTruncationFailsCleanly) {
  auto zip = ZipWriter::build({{.name = "a.npy", .data = pattern(200), .deflate = true},
                               {.name = "b.npy", .data = pattern(100)}});
  for (size_t n = 0; n < zip.bytes.size(); ++n) {
    try {
      ZipArchive archive = ZipArchive::open(memory(zip.bytes.substr(0, n)), Limits{});
      for (const auto& m : archive.members()) read_all(*archive.member_source(m));
      ADD_FAILURE() << "a " << n << "-byte prefix opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_format) << n << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace ballast::test
