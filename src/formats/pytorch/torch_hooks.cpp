// The weights-only allowlist and the meaning of each allowed call (see torch_hooks.hpp).
// Argument lists follow torch/_utils.py (_rebuild_tensor_v2 etc.) and
// torch/serialization.py (persistent ids); every argument is type-checked before use.
#include "formats/pytorch/torch_hooks.hpp"

#include <array>
#include <optional>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"

namespace ballast {
namespace {

enum class Allowed : uint8_t {
  ordered_dict,
  rebuild_tensor,     // _rebuild_tensor (storage, offset, size, stride)
  rebuild_tensor_v2,  // + requires_grad, backward_hooks[, metadata]
  rebuild_tensor_v3,  // + dtype after backward_hooks
  rebuild_parameter,  // (data, requires_grad, backward_hooks[, state])
  rebuild_from_type,  // _rebuild_from_type_v2 (func, new_type, args, state)
  parameter_class,    // torch.nn.parameter.Parameter
  tensor_class,       // torch.Tensor and the legacy torch.FloatTensor ... classes
  size,               // torch.Size
  device,             // torch.device
  layout,             // torch.serialization._get_layout
  codecs_encode,      // _codecs.encode (protocol 2 bytes)
  set,                // builtins.set / frozenset
  bytearray,
  storage_type,     // payload: DType of the typed storage
  dtype,            // payload: DType
  other_dtype,      // a torch dtype ballast has no DType for
  unsupported,      // payload: index into kUnsupportedRebuilds
  no_storage_type,  // a storage class ballast has no dtype for (quantized)
};

struct NamedGlobal {
  std::string_view name;
  Allowed kind;
};

constexpr std::array kGlobals = {
    NamedGlobal{"collections.OrderedDict", Allowed::ordered_dict},
    NamedGlobal{"torch._utils._rebuild_tensor", Allowed::rebuild_tensor},
    NamedGlobal{"torch._utils._rebuild_tensor_v2", Allowed::rebuild_tensor_v2},
    NamedGlobal{"torch._utils._rebuild_tensor_v3", Allowed::rebuild_tensor_v3},
    NamedGlobal{"torch._utils._rebuild_parameter", Allowed::rebuild_parameter},
    NamedGlobal{"torch._utils._rebuild_parameter_with_state", Allowed::rebuild_parameter},
    NamedGlobal{"torch._tensor._rebuild_from_type_v2", Allowed::rebuild_from_type},
    NamedGlobal{"torch.nn.parameter.Parameter", Allowed::parameter_class},
    NamedGlobal{"torch.Tensor", Allowed::tensor_class},
    NamedGlobal{"torch._tensor.Tensor", Allowed::tensor_class},
    NamedGlobal{"torch.Size", Allowed::size},
    NamedGlobal{"torch.device", Allowed::device},
    NamedGlobal{"torch.serialization._get_layout", Allowed::layout},
    NamedGlobal{"_codecs.encode", Allowed::codecs_encode},
    NamedGlobal{"builtins.set", Allowed::set},
    NamedGlobal{"builtins.frozenset", Allowed::set},
    NamedGlobal{"builtins.bytearray", Allowed::bytearray},
    NamedGlobal{"__builtin__.set", Allowed::set},
    NamedGlobal{"__builtin__.frozenset", Allowed::set},
    NamedGlobal{"__builtin__.bytearray", Allowed::bytearray},
};

// Rebuild functions torch's weights_only unpickler allows, for tensors ballast cannot load.
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kUnsupportedRebuilds = {{
    {"torch._utils._rebuild_sparse_tensor", "sparse tensor"},
    {"torch._utils._rebuild_sparse_csr_tensor", "sparse CSR tensor"},
    {"torch._utils._rebuild_qtensor", "quantized (torch.qint) tensor"},
    {"torch._utils._rebuild_nested_tensor", "nested tensor"},
    {"torch._utils._rebuild_meta_tensor_no_storage", "meta tensor (no data)"},
    {"torch._utils._rebuild_wrapper_subclass", "tensor subclass wrapper"},
    {"torch._utils._rebuild_device_tensor_from_numpy", "device tensor from numpy"},
}};

struct NamedDType {
  std::string_view name;
  DType dtype;
};

// Typed storage classes (torch.FloatStorage, ...; also torch.cuda.* in old files).
constexpr std::array kStorageTypes = {
    NamedDType{"DoubleStorage", DType::f64},       NamedDType{"FloatStorage", DType::f32},
    NamedDType{"HalfStorage", DType::f16},         NamedDType{"BFloat16Storage", DType::bf16},
    NamedDType{"LongStorage", DType::i64},         NamedDType{"IntStorage", DType::i32},
    NamedDType{"ShortStorage", DType::i16},        NamedDType{"CharStorage", DType::i8},
    NamedDType{"ByteStorage", DType::u8},          NamedDType{"BoolStorage", DType::boolean},
    NamedDType{"ComplexFloatStorage", DType::c64}, NamedDType{"ComplexDoubleStorage", DType::c128},
    NamedDType{"UntypedStorage", DType::u8},
};

constexpr std::array<std::string_view, 5> kQuantizedStorageTypes = {
    "QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage"};

// torch.<name> dtype objects, with their aliases.
constexpr std::array kDTypes = {
    NamedDType{"float64", DType::f64},
    NamedDType{"double", DType::f64},
    NamedDType{"float32", DType::f32},
    NamedDType{"float", DType::f32},
    NamedDType{"float16", DType::f16},
    NamedDType{"half", DType::f16},
    NamedDType{"bfloat16", DType::bf16},
    NamedDType{"int64", DType::i64},
    NamedDType{"long", DType::i64},
    NamedDType{"int32", DType::i32},
    NamedDType{"int", DType::i32},
    NamedDType{"int16", DType::i16},
    NamedDType{"short", DType::i16},
    NamedDType{"int8", DType::i8},
    NamedDType{"uint8", DType::u8},
    NamedDType{"uint16", DType::u16},
    NamedDType{"uint32", DType::u32},
    NamedDType{"uint64", DType::u64},
    NamedDType{"bool", DType::boolean},
    NamedDType{"complex64", DType::c64},
    NamedDType{"cfloat", DType::c64},
    NamedDType{"complex128", DType::c128},
    NamedDType{"cdouble", DType::c128},
    NamedDType{"float8_e4m3fn", DType::f8_e4m3},
    NamedDType{"float8_e5m2", DType::f8_e5m2},
    NamedDType{"float8_e4m3fnuz", DType::f8_e4m3fnuz},
    NamedDType{"float8_e5m2fnuz", DType::f8_e5m2fnuz},
    NamedDType{"float8_e8m0fnu", DType::f8_e8m0},
};

constexpr std::array<std::string_view, 8> kOtherDTypes = {
    "complex32", "chalf", "quint8", "qint8", "qint32", "quint4x2", "quint2x4", "float4_e2m1fn_x2"};

constexpr std::array<std::string_view, 8> kLegacyTensorClasses = {
    "DoubleTensor", "FloatTensor", "HalfTensor",  "BFloat16Tensor",
    "LongTensor",   "IntTensor",   "ShortTensor", "CharTensor"};

int64_t tag(Allowed kind, uint32_t payload = 0) {
  return static_cast<int64_t>(kind) << 16 | payload;
}
Allowed kind_of(const PyValue& global) { return static_cast<Allowed>(global.integer >> 16); }
uint32_t payload_of(const PyValue& global) { return global.integer & 0xFFFF; }

std::optional<int64_t> resolve(std::string_view module, std::string_view name) {
  const std::string full = fmt::format("{}.{}", module, name);
  for (const auto& g : kGlobals)
    if (g.name == full) return tag(g.kind);
  for (uint32_t i = 0; i < kUnsupportedRebuilds.size(); ++i)
    if (kUnsupportedRebuilds[i].first == full) return tag(Allowed::unsupported, i);
  const bool torch_module =
      module == "torch" || module == "torch.cuda" || module == "torch.storage";
  if (!torch_module) return std::nullopt;
  for (const auto& s : kStorageTypes)
    if (s.name == name) return tag(Allowed::storage_type, static_cast<uint32_t>(s.dtype));
  for (std::string_view q : kQuantizedStorageTypes)
    if (q == name) return tag(Allowed::no_storage_type);
  if (module == "torch") {
    for (const auto& d : kDTypes)
      if (d.name == name) return tag(Allowed::dtype, static_cast<uint32_t>(d.dtype));
    for (std::string_view d : kOtherDTypes)
      if (d == name) return tag(Allowed::other_dtype);
  }
  for (std::string_view t : kLegacyTensorClasses)
    if (t == name) return tag(Allowed::tensor_class);
  return std::nullopt;
}

[[noreturn]] void refuse(std::string_view what) {
  throw Error(ErrorCode::invalid_format, std::string(what));
}

const PyValue& expect(const PyArena& arena, PyId id, PyKind kind, std::string_view what) {
  const PyValue& v = arena[id];
  if (v.kind != kind)
    refuse(
        fmt::format("{} is a {}, expected a {}", what, py_kind_name(v.kind), py_kind_name(kind)));
  return v;
}

int64_t expect_int(const PyArena& arena, PyId id, std::string_view what) {
  const PyValue& v = arena[id];
  if (v.kind == PyKind::boolean) return v.integer;
  if (v.kind != PyKind::integer)
    refuse(fmt::format("{} is a {}, expected an int", what, py_kind_name(v.kind)));
  return v.integer;
}

uint64_t expect_count(const PyArena& arena, PyId id, std::string_view what) {
  const int64_t v = expect_int(arena, id, what);
  if (v < 0) refuse(fmt::format("{} is negative ({})", what, v));
  return static_cast<uint64_t>(v);
}

bool is_object(const PyValue& v, std::string_view type) {
  return v.kind == PyKind::object && v.text == type;
}

// A tuple (or list) of non-negative ints: a size or a stride.
std::vector<int64_t> expect_dims(const PyArena& arena, PyId id, std::string_view what,
                                 uint32_t max_dims) {
  const PyValue& v = arena[id];
  if (v.kind != PyKind::tuple && v.kind != PyKind::list)
    refuse(fmt::format("{} is a {}, expected a tuple of ints", what, py_kind_name(v.kind)));
  if (v.items.size() > max_dims)
    throw Error(ErrorCode::limit_exceeded, limit_message(fmt::format("rank of {}", what),
                                                         v.items.size(), "max_dims", max_dims));
  std::vector<int64_t> dims;
  for (PyId item : v.items) dims.push_back(static_cast<int64_t>(expect_count(arena, item, what)));
  return dims;
}

// UTF-8 text to the bytes of its code points (each must be below 256): latin-1 encoding.
std::string latin1_bytes(std::string_view utf8) {
  std::string out;
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size()) {
      const unsigned cp = (c & 0x1Fu) << 6 | (static_cast<unsigned char>(utf8[++i]) & 0x3Fu);
      if (cp > 0xFF) refuse("_codecs.encode: a code point above 255 in latin-1 text");
      out.push_back(static_cast<char>(cp));
    } else {
      refuse("_codecs.encode: text that is not latin-1");
    }
  }
  return out;
}

}  // namespace

