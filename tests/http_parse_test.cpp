// The pure HTTP response parsers (status line, header lines, sizes, Content-Range) on what
// servers send and on what hostile ones might.
#include <gtest/gtest.h>

#include "remote/http_parse.hpp"

namespace ballast {
namespace {

TEST(HttpParse, StatusLines) {
  EXPECT_EQ(parse_http_status_line("HTTP/1.1 206 Partial Content\r\n"), 206);
  EXPECT_EQ(parse_http_status_line("HTTP/2 404\r\n"), 404);
  EXPECT_EQ(parse_http_status_line("HTTP/1.1 200"), 200);
  for (const char* bad : {"HTTP/1.1", "HTTP/1.1 ", "HTTP/1.1 20", "HTTP/1.1 2000 OK",
                          "HTTP/1.1 -200 OK", "HTTP/1.1 99999999999999999999999 OK"})
    EXPECT_EQ(parse_http_status_line(bad), 0) << bad;
}

TEST(HttpParse, HeaderLines) {
  auto h = parse_http_header_line("Content-Range:  bytes 0-1/2 \r\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->first, "content-range");
  EXPECT_EQ(h->second, "bytes 0-1/2");
  auto empty = parse_http_header_line("X-Empty:\r\n");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->second, "");
  EXPECT_FALSE(parse_http_header_line("\r\n"));
}

TEST(HttpParse, Sizes) {
  EXPECT_EQ(parse_http_u64("0"), 0u);
  EXPECT_EQ(parse_http_u64("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "18446744073709551616", "1e3", "0x10"})
    EXPECT_FALSE(parse_http_u64(bad)) << bad;
}

TEST(HttpParse, ContentRange) {
  auto r = parse_content_range("bytes 10-19/100");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 10u);
  EXPECT_EQ(r->last, 19u);
  EXPECT_EQ(r->total, 100u);
  auto unknown_total = parse_content_range("bytes 0-0/*");
  ASSERT_TRUE(unknown_total);
  EXPECT_FALSE(unknown_total->total);
  auto unsatisfiable = parse_content_range("bytes */0");
  ASSERT_TRUE(unsatisfiable);
  EXPECT_GT(unsatisfiable->first, unsatisfiable->last);
  EXPECT_EQ(unsatisfiable->total, 0u);
  for (const char* bad : {"", "bytes", "bytes 0-1", "items 0-1/2", "bytes 5-4/10", "bytes 0-10/10",
                          "bytes 0-10/5", "bytes */*", "bytes -1/2", "bytes 0-/2", "bytes 0-1/-2",
                          "bytes 0-1/2/3", "bytes 0-18446744073709551616/*"})
    EXPECT_FALSE(parse_content_range(bad)) << bad;
}

}  // namespace
}  // namespace ballast
