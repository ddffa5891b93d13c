// sha256 of tensor bytes through OpenSSL's EVP interface.
#include "ballast/hash.hpp"

#include <openssl/evp.h>

#include <memory>

#include "ballast/error.hpp"

namespace ballast {

std::string sha256_hex(std::span<const std::byte> bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1)
    throw Error(ErrorCode::io, "sha256 computation failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

std::string sha256_hex(const Tensor& tensor) {
  if (!tensor.device().is_host())
    throw Error(ErrorCode::unsupported, "hashing a device tensor needs a host copy",
                {.tensor = tensor.name()});
  return sha256_hex(tensor.bytes());
}

}  // namespace ballast