PyId TorchHooks::global(PyArena& arena, std::string_view module, std::string_view name) {
  std::optional<int64_t> allowed = resolve(module, name);
  if (!allowed)
    throw Error(ErrorCode::unsupported,
                fmt::format("refusing the global '{}.{}': ballast never runs pickled code and "
                            "accepts only the globals torch.load(weights_only=True) allows",
                            module, name));
  return arena.add(
      {.kind = PyKind::global, .integer = *allowed, .text = fmt::format("{}.{}", module, name)});
}

PyId TorchHooks::unsupported(PyArena& arena, std::string reason) {
  arena.charge(sizeof(std::string) + reason.size(), "an unsupported tensor's reason");
  reasons_.push_back(std::move(reason));
  return arena.add({.kind = PyKind::object,
                    .integer = static_cast<int64_t>(reasons_.size() - 1),
                    .text = std::string(kUnsupported)});
}

const std::string& TorchHooks::unsupported_reason(const PyValue& object) const {
  return reasons_.at(static_cast<size_t>(object.integer));
}

PyId TorchHooks::call(PyArena& arena, PyId callable, PyId args_id) {
  const PyValue& fn = arena[callable];
  if (fn.kind != PyKind::global)
    refuse(fmt::format("REDUCE calls a {}, not an allowed function", py_kind_name(fn.kind)));
  const std::string fn_name = fn.text;
  const std::vector<PyId> args = arena[args_id].items;
  auto need_args = [&](size_t low, size_t high) {
    if (args.size() < low || args.size() > high)
      refuse(fmt::format("{} takes {} to {} arguments, got {}", fn_name, low, high, args.size()));
  };
  switch (kind_of(fn)) {
    case Allowed::ordered_dict: {
      need_args(0, 1);
      PyId dict = arena.container(PyKind::dict);
      if (args.empty()) return dict;
      const PyValue& pairs = arena[args[0]];
      if (pairs.kind != PyKind::list && pairs.kind != PyKind::tuple)
        refuse("OrderedDict argument is not a list of pairs");
      std::vector<PyId> items;
      for (PyId pair : pairs.items) {
        const PyValue& p = arena[pair];
        if ((p.kind != PyKind::tuple && p.kind != PyKind::list) || p.items.size() != 2)
          refuse("OrderedDict item is not a (key, value) pair");
        items.insert(items.end(), p.items.begin(), p.items.end());
      }
      arena.append(dict, items);
      return dict;
    }
    case Allowed::rebuild_tensor: need_args(4, 4); return rebuild_tensor(arena, args, false);
    case Allowed::rebuild_tensor_v2: need_args(6, 7); return rebuild_tensor(arena, args, false);
    case Allowed::rebuild_tensor_v3: need_args(7, 8); return rebuild_tensor(arena, args, true);
    case Allowed::rebuild_parameter:
    case Allowed::parameter_class: {
      need_args(1, 4);
      const PyValue& data = arena[args[0]];
      if (!is_object(data, kTensor) && !is_object(data, kUnsupported))
        refuse(fmt::format("{}: data is a {}, not a tensor", fn_name, py_kind_name(data.kind)));
      return args[0];
    }
    case Allowed::rebuild_from_type: {
      need_args(4, 4);
      const PyValue& type = arena[args[1]];
      if (type.kind != PyKind::global ||
          (kind_of(type) != Allowed::tensor_class && kind_of(type) != Allowed::parameter_class))
        return unsupported(arena, fmt::format("tensor subclass {}", type.text));
      expect(arena, args[2], PyKind::tuple, "_rebuild_from_type_v2 arguments");
      const PyValue& inner = arena[args[0]];
      if (inner.kind == PyKind::global && kind_of(inner) == Allowed::rebuild_from_type)
        refuse("_rebuild_from_type_v2 rebuilds through another _rebuild_from_type_v2");
      return call(arena, args[0], args[2]);
    }
    case Allowed::size: {
      need_args(1, 1);
      const PyValue& dims = arena[args[0]];
      if (dims.kind == PyKind::tuple) return args[0];  // immutable: shared, not copied
      if (dims.kind != PyKind::list) refuse("torch.Size argument is not a tuple");
      return arena.container(PyKind::tuple, dims.items);
    }
    case Allowed::device: {
      need_args(1, 2);
      const std::string& type = expect(arena, args[0], PyKind::string, "torch.device type").text;
      if (args.size() == 1) return args[0];  // strings are immutable: shared, not copied
      std::string text = fmt::format("{}:{}", type, expect_int(arena, args[1], "device index"));
      return arena.text(PyKind::string, std::move(text));
    }
    case Allowed::layout: {
      need_args(1, 1);
      expect(arena, args[0], PyKind::string, "layout");
      return args[0];
    }
    case Allowed::codecs_encode: {
      need_args(1, 2);
      expect(arena, args[0], PyKind::string, "_codecs.encode text");
      return encode(
          arena, args[0],
          args.size() == 2 ? expect(arena, args[1], PyKind::string, "encoding").text : "utf-8");
    }
    case Allowed::set: {
      need_args(0, 1);
      if (args.empty()) return arena.container(PyKind::set);
      const PyValue& items = arena[args[0]];
      if (items.kind != PyKind::list && items.kind != PyKind::tuple && items.kind != PyKind::set)
        refuse("set argument is not a list");
      return arena.container(PyKind::set, items.items);
    }
    case Allowed::bytearray: {
      need_args(0, 1);
      if (args.empty()) return arena.text(PyKind::bytes, {});
      expect(arena, args[0], PyKind::bytes, "bytearray");
      return args[0];  // nothing mutates bytes here: shared, not copied
    }
    case Allowed::unsupported:
      return unsupported(
          arena, fmt::format("{} ({})", kUnsupportedRebuilds[payload_of(fn)].second, fn_name));
    case Allowed::tensor_class:
    case Allowed::storage_type:
    case Allowed::dtype:
    case Allowed::other_dtype:
    case Allowed::no_storage_type: break;
  }
  refuse(fmt::format("{} may be named in a weights-only pickle but not called", fn_name));
}

