// The WeightLoader contract on local safetensors files: blocking and async forms, concurrent
// batches, zero-copy versus owned buffers, spec checks, shard indexes, folders, memory sources,
// the loader registry and capabilities.
#include <gtest/gtest.h>

#include <thread>

#include "ballast/ballast.hpp"
#include "support/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace ballast::test {
namespace {

class LoaderTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "model.safetensors";
    write_file(path_, safetensors_file({{"a", "F32", {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6})},
                                        {"b", "F32", {4}, f32_bytes({7, 8, 9, 10})},
                                        {"c", "I8", {3}, std::string("\x01\x02\x03", 3)}},
                                       nlohmann::json{{"format", "pt"}}));
  }
  TensorSpec spec(const std::string& name) const {
    return TensorSpec{.name = name, .source = WeightSource::file(path_)};
  }
  TempDir dir_;
  std::filesystem::path path_;
};

std::vector<float> values(const Tensor& t) {
  auto span = t.as<float>();
  return {span.begin(), span.end()};
}

TEST_F(LoaderTest, BlockingAndAsyncFormsAgree) {
  auto loader = make_weight_loader();
  auto blocking = loader->load_tensor(spec("a"));
  auto async = loader->load_tensor_async(spec("a")).get();
  EXPECT_EQ(values(*blocking), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(sha256_hex(*blocking), sha256_hex(*async));
  EXPECT_EQ(blocking->shape(), (Shape{2, 3}));
  EXPECT_TRUE(loader->is_available(WeightSource::file(path_)));
  EXPECT_TRUE(loader->is_available_async(WeightSource::file(path_)).get());
  EXPECT_FALSE(loader->is_available(WeightSource::file(dir_ / "missing.safetensors")));
  EXPECT_EQ(loader->get_metadata_async(WeightSource::file(path_)).get().tensors.size(), 3u);
  loader->preload(WeightSource::file(path_));
  loader->preload_async(WeightSource::file(path_)).get();
}

TEST_F(LoaderTest, MetadataDescribesTheFile) {
  auto meta = make_weight_loader()->get_metadata(WeightSource::file(path_));
  EXPECT_EQ(meta.format, WeightFormat::safetensors());
  EXPECT_EQ(meta.total_size_bytes, 24u + 16u + 3u);
  EXPECT_EQ(meta.dtypes, (std::set<DType>{DType::f32, DType::i8}));
  EXPECT_EQ(meta.tensors.at("a").shape, (Shape{2, 3}));
  EXPECT_EQ(nlohmann::json::parse(meta.extra), (nlohmann::json{{"format", "pt"}}));
}

TEST_F(LoaderTest, BatchKeepsOrderAndReportsFailures) {
  auto loader = make_weight_loader();
  auto tensors = loader->load_tensors({spec("c"), spec("a"), spec("b")});
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0]->name(), "c");
  EXPECT_EQ(tensors[1]->name(), "a");
  EXPECT_EQ(tensors[2]->name(), "b");
  EXPECT_TRUE(loader->load_tensors({}).empty());
  try {
    loader->load_tensors({spec("a"), spec("nope")});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_EQ(e.context().tensor, "nope");
  }
}

TEST_F(LoaderTest, ConcurrentCallersGetExactBytes) {
  auto loader = make_weight_loader({.num_threads = 4});
  const std::string want_a = sha256_hex(*loader->load_tensor(spec("a")));
  const std::string want_b = sha256_hex(*loader->load_tensor(spec("b")));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        if ((i + t) % 3 == 0) {
          auto batch = loader->load_tensors({spec("a"), spec("b")});
          if (sha256_hex(*batch[0]) != want_a || sha256_hex(*batch[1]) != want_b) ++mismatches;
        } else if ((i + t) % 3 == 1) {
          if (sha256_hex(*loader->load_tensor_async(spec("a")).get()) != want_a) ++mismatches;
        } else if (loader->get_metadata(WeightSource::file(path_)).tensors.size() != 3) {
          ++mismatches;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, 0);
}

