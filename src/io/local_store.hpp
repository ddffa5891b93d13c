// LocalStore: a local file or folder as a Store. Objects are paths; a file beside another
// (a shard next to its index) is resolved inside that file's folder by io/folder_opener, so
// no name leaves the model's folder; the version tag is the file's size and modification time.
// Every file system call goes through the store's Os.
#pragma once

#include <filesystem>

#include "ballast/config.hpp"
#include "io/os.hpp"
#include "io/store.hpp"

namespace ballast {

class LocalStore final : public Store {
 public:
  LocalStore(std::filesystem::path path, ReadMode read_mode, std::shared_ptr<const Os> os);

  std::string named() const override { return path_.string(); }
  // The path itself; not_found ("no such file or folder") when nothing is there.
  std::vector<std::string> expand(const std::string& object) override;
  bool exists(const std::string& object) override;
  bool is_folder(const std::string& object) const override;
  ShardInput open(const std::string& object) override;
  std::vector<std::byte> read_small(const std::string& object, uint64_t max_bytes) override;
  std::string sibling(const std::string& object, std::string_view relative) const override;
  std::string describe(const std::string& object) const override { return object; }
  std::string identity() const override { return {}; }
  std::string version(const std::string& object) const override;

 private:
  std::filesystem::path path_;
  ReadMode read_mode_;
  std::shared_ptr<const Os> os_;
};

}  // namespace ballast
