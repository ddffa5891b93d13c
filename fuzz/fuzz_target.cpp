// libFuzzer entry point for one target, named at build time by BALLAST_FUZZ_TARGET
// ("safetensors", "pytorch", ..., "zip", "transform_syntax"); see fuzz_support.hpp.
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ballast::fuzz::run_target(BALLAST_FUZZ_TARGET, data, size);
  return 0;
}