TEST_F(LoaderTest, AutoModeMapsAndReadModeOwnsAlignedBuffers) {
  auto mapped = make_weight_loader({.read_mode = ReadMode::automatic})->load_tensor(spec("a"));
  EXPECT_TRUE(mapped->is_zero_copy());
  for (size_t alignment : {size_t{64}, size_t{4096}}) {
    auto owned = make_weight_loader({.read_mode = ReadMode::read, .alignment = alignment})
                     ->load_tensor(spec("a"));
    EXPECT_FALSE(owned->is_zero_copy());
    EXPECT_EQ(owned->storage()->kind(), StorageKind::host_buffer);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(owned->data()) % alignment, 0u);
    EXPECT_EQ(sha256_hex(*owned), sha256_hex(*mapped));
  }
  EXPECT_THROW(make_weight_loader({.alignment = 48}), Error);
}

TEST_F(LoaderTest, TensorsOutliveTheirLoader) {
  TensorRef t;
  {
    auto loader = make_weight_loader();
    t = loader->load_tensor(spec("b"));
  }
  EXPECT_EQ(values(*t), (std::vector<float>{7, 8, 9, 10}));
}

TEST_F(LoaderTest, AFileRewrittenOnDiskIsParsedAnew) {
  auto loader = make_weight_loader();
  EXPECT_EQ(loader->get_metadata(WeightSource::file(path_)).tensors.size(), 3u);
  auto replacement = dir_ / "new.safetensors";
  write_file(replacement, safetensors_file({{"only", "F32", {1}, f32_bytes({42})}}));
  std::filesystem::rename(replacement, path_);
  auto meta = loader->get_metadata(WeightSource::file(path_));
  EXPECT_EQ(meta.tensors.size(), 1u);
  EXPECT_EQ(loader->load_tensor(spec("only"))->as<float>()[0], 42.0f);
}

