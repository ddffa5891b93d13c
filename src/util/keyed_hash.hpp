// keyed_hash: SipHash-1-3 of a string under a key drawn at random once per process, for the
// hash tables that hold names read from files. std::hash is the same function in every process
// (libstdc++'s is MurmurHash64A with a fixed seed, whose blocks can be inverted), so a hostile
// file could name thousands of keys that all collide and make each lookup scan them all.
#pragma once

#include <cstdint>
#include <string_view>

namespace ballast {

uint64_t keyed_hash(std::string_view bytes);

}  // namespace ballast
