// Lazy, bounded inflation of one deflated zip member (see inflated_source.hpp).
#include "formats/zip/inflated_source.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "core/produced_mapping.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

constexpr uint64_t kInputChunk = 256 * 1024;
constexpr uint64_t kMinGrowth = 64 * 1024;
constexpr uint64_t kMaxKeptGrowth = 1 << 20;  // larger reads go straight to the caller

std::atomic<uint64_t> passes_started{0};

// The inflated bytes so far; shared with mapped regions so they outlive the source.
struct Buffer {
  std::vector<std::byte> bytes;
};

class BufferRegion final : public MappedRegion {
 public:
  explicit BufferRegion(std::shared_ptr<const Buffer> buffer) : buffer_(std::move(buffer)) {}
  const std::byte* data() const override { return buffer_->bytes.data(); }
  uint64_t size() const override { return buffer_->bytes.size(); }

 private:
  std::shared_ptr<const Buffer> buffer_;
};

class InflatedSource final : public ByteSource, public ProducedMapping {
 public:
  InflatedSource(std::shared_ptr<ByteSource> compressed, const ZipMember& member, std::string name,
                 std::string archive_name)
      : compressed_(std::move(compressed)),
        member_(member),
        name_(std::move(name)),
        archive_name_(std::move(archive_name)),
        buffer_(std::make_shared<Buffer>()) {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK)
      throw Error(ErrorCode::io, "zlib could not start an inflater",
                  {.source = archive_name_, .offset = member_.data_offset});
  }
  ~InflatedSource() override { inflateEnd(&stream_); }
  InflatedSource(const InflatedSource&) = delete;
  InflatedSource& operator=(const InflatedSource&) = delete;

  uint64_t size() const override { return member_.uncompressed_size; }
  const std::string& name() const override { return name_; }
  bool mapping_produces_bytes() const override { return true; }

  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (!range_inside(offset, out.size(), size()))
      throw Error(ErrorCode::invalid_format, past_end_message(out.size(), size()),
                  {.source = name_, .offset = offset});
    std::lock_guard lock(mutex_);
    settle();
    const uint64_t end = offset + out.size();
    std::byte* dst = out.data();
    if (offset < kept_) {  // the kept part
      const uint64_t n = std::min(end, kept_) - offset;
      std::memcpy(dst, buffer_->bytes.data() + offset, static_cast<size_t>(n));
      dst += n;
      offset += n;
    }
    if (offset == end) return;
    // Bytes streamed past without being kept, or kept bytes that are to grow but cannot (the
    // stream went on past them): inflate again from the start, and keep everything from now on.
    if (pos_ > offset || (keep_everything_ && pos_ > kept_)) {
      restart();
      keep_everything_ = true;
    }
    if (pos_ < kept_) skip_to(kept_);
    if (pos_ == kept_ && (keep_everything_ || offset > pos_ || end - kept_ <= kMaxKeptGrowth)) {
      keep_to(std::min(size(), std::max({end, 2 * kept_, kept_ + kMinGrowth})));
      std::memcpy(dst, buffer_->bytes.data() + offset, static_cast<size_t>(end - offset));
      return;
    }
    skip_to(offset);  // reads in order: the stream goes on past what it kept, the gap dropped
    produce(dst, end - offset);
  }

  void expect_several_reads() const override {
    std::lock_guard lock(mutex_);
    keep_everything_ = true;
  }

  std::shared_ptr<const MappedRegion> mapping() const override {
    std::lock_guard lock(mutex_);
    settle();
    if (kept_ < size()) {
      if (pos_ != kept_) {
        restart();
        skip_to(kept_);
      }
      keep_to(size());
    }
    return std::make_shared<BufferRegion>(buffer_);
  }

 private:
  // Every inflate failure is final: later reads rethrow the same error.
  [[noreturn]] void fail(ErrorCode code, std::string message) const {
    error_ = Error(code, fmt::format("zip member '{}': {}", member_.name, message),
                   {.source = archive_name_, .offset = member_.data_offset});
    throw *error_;
  }

  // Rethrows an earlier failure; at the declared size, ends and checks the stream once.
  // Caller holds mutex_ (as for every method below).
  void settle() const {
    if (error_) throw *error_;
    if (pos_ == size() && !verified_) finish();
  }

  // Inflates the next `n` bytes of the stream into `dst`.
  void produce(std::byte* dst, uint64_t n) const {
    if (pos_ == 0 && n > 0) passes_started.fetch_add(1, std::memory_order_relaxed);
    const uint64_t target = pos_ + n;
    while (pos_ < target) {
      refill_input();
      stream_.next_out = reinterpret_cast<Bytef*>(dst);
      stream_.avail_out = static_cast<uInt>(std::min<uint64_t>(target - pos_, 1u << 30));
      const uInt before = stream_.avail_out;
      int rc = inflate(&stream_, Z_NO_FLUSH);
      const uInt got = before - stream_.avail_out;
      crc_ = crc32_z(crc_, reinterpret_cast<const Bytef*>(dst), got);
      dst += got;
      pos_ += got;
      check_rc(rc);
      if (rc == Z_STREAM_END && pos_ < size()) {
        fail(ErrorCode::invalid_format,
             fmt::format("deflate stream ends after {} of its declared {} bytes", pos_, size()));
      }
    }
    settle();
  }

  // Grows the kept bytes to `target`; the stream stands at their end.
  void keep_to(uint64_t target) const {
    buffer_->bytes.resize(static_cast<size_t>(target));
    produce(buffer_->bytes.data() + kept_, target - kept_);
    kept_ = target;
  }

  // Inflates up to `target` and drops the bytes.
  void skip_to(uint64_t target) const {
    std::vector<std::byte> scratch;
    while (pos_ < target) {
      scratch.resize(static_cast<size_t>(std::min<uint64_t>(target - pos_, kMinGrowth)));
      produce(scratch.data(), scratch.size());
    }
  }

  // Starts the stream again from the member's first byte.
  void restart() const {
    if (inflateReset(&stream_) != Z_OK) fail(ErrorCode::io, "zlib could not restart an inflater");
    stream_.avail_in = 0;
    consumed_ = 0;
    pos_ = 0;
    crc_ = 0;
  }

  void refill_input() const {
    if (stream_.avail_in > 0 || consumed_ == compressed_->size()) return;
    uint64_t n = std::min(kInputChunk, compressed_->size() - consumed_);
    input_.resize(n);
    compressed_->read_at(consumed_, input_);
    consumed_ += n;
    stream_.next_in = reinterpret_cast<Bytef*>(input_.data());
    stream_.avail_in = static_cast<uInt>(n);
  }

  void check_rc(int rc) const {
    if (rc == Z_OK || rc == Z_STREAM_END) return;
    if (rc == Z_BUF_ERROR)
      fail(ErrorCode::invalid_format,
           fmt::format("deflate stream is truncated after {} bytes of output", pos_));
    if (rc == Z_MEM_ERROR) fail(ErrorCode::io, "zlib ran out of memory");
    fail(ErrorCode::invalid_format,
         fmt::format("corrupt deflate stream: {}", stream_.msg ? stream_.msg : "zlib error"));
  }

  // At the declared size the stream must end with no further output, and the CRC must match.
  // (refill_input runs first, so Z_BUF_ERROR here means the input is exhausted.)
  void finish() const {
    std::array<Bytef, 1> extra{};
    int rc = Z_OK;
    while (rc == Z_OK) {
      refill_input();
      stream_.next_out = extra.data();
      stream_.avail_out = extra.size();
      rc = inflate(&stream_, Z_NO_FLUSH);
      if (stream_.avail_out == 0) {
        fail(ErrorCode::limit_exceeded,
             fmt::format("inflates past its declared size of {} bytes", size()));
      }
    }
    if (rc != Z_STREAM_END) {
      if (rc == Z_BUF_ERROR || rc == Z_OK)
        fail(ErrorCode::invalid_format, "deflate stream does not end at its declared size");
      check_rc(rc);
    }
    verified_ = true;
    input_ = {};
    if (crc_ != member_.crc32) {
      fail(ErrorCode::integrity,
           fmt::format("CRC-32 mismatch: the central directory says {:08x}, the data gives {:08x}",
                       member_.crc32, crc_));
    }
  }

  std::shared_ptr<ByteSource> compressed_;
  ZipMember member_;
  std::string name_;
  std::string archive_name_;

  mutable std::mutex mutex_;
  mutable z_stream stream_{};
  mutable std::vector<std::byte> input_;
  mutable uint64_t consumed_ = 0;
  mutable uint64_t pos_ = 0;   // bytes the stream has produced since its (re)start
  mutable uint64_t kept_ = 0;  // bytes [0, kept_) are in buffer_
  mutable uLong crc_ = 0;
  mutable bool verified_ = false;  // the stream ended at the declared size, CRC matched
  // Reads come out of order: every byte inflated from now on is kept, none streamed past.
  mutable bool keep_everything_ = false;
  mutable std::optional<Error> error_;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace

uint64_t inflation_passes_started() { return passes_started.load(std::memory_order_relaxed); }

std::shared_ptr<ByteSource> make_inflated_source(std::shared_ptr<ByteSource> compressed,
                                                 const ZipMember& member, std::string name,
                                                 std::string archive_name) {
  return std::make_shared<InflatedSource>(std::move(compressed), member, std::move(name),
                                          std::move(archive_name));
}

}  // namespace ballast
