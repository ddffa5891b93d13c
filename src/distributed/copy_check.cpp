// The checks that the ranks of a cooperative load read one checkpoint (see copy_check.hpp).
#include "distributed/copy_check.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <span>
#include <system_error>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ballast/error.hpp"
#include "ballast/hash.hpp"

namespace ballast::distributed {
namespace {

constexpr size_t kDigestChars = 64;  // sha256, hex
constexpr int64_t kUnknownSize = -1;

int64_t fingerprint(const std::string& text) {
  const std::string digest = sha256_hex(std::as_bytes(std::span(text)));
  return static_cast<int64_t>(std::stoull(digest.substr(0, 15), nullptr, 16));
}

// What the headers say: every tensor's name, dtype, shape and size, and the format metadata.
int64_t header_fingerprint(const WeightMetadata& meta) {
  std::string text = fmt::format("{}:{}\n{}\n", static_cast<int>(meta.format.kind),
                                 meta.format.custom_id, meta.extra);
  for (const auto& [name, info] : meta.tensors)
    text += fmt::format("{}|{}|{}|{};", name, dtype_name(info.dtype), fmt::join(info.shape, ","),
                        info.nbytes);
  return fingerprint(text);
}

int64_t local_file_size(const std::string& file) {
  std::error_code ec;
  const std::filesystem::path path(file);
  if (!std::filesystem::is_regular_file(path, ec)) return kUnknownSize;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? kUnknownSize : static_cast<int64_t>(size);
}

// This rank's identity: [headers, number of files, size of each file (-1 when not local)].
std::vector<int64_t> identity_of(const WeightMetadata& meta) {
  std::vector<int64_t> out{header_fingerprint(meta), static_cast<int64_t>(meta.files.size())};
  for (const std::string& file : meta.files) out.push_back(local_file_size(file));
  return out;
}

// Rank 0's `values` on every rank (its count first).
std::vector<int64_t> broadcast_from_rank0(Communicator& comm, const std::vector<int64_t>& values) {
  int64_t count = static_cast<int64_t>(values.size());
  comm.broadcast(std::as_writable_bytes(std::span(&count, 1)), 0);
  std::vector<int64_t> out = values;
  out.resize(static_cast<size_t>(count));
  comm.broadcast(std::as_writable_bytes(std::span(out)), 0);
  return out;
}

[[noreturn]] void differs(const Communicator& comm, const std::string& what) {
  throw Error(ErrorCode::integrity,
              fmt::format("cooperative load: rank {}'s copy of the checkpoint differs from rank "
                          "0's: {}",
                          comm.rank(), what));
}

bool is_remote(const WeightSource& source) {
  return !std::holds_alternative<FileSource>(source.location) &&
         !std::holds_alternative<MemorySource>(source.location);
}

// Where rank r's digests start in the exchanged buffer, and how many it gives: the pieces of
// its part, then those of the part it checks.
struct DigestSlots {
  std::vector<uint64_t> counts, displacements;  // bytes
  uint64_t total = 0;
};

DigestSlots slots_of(const Round& round) {
  const size_t world = round.pieces.size();
  DigestSlots out;
  for (size_t r = 0; r < world; ++r) {
    const size_t pieces = round.pieces[r].size() + round.pieces[(r + 1) % world].size();
    out.displacements.push_back(out.total);
    out.counts.push_back(pieces * kDigestChars);
    out.total += pieces * kDigestChars;
  }
  return out;
}

std::string rows_of(const Piece& piece) {
  return piece.whole ? std::string()
                     : fmt::format(" (rows {}..{})", piece.first_row, piece.end_row);
}

}  // namespace

int checker_of(int rank, int world) { return (rank + world - 1) % world; }

void check_same_identity(Communicator& communicator, const WeightSource& source,
                         const WeightMetadata& meta) {
  Communicator& comm = communicator.control();
  const std::vector<int64_t> mine = identity_of(meta);
  const std::vector<int64_t> first = broadcast_from_rank0(comm, mine);
  if (comm.rank() == 0) return;
  if (mine[0] != first[0])
    differs(comm, fmt::format("the headers of {} (tensor names, dtypes, shapes or format "
                              "metadata) differ",
                              describe(source)));
  if (mine[1] != first[1])
    differs(comm, fmt::format("{} has {} files, rank 0's {}", describe(source), mine[1], first[1]));
  for (size_t i = 2; i < mine.size(); ++i) {
    if (mine[i] == kUnknownSize || first[i] == kUnknownSize || mine[i] == first[i]) continue;
    differs(comm,
            fmt::format("{} is {} bytes, rank 0's copy {}", meta.files[i - 2], mine[i], first[i]));
  }
}

bool ranks_may_read_different_copies(Communicator& communicator, const WeightSource& source) {
  Communicator& comm = communicator.control();
  const int64_t mine = fingerprint(is_remote(source) ? describe(source) : std::string("local"));
  const bool same = comm.allreduce_max(mine) == -comm.allreduce_max(-mine);
  return comm.size() > 1 && !(same && is_remote(source));
}

void compare_part_digests(Communicator& communicator, const Round& round, const PieceDigests& own,
                          const PieceDigests& checked, const std::string& source_description) {
  Communicator& comm = communicator.control();
  const int world = comm.size();
  const auto me = static_cast<size_t>(comm.rank());
  const DigestSlots slots = slots_of(round);
  // This rank's slot: its digests as the plan counts them (a missing one stays zeros).
  std::vector<std::byte> digests(std::max<uint64_t>(slots.total, 1));
  std::byte* at = digests.data() + slots.displacements[me];
  const std::byte* const slot_end = at + slots.counts[me];
  for (const PieceDigests* list : {&own, &checked})
    for (const std::string& digest : *list) {
      if (at == slot_end) break;
      std::memcpy(at, digest.data(), std::min(digest.size(), kDigestChars));
      at += kDigestChars;
    }
  comm.allgatherv_in_place(std::span(digests.data(), slots.total), slots.counts,
                           slots.displacements);

  const auto checker = static_cast<size_t>(checker_of(comm.rank(), world));
  const std::byte* mine = digests.data() + slots.displacements[me];
  const std::byte* theirs =
      digests.data() + slots.displacements[checker] + round.pieces[checker].size() * kDigestChars;
  const std::vector<Piece>& pieces = round.pieces[me];
  for (size_t j = 0; j < pieces.size(); ++j) {
    if (std::memcmp(mine + j * kDigestChars, theirs + j * kDigestChars, kDigestChars) == 0)
      continue;
    throw Error(ErrorCode::integrity,
                fmt::format("cooperative load: the bytes of tensor '{}'{} that rank {} read from "
                            "{} differ from rank {}'s copy of them: the ranks do not read one "
                            "checkpoint (a stale or damaged copy)",
                            pieces[j].tensor, rows_of(pieces[j]), me, source_description, checker));
  }
}

}  // namespace ballast::distributed
