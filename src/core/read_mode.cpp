// ReadMode names.
#include "ballast/config.hpp"

namespace ballast {

std::string_view read_mode_name(ReadMode mode) {
  switch (mode) {
    case ReadMode::automatic: return "auto";
    case ReadMode::mmap: return "mmap";
    case ReadMode::read: return "read";
    case ReadMode::io_uring: return "io_uring";
    case ReadMode::direct: return "direct";
  }
  return "unknown";
}

}  // namespace ballast
