// ByteSource helpers: bounded reads, slices of a source, and bytes in memory.
#include "ballast/byte_source.hpp"

#include <cstring>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "core/produced_mapping.hpp"
#include "io/local_file.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {

std::vector<std::byte> ByteSource::read(uint64_t offset, uint64_t length) const {
  if (!range_inside(offset, length, size()))
    throw Error(ErrorCode::invalid_format, past_end_message(length, size()),
                {.source = name(), .offset = offset});
  std::vector<std::byte> out(length);
  read_at(offset, out);
  return out;
}

namespace {

class SliceRegion final : public MappedRegion {
 public:
  SliceRegion(std::shared_ptr<const MappedRegion> parent, uint64_t offset, uint64_t length)
      : parent_(std::move(parent)), offset_(offset), length_(length) {}
  const std::byte* data() const override { return parent_->data() + offset_; }
  uint64_t size() const override { return length_; }

 private:
  std::shared_ptr<const MappedRegion> parent_;
  uint64_t offset_, length_;
};

class SliceSource final : public ByteSource, public LocalFileBacked, public ProducedMapping {
 public:
  SliceSource(std::shared_ptr<ByteSource> parent, uint64_t offset, uint64_t length,
              std::string name)
      : parent_(std::move(parent)), offset_(offset), length_(length), name_(std::move(name)) {}

  uint64_t size() const override { return length_; }
  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (!range_inside(offset, out.size(), length_))
      throw Error(ErrorCode::invalid_format, past_end_message(out.size(), length_),
                  {.source = name_, .offset = offset});
    parent_->read_at(offset_ + offset, out);
  }
  std::shared_ptr<const MappedRegion> mapping() const override {
    auto parent = parent_->mapping();
    if (!parent) return nullptr;
    return std::make_shared<SliceRegion>(std::move(parent), offset_, length_);
  }
  bool mapping_produces_bytes() const override { return ballast::mapping_produces_bytes(*parent_); }
  void expect_several_reads() const override { ballast::expect_several_reads(*parent_); }
  std::optional<LocalFile> local_file(bool want_direct) const override {
    auto file = local_file_of(*parent_, want_direct);
    if (file) file->base += offset_;
    return file;
  }
  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<ByteSource> parent_;
  uint64_t offset_, length_;
  std::string name_;
};

class MemoryRegion final : public MappedRegion {
 public:
  MemoryRegion(std::span<const std::byte> bytes, std::shared_ptr<const void> owner)
      : bytes_(bytes), owner_(std::move(owner)) {}
  const std::byte* data() const override { return bytes_.data(); }
  uint64_t size() const override { return bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;
};

class MemoryByteSource final : public ByteSource {
 public:
  MemoryByteSource(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                   std::string name)
      : region_(std::make_shared<MemoryRegion>(bytes, std::move(owner))), name_(std::move(name)) {}

  uint64_t size() const override { return region_->size(); }
  void read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (!range_inside(offset, out.size(), region_->size()))
      throw Error(ErrorCode::invalid_format, past_end_message(out.size(), region_->size()),
                  {.source = name_, .offset = offset});
    if (!out.empty()) std::memcpy(out.data(), region_->data() + offset, out.size());
  }
  std::shared_ptr<const MappedRegion> mapping() const override { return region_; }
  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<const MappedRegion> region_;
  std::string name_;
};

}  // namespace

std::shared_ptr<ByteSource> make_slice_source(std::shared_ptr<ByteSource> parent, uint64_t offset,
                                              uint64_t length, std::string name) {
  if (!range_inside(offset, length, parent->size()))
    throw Error(ErrorCode::invalid_format, past_end_message(length, parent->size()),
                {.source = parent->name(), .offset = offset});
  if (name.empty()) name = parent->name();
  return std::make_shared<SliceSource>(std::move(parent), offset, length, std::move(name));
}

std::shared_ptr<ByteSource> make_memory_source(std::span<const std::byte> bytes,
                                               std::shared_ptr<const void> owner,
                                               std::string name) {
  return std::make_shared<MemoryByteSource>(bytes, std::move(owner), std::move(name));
}

std::shared_ptr<ByteSource> make_memory_source(std::vector<std::byte> bytes, std::string name) {
  auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  std::span<const std::byte> view(owned->data(), owned->size());
  return make_memory_source(view, std::move(owned), std::move(name));
}

}  // namespace ballast
