// Naming the tensors of an unpickled checkpoint and checking their views (see
// torch_checkpoint.hpp).
#include "formats/pytorch/torch_checkpoint.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "util/checked.hpp"
#include "util/shape_util.hpp"

namespace ballast {
namespace {

class Collector {
 public:
  Collector(const PyArena& arena, const TorchHooks& hooks, const Limits& limits,
            const std::string& source)
      : arena_(arena),
        hooks_(hooks),
        limits_(limits),
        source_(source),
        // A tree visits each value once; legitimate sharing (tied weights) adds a few visits.
        // A pickle that nests one list many times over ("billion laughs") stops here.
        max_visits_(std::min<uint64_t>(limits.max_metadata_entries, 2 * arena.size() + 64)) {}

  TorchObjects run(PyId root) {
    visit(root, "", 0);
    return std::move(out_);
  }

 private:
  void visit(PyId id, const std::string& path, uint32_t depth) {
    if (depth > limits_.max_pickle_depth)
      throw Error(ErrorCode::limit_exceeded,
                  fmt::format("checkpoint objects nest deeper than max_pickle_depth ({}) at '{}' "
                              "(or the pickle is cyclic)",
                              limits_.max_pickle_depth, path),
                  {.source = source_});
    if (++visits_ > max_visits_)
      throw Error(ErrorCode::limit_exceeded,
                  fmt::format("checkpoint objects are reached more than {} times: shared too "
                              "often (at most twice the {} values unpickled, and at most "
                              "max_metadata_entries)",
                              max_visits_, arena_.size()),
                  {.source = source_});
    const PyValue& v = arena_[id];
    switch (v.kind) {
      case PyKind::object:
        if (v.text == TorchHooks::kTensor)
          add_tensor(path, static_cast<uint32_t>(v.integer));
        else if (v.text == TorchHooks::kUnsupported)
          out_.skipped[path] = hooks_.unsupported_reason(v);
        else
          out_.skipped[path] = fmt::format("a bare {} object", v.text);
        return;
      case PyKind::dict:
        for (size_t i = 0; i + 1 < v.items.size(); i += 2)
          visit(v.items[i + 1], join(path, key_text(v.items[i], path)), depth + 1);
        return;
      case PyKind::list:
      case PyKind::tuple:
        for (size_t i = 0; i < v.items.size(); ++i)
          visit(v.items[i], join(path, std::to_string(i)), depth + 1);
        return;
      case PyKind::none: out_.values[path] = nullptr; return;
      case PyKind::boolean: out_.values[path] = v.integer != 0; return;
      case PyKind::integer: out_.values[path] = v.integer; return;
      case PyKind::floating: out_.values[path] = v.floating; return;
      case PyKind::string: out_.values[path] = v.text; return;
      case PyKind::big_integer:
      case PyKind::bytes:
      case PyKind::set:
      case PyKind::global: return;  // not plain values; never tensors
    }
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  std::string key_text(PyId key, const std::string& path) const {
    const PyValue& k = arena_[key];
    switch (k.kind) {
      case PyKind::string: return k.text;
      case PyKind::integer: return std::to_string(k.integer);
      case PyKind::boolean: return k.integer ? "True" : "False";
      case PyKind::none: return "None";
      default:
        throw Error(ErrorCode::invalid_format,
                    fmt::format("a dict under '{}' has a {} key; tensor names need str or int keys",
                                path, py_kind_name(k.kind)),
                    {.source = source_});
    }
  }

  void add_tensor(const std::string& name, uint32_t index) {
    if (!names_.insert(name).second)
      throw Error(ErrorCode::invalid_format, fmt::format("two tensors are both named '{}'", name),
                  {.source = source_, .tensor = name});
    out_.tensors.emplace_back(name, index);
  }

  const PyArena& arena_;
  const TorchHooks& hooks_;
  const Limits& limits_;
  const std::string& source_;
  TorchObjects out_;
  std::unordered_set<std::string> names_;
  const uint64_t max_visits_;
  uint64_t visits_ = 0;
};

// Bytes from the tensor's first element to one past its farthest one, or nullopt on overflow.
std::optional<uint64_t> view_end_bytes(const TorchTensor& t, uint64_t element_size) {
  uint64_t last = t.storage_offset;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    auto step =
        checked_mul(static_cast<uint64_t>(t.shape[i] - 1), static_cast<uint64_t>(t.strides[i]));
    if (!step) return std::nullopt;
    auto next = checked_add(last, *step);
    if (!next) return std::nullopt;
    last = *next;
  }
  auto count = checked_add(last, 1);
  return count ? checked_mul(*count, element_size) : std::nullopt;
}

}  // namespace

TorchObjects collect_torch_objects(const PyArena& arena, PyId root, const TorchHooks& hooks,
                                   const Limits& limits, const std::string& source_name) {
  return Collector(arena, hooks, limits, source_name).run(root);
}

std::vector<TensorEntry> torch_entries(
    const TorchObjects& objects, const TorchHooks& hooks,
    const std::vector<std::shared_ptr<ByteSource>>& storage_bytes, ByteOrder byte_order,
    const std::string& source_name) {
  std::vector<TensorEntry> entries;
  entries.reserve(objects.tensors.size());
  for (const auto& [name, index] : objects.tensors) {
    const TorchTensor& t = hooks.tensors()[index];
    const TorchStorage& storage = hooks.storages()[t.storage];
    const uint64_t element_size = dtype_element_size(t.dtype);
    const uint64_t available = storage_bytes[t.storage]->size();
    TensorEntry e;
    e.name = name;
    e.dtype = t.dtype;
    e.shape = t.shape;
    e.data = storage_bytes[t.storage];
    e.byte_order = byte_order;
    const uint64_t numel = checked_numel(t.shape).value_or(0);
    if (numel > 0) {
      std::optional<uint64_t> end = view_end_bytes(t, element_size);
      if (!end || *end > available)
        throw Error(ErrorCode::invalid_format,
                    fmt::format("view (offset {}, size {}, stride {}) of {} reaches past its "
                                "{}-byte storage '{}'",
                                t.storage_offset, shape_text(t.shape), shape_text(t.strides),
                                dtype_name(t.dtype), available, storage.key),
                    {.source = source_name, .tensor = name});
      e.offset = t.storage_offset * element_size;  // no overflow: below *end
      if (!is_row_major(t.shape, t.strides)) e.strides = t.strides;
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace ballast