TEST_F(LoaderTest, SpecShapeAndDtypeAreChecked) {
  auto loader = make_weight_loader();
  auto s = spec("a");
  s.shape = {3, 2};
  try {
    loader->load_tensor(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_EQ(e.context().expected, "[3, 2]");
    EXPECT_EQ(e.context().actual, "[2, 3]");
  }
  s = spec("a");
  s.dtype = DType::f16;
  try {
    loader->load_tensor(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::dtype_mismatch);
    EXPECT_EQ(e.context().expected, "f16");
    EXPECT_EQ(e.context().actual, "f32");
  }
  s.transformations = {Cast{DType::f16}};  // the expectation applies to the result
  EXPECT_EQ(loader->load_tensor(s)->dtype(), DType::f16);
}

TEST_F(LoaderTest, SingleTensorSourcesNeedNoName) {
  auto loader = make_weight_loader();
  auto t = loader->load_tensor(TensorSpec{.source = WeightSource::file(path_, "b")});
  EXPECT_EQ(t->name(), "b");
  auto meta = loader->get_metadata(WeightSource::file(path_, "b"));
  EXPECT_EQ(meta.tensors.size(), 1u);
  EXPECT_THROW(
      loader->load_tensor(TensorSpec{.name = "a", .source = WeightSource::file(path_, "b")}),
      Error);
  try {
    loader->load_tensor(TensorSpec{.source = WeightSource::file(path_)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

TEST_F(LoaderTest, MemorySourcesLoadZeroCopy) {
  std::string bytes = read_file(path_);
  auto memory = MemorySource::copy_of(std::as_bytes(std::span(bytes.data(), bytes.size())));
  auto loader = make_weight_loader();
  auto t = loader->load_tensor(TensorSpec{.name = "a", .source = WeightSource::memory(memory)});
  EXPECT_TRUE(t->is_zero_copy());
  EXPECT_EQ(values(*t), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  memory.format = WeightFormat::safetensors();
  EXPECT_EQ(loader->get_metadata(WeightSource::memory(memory)).tensors.size(), 3u);
}

TEST_F(LoaderTest, ContentDecidesTheFormatNotTheName) {
  auto renamed = dir_ / "weights.bin";
  std::filesystem::copy_file(path_, renamed);
  auto meta = make_weight_loader()->get_metadata(WeightSource::file(renamed));
  EXPECT_EQ(meta.format, WeightFormat::safetensors());
  auto junk = dir_ / "junk.safetensors";
  write_file(junk, "this is not a checkpoint at all");
  try {
    make_weight_loader()->get_metadata(WeightSource::file(junk));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format);
    EXPECT_NE(std::string(e.what()).find("tried safetensors"), std::string::npos) << e.what();
  }
}

TEST(ShardedCheckpoint, IndexOpensOnlyTheNeededShard) {
  TempDir dir;
  write_file(dir / "model-00001-of-00002.safetensors",
             safetensors_file({{"layer0.w", "F32", {2}, f32_bytes({1, 2})}}));
  // The second shard is garbage: loading a tensor of the first must never open it.
  write_file(dir / "model-00002-of-00002.safetensors", "garbage");
  write_file(dir / "model.safetensors.index.json",
             R"({"metadata": {"total_size": 16}, "weight_map": {
                 "layer0.w": "model-00001-of-00002.safetensors",
                 "layer1.w": "model-00002-of-00002.safetensors"}})");
  auto loader = make_weight_loader();
  for (auto source :
       {WeightSource::file(dir / "model.safetensors.index.json"), WeightSource::file(dir.path())}) {
    auto t = loader->load_tensor(TensorSpec{.name = "layer0.w", .source = source});
    EXPECT_EQ(values(*t), (std::vector<float>{1, 2}));
    EXPECT_THROW(loader->load_tensor(TensorSpec{.name = "layer1.w", .source = source}), Error);
    EXPECT_THROW(loader->get_metadata(source), Error);
  }
}

TEST(ShardedCheckpoint, MetadataMergesShards) {
  TempDir dir;
  write_file(dir / "a.safetensors", safetensors_file({{"x", "F32", {1}, f32_bytes({1})}}));
  write_file(dir / "b.safetensors", safetensors_file({{"y", "F32", {1}, f32_bytes({2})}}));
  write_file(
      dir / "model.safetensors.index.json",
      R"({"metadata": {"total_size": 8}, "weight_map": {"x": "a.safetensors", "y": "b.safetensors"}})");
  auto meta =
      make_weight_loader()->get_metadata(WeightSource::file(dir / "model.safetensors.index.json"));
  EXPECT_EQ(meta.tensors.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(meta.extra)["total_size"], 8);
}

TEST(ShardedCheckpoint, IndexCannotLeaveItsFolder) {
  TempDir dir;
  write_file(dir / "m" / "model.safetensors.index.json",
             R"({"weight_map": {"x": "../outside.safetensors"}})");
  write_file(dir / "outside.safetensors", safetensors_file({{"x", "F32", {1}, f32_bytes({1})}}));
  try {
    make_weight_loader()->get_metadata(
        WeightSource::file(dir / "m" / "model.safetensors.index.json"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_format);
  }
}

TEST(FolderCheckpoint, SafetensorsWinsOverPytorchBin) {
  TempDir dir;
  write_file(dir / "model.safetensors", safetensors_file({{"x", "F32", {1}, f32_bytes({1})}}));
  write_file(dir / "pytorch_model.bin", "not read");
  auto meta = make_weight_loader()->get_metadata(WeightSource::file(dir.path()));
  EXPECT_EQ(meta.format, WeightFormat::safetensors());
  EXPECT_EQ(meta.tensors.count("x"), 1u);
}

TEST(LoaderErrors, MissingFilesAndUnreachableServers) {
  auto loader = make_weight_loader();
  try {
    loader->get_metadata(WeightSource::file("/nonexistent/model.safetensors"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_EQ(e.context().source, "/nonexistent/model.safetensors");
  }
  try {  // nothing listens on port 1
    make_weight_loader({.download_retries = 0})
        ->get_metadata(WeightSource::url("http://127.0.0.1:1/x.safetensors"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::network) << e.what();
  }
  // Unsigned: without credentials S3 fails before any request (s3_source_test checks that).
  setenv("AWS_NO_SIGN_REQUEST", "true", 1);
  try {  // nothing listens on port 1
    make_weight_loader({.download_retries = 0})
        ->get_metadata(WeightSource::s3("models", "k", "us-east-1", "http://127.0.0.1:1"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::network) << e.what();
    EXPECT_EQ(e.context().source, "s3://models/k");
  }
  unsetenv("AWS_NO_SIGN_REQUEST");
}

TEST_F(LoaderTest, DevicesWithoutAFactoryAreUnsupported) {
  auto s = spec("a");
  s.device = Device::cuda(0);
  try {
    make_weight_loader()->load_tensor(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos);
  }
}

TEST(LoaderRegistry, NamedLoadersAndCapabilities) {
  EXPECT_THROW(make_weight_loader({}, "no-such-loader"), Error);
  register_weight_loader("two-threads", [](const WeightLoaderConfig& c) {
    WeightLoaderConfig copy = c;
    copy.num_threads = 2;
    return make_weight_loader(copy);
  });
  auto names = registered_weight_loaders();
  EXPECT_NE(std::find(names.begin(), names.end(), "default"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "two-threads"), names.end());
  auto caps = make_weight_loader({}, "two-threads")->capabilities();
  EXPECT_TRUE(caps.supports_concurrent_loading);
  EXPECT_EQ(caps.max_tensor_size, Limits{}.max_tensor_bytes);
  EXPECT_NE(std::find(caps.formats.begin(), caps.formats.end(), WeightFormat::safetensors()),
            caps.formats.end());
  EXPECT_NE(std::find(caps.transformations.begin(), caps.transformations.end(), "cast"),
            caps.transformations.end());
}

}  // namespace
}  // namespace ballast::test

namespace ballast::test {
namespace {

TEST(FolderCheckpoint, NpyFilesInAFolderAreNamedAfterTheirFiles) {
  BALLAST_REQUIRE_PYTHON("numpy");
  TempDir dir;
  run_python(
      "import numpy as np, sys\n"
      "np.save(sys.argv[1] + '/embed.npy', np.arange(6, dtype=np.float32).reshape(2, 3))\n"
      "np.save(sys.argv[1] + '/norm.npy', np.ones(3, dtype=np.float16))\n",
      {dir.path().string()});
  auto meta = make_weight_loader()->get_metadata(WeightSource::file(dir.path()));
  ASSERT_EQ(meta.tensors.size(), 2u);
  EXPECT_EQ(meta.tensors.at("embed").shape, (Shape{2, 3}));
  EXPECT_EQ(meta.tensors.at("norm").dtype, DType::f16);
}

}  // namespace
}  // namespace ballast::test

namespace ballast::test {
namespace {

TEST(FolderCheckpoint, AGgufSplitSetInAFolderIsOneModel) {
  BALLAST_REQUIRE_GOLDEN();
  TempDir dir;
  for (int i = 1; i <= 3; ++i) {
    const std::string name = "split-0000" + std::to_string(i) + "-of-00003.gguf";
    std::filesystem::copy_file(*golden_dir() / "gguf" / name, dir / name);
  }
  auto loader = make_weight_loader();
  auto split = loader->get_metadata(WeightSource::file(dir.path()));
  auto merged =
      loader->get_metadata(WeightSource::file(*golden_dir() / "gguf/merged_by_gguf_split.gguf"));
  ASSERT_EQ(split.tensors.size(), 5u);
  for (const auto& [name, info] : merged.tensors) {
    auto a =
        loader->load_tensor(TensorSpec{.name = name, .source = WeightSource::file(dir.path())});
    auto b = loader->load_tensor(
        TensorSpec{.name = name,
                   .source = WeightSource::file(*golden_dir() / "gguf/merged_by_gguf_split.gguf")});
    EXPECT_EQ(sha256_hex(*a), sha256_hex(*b)) << name;
  }
  // A folder of unrelated GGUF files is ambiguous.
  EXPECT_THROW(loader->get_metadata(WeightSource::file(*golden_dir() / "gguf")), Error);
}

}  // namespace
}  // namespace ballast::test
