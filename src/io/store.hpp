// Store: where one source's bytes live, behind one interface, as LevelDB's Env or DuckDB's
// FileSystem put the operating system behind one. A store is made for one WeightSource
// (remote/source_store.hpp) and names objects inside it by strings of its own: a local path,
// a URL, an S3 key, a path in a Hub repository at a revision. It tells whether an object
// exists, opens it as a ByteSource, reads a small one whole (a shard index), finds the object
// beside another (a shard next to its index), describes one for messages (redacted) and gives a
// cheap version tag. Resolving a checkpoint's shards is written once, over this interface
// (loader/checkpoint_layout.hpp); adding a kind of source means adding a Store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ballast/byte_source.hpp"
#include "ballast/parser.hpp"

namespace ballast {

// One opened object: its bytes, the opener of files beside it (ONNX external data; null when
// it has no folder) and the local file behind it, if any (a cached blob counts).
struct ShardInput {
  std::shared_ptr<ByteSource> bytes;
  SiblingOpener siblings;
  std::filesystem::path path;
};

class Store {
 public:
  virtual ~Store() = default;

  // The object the source names, as given: a file or folder, a URL, a key, a repository path
  // ("" for a whole Hub repository and for memory).
  virtual std::string named() const = 0;
  // The objects to resolve for `named()`: itself, except where the store must first find what
  // a name means (a whole Hub repository's weight file, a quantization tag's split set, both
  // pinned to one commit). May ask the server.
  virtual std::vector<std::string> expand(const std::string& object) { return {object}; }
  // Whether the object exists (a network failure throws).
  virtual bool exists(const std::string& object) = 0;
  // A local folder, whose files loader/folder_choice chooses among (local stores only).
  virtual bool is_folder(const std::string& /*object*/) const { return false; }
  // The object as a shard: bytes, siblings and local file. Thread-safe.
  virtual ShardInput open(const std::string& object) = 0;
  // The whole bytes of a small object (a shard index); limit_exceeded past `max_bytes`.
  virtual std::vector<std::byte> read_small(const std::string& object, uint64_t max_bytes) = 0;
  // The object named `relative` beside `object`, confined to its folder where the store can
  // tell (refused with invalid_format otherwise).
  virtual std::string sibling(const std::string& object, std::string_view relative) const = 0;
  // The object's path, whose name tells a shard index (`*.index.json`): a URL's without its
  // query.
  virtual std::string path(const std::string& object) const { return object; }
  // The object's name in messages and WeightMetadata::files (credentials redacted).
  virtual std::string describe(const std::string& object) const = 0;
  // What tells this source apart from others that describe() alike: a URL's query and
  // headers, an S3 region and endpoint, a Hub cache folder, a memory address.
  virtual std::string identity() const = 0;
  // A tag that changes when the object changes, known without a request (a local file's size
  // and modification time); empty where only a request could tell.
  virtual std::string version(const std::string& /*object*/) const { return {}; }
  // Whether reads cross a network (preload then caches or keeps the shards in memory).
  virtual bool remote() const { return false; }
};

}  // namespace ballast
