// A TensorFactory that places loaded tensors one after another in one block of host memory
// the caller owns: a preallocated model arena, or a pinned staging buffer that is already
// faulted in, so a load writes straight into resident memory and pays no page faults. Put it
// in WeightLoaderConfig::factories to have every host tensor placed there.
//
// Thread-safe (an atomic bump pointer). The space of a released tensor is not reused: for a
// new load into the same block, make a new factory once the earlier tensors are gone.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "ballast/tensor.hpp"

namespace ballast {

// The factory's tensors are Storage of kind caller_memory inside `block`; each keeps `owner`
// (may be null when the caller keeps the block alive itself) until the last of them is gone.
// allocate() throws Error(limit_exceeded) when a tensor does not fit in what is left.
std::shared_ptr<TensorFactory> make_arena_tensor_factory(std::span<std::byte> block,
                                                         std::shared_ptr<const void> owner = {});

}  // namespace ballast
