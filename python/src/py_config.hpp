// WeightLoaderConfig from the keyword arguments of ballast.Loader(**config): one keyword per
// field, named as in C++ (config.hpp); `limits` is a dict of Limits fields.
#pragma once

#include <nanobind/nanobind.h>

#include "ballast/config.hpp"

namespace ballast::python {

// Calls f(name, &Limits::member) for every field of Limits.
template <typename F>
void for_each_limit(F&& f) {
  f("max_header_bytes", &Limits::max_header_bytes);
  f("max_tensors", &Limits::max_tensors);
  f("max_dims", &Limits::max_dims);
  f("max_tensor_bytes", &Limits::max_tensor_bytes);
  f("max_metadata_entries", &Limits::max_metadata_entries);
  f("max_string_length", &Limits::max_string_length);
  f("max_json_depth", &Limits::max_json_depth);
  f("max_inflated_bytes", &Limits::max_inflated_bytes);
  f("max_inflate_ratio", &Limits::max_inflate_ratio);
  f("max_pickle_bytes", &Limits::max_pickle_bytes);
  f("max_pickle_memo", &Limits::max_pickle_memo);
  f("max_pickle_stack", &Limits::max_pickle_stack);
  f("max_pickle_depth", &Limits::max_pickle_depth);
  f("max_pickle_amplification", &Limits::max_pickle_amplification);
  f("max_pickle_materialized_bytes", &Limits::max_pickle_materialized_bytes);
  f("max_view_expansion", &Limits::max_view_expansion);
}

// Needs the GIL. Raises TypeError for an unknown keyword, ValueError for a bad value.
// `on_download_progress` is not among the keywords: the Loader holds it (py_progress.hpp).
WeightLoaderConfig to_config(const nanobind::dict& options);

}  // namespace ballast::python