// Each string is encoded once: calling _codecs.encode again on the same value (through the
// memo) returns the same bytes instead of another copy.
PyId TorchHooks::encode(PyArena& arena, PyId text, const std::string& encoding) {
  const bool latin1 = encoding == "latin1" || encoding == "latin-1";
  if (!latin1 && encoding != "utf-8" && encoding != "utf8")
    refuse(fmt::format("_codecs.encode with encoding '{}'", encoding));
  const uint64_t key = static_cast<uint64_t>(text) << 1 | (latin1 ? 1 : 0);
  if (auto it = encoded_.find(key); it != encoded_.end()) return it->second;
  const std::string& utf8 = arena[text].text;
  const PyId bytes = arena.text(PyKind::bytes, latin1 ? latin1_bytes(utf8) : utf8);
  arena.charge(sizeof(key) + sizeof(PyId) + 2 * sizeof(void*), "an encoding cache entry");
  encoded_.emplace(key, bytes);
  return bytes;
}

PyId TorchHooks::new_object(PyArena& arena, PyId cls, PyId args) {
  const PyValue& type = arena[cls];
  if (type.kind == PyKind::global &&
      (kind_of(type) == Allowed::parameter_class || kind_of(type) == Allowed::ordered_dict ||
       kind_of(type) == Allowed::set))
    return call(arena, cls, args);
  refuse(fmt::format("NEWOBJ of {} (only nn.Parameter, OrderedDict and set may be created)",
                     type.kind == PyKind::global ? type.text : py_kind_name(type.kind)));
}

