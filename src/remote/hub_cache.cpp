// The Hub cache layout, locking and atomic commits (see hub_cache.hpp).
#include "remote/hub_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "remote/sha256.hpp"
#include "remote/url.hpp"

namespace ballast {
namespace {

namespace fs = std::filesystem;

// An open file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void fail_io(std::string_view what, const fs::path& path) {
  throw Error(ErrorCode::io, fmt::format("{}: {}", what, std::strerror(errno)),
              {.source = path.string()});
}

std::string unique_suffix() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return fmt::format(".{}.{:x}.tmp", ::getpid(), random());
}

// Writes `text` to `path` through a temporary file and a rename.
void write_atomically(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  const fs::path temp = path.string() + unique_suffix();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) fail_io("cannot write", temp);
  }
  fs::rename(temp, path);
}

}  // namespace

bool is_commit_hash(std::string_view revision) {
  if (revision.size() != 40) return false;
  for (char c : revision)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

HubRepoCache::HubRepoCache(const fs::path& cache_dir, std::string_view repo_id) {
  std::string folder = "models--";
  for (char c : repo_id) folder += c == '/' ? std::string("--") : std::string(1, c);
  root_ = cache_dir / folder;
}

std::optional<std::string> HubRepoCache::commit_of(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(root_ / "refs" / confined_relative_path(revision, root_.string()));
  std::string commit;
  if (!in || !std::getline(in, commit) || !is_commit_hash(commit)) return std::nullopt;
  return commit;
}

std::optional<fs::path> HubRepoCache::cached(const std::string& commit,
                                             const std::string& path) const {
  fs::path p = root_ / "snapshots" / commit / path;
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return p;  // follows the symlink: the blob must exist
  return std::nullopt;
}

void HubRepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  // A branch may hold slashes ("refs/pr/1") but never leave refs/ ("../../x").
  write_atomically(root_ / "refs" / confined_relative_path(revision, root_.string()), commit);
}

void HubRepoCache::link(const std::string& commit, const std::string& path,
                        const std::string& etag) const {
  const fs::path link_path = root_ / "snapshots" / commit / path;
  fs::create_directories(link_path.parent_path());
  // From snapshots/<commit>/<dirs...>/ up to the repo folder, then into blobs/.
  fs::path target = "..";
  target /= "..";
  for (size_t slashes = std::count(path.begin(), path.end(), '/'); slashes > 0; --slashes)
    target /= "..";
  target = target / "blobs" / etag;
  const fs::path temp = link_path.string() + unique_suffix();
  fs::create_symlink(target, temp);
  fs::rename(temp, link_path);
}

fs::path HubRepoCache::store(const std::string& commit, const std::string& path,
                             const std::string& etag, uint64_t size,
                             const std::optional<std::string>& sha256,
                             const std::function<void(const ByteSink&)>& fetch) const {
  const fs::path blobs = root_ / "blobs";
  fs::create_directories(blobs);
  const fs::path blob = blobs / etag;
  // huggingface_hub keeps its locks in <cache>/.locks/models--org--name/<etag>.lock.
  const fs::path locks = root_.parent_path() / ".locks" / root_.filename();
  fs::create_directories(locks);
  const fs::path lock_path = locks / (etag + ".lock");
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0) fail_io("cannot open the cache lock", lock_path);
  while (::flock(lock.get(), LOCK_EX) != 0)
    if (errno != EINTR) fail_io("cannot lock the cache", lock_path);

  std::error_code ec;
  if (!fs::is_regular_file(blob, ec) || fs::file_size(blob, ec) != size) {
    const fs::path incomplete = blobs / (etag + ".incomplete");
    try {
      Fd out(::open(incomplete.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (out.get() < 0) fail_io("cannot create", incomplete);
      Sha256 hash;
      uint64_t written = 0;
      fetch([&](std::span<const std::byte> bytes) {
        if (written + bytes.size() > size)
          throw Error(ErrorCode::integrity, "the download is longer than its stated size",
                      {.source = path});
        for (size_t done = 0; done < bytes.size();) {
          ssize_t n = ::write(out.get(), bytes.data() + done, bytes.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) fail_io("cannot write", incomplete);
          done += static_cast<size_t>(n);
        }
        if (sha256) hash.update(bytes);
        written += bytes.size();
      });
      if (written != size)
        throw Error(ErrorCode::integrity,
                    fmt::format("the download has {} bytes, the Hub says {}", written, size),
                    {.source = path});
      if (sha256) {
        std::string actual = hash.hex();
        if (actual != *sha256)
          throw Error(ErrorCode::integrity, "the download's sha256 differs from the Hub's",
                      {.source = path, .expected = *sha256, .actual = actual});
      }
      if (::fsync(out.get()) != 0) fail_io("cannot sync", incomplete);
    } catch (...) {
      fs::remove(incomplete, ec);  // never leave a partial file behind
      throw;
    }
    fs::rename(incomplete, blob);
  }
  link(commit, path, etag);
  return root_ / "snapshots" / commit / path;
}

}  // namespace ballast
