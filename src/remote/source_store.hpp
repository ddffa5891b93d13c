// The Store of each kind of WeightSource: a file or folder and memory (io/), a URL, an S3
// bucket or a Hugging Face Hub repository (remote/). The one place that maps a source kind to
// where its bytes live; a new kind of source adds its Store and one line here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ballast/config.hpp"
#include "ballast/source.hpp"
#include "io/os.hpp"
#include "io/store.hpp"
#include "remote/remote_context.hpp"

namespace ballast {

struct StoreContext {
  std::shared_ptr<const RemoteContext> remote;  // null: remote sources are unsupported
  ReadMode read_mode = ReadMode::automatic;
  std::shared_ptr<const Os> os = real_os();  // local files' (and cached blobs') system calls
};

// Cheap: a store asks nothing of a server or the environment until it is used.
std::shared_ptr<Store> make_store(const WeightSource& source, const StoreContext& context);

// The one tensor the source restricts itself to (WeightSource::file(path, tensor)), if any.
std::optional<std::string> only_tensor_of(const WeightSource& source);

// The kinds of source make_store serves, by name (WeightLoaderCapabilities::sources).
std::vector<std::string> supported_source_kinds();

}  // namespace ballast
