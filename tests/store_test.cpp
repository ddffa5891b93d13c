// The Store seam (io/store.hpp): a new kind of source is one Store, and the checkpoint's
// resolution (one object, or a `*.index.json` with its shards beside it) works over it as it
// does for files, URLs, S3 and the Hub, opening only the shards a load needs; and the local and
// memory stores keep their version tags, confinement and identities.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "ballast/ballast.hpp"
#include "io/local_store.hpp"
#include "io/memory_store.hpp"
#include "loader/checkpoint.hpp"
#include "remote/source_store.hpp"
#include "remote/url.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

// A toy object store ("toy://bucket/key"), as a GCS or Azure store would be: keys in a map,
// the key beside another taken in its folder. It counts the objects it opens.
class ToyStore final : public Store {
 public:
  ToyStore(std::string named, std::map<std::string, std::string> objects)
      : named_(std::move(named)), objects_(std::move(objects)) {}

  std::string named() const override { return named_; }
  bool exists(const std::string& object) override { return objects_.contains(object); }
  ShardInput open(const std::string& object) override {
    std::lock_guard lock(mutex_);
    opened_.push_back(object);
    return {make_memory_source(bytes(object), describe(object)), nullptr, {}};
  }
  std::vector<std::byte> read_small(const std::string& object, uint64_t) override {
    return bytes(object);
  }
  std::string sibling(const std::string& object, std::string_view relative) const override {
    const size_t slash = object.rfind('/');
    const std::string folder = slash == std::string::npos ? "" : object.substr(0, slash + 1);
    return folder + confined_relative_path(relative, describe(object));
  }
  std::string describe(const std::string& object) const override {
    return "toy://bucket/" + object;
  }
  std::string identity() const override { return {}; }

  std::vector<std::string> opened() const {
    std::lock_guard lock(mutex_);
    return opened_;
  }

 private:
  std::vector<std::byte> bytes(const std::string& object) const {
    auto it = objects_.find(object);
    if (it == objects_.end())
      throw Error(ErrorCode::not_found, "no such object", {.source = describe(object)});
    const auto* data = reinterpret_cast<const std::byte*>(it->second.data());
    return {data, data + it->second.size()};
  }

  std::string named_;
  std::map<std::string, std::string> objects_;
  mutable std::mutex mutex_;
  std::vector<std::string> opened_;
};

const std::string kIndex =
    R"({"metadata": {"total_size": 8}, "weight_map": {"a": "a.safetensors", "b": "b.safetensors"}})";

std::map<std::string, std::string> sharded_objects() {
  return {{"m/model.safetensors.index.json", kIndex},
          {"m/a.safetensors", safetensors_file({{"a", "F32", {1}, f32_bytes({1.0f})}})},
          {"m/b.safetensors", safetensors_file({{"b", "F32", {1}, f32_bytes({2.0f})}})}};
}

std::shared_ptr<Checkpoint> open_checkpoint(std::shared_ptr<Store> store) {
  const WeightSource source = WeightSource::url("toy://bucket/" + store->named());
  return Checkpoint::open(source, std::move(store), {});
}

TEST(Store, ANewKindOfSourceResolvesAShardIndexAndOpensOnlyTheShardItNeeds) {
  auto store = std::make_shared<ToyStore>("m/model.safetensors.index.json", sharded_objects());
  auto cp = open_checkpoint(store);
  EXPECT_EQ(cp->shard_names(), (std::vector<std::string>{"toy://bucket/m/a.safetensors",
                                                         "toy://bucket/m/b.safetensors"}));
  EXPECT_TRUE(store->opened().empty());  // only the index was read
  EXPECT_EQ(cp->entry("b").shape, (Shape{1}));
  EXPECT_EQ(store->opened(), (std::vector<std::string>{"m/b.safetensors"}));
  EXPECT_EQ(cp->entries().size(), 2u);
  EXPECT_NE(cp->extra_json().find("total_size"), std::string::npos);
}

TEST(Store, ANewKindOfSourceOpensOneObjectAsOneShard) {
  auto store = std::make_shared<ToyStore>("m/a.safetensors", sharded_objects());
  auto cp = open_checkpoint(store);
  EXPECT_EQ(cp->shard_names(), (std::vector<std::string>{"toy://bucket/m/a.safetensors"}));
  EXPECT_EQ(cp->entries().size(), 1u);
}

TEST(Store, AShardIndexCannotNameAnObjectOutsideItsFolder) {
  auto objects = sharded_objects();
  objects["m/model.safetensors.index.json"] = R"({"weight_map": {"a": "../secret"}})";
  auto store = std::make_shared<ToyStore>("m/model.safetensors.index.json", objects);
  try {
    open_checkpoint(store);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format) << e.what();
  }
}

TEST(Store, ALocalFileVersionChangesWithTheFile) {
  TempDir dir;
  write_file(dir / "w.safetensors", "1234");
  LocalStore store(dir / "w.safetensors", ReadMode::automatic, real_os());
  const std::string before = store.version(store.named());
  EXPECT_FALSE(before.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(dir / "w.safetensors", "12345");
  EXPECT_NE(store.version(store.named()), before);
  EXPECT_TRUE(store.exists(store.named()));
  EXPECT_FALSE(store.exists((dir / "missing").string()));
}

TEST(Store, ALocalSiblingStaysInsideItsFolder) {
  TempDir dir;
  write_file(dir / "m" / "x.safetensors", "1");
  write_file(dir / "outside.safetensors", "1");
  LocalStore store(dir / "m" / "model.safetensors.index.json", ReadMode::automatic, real_os());
  const std::string index = store.named();
  EXPECT_EQ(store.sibling(index, "x.safetensors"),
            std::filesystem::canonical(dir / "m" / "x.safetensors").string());
  EXPECT_THROW(store.sibling(index, "../outside.safetensors"), Error);
}

TEST(Store, MemoryBuffersAlikeInSizeAreDifferentSources) {
  const std::vector<std::byte> first(8), second(8);
  MemoryStore a(first, nullptr, "memory(8 bytes)");
  MemoryStore b(second, nullptr, "memory(8 bytes)");
  EXPECT_EQ(a.describe(a.named()), b.describe(b.named()));
  EXPECT_NE(a.identity(), b.identity());
  EXPECT_THROW(a.sibling(a.named(), "x"), Error);
}

TEST(Store, RemoteSourcesNeedRemoteAccess) {
  for (const WeightSource& source :
       {WeightSource::url("https://example.invalid/w.safetensors"),
        WeightSource::s3("bucket", "w.safetensors"), WeightSource::hugging_face("org/repo", "")}) {
    try {
      make_store(source, {});
      FAIL() << "no error for " << describe(source);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    }
  }
  EXPECT_FALSE(make_store(WeightSource::file("w.safetensors"), {})->remote());
}

}  // namespace
}  // namespace ballast::test
