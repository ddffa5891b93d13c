// The side interface of ballast's own sources whose mapping() would have to produce the bytes
// it returns (an inflated zip member) instead of handing out memory that exists. A reader that
// wants the bytes once then asks read_at for them, straight into its own buffer: one copy, not
// two. Internal, like io/local_file.hpp: a user's ByteSource implements size, read_at and an
// optional mapping() only.
#pragma once

#include "ballast/byte_source.hpp"

namespace ballast {

class ProducedMapping {
 public:
  virtual ~ProducedMapping() = default;
  virtual bool mapping_produces_bytes() const = 0;
  // Several reads of the source will come in one load, in any order: a source that produces
  // its bytes keeps what it produces from now on, rather than produce any byte twice.
  virtual void expect_several_reads() const {}
};

// Whether `source` is one of ballast's sources whose mapping would produce its bytes.
inline bool mapping_produces_bytes(const ByteSource& source) {
  const auto* produced = dynamic_cast<const ProducedMapping*>(&source);
  return produced != nullptr && produced->mapping_produces_bytes();
}

// Tells `source`, if it is one of those, that several reads of it will come in one load.
inline void expect_several_reads(const ByteSource& source) {
  if (const auto* produced = dynamic_cast<const ProducedMapping*>(&source))
    produced->expect_several_reads();
}

}  // namespace ballast
