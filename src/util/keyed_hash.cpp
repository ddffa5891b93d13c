// SipHash-1-3 under a per-process random key (see keyed_hash.hpp).
#include "util/keyed_hash.hpp"

#include <bit>
#include <cstddef>
#include <random>

namespace ballast {
namespace {

struct SipKey {
  uint64_t k0, k1;
};

SipKey random_key() {
  std::random_device device;
  auto word = [&device] { return (static_cast<uint64_t>(device()) << 32) | device(); };
  return {word(), word()};
}

struct SipState {
  uint64_t v0, v1, v2, v3;

  void round() {
    v0 += v1;
    v1 = std::rotl(v1, 13);
    v1 ^= v0;
    v0 = std::rotl(v0, 32);
    v2 += v3;
    v3 = std::rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = std::rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = std::rotl(v1, 17);
    v1 ^= v2;
    v2 = std::rotl(v2, 32);
  }

  void absorb(uint64_t m) {
    v3 ^= m;
    round();
    v0 ^= m;
  }
};

uint64_t load_le64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

uint64_t keyed_hash(std::string_view bytes) {
  static const SipKey key = random_key();
  SipState s{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL,
             key.k0 ^ 0x6c7967656e657261ULL, key.k1 ^ 0x7465646279746573ULL};
  const size_t whole = bytes.size() / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) s.absorb(load_le64(bytes.data() + i));
  uint64_t last = static_cast<uint64_t>(bytes.size() & 0xff) << 56;
  for (size_t i = whole; i < bytes.size(); ++i)
    last |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * (i - whole));
  s.absorb(last);
  s.v2 ^= 0xff;
  for (int i = 0; i < 3; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace ballast
