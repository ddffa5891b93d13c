// The Store of each kind of WeightSource (see source_store.hpp).
#include "remote/source_store.hpp"

#include "ballast/error.hpp"
#include "io/local_store.hpp"
#include "io/memory_store.hpp"
#include "remote/hub_store.hpp"
#include "remote/s3_store.hpp"
#include "remote/url_store.hpp"

namespace ballast {
namespace {

struct MakeStore {
  const WeightSource& source;
  const StoreContext& context;

  std::shared_ptr<Store> operator()(const FileSource& file) const {
    return std::make_shared<LocalStore>(file.path, context.read_mode, context.os);
  }
  std::shared_ptr<Store> operator()(const MemorySource& memory) const {
    return std::make_shared<MemoryStore>(memory.bytes, memory.owner, describe(source));
  }
  std::shared_ptr<Store> operator()(const UrlSource& url) const {
    return std::make_shared<UrlStore>(remote(), url, context.read_mode);
  }
  std::shared_ptr<Store> operator()(const S3Source& s3) const {
    return std::make_shared<S3Store>(remote(), s3, context.read_mode);
  }
  std::shared_ptr<Store> operator()(const HuggingFaceSource& hub) const {
    return std::make_shared<HubStore>(remote(), hub, context.read_mode);
  }

  const std::shared_ptr<const RemoteContext>& remote() const {
    if (!context.remote)
      throw Error(ErrorCode::unsupported, "this loader has no remote access",
                  {.source = describe(source)});
    return context.remote;
  }
};

}  // namespace

std::shared_ptr<Store> make_store(const WeightSource& source, const StoreContext& context) {
  return std::visit(MakeStore{source, context}, source.location);
}

std::optional<std::string> only_tensor_of(const WeightSource& source) {
  const auto* file = std::get_if<FileSource>(&source.location);
  return file ? file->tensor_name : std::nullopt;
}

std::vector<std::string> supported_source_kinds() {
  return {"file", "memory", "url", "huggingface", "s3"};
}

}  // namespace ballast
