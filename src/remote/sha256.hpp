// Incremental digests (OpenSSL EVP): sha256 for checking downloads and cached blobs as they
// stream, sha1 for the git object ids that name the Hub's small (non-LFS) files.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "ballast/byte_source.hpp"

namespace ballast {

class EvpDigest {
 public:
  ~EvpDigest();
  EvpDigest(const EvpDigest&) = delete;
  EvpDigest& operator=(const EvpDigest&) = delete;

  void update(std::span<const std::byte> bytes);
  // Feeds the whole of `source` through the digest, a few MiB at a time.
  void update(const ByteSource& source);
  std::string hex();  // finishes the digest
  // The digest of the bytes so far, leaving it open for more.
  std::string hex_so_far() const;

 protected:
  explicit EvpDigest(const void* algorithm);  // an EVP_MD*

 private:
  void* ctx_;
};

class Sha256 : public EvpDigest {
 public:
  Sha256();
};

class Sha1 : public EvpDigest {
 public:
  Sha1();
};

}  // namespace ballast
