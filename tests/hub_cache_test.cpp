// The Hub cache never writes outside its folder: a revision names a file under refs/ (slashes
// allowed, as in "refs/pr/1") and one that would climb out of it is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "ballast/error.hpp"
#include "remote/hub_cache.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

const std::string kCommit(40, 'a');

TEST(HubCache, BranchNamesWithSlashesAreRefs) {
  TempDir dir;
  HubRepoCache cache(dir / "hub", "org/name", real_os());
  cache.write_ref("refs/pr/1", kCommit);
  EXPECT_EQ(cache.commit_of("refs/pr/1"), kCommit);
  EXPECT_TRUE(std::filesystem::exists(cache.root() / "refs" / "refs" / "pr" / "1"));
}

TEST(HubCache, RevisionsThatLeaveRefsAreRefused) {
  TempDir dir;
  HubRepoCache cache(dir / "hub", "org/name", real_os());
  for (const char* revision : {"../../../escape", "main/../../x", "/tmp/escape", "a\\b", ""}) {
    try {
      cache.write_ref(revision, kCommit);
      ADD_FAILURE() << "wrote the ref " << revision;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_format) << revision;
    }
    EXPECT_THROW((void)cache.commit_of(revision), Error) << revision;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "escape"));
  EXPECT_FALSE(std::filesystem::exists(dir / "hub" / "escape"));
}

}  // namespace
}  // namespace ballast::test
