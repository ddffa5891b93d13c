// Hand-built torch.save files for hostile-input tests: a pickle opcode writer, the standard
// tensor-rebuild sequence, and the legacy and zip containers around a pickle. Lets a test
// state exactly which bytes are wrong. Header-only, test use only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/zip_writer.hpp"

namespace ballast::test {

class PickleBuilder {
 public:
  PickleBuilder& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }
  PickleBuilder& op(char opcode) {
    out_ += opcode;
    return *this;
  }
  PickleBuilder& proto(int protocol) {
    out_ += '\x80';
    out_ += static_cast<char>(protocol);
    return *this;
  }
  PickleBuilder& global(const std::string& module, const std::string& name) {
    return raw("c" + module + "\n" + name + "\n");
  }
  PickleBuilder& str(const std::string& s) {
    op('X');
    le(s.size(), 4);
    return raw(s);
  }
  PickleBuilder& integer(int64_t v) {
    op('J');
    le(static_cast<uint64_t>(v), 4);
    return *this;
  }
  PickleBuilder& ints(const std::vector<int64_t>& values) {  // a tuple of ints
    mark();
    for (int64_t v : values) integer(v);
    return op('t');
  }
  PickleBuilder& mark() { return op('('); }
  PickleBuilder& stop() { return op('.'); }

  // persistent id ('storage', torch.<type>, key, 'cpu', numel)
  PickleBuilder& storage(const std::string& type, const std::string& key, int64_t numel) {
    mark().str("storage").global("torch", type).str(key).str("cpu").integer(numel).op('t');
    return op('Q');
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  PickleBuilder& tensor(const std::string& type, const std::string& key, int64_t numel,
                        int64_t offset, const std::vector<int64_t>& size,
                        const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    storage(type, key, numel).integer(offset).ints(size).ints(stride).op('\x89');
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }

  std::string bytes() const { return out_; }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
};

struct LegacyStorage {
  std::string key;
  uint64_t count = 0;  // element count written before the bytes
  std::string bytes;
};

inline std::string le64(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// A legacy torch.save file: magic, protocol 1001, sys_info, `object`, the keys, the storages.
inline std::string legacy_torch_file(const std::string& object,
                                     const std::vector<LegacyStorage>& storages) {
  std::string file = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.";
  file += "\x80\x02M\xe9\x03.";
  file += PickleBuilder().proto(2).op('}').str("little_endian").op('\x88').op('s').stop().bytes();
  file += object;
  PickleBuilder keys;
  keys.proto(2).op(']').mark();
  for (const auto& s : storages) keys.str(s.key);
  file += keys.op('e').stop().bytes();
  for (const auto& s : storages) file += le64(s.count) + s.bytes;
  return file;
}

// A torch zip: <root>/data.pkl, <root>/data/<key> for each storage, <root>/version.
inline std::string torch_zip_file(const std::string& data_pkl,
                                  const std::vector<std::pair<std::string, std::string>>& storages,
                                  const std::string& root = "archive", bool deflate = false) {
  std::vector<ZipEntrySpec> entries = {{.name = root + "/data.pkl", .data = data_pkl}};
  for (const auto& [key, bytes] : storages)
    entries.push_back({.name = root + "/data/" + key, .data = bytes, .deflate = deflate});
  entries.push_back({.name = root + "/version", .data = "3\n"});
  return ZipWriter::build(entries).bytes;
}

}  // namespace ballast::test
