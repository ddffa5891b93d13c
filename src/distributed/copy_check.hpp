// The ranks of a cooperative load read one checkpoint, verified (docs/distributed.md, "One
// checkpoint, verified"): before any data is exchanged they agree on each copy's identity (its
// files' number and sizes, its format and a digest of its headers' contents), and, where the
// ranks may read different copies, every part a rank reads and sends is read again by one
// other rank from its own copy and the digests compared. A difference fails every rank with
// Error(integrity) naming the rank, its file and the tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ballast/distributed.hpp"
#include "ballast/metadata.hpp"
#include "ballast/source.hpp"
#include "distributed/cooperative_plan.hpp"

namespace ballast::distributed {

// Collective: throws Error(integrity) on the first rank (above 0) whose copy's identity differs
// from rank 0's, naming that rank and its file. Run it inside run_collectively.
void check_same_identity(Communicator& comm, const WeightSource& source,
                         const WeightMetadata& meta);

// Collective: whether the parts must be read twice. Not when every rank names the same remote
// object (a URL, s3://, hf://): there is one copy, which the ranks all read.
bool ranks_may_read_different_copies(Communicator& comm, const WeightSource& source);

// The sha256 of each piece's bytes, in the order of the pieces.
using PieceDigests = std::vector<std::string>;

// Collective: every rank gives the digests of the pieces it read of its own part of `round`
// (`own`) and of the part of rank (rank + 1) % size that it read again (`checked`); each rank
// compares its own with what rank (rank - 1) % size read of its part. Throws Error(integrity)
// naming the reader, the tensor, the rows, the reader's source and the checking rank. Run the
// comparison inside run_collectively; the exchange of digests (part of this call) comes first.
void compare_part_digests(Communicator& comm, const Round& round, const PieceDigests& own,
                          const PieceDigests& checked, const std::string& source_description);

// The rank that reads again the part of `rank`.
int checker_of(int rank, int world);

}  // namespace ballast::distributed