void TorchHooks::build(PyArena& arena, PyId object, PyId /*state*/) {
  // BUILD sets attributes (requires_grad, hooks, an OrderedDict's __dict__); none of them
  // changes a tensor's data, so the state is dropped. Plain values cannot be built.
  const PyKind kind = arena[object].kind;
  if (kind != PyKind::object && kind != PyKind::dict)
    refuse(fmt::format("BUILD on a {}", py_kind_name(kind)));
}

PyId TorchHooks::persistent_load(PyArena& arena, PyId pid_id) {
  const PyValue& pid = arena[pid_id];
  if (pid.kind != PyKind::tuple || pid.items.size() < 5 || pid.items.size() > 6 ||
      arena[pid.items[0]].kind != PyKind::string || arena[pid.items[0]].text != "storage")
    refuse("persistent id is not ('storage', type, key, location, numel[, view])");
  const PyValue& type = arena[pid.items[1]];
  if (type.kind != PyKind::global ||
      (kind_of(type) != Allowed::storage_type && kind_of(type) != Allowed::no_storage_type))
    refuse(fmt::format("persistent id names {} as its storage type",
                       type.kind == PyKind::global ? type.text : py_kind_name(type.kind)));
  if (kind_of(type) == Allowed::no_storage_type)
    return unsupported(arena, fmt::format("quantized storage {}", type.text));

  const PyValue& key_value = arena[pid.items[2]];
  std::string key;
  if (key_value.kind == PyKind::string)
    key = key_value.text;
  else
    key = std::to_string(expect_int(arena, pid.items[2], "storage key"));
  const PyValue& location = arena[pid.items[3]];
  TorchStorage storage{.key = key,
                       .dtype = static_cast<DType>(payload_of(type)),
                       .numel = expect_count(arena, pid.items[4], "storage numel"),
                       .location = location.kind == PyKind::string ? location.text : ""};
  storage.view_numel = storage.numel;
  if (!dtype_bytes_for(storage.dtype, storage.numel))
    refuse(fmt::format("storage '{}' of {} elements overflows", key, storage.numel));

  if (pid.items.size() == 6 && arena[pid.items[5]].kind != PyKind::none) {
    const PyValue& view = expect(arena, pid.items[5], PyKind::tuple, "storage view");
    if (view.items.size() != 3) refuse("storage view is not (key, offset, size)");
    storage.view_offset = expect_count(arena, view.items[1], "storage view offset");
    storage.view_numel = expect_count(arena, view.items[2], "storage view size");
    auto end = checked_add(storage.view_offset, storage.view_numel);
    if (!end || *end > storage.numel)
      refuse(fmt::format("storage view [{}, +{}) lies outside storage '{}' of {} elements",
                         storage.view_offset, storage.view_numel, key, storage.numel));
    key = fmt::format("{}@{}+{}", key, storage.view_offset, storage.view_numel);
  }

  auto it = storage_by_key_.find(key);
  if (it == storage_by_key_.end()) {
    if (storages_.size() >= limits_.max_tensors)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("storage count", std::nullopt, "max_tensors", limits_.max_tensors));
    arena.charge(sizeof(TorchStorage) + storage.key.size() + storage.location.size() +
                     sizeof(std::string) + key.size() + sizeof(uint32_t) + 3 * sizeof(void*),
                 "a storage record");
    const auto index = static_cast<uint32_t>(storages_.size());
    storages_.push_back(std::move(storage));
    storage_objects_.push_back(
        arena.add({.kind = PyKind::object, .integer = index, .text = std::string(kStorage)}));
    it = storage_by_key_.emplace(std::move(key), index).first;
  } else {
    const TorchStorage& seen = storages_[it->second];
    if (*dtype_bytes_for(seen.dtype, seen.numel) != *dtype_bytes_for(storage.dtype, storage.numel))
      refuse(fmt::format("storage '{}' is named with two different sizes", storage.key));
  }
  return storage_objects_[it->second];
}

