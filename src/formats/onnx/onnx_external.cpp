// Resolution and bounds checks of ONNX external data (see onnx_external.hpp).
#include "formats/onnx/onnx_external.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

// The obvious escapes, refused here so that the error is clear whatever the opener does.
std::string_view location_problem(std::string_view location) {
  if (location.empty()) return "the location is empty";
  if (location.find('\0') != std::string_view::npos) return "the location contains NUL";
  if (location.front() == '/' || location.front() == '\\')
    return "absolute locations are not allowed";
  if (location.size() > 1 && location[1] == ':') return "absolute locations are not allowed";
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = location.size();
    if (location.substr(start, end - start) == "..") return "'..' would leave the model folder";
    start = end + 1;
  }
  return {};
}

}  // namespace

ExternalFiles::ExternalFiles(SiblingOpener opener, std::string model, bool verify_checksums)
    : opener_(std::move(opener)), model_(std::move(model)), verify_checksums_(verify_checksums) {}

void ExternalFiles::verify(const ByteSource& file, const std::string& location,
                           const std::string& checksum) {
  if (auto it = verified_.find(location); it != verified_.end()) {
    if (it->second == checksum) return;
    throw Error(ErrorCode::integrity,
                fmt::format("external data '{}' is given two different checksums", location),
                {.source = model_});
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha1(), nullptr) != 1)
    throw Error(ErrorCode::io, "sha1 computation failed", {.source = file.name()});
  constexpr uint64_t kChunk = 4u << 20;
  std::vector<std::byte> buffer(std::min(kChunk, file.size()));
  for (uint64_t pos = 0; pos < file.size(); pos += buffer.size()) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), file.size() - pos);
    file.read_at(pos, std::span(buffer.data(), n));
    EVP_DigestUpdate(ctx.get(), buffer.data(), n);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  std::string expected = checksum;
  for (char& c : expected) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (hex != expected)
    throw Error(ErrorCode::integrity,
                fmt::format("external data '{}' fails its SHA-1 checksum", location),
                {.source = file.name(), .expected = expected, .actual = hex});
  verified_.emplace(location, checksum);
}

std::shared_ptr<ByteSource> ExternalFiles::open(const std::string& location) {
  if (auto it = files_.find(location); it != files_.end()) return it->second;
  if (auto problem = location_problem(location); !problem.empty())
    throw Error(ErrorCode::invalid_format,
                fmt::format("refusing external data location '{}': {}", location, problem),
                {.source = model_});
  if (!opener_)
    throw Error(ErrorCode::unsupported,
                fmt::format("external data '{}' needs the model's folder, and this source has none",
                            location),
                {.source = model_});
  auto file = opener_(location);
  if (!file)
    throw Error(ErrorCode::not_found, fmt::format("external data file '{}' is missing", location),
                {.source = model_});
  files_.emplace(location, file);
  return file;
}

std::shared_ptr<ByteSource> ExternalFiles::slice(const ExternalData& data, uint64_t nbytes) {
  auto file = open(data.location);
  if (data.checksum && verify_checksums_) verify(*file, data.location, *data.checksum);
  const uint64_t size = file->size();
  const uint64_t offset = data.offset.value_or(0);
  auto fail = [&](std::string message) -> std::shared_ptr<ByteSource> {
    throw Error(ErrorCode::invalid_format, std::move(message),
                {.source = file->name(), .offset = offset});
  };
  if (offset > size) return fail(truncated_message(offset, size, "external data"));
  if (data.length) {
    if (!checked_add(offset, *data.length))
      return fail(
          fmt::format("external data offset {} + length {} overflows", offset, *data.length));
    if (!range_inside(offset, *data.length, size))
      return fail(truncated_message(offset + *data.length, size, "external data"));
    if (*data.length != nbytes)
      return fail(fmt::format("external data length {} differs from the tensor's {} bytes",
                              *data.length, nbytes));
  } else if (size - offset != nbytes) {
    return fail(
        fmt::format("external data from offset {} to the end is {} bytes, but the "
                    "tensor has {} (give a length)",
                    offset, size - offset, nbytes));
  }
  return make_slice_source(std::move(file), offset, nbytes);
}

}  // namespace ballast
