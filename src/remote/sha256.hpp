// Incremental sha256 (OpenSSL EVP) for checking downloads as they stream in.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace ballast {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> bytes);
  std::string hex();  // finishes the digest

 private:
  void* ctx_;
};

}  // namespace ballast