PyId TorchHooks::rebuild_tensor(PyArena& arena, const std::vector<PyId>& args, bool has_dtype) {
  const PyValue& storage_value = arena[args[0]];
  if (is_object(storage_value, kUnsupported)) return args[0];
  if (!is_object(storage_value, kStorage))
    refuse(fmt::format("tensor storage is a {}, not a persistent storage",
                       py_kind_name(storage_value.kind)));
  TorchTensor tensor;
  tensor.storage = static_cast<uint32_t>(storage_value.integer);
  tensor.dtype = storages_[tensor.storage].dtype;
  tensor.storage_offset = expect_count(arena, args[1], "storage_offset");
  tensor.shape = expect_dims(arena, args[2], "size", limits_.max_dims);
  tensor.strides = expect_dims(arena, args[3], "stride", limits_.max_dims);
  if (tensor.strides.size() != tensor.shape.size())
    refuse(fmt::format("size has {} dimensions but stride has {}", tensor.shape.size(),
                       tensor.strides.size()));
  if (has_dtype) {
    const PyValue& dtype = arena[args[6]];
    if (dtype.kind != PyKind::global || kind_of(dtype) != Allowed::dtype)
      return unsupported(arena, fmt::format("tensor of dtype {}", dtype.text));
    tensor.dtype = static_cast<DType>(payload_of(dtype));
  }
  if (tensors_.size() >= limits_.max_tensors)
    throw Error(ErrorCode::limit_exceeded,
                limit_message("tensor count", std::nullopt, "max_tensors", limits_.max_tensors));
  arena.charge(sizeof(TorchTensor) + 2 * tensor.shape.size() * sizeof(int64_t), "a tensor record");
  tensors_.push_back(std::move(tensor));
  return arena.add({.kind = PyKind::object,
                    .integer = static_cast<int64_t>(tensors_.size() - 1),
                    .text = std::string(kTensor)});
}

}  // namespace ballast
