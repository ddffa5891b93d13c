// The PyTorch FormatParser: torch.save checkpoints (.bin, .pt, .pth), zip or legacy, read by
// a restricted unpickler that never runs code (pickle_machine.hpp, torch_hooks.hpp).
//
// Detection is by content, never by name: a zip whose first record is <root>/data.pkl (or
// another torch record), or a pickle that starts with torch's magic number. Tensors are named
// by their path in the saved object (torch_checkpoint.hpp); Index::extra holds the container,
// pickle protocol, byte order, the plain values found next to the tensors ("values") and the
// tensors ballast cannot load, with the reason ("skipped"). Stateless and thread-safe.
#pragma once

#include <memory>

#include "ballast/parser.hpp"

namespace ballast {

std::shared_ptr<const FormatParser> make_pytorch_parser();

}  // namespace ballast
