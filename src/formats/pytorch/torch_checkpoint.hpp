// From an unpickled torch.save object to an Index: names every tensor by its path (dict keys
// and list/tuple indices joined with '.', a bare tensor is ''), collects plain leaves
// (numbers, strings, bools, None) as metadata, and turns each tensor record into a
// TensorEntry over its storage's bytes after checking that the view stays inside them.
// Shared by the zip and the legacy container readers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ballast/parser.hpp"
#include "formats/pytorch/pickle_value.hpp"
#include "formats/pytorch/torch_hooks.hpp"

namespace ballast {

struct TorchObjects {
  std::vector<std::pair<std::string, uint32_t>> tensors;  // name, index in hooks.tensors()
  nlohmann::json values = nlohmann::json::object();       // path -> plain value
  nlohmann::json skipped = nlohmann::json::object();      // path -> why it is no tensor
};

// Walks the object graph from `root`, bounded by limits.max_pickle_depth (a cyclic pickle
// hits it) and by limits.max_metadata_entries visits. Names are built in one buffer (never a
// copy per level), may be at most limits.max_string_length long, and every name and value
// collected is charged to `budget`.
TorchObjects collect_torch_objects(const PyArena& arena, PyId root, const TorchHooks& hooks,
                                   const Limits& limits, PickleBudget& budget,
                                   const std::string& source_name);

// One entry per named tensor. `storage_bytes[i]` holds storage i's bytes (its view, for legacy
// storage views); a view reaching past them is Error(invalid_format) naming the tensor, and a
// view expanding them past limits.max_view_expansion is Error(limit_exceeded).
std::vector<TensorEntry> torch_entries(
    const TorchObjects& objects, const TorchHooks& hooks,
    const std::vector<std::shared_ptr<ByteSource>>& storage_bytes, ByteOrder byte_order,
    const Limits& limits, const std::string& source_name);

}  // namespace ballast
