// Local files and folders as a Store (see local_store.hpp).
#include "io/local_store.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "io/file_source.hpp"
#include "io/folder_opener.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

// The folder of a file, "." for a bare file name.
fs::path folder_of(const fs::path& file) {
  return file.parent_path().empty() ? "." : file.parent_path();
}

}  // namespace

LocalStore::LocalStore(fs::path path, ReadMode read_mode, std::shared_ptr<const Os> os)
    : path_(std::move(path)), read_mode_(read_mode), os_(std::move(os)) {}

std::vector<std::string> LocalStore::expand(const std::string& object) {
  if (!exists(object))
    throw Error(ErrorCode::not_found, "no such file or folder", {.source = object});
  return {object};
}

bool LocalStore::exists(const std::string& object) {
  struct stat st {};
  return os_->stat(object.c_str(), &st) == 0;
}

bool LocalStore::is_folder(const std::string& object) const {
  struct stat st {};
  return os_->stat(object.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

ShardInput LocalStore::open(const std::string& object) {
  const fs::path path = object;
  const FileOpenOptions options = file_open_options(read_mode_, os_);
  return {open_file_source(path, options), make_folder_opener(folder_of(path), options), path};
}

std::vector<std::byte> LocalStore::read_small(const std::string& object, uint64_t max_bytes) {
  return read_small_file(object, max_bytes, object, os_);
}

std::string LocalStore::sibling(const std::string& object, std::string_view relative) const {
  return resolve_inside(folder_of(object), relative, *os_).string();
}

std::string LocalStore::version(const std::string& object) const {
  struct stat st {};
  if (os_->stat(object.c_str(), &st) != 0) return {};
  return fmt::format("{}:{}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

}  // namespace ballast
