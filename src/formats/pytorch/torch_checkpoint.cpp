// Naming the tensors of an unpickled checkpoint and checking their views (see
// torch_checkpoint.hpp).
#include "formats/pytorch/torch_checkpoint.hpp"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "ballast/error.hpp"
#include "formats/validate.hpp"
#include "util/checked.hpp"
#include "util/error_text.hpp"
#include "util/op_count.hpp"
#include "util/shape_util.hpp"

namespace ballast {
namespace {

// What one collected name or value costs besides its bytes (a map node, a JSON value).
constexpr uint64_t kEntryOverhead = 64;

class Collector {
 public:
  Collector(const PyArena& arena, const TorchHooks& hooks, const Limits& limits,
            PickleBudget& budget, const std::string& source)
      : arena_(arena),
        hooks_(hooks),
        limits_(limits),
        budget_(budget),
        source_(source),
        // A tree visits each value once; legitimate sharing (tied weights) adds a few visits.
        // A pickle that nests one list many times over ("billion laughs") stops here.
        max_visits_(std::min<uint64_t>(limits.max_metadata_entries, 2 * arena.size() + 64)) {}

  TorchObjects run(PyId root) {
    visit(root, 0);
    return std::move(out_);
  }

 private:
  // Visits `id`, named by path_.
  void visit(PyId id, uint32_t depth) {
    if (depth > limits_.max_pickle_depth)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message("checkpoint object depth", std::nullopt, "max_pickle_depth",
                                limits_.max_pickle_depth) +
                      fmt::format(" at '{}' (or the pickle is cyclic)", shown_path()),
                  {.source = source_});
    count_op();
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
          add_tensor(static_cast<uint32_t>(v.integer));
        else if (v.text == TorchHooks::kUnsupported)
          skip(hooks_.unsupported_reason(v));
        else
          skip(fmt::format("a bare {} object", v.text));
        return;
      case PyKind::dict:
        for (size_t i = 0; i + 1 < v.items.size(); i += 2) {
          const size_t parent = push_key(v.items[i]);
          visit(v.items[i + 1], depth + 1);
          path_.resize(parent);
        }
        return;
      case PyKind::list:
      case PyKind::tuple:
        for (size_t i = 0; i < v.items.size(); ++i) {
          const size_t parent = push(std::to_string(i));
          visit(v.items[i], depth + 1);
          path_.resize(parent);
        }
        return;
      case PyKind::none: value(nullptr, 0); return;
      case PyKind::boolean: value(v.integer != 0, 0); return;
      case PyKind::integer: value(v.integer, 0); return;
      case PyKind::floating: value(v.floating, 0); return;
      case PyKind::string: value(v.text, v.text.size()); return;
      case PyKind::big_integer:
      case PyKind::bytes:
      case PyKind::set:
      case PyKind::global: return;  // not plain values; never tensors
    }
  }

  // Appends ".key" (or "key" at the root) to path_; returns the length to restore.
  size_t push(std::string_view key) {
    const size_t parent = path_.size();
    const uint64_t length = parent + (parent == 0 ? 0 : 1) + key.size();
    if (length > limits_.max_string_length)
      throw Error(ErrorCode::limit_exceeded,
                  limit_message(fmt::format("length of a name under '{}'", shown_path()),
                                std::nullopt, "max_string_length", limits_.max_string_length),
                  {.source = source_});
    if (length > path_charged_) {  // the buffer's growth is memory too
      budget_.charge(length - path_charged_, "a tensor name");
      path_charged_ = length;
    }
    if (parent != 0) path_ += '.';
    path_ += key;
    return parent;
  }

  size_t push_key(PyId key) {
    const PyValue& k = arena_[key];
    switch (k.kind) {
      case PyKind::string: return push(k.text);
      case PyKind::integer: return push(std::to_string(k.integer));
      case PyKind::boolean: return push(k.integer ? "True" : "False");
      case PyKind::none: return push("None");
      default:
        throw Error(ErrorCode::invalid_format,
                    fmt::format("a dict under '{}' has a {} key; tensor names need str or int keys",
                                shown_path(), py_kind_name(k.kind)),
                    {.source = source_});
    }
  }

  // The path for a message, cut short: it may be megabytes long.
  std::string shown_path() const {
    constexpr size_t kShown = 200;
    return path_.size() <= kShown ? path_ : path_.substr(0, kShown) + "...";
  }

  template <typename T>
  void value(T&& v, uint64_t text_bytes) {
    budget_.charge(kEntryOverhead + path_.size() + text_bytes, "a metadata value");
    out_.values[path_] = std::forward<T>(v);
  }

  void skip(std::string reason) {
    budget_.charge(kEntryOverhead + path_.size() + reason.size(), "a skipped object's reason");
    out_.skipped[path_] = std::move(reason);
  }

  void add_tensor(uint32_t index) {
    // The name is kept three times: in names_, in out_.tensors and in its TensorEntry.
    budget_.charge(3 * (kEntryOverhead + path_.size()), "a tensor name");
    if (!names_.insert(path_).second)
      throw Error(ErrorCode::invalid_format,
                  fmt::format("two tensors are both named '{}'", shown_path()),
                  {.source = source_, .tensor = path_});
    out_.tensors.emplace_back(path_, index);
  }

  const PyArena& arena_;
  const TorchHooks& hooks_;
  const Limits& limits_;
  PickleBudget& budget_;
  const std::string& source_;
  TorchObjects out_;
  std::unordered_set<std::string, StringHash, CountedEqual> names_;
  std::string path_;  // the name of the value being visited
  uint64_t path_charged_ = 0;
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
                                   const Limits& limits, PickleBudget& budget,
                                   const std::string& source_name) {
  return Collector(arena, hooks, limits, budget, source_name).run(root);
}

std::vector<TensorEntry> torch_entries(
    const TorchObjects& objects, const TorchHooks& hooks,
    const std::vector<std::shared_ptr<ByteSource>>& storage_bytes, ByteOrder byte_order,
    const Limits& limits, const std::string& source_name) {
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
      check_view_expansion(e, limits);
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace ballast
