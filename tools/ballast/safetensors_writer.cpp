// The streaming safetensors writer (see safetensors_writer.hpp).
#include "safetensors_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ballast::cli {
namespace {

// A safetensors header is JSON, which holds only UTF-8; names from GGUF, pickles or npz
// members may be any bytes. Such a name is refused rather than silently rewritten.
void require_utf8_name(const std::string& name) {
  try {
    (void)nlohmann::json(name).dump();
  } catch (const nlohmann::json::type_error&) {
    throw Error(ErrorCode::invalid_argument,
                "the tensor name is not UTF-8, which a safetensors header requires",
                {.tensor = name});
  }
}

struct StName {
  DType dtype;
  const char* name;
};
constexpr std::array kStNames = {
    StName{DType::f64, "F64"},
    StName{DType::f32, "F32"},
    StName{DType::f16, "F16"},
    StName{DType::bf16, "BF16"},
    StName{DType::f8_e4m3, "F8_E4M3"},
    StName{DType::f8_e5m2, "F8_E5M2"},
    StName{DType::f8_e4m3fnuz, "F8_E4M3FNUZ"},
    StName{DType::f8_e5m2fnuz, "F8_E5M2FNUZ"},
    StName{DType::f8_e8m0, "F8_E8M0"},
    StName{DType::f6_e2m3, "F6_E2M3"},
    StName{DType::f6_e3m2, "F6_E3M2"},
    StName{DType::f4_e2m1, "F4"},
    StName{DType::i64, "I64"},
    StName{DType::i32, "I32"},
    StName{DType::i16, "I16"},
    StName{DType::i8, "I8"},
    StName{DType::u64, "U64"},
    StName{DType::u32, "U32"},
    StName{DType::u16, "U16"},
    StName{DType::u8, "U8"},
    StName{DType::boolean, "BOOL"},
    StName{DType::c64, "C64"},
};

const char* st_name(DType dtype, const std::string& tensor) {
  for (const auto& n : kStNames)
    if (n.dtype == dtype) return n.name;
  throw Error(ErrorCode::unsupported,
              fmt::format("safetensors has no dtype for {}; add a cast step", dtype_name(dtype)),
              {.tensor = tensor});
}

[[noreturn]] void io_error(const std::string& what, const std::filesystem::path& path) {
  throw Error(ErrorCode::io, fmt::format("{}: {}", what, std::strerror(errno)),
              {.source = path.string()});
}

void write_all(int fd, const void* data, size_t n, uint64_t offset,
               const std::filesystem::path& path) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) io_error("cannot write", path);
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void copy_range(int from, uint64_t from_offset, int to, uint64_t to_offset, uint64_t n,
                const std::filesystem::path& path) {
  std::vector<char> buffer(std::min<uint64_t>(n, 8 << 20));
  while (n > 0) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, buffer.size()));
    ssize_t r = ::pread(from, buffer.data(), chunk, static_cast<off_t>(from_offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) io_error("cannot read the scratch file", path);
    write_all(to, buffer.data(), static_cast<size_t>(r), to_offset, path);
    from_offset += static_cast<uint64_t>(r);
    to_offset += static_cast<uint64_t>(r);
    n -= static_cast<uint64_t>(r);
  }
}

// Widest elements first, then by name: every tensor starts aligned for its element type.
bool safetensors_order(DType a, const std::string& an, DType b, const std::string& bn) {
  const uint32_t sa = dtype_element_size(a), sb = dtype_element_size(b);
  return sa != sb ? sa > sb : an < bn;
}

}  // namespace

SafetensorsWriter::SafetensorsWriter(std::filesystem::path target) : target_(std::move(target)) {
  const auto folder = target_.has_parent_path() ? target_.parent_path() : ".";
  // The scratch file has no name at all (O_TMPFILE); the output is written under a name nobody
  // can predict and created exclusively (O_EXCL | O_NOFOLLOW), so a file or symlink planted
  // beside the output is never followed or overwritten. Both are renamed or gone at the end.
  std::random_device random;
  auto unpredictable = [&](std::string_view kind) {
    return folder / fmt::format(".{}.{}-{}-{:08x}{:08x}", target_.filename().string(), kind,
                                ::getpid(), random(), random());
  };
  constexpr int kNew = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  scratch_fd_ = ::open(folder.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
  if (scratch_fd_ < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {  // no O_TMPFILE here
    const auto scratch = unpredictable("data");
    scratch_fd_ = ::open(scratch.c_str(), kNew, 0600);
    if (scratch_fd_ >= 0) ::unlink(scratch.c_str());  // lives only while open
  }
  if (scratch_fd_ < 0) io_error("cannot create a scratch file beside the output", target_);
  temp_ = unpredictable("tmp");
  temp_fd_ = ::open(temp_.c_str(), kNew, 0644);
  if (temp_fd_ < 0) {
    ::close(scratch_fd_);  // the destructor does not run for a constructor that throws
    io_error("cannot create a temporary file beside the output", target_);
  }
}

SafetensorsWriter::~SafetensorsWriter() {
  if (scratch_fd_ >= 0) ::close(scratch_fd_);
  if (temp_fd_ >= 0) {
    ::close(temp_fd_);
    ::unlink(temp_.c_str());  // finish() was not reached
  }
}

void SafetensorsWriter::add(const Tensor& tensor) {
  require_utf8_name(tensor.name());
  st_name(tensor.dtype(), tensor.name());
  for (const Entry& e : entries_)
    if (e.name == tensor.name())
      throw Error(ErrorCode::invalid_argument, "tensor written twice", {.tensor = tensor.name()});
  write_all(scratch_fd_, tensor.data(), tensor.nbytes(), scratch_size_, temp_);
  entries_.push_back(
      {tensor.name(), tensor.dtype(), tensor.shape(), scratch_size_, tensor.nbytes()});
  scratch_size_ += tensor.nbytes();
}

void SafetensorsWriter::finish(const std::map<std::string, std::string>& metadata) {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return safetensors_order(a.dtype, a.name, b.dtype, b.name);
  });
  nlohmann::ordered_json header;
  header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    header[e.name] = {{"dtype", st_name(e.dtype, e.name)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + e.nbytes}}};
    offset += e.nbytes;
  }
  // Names are UTF-8 (add() checks); metadata text (a source path) may not be, and is kept
  // with U+FFFD for the bad bytes.
  std::string text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t length = text.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(length >> (8 * i));
  write_all(temp_fd_, prefix, 8, 0, temp_);
  write_all(temp_fd_, text.data(), text.size(), 8, temp_);
  uint64_t out = 8 + length;
  for (const Entry& e : entries_) {
    copy_range(scratch_fd_, e.scratch_offset, temp_fd_, out, e.nbytes, temp_);
    out += e.nbytes;
  }
  if (::fsync(temp_fd_) != 0) io_error("cannot flush", temp_);
  ::close(temp_fd_);
  temp_fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    ::unlink(temp_.c_str());
    io_error("cannot rename into place", target_);
  }
}

}  // namespace ballast::cli
