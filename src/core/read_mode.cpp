// ReadMode names.
#include "ballast/config.hpp"

namespace ballast {

std::string_view read_mode_name(ReadMode mode) {
  switch (mode) {
    case ReadMode::automatic: return "auto";
    case ReadMode::mmap: return "mmap";
    case ReadMode::read: return "read";
  }
  return "unknown";
}

}  // namespace ballast
