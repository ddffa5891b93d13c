// Checkpoint: one logical checkpoint behind a WeightSource — a single file, a sharded set of
// files described by a `*.index.json` weight map, or a folder — with each shard parsed lazily,
// so that loading one tensor opens and parses only the shard that holds it.
//
// Thread-safe: entries and metadata may be requested from many threads at once; each shard is
// parsed at most once (a failed parse is retried by the next request and fails the same way).
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ballast/config.hpp"
#include "ballast/metadata.hpp"
#include "ballast/parser.hpp"
#include "ballast/source.hpp"
#include "io/os.hpp"
#include "io/store.hpp"

namespace ballast {

struct CheckpointOptions {
  Limits limits;
  bool verify_checksums = true;
  // Read every shard that is neither a local file nor mappable (a remote object read by
  // ranges) whole into memory when it is opened: preload with caching off.
  bool shards_in_memory = false;
  // Lists local folders and advises read-ahead (preload): the loader's Os.
  std::shared_ptr<const Os> os = real_os();
};

// How a shard is parsed: the source's forced format and raw layout, and the limits.
struct ShardParsing {
  std::optional<WeightFormat> format;  // nullopt: detected from the bytes
  std::optional<RawLayout> raw_layout;
  Limits limits;
  bool verify_checksums = true;
};

// Parses one shard's header into its validated Index, as a load does; errors name the shard.
Index parse_shard_input(const ShardInput& input, const ShardParsing& how);

class Checkpoint {
 public:
  // Resolves the source, whose bytes live in `store`, to its shards (no parsing yet, except a
  // shard index).
  static std::shared_ptr<Checkpoint> open(const WeightSource& source, std::shared_ptr<Store> store,
                                          const CheckpointOptions& options);

  const std::string& description() const { return description_; }
  // The format of the first shard (parses it).
  WeightFormat format();
  // Every tensor, sorted by name (parses every shard). With a shard index, the shards must
  // hold exactly the tensors its weight map names, where it names them (invalid_format).
  std::vector<const TensorEntry*> entries();
  // One tensor; parses only its shard when a weight map says where it is.
  const TensorEntry& entry(const std::string& name);
  // The name to use for a spec that names no tensor: the source's single tensor.
  std::string default_tensor_name();
  // Format metadata of all shards merged into one JSON object (text).
  std::string extra_json();
  // The same metadata as typed values (WeightMetadata::values), merged the same way.
  MetadataValue extra_values();
  // The local files behind this checkpoint's parsed shards (empty for memory and URLs).
  std::vector<std::filesystem::path> files() const;
  // The bytes of the shard that holds tensor `name` (parses it), and of every parsed shard.
  std::shared_ptr<ByteSource> shard_bytes(const std::string& name);
  std::vector<std::shared_ptr<ByteSource>> shard_bytes() const;
  // Every shard's name (path or redacted URL), in shard order, parsed or not.
  std::vector<std::string> shard_names() const;
  // For a folder: its weight-like files that are not part of the checkpoint, and why.
  const std::vector<IgnoredFile>& ignored_files() const { return ignored_; }

 private:
  struct Shard {
    std::string object;  // in the store
    std::string name;    // the store's description of it, for messages and naming .npy arrays
    std::filesystem::path path;         // the local file, once parsed (empty for memory and URLs)
    std::shared_ptr<ByteSource> bytes;  // once parsed
    // Set once the shard is parsed. Not std::call_once: a parse that throws must leave the
    // shard for the next request to retry, and call_once built on pthread_once does not
    // (under ThreadSanitizer its interceptor left later callers waiting forever).
    std::atomic<bool> parsed{false};
    std::mutex parse_mutex;
    Index index;
    std::map<std::string, size_t, std::less<>> by_name;
  };

  Checkpoint(std::string description, std::shared_ptr<Store> store, CheckpointOptions options,
             const WeightSource& source);
  void add_shard(std::string object);
  Shard& parsed_shard(size_t i);
  void parse_shard(Shard& shard);
  const TensorEntry* find_in(Shard& shard, const std::string& name);
  // The shard holding tensor `name` (parsed) and its entry.
  std::pair<Shard*, const TensorEntry*> locate(const std::string& name);
  void require_weight_map_matches(const std::map<std::string_view, size_t>& seen_in);
  // "no such tensor", naming the closest names of the parsed shards.
  [[noreturn]] void throw_no_such_tensor(const std::string& name) const;

  std::string description_;
  std::shared_ptr<Store> store_;
  CheckpointOptions options_;
  ShardParsing parsing_;
  std::optional<std::string> only_tensor_;  // only_tensor_of(source)
  std::vector<std::unique_ptr<Shard>> shards_;
  std::map<std::string, size_t, std::less<>> weight_map_;  // tensor -> shard, from index.json
  std::vector<IgnoredFile> ignored_;
  std::string index_metadata_ = "{}";  // the index file's "metadata"
};

}  // namespace ballast
