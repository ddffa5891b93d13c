// Incremental digests (see sha256.hpp).
#include "remote/sha256.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>

#include "ballast/error.hpp"

namespace ballast {

EvpDigest::EvpDigest(const void* algorithm) : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_),
                                           static_cast<const EVP_MD*>(algorithm), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
    throw Error(ErrorCode::io, "digest initialisation failed");
  }
}

EvpDigest::~EvpDigest() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Sha256::Sha256() : EvpDigest(EVP_sha256()) {}

Sha1::Sha1() : EvpDigest(EVP_sha1()) {}

void EvpDigest::update(std::span<const std::byte> bytes) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size()) != 1)
    throw Error(ErrorCode::io, "digest computation failed");
}

void EvpDigest::update(const ByteSource& source) {
  constexpr uint64_t kPiece = 4 << 20;
  for (uint64_t at = 0; at < source.size(); at += kPiece)
    update(source.read(at, std::min(kPiece, source.size() - at)));
}

namespace {

// Finishes the digest `ctx` into lowercase hex.
std::string finish(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &length) != 1)
    throw Error(ErrorCode::io, "digest computation failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

}  // namespace

std::string EvpDigest::hex() { return finish(static_cast<EVP_MD_CTX*>(ctx_)); }

std::string EvpDigest::hex_so_far() const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> copy(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!copy || EVP_MD_CTX_copy_ex(copy.get(), static_cast<const EVP_MD_CTX*>(ctx_)) != 1)
    throw Error(ErrorCode::io, "digest computation failed");
  return finish(copy.get());
}

}  // namespace ballast
