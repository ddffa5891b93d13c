// The NumPy formats: a single array in a .npy file (named `arr_0`), and .npz archives (a zip of
// .npy members, stored or deflated; each tensor is named after its member without `.npy`).
//
// .npy layout and validation: npy_header.hpp. Fortran-order arrays become strided views, and
// big-endian arrays carry ByteOrder::big, so the loader copies them into C-order little-endian
// tensors. In an .npz, members that hold no tensor (strings, dates, records, non-.npy files)
// are skipped and listed in Index::extra as {"skipped": {"<name>": "<reason>"}}; object arrays
// (pickles) are refused outright, in both forms. Stateless and thread-safe.
#pragma once

#include <memory>

#include "ballast/parser.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> make_numpy_parser();

}  // namespace ballast
