// WeightLoaderConfig from keyword arguments (see py_config.hpp).
#include "py_config.hpp"

#include <functional>
#include <map>
#include <string>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace ballast::python {
namespace {

template <typename T>
using Setter = std::function<void(T&, nb::handle)>;

template <typename T, typename Field>
std::pair<const std::string, Setter<T>> field(const char* name, Field T::*member) {
  return {name, [name, member](T& target, nb::handle value) {
            Field converted;
            if (!nb::try_cast(value, converted))
              throw nb::type_error((std::string(name) + ": " +
                                    nb::cast<std::string>(nb::repr(value)) + " has the wrong type")
                                       .c_str());
            target.*member = std::move(converted);
          }};
}

template <typename T>
void apply(T& target, const nb::dict& options, const std::map<std::string, Setter<T>>& setters,
           const char* what) {
  for (auto [key, value] : options) {
    auto name = nb::cast<std::string>(key);
    auto it = setters.find(name);
    if (it == setters.end())
      throw nb::type_error(
          (std::string(what) + " got an unexpected keyword argument '" + name + "'").c_str());
    it->second(target, value);
  }
}

Limits to_limits(nb::handle value) {
  static const auto setters = [] {
    std::map<std::string, Setter<Limits>> table;
    for_each_limit([&](const char* name, auto member) { table.insert(field(name, member)); });
    return table;
  }();
  Limits limits;
  apply(limits, nb::cast<nb::dict>(value), setters, "limits");
  return limits;
}

ReadMode to_read_mode(nb::handle value) {
  auto name = nb::cast<std::string>(value);
  if (name == "auto") return ReadMode::automatic;
  for (ReadMode mode :
       {ReadMode::automatic, ReadMode::mmap, ReadMode::read, ReadMode::io_uring, ReadMode::direct})
    if (name == read_mode_name(mode)) return mode;
  throw nb::value_error(
      ("read_mode is 'auto', 'mmap', 'read', 'io_uring' or 'direct', not '" + name + "'").c_str());
}

MappedWrites to_mapped_writes(nb::handle value) {
  auto name = nb::cast<std::string>(value);
  if (name == "refused") return MappedWrites::refused;
  if (name == "call") return MappedWrites::per_call;
  if (name == "loader") return MappedWrites::per_loader;
  throw nb::value_error(
      ("mapped_writes is 'call', 'loader' or 'refused', not '" + name + "'").c_str());
}

GpuDirectStorage to_gpu_direct_storage(nb::handle value) {
  auto name = nb::cast<std::string>(value);
  if (name == "auto") return GpuDirectStorage::automatic;
  if (name == "off") return GpuDirectStorage::off;
  if (name == "required") return GpuDirectStorage::required;
  throw nb::value_error(
      ("gpu_direct_storage is 'auto', 'off' or 'required', not '" + name + "'").c_str());
}

}  // namespace

WeightLoaderConfig to_config(const nb::dict& options) {
  using C = WeightLoaderConfig;
  static const std::map<std::string, Setter<C>> setters = {
      field("enable_caching", &C::enable_caching),
      field("cache_dir", &C::cache_dir),
      field("max_cache_size", &C::max_cache_size),
      field("max_concurrent_downloads", &C::max_concurrent_downloads),
      field("download_chunk_bytes", &C::download_chunk_bytes),
      field("download_timeout_seconds", &C::download_timeout_seconds),
      field("download_retries", &C::download_retries),
      field("enable_integrity_checks", &C::enable_integrity_checks),
      field("default_headers", &C::default_headers),
      field("ca_bundle", &C::ca_bundle),
      field("verify_tls", &C::verify_tls),
      {"read_mode", [](C& c, nb::handle v) { c.read_mode = to_read_mode(v); }},
      {"mapped_writes", [](C& c, nb::handle v) { c.mapped_writes = to_mapped_writes(v); }},
      field("num_threads", &C::num_threads),
      field("alignment", &C::alignment),
      field("read_chunk_bytes", &C::read_chunk_bytes),
      field("max_staging_bytes", &C::max_staging_bytes),
      {"gpu_direct_storage",
       [](C& c, nb::handle v) { c.gpu_direct_storage = to_gpu_direct_storage(v); }},
      {"limits", [](C& c, nb::handle v) { c.limits = to_limits(v); }},
  };
  WeightLoaderConfig config;
  apply(config, options, setters, "Loader()");
  return config;
}

}  // namespace ballast::python
