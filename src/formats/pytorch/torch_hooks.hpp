// TorchHooks: what the globals of a torch.save pickle may mean. The allowlist is the one
// torch.load(weights_only=True) uses: the tensor rebuild functions, nn.Parameter, typed and
// untyped storages, dtypes, torch.Size, torch.device, collections.OrderedDict, _codecs.encode
// (how protocol 2 writes bytes) and set/frozenset/bytearray. Any other global is refused with
// an error naming it; nothing is ever imported or called. "Calling" an allowed function builds
// a record here instead: a storage for each persistent id, a tensor for each rebuild call.
//
// Tensors torch allows but ballast cannot load (sparse, quantized, nested, meta, subclass
// wrappers) become "unsupported" objects carrying the reason, so the rest of the checkpoint
// still loads and the reason appears in the metadata.
//
// Calls on immutable values share their result instead of copying it (bytearray, layout,
// torch.Size of a tuple, one storage object per storage, one encoding per string), and every
// record or copy made is charged to the arena's PickleBudget.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ballast/dtype.hpp"
#include "ballast/limits.hpp"
#include "ballast/tensor.hpp"
#include "formats/pytorch/pickle_machine.hpp"
#include "util/op_count.hpp"

namespace ballast {

// One storage named by a persistent id ('storage', type, key, location, numel[, view]).
struct TorchStorage {
  std::string key;  // its record: data/<key> in a zip, the key list entry in legacy files
  DType dtype;      // element type of the typed storage; u8 for UntypedStorage
  uint64_t numel;   // elements of the whole storage (bytes for UntypedStorage)
  std::string location;
  // Legacy storage views (torch < 1.0): elements [view_offset, view_offset + view_numel).
  uint64_t view_offset = 0;
  uint64_t view_numel = 0;
};

// One tensor: a strided view of a storage.
struct TorchTensor {
  uint32_t storage = 0;
  DType dtype = DType::f32;
  uint64_t storage_offset = 0;  // in elements of `dtype`
  Shape shape;
  std::vector<int64_t> strides;
};

class TorchHooks final : public PickleHooks {
 public:
  explicit TorchHooks(const Limits& limits) : limits_(limits) {}

  PyId global(PyArena& arena, std::string_view module, std::string_view name) override;
  PyId call(PyArena& arena, PyId callable, PyId args) override;
  PyId new_object(PyArena& arena, PyId cls, PyId args) override;
  PyId persistent_load(PyArena& arena, PyId pid) override;
  void build(PyArena& arena, PyId object, PyId state) override;

  const std::vector<TorchStorage>& storages() const { return storages_; }
  const std::vector<TorchTensor>& tensors() const { return tensors_; }
  // The reason behind an "unsupported" object.
  const std::string& unsupported_reason(const PyValue& object) const;

  // Object type names (PyValue::text of PyKind::object values).
  static constexpr std::string_view kTensor = "torch.Tensor";
  static constexpr std::string_view kStorage = "torch.Storage";
  static constexpr std::string_view kDType = "torch.dtype";
  static constexpr std::string_view kUnsupported = "unsupported";

 private:
  PyId rebuild_tensor(PyArena& arena, const std::vector<PyId>& args, bool has_dtype);
  PyId unsupported(PyArena& arena, std::string reason);
  PyId encode(PyArena& arena, PyId text, const std::string& encoding);

  const Limits& limits_;
  std::vector<TorchStorage> storages_;
  std::vector<PyId> storage_objects_;  // the one object of each storage
  std::unordered_map<std::string, uint32_t, StringHash, CountedEqual> storage_by_key_;
  std::unordered_map<uint64_t, PyId> encoded_;  // string id and encoding -> bytes id
  std::vector<TorchTensor> tensors_;
  std::vector<std::string> reasons_;
};

}  // namespace ballast
