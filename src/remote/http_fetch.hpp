// Retried HTTP operations on one remote object: its size (HEAD, or a GET of byte 0 when HEAD
// gives no length), ranged reads that check every response against the request, whole small
// bodies, and streamed downloads that resume from the last byte received.
//
// Every response is checked: a 206 must carry the Content-Range and Content-Length of the
// request, the same ETag as the object had when it was opened, and no more bytes than asked
// for; anything else is Error(integrity), never silently accepted. A server that ignores Range
// (answers 200) is read sequentially from the start, skipping to the wanted bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "remote/http_client.hpp"

namespace ballast {

struct HttpTarget {
  std::string url;
  HttpHeaders headers;  // per-source headers (secrets possible: never printed)
  std::string name;     // the redacted URL, for messages
  std::shared_ptr<const AwsSigning> signing;  // null: unsigned
};

HttpTarget make_http_target(std::string url, HttpHeaders headers);

struct HttpObjectInfo {
  uint64_t size = 0;
  std::string etag;     // empty when the server sends none
  bool ranges = true;   // false: the server ignores Range
  HttpHeaders headers;  // of the response that gave the size
};

// One request, retried while the result is retryable (honouring Retry-After; a timeout is
// retried at most RetryPolicy::max_timeout_retries times).
HttpResult http_perform_retried(HttpClient& client, const HttpRequest& request);

// Throws not_found, auth or network.
HttpObjectInfo http_stat(HttpClient& client, const HttpTarget& target);
// HEAD: false for 404/410, throws auth or network for other failures.
bool http_exists(HttpClient& client, const HttpTarget& target);

using ByteSink = std::function<void(std::span<const std::byte>)>;

// Whether the object stated a version (an ETag or a Last-Modified) that later requests for it
// are pinned to. Without one, two requests may read two versions of it unnoticed.
bool has_validator(const HttpObjectInfo& info);

// Streams bytes [offset, offset + length) of the object to `sink` in order, retrying and
// resuming after failures; with `resumable` false, a failure after some bytes reached `sink`
// is Error(network) instead of a request for the rest (a read of an object without validator
// is never pieced together from two requests). Sets `ranges_ignored` when the server answered
// 200 to a Range.
void http_stream(HttpClient& client, const HttpTarget& target, const HttpObjectInfo& info,
                 uint64_t offset, uint64_t length, const ByteSink& sink, bool* ranges_ignored,
                 bool resumable = true);

// The whole body of a small object (an index file); Error(limit_exceeded) above max_bytes,
// before any of the body is read when the Content-Length says so.
std::vector<std::byte> http_get_small(HttpClient& client, const HttpTarget& target,
                                      uint64_t max_bytes);

}  // namespace ballast
