// HTTP ByteSource (see http_byte_source.hpp).
#include "remote/http_byte_source.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

class HttpByteSource final : public ByteSource {
 public:
  HttpByteSource(std::shared_ptr<HttpClient> client, HttpTarget target, HttpObjectInfo info,
                 HttpReadOptions options)
      : client_(std::move(client)),
        target_(std::move(target)),
        info_(std::move(info)),
        options_(options),
        ranges_(info_.ranges) {
    options_.chunk_bytes = std::max<uint64_t>(options_.chunk_bytes, 64 << 10);
    options_.concurrency = std::max(options_.concurrency, 1);
  }

  uint64_t size() const override { return info_.size; }
  const std::string& name() const override { return target_.name; }

  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (!range_inside(offset, out.size(), info_.size))
      throw Error(ErrorCode::invalid_format, past_end_message(out.size(), info_.size, "object"),
                  {.source = target_.name, .offset = offset});
    const uint64_t chunks = (out.size() + options_.chunk_bytes - 1) / options_.chunk_bytes;
    if (chunks <= 1 || !ranges_) return read_one(offset, out);
    // Workers take chunks in order; the first failure stops the rest and is rethrown.
    std::atomic<uint64_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
      for (uint64_t c; !failed && (c = next++) < chunks;) {
        const uint64_t begin = c * options_.chunk_bytes;
        const uint64_t n = std::min<uint64_t>(options_.chunk_bytes, out.size() - begin);
        try {
          read_one(offset + begin, out.subspan(begin, n));
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      }
    };
    const uint64_t workers =
        std::min<uint64_t>(chunks, static_cast<uint64_t>(options_.concurrency));
    std::vector<std::jthread> threads;
    // A thread the system refuses is left out: this thread and those started do the chunks.
    try {
      for (uint64_t i = 1; i < workers; ++i) threads.emplace_back(work);
    } catch (const std::system_error&) {
    }
    work();
    threads.clear();
    if (error) std::rethrow_exception(error);
  }

 private:
  void read_one(uint64_t offset, std::span<std::byte> out) const {
    const bool single = options_.one_request_without_validator && !has_validator(info_);
    if (single && requests_.fetch_add(1) > 0)
      throw Error(ErrorCode::integrity,
                  "the server states neither an ETag nor a Last-Modified for the object, so a "
                  "second request could read another version of it unnoticed: with integrity "
                  "checks on, ballast reads such an object in one request only",
                  {.source = target_.name, .offset = offset});
    HttpObjectInfo info = info_;
    info.ranges = ranges_;
    size_t filled = 0;
    bool ignored = false;
    http_stream(
        *client_, target_, info, offset, out.size(),
        [&](std::span<const std::byte> bytes) {
          std::memcpy(out.data() + filled, bytes.data(), bytes.size());
          filled += bytes.size();
          if (options_.on_bytes) options_.on_bytes(bytes.size());
        },
        &ignored, /*resumable=*/!single);
    if (ignored) ranges_ = false;
  }

  std::shared_ptr<HttpClient> client_;
  HttpTarget target_;
  HttpObjectInfo info_;
  HttpReadOptions options_;
  mutable std::atomic<bool> ranges_;
  mutable std::atomic<uint64_t> requests_{0};  // read_one calls, for objects without validator
};

}  // namespace

std::shared_ptr<ByteSource> open_http_source(std::shared_ptr<HttpClient> client, HttpTarget target,
                                             HttpReadOptions options) {
  HttpObjectInfo info = http_stat(*client, target);
  return open_http_source(std::move(client), std::move(target), std::move(info), options);
}

std::shared_ptr<ByteSource> open_http_source(std::shared_ptr<HttpClient> client, HttpTarget target,
                                             HttpObjectInfo info, HttpReadOptions options) {
  return std::make_shared<HttpByteSource>(std::move(client), std::move(target), std::move(info),
                                          options);
}

}  // namespace ballast
