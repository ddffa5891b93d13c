// Archives that two zip readers could read differently (Python's zipfile for numpy.load, miniz
// for torch.load, ballast): each is refused with invalid_format naming the file and an offset,
// where ballast used to open one reading of it. The differential property test against the
// reference readers is tests/python/test_zip_differential.py.
#include <gtest/gtest.h>

#include <functional>

#include "ballast/error.hpp"
#include "formats/zip/zip_archive.hpp"
#include "support/parse_and_read.hpp"
#include "support/test_support.hpp"
#include "support/zip_writer.hpp"

namespace ballast::test {
namespace {

std::shared_ptr<ByteSource> memory(const std::string& bytes) {
  return memory_source_of(bytes, "test.zip");
}

uint32_t get_u32(const std::string& b, uint64_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[at + i]);
  return v;
}

BuiltZip two_members(bool descriptor = false) {
  return ZipWriter::build({{.name = "a.npy", .data = "first", .descriptor = descriptor},
                           {.name = "b.npy", .data = "second"}});
}

// Moves everything from `at` on by `n` inserted bytes and fixes every offset that points past
// `at` (local header offsets and the directory's offset): a consistent archive with a hole.
std::string insert_bytes(BuiltZip z, uint64_t at, const std::string& bytes) {
  const uint64_t n = bytes.size();
  uint64_t entry = z.cd_offset;
  for (size_t i = 0; i < z.local_offsets.size(); ++i) {
    if (z.local_offsets[i] >= at)
      ZipWriter::put_u32(z.bytes, entry + 42, static_cast<uint32_t>(z.local_offsets[i] + n));
    entry += 46 + (static_cast<unsigned char>(z.bytes[entry + 28]) |
                   static_cast<unsigned char>(z.bytes[entry + 29]) << 8);
  }
  ZipWriter::put_u32(z.bytes, z.eocd_offset + 16, static_cast<uint32_t>(z.cd_offset + n));
  z.bytes.insert(at, bytes);
  return z.bytes;
}

struct Ambiguous {
  std::string name;
  std::function<std::string()> bytes;
};

std::vector<Ambiguous> ambiguous_archives() {
  return {
      // zipfile and miniz take the last signature; ballast took the record whose comment ends
      // the file.
      {"second_end_record_in_the_comment",
       [] {
         auto z = two_members();
         std::string inner = z.bytes.substr(z.eocd_offset, 22);
         ZipWriter::put_u16(inner, 8, 1), ZipWriter::put_u16(inner, 10, 1);
         const std::string comment = inner + "!";
         ZipWriter::put_u16(z.bytes, z.eocd_offset + 20, static_cast<uint16_t>(comment.size()));
         return z.bytes + comment;
       }},
      {"end_record_signature_in_the_last_bytes",
       [] {
         auto z = two_members();
         ZipWriter::put_u16(z.bytes, z.eocd_offset + 20, 4);
         return z.bytes + "PK\x05\x06";
       }},
      // miniz reads the directory at the stated offset, zipfile just before the end record.
      {"directory_offset_disagrees_with_its_end",
       [] {
         auto z = two_members();
         const std::string cd = z.bytes.substr(z.cd_offset, z.eocd_offset - z.cd_offset);
         std::string b = z.bytes.substr(0, z.cd_offset) + cd + cd + z.bytes.substr(z.eocd_offset);
         return b;
       }},
      {"prepended_data", [] { return insert_bytes(two_members(), 0, "#!/bin/sh\nexit 0\n"); }},
      {"gap_between_members",
       [] {
         auto z = two_members();
         return insert_bytes(z, z.local_offsets[1], std::string(8, '\0'));
       }},
      {"gap_before_the_directory",
       [] {
         auto z = two_members();
         return insert_bytes(z, z.cd_offset, "junk");
       }},
      // zipfile reads entries until the directory's size is used up, miniz by count.
      {"entries_beyond_the_stated_count",
       [] {
         auto z = two_members();
         ZipWriter::put_u16(z.bytes, z.eocd_offset + 8, 1);
         ZipWriter::put_u16(z.bytes, z.eocd_offset + 10, 1);
         return z.bytes;
       }},
      {"overlapping_members",
       [] {
         auto z = two_members(true);  // a.npy's local header holds zeros for its sizes
         ZipWriter::put_u32(z.bytes, z.cd_offset + 20, 5 + 16 + 10);
         ZipWriter::put_u32(z.bytes, z.cd_offset + 24, 5 + 16 + 10);
         return z.bytes;
       }},
      {"local_header_method_disagrees",
       [] {
         auto z = two_members();
         ZipWriter::put_u16(z.bytes, 8, 8);
         return z.bytes;
       }},
      {"local_header_flags_disagree",
       [] {
         auto z = two_members();
         ZipWriter::put_u16(z.bytes, 6, 0x0800);
         return z.bytes;
       }},
      {"local_header_crc_disagrees",
       [] {
         auto z = two_members();
         ZipWriter::put_u32(z.bytes, 14, get_u32(z.bytes, 14) ^ 1);
         return z.bytes;
       }},
      {"local_header_size_disagrees",
       [] {
         auto z = two_members();
         ZipWriter::put_u32(z.bytes, 18, 4);
         ZipWriter::put_u32(z.bytes, 22, 4);
         return z.bytes;
       }},
      {"data_descriptor_disagrees",
       [] {
         auto z = two_members(true);
         const uint64_t descriptor = 30 + 5 + 5;
         ZipWriter::put_u32(z.bytes, descriptor + 8, 4);
         return z.bytes;
       }},
      // zipfile and miniz use the ZIP64 end record whenever its locator is there.
      {"zip64_record_disagrees_with_the_end_record",
       [] {
         auto z = ZipWriter::build({{.name = "a.npy", .data = "first"}}, true);
         const uint64_t cd_size = z.eocd_offset - 76 - z.cd_offset;
         ZipWriter::put_u16(z.bytes, z.eocd_offset + 8, 1);
         ZipWriter::put_u16(z.bytes, z.eocd_offset + 10, 1);
         ZipWriter::put_u32(z.bytes, z.eocd_offset + 12, static_cast<uint32_t>(cd_size));
         ZipWriter::put_u32(z.bytes, z.eocd_offset + 16, static_cast<uint32_t>(z.cd_offset));
         const uint64_t record = z.eocd_offset - 76;
         ZipWriter::put_u32(z.bytes, record + 24, 0);
         ZipWriter::put_u32(z.bytes, record + 32, 0);
         return z.bytes;
       }},
      {"zip64_locator_points_elsewhere",
       [] {
         auto z = ZipWriter::build({{.name = "a.npy", .data = "first"}}, true);
         const uint64_t record = z.eocd_offset - 76;
         // A second copy of the ZIP64 end record before the real one, named by the locator.
         std::string b = z.bytes;
         const std::string copy = b.substr(record, 56);
         b.insert(record, copy);
         const uint64_t locator = record + 56 + 56;
         ZipWriter::put_u32(b, locator + 8, static_cast<uint32_t>(record));
         return b;
       }},
      // zipfile decodes such names as cp437 or fails to decode them; ballast used their bytes.
      {"non_ascii_name_without_utf8_flag",
       [] { return ZipWriter::build({{.name = "caf\xe9.npy", .data = "x"}}).bytes; }},
      {"name_flagged_utf8_but_invalid",
       [] { return ZipWriter::build({{.name = "\xff.npy", .data = "x", .flags = 0x800}}).bytes; }},
  };
}

class ZipAmbiguity : public testing::TestWithParam<Ambiguous> {};

TEST_P(ZipAmbiguity, IsRefusedAsInvalidFormat) {
  try {
    ZipArchive::open(memory(GetParam().bytes()), Limits{});
    FAIL() << "opened without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format) << e.what();
    EXPECT_EQ(e.context().source, "test.zip") << e.what();
    EXPECT_TRUE(e.context().offset.has_value()) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ZipAmbiguity, testing::ValuesIn(ambiguous_archives()),
                         [](const auto& param_info) { return param_info.param.name; });

// The same writer's archives without the ambiguity still open (the table's cases are not
// refused for some unrelated reason).
TEST(ZipAmbiguity, TheUnmodifiedArchivesOpen) {
  EXPECT_EQ(ZipArchive::open(memory(two_members().bytes), Limits{}).members().size(), 2u);
  EXPECT_EQ(ZipArchive::open(memory(two_members(true).bytes), Limits{}).members().size(), 2u);
  auto z64 = ZipWriter::build({{.name = "a.npy", .data = "first"}}, true);
  EXPECT_EQ(ZipArchive::open(memory(z64.bytes), Limits{}).members().size(), 1u);
  auto utf8 = ZipWriter::build({{.name = "caf\xc3\xa9.npy", .data = "x", .flags = 0x800}});
  EXPECT_EQ(ZipArchive::open(memory(utf8.bytes), Limits{}).members().size(), 1u);
  auto commented = two_members();
  ZipWriter::put_u16(commented.bytes, commented.eocd_offset + 20, 7);
  EXPECT_EQ(ZipArchive::open(memory(commented.bytes + "comment"), Limits{}).members().size(), 2u);
}

}  // namespace
}  // namespace ballast::test
