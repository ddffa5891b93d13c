// A restricted pickle machine: it reads the opcodes of pickle protocols 0-5 that data pickles
// use and builds plain values in a PyArena. It never imports or calls anything: every global,
// call (REDUCE, NEWOBJ), BUILD and persistent id is handed to PickleHooks, which decide what a
// name means (torch_hooks.hpp allows only what torch.load(weights_only=True) allows).
//
// Why hand-written: no C++ library unpickles without executing, and Python's pickle is the
// thing we must not run. Hostile input: every length is checked against the bytes left and
// `limits.max_string_length`; the stream, memo, stack and nesting depth are bounded by Limits;
// opcodes that need code (INST, OBJ, EXT*, out-of-band buffers) are refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ballast/byte_source.hpp"
#include "ballast/limits.hpp"
#include "formats/pytorch/pickle_value.hpp"

namespace ballast {

// What a pickle's globals and calls mean. Each method throws Error to refuse; the machine adds
// where in the stream it happened.
class PickleHooks {
 public:
  virtual ~PickleHooks() = default;
  virtual PyId global(PyArena& arena, std::string_view module, std::string_view name) = 0;
  virtual PyId call(PyArena& arena, PyId callable, PyId args) = 0;   // REDUCE
  virtual PyId new_object(PyArena& arena, PyId cls, PyId args) = 0;  // NEWOBJ
  virtual PyId persistent_load(PyArena& arena, PyId pid) = 0;        // PERSID, BINPERSID
  virtual void build(PyArena& arena, PyId object, PyId state) = 0;   // BUILD
};

// Where a pickle stream lives: at most `length` bytes of `source` starting at `offset` (the
// pickle may end earlier, at its STOP), described as `where` in errors ("archive/data.pkl").
// A pickle may use at most Limits::max_pickle_bytes of them.
struct PickleStream {
  const ByteSource* source = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string where;
};

struct UnpickleResult {
  PyId value = 0;
  uint64_t end = 0;  // offset in the source just after the STOP opcode
  int protocol = 0;  // from the PROTO opcode (0 when absent)
};

// Runs one pickle (up to its STOP) from `stream`. Throws Error(invalid_format) for a malformed
// or truncated stream, Error(limit_exceeded) past `limits`, and whatever the hooks throw, each
// naming the source, `stream.where` and the byte offset of the offending opcode.
UnpickleResult unpickle(const PickleStream& stream, const Limits& limits, PyArena& arena,
                        PickleHooks& hooks);

}  // namespace ballast
