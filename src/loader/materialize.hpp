// The materializer: executes a LoadPlan, producing the tensor's bytes. It returns a zero-copy
// view of a mapped file when the plan allows (contiguous, little-endian, aligned, no value
// steps, mapping permitted), and otherwise fills one owned, aligned buffer: contiguous runs are
// read straight into it, strided views are gathered, big-endian elements swapped, and value
// steps run over cache-sized blocks so that no full-size intermediate copy is ever made. A plan
// ending in Quantize materializes the dense f32 weight and returns its quantized bundle.
#pragma once

#include <memory>
#include <string>

#include "ballast/config.hpp"
#include "ballast/tensor.hpp"
#include "io/read_engine.hpp"
#include "transform/plan.hpp"

namespace ballast {

struct MaterializeOptions {
  ReadMode read_mode = ReadMode::automatic;
  size_t alignment = 64;
  TensorFactory* host_factory = nullptr;  // allocates owned host buffers
  // How owned bytes are read: chunking, I/O method, helpers and this thread's staging share
  // (a strided view's staged copy, O_DIRECT bounce buffers).
  ReadEngineOptions io;
  // MappingPolicy::mapping(plan), looked up by the caller: a batch asks once per file, since
  // each ask re-checks the file's size with a system call.
  std::shared_ptr<const MappedRegion> mapping;
};

// The mapping materialize may view or copy the plan's bytes through in `mode`: null in read
// and direct modes and for sources that cannot be mapped (or whose file has shrunk). The
// loader's MappingPolicy chooses between it and private writable mappings.
std::shared_ptr<const MappedRegion> mapping_for(const LoadPlan& plan, ReadMode mode);

std::shared_ptr<Tensor> materialize(const LoadPlan& plan, const std::string& name,
                                    const MaterializeOptions& options);

// True when the plan's tensor is the mapped bytes themselves (materialize returns a view): no
// value steps or byte swap, one contiguous run, aligned for its dtype.
bool can_view_without_copy(const LoadPlan& plan, const MappedRegion* mapping);

// True when materialize allocates exactly one owned host buffer, of plan.out_nbytes, for the
// plan, given its mapping: the tensor is neither a view of a mapped file nor a quantized
// bundle.
bool fills_one_owned_buffer(const LoadPlan& plan, const MappedRegion* mapping);

// True when materialize would copy the plan's stored bytes unchanged into an owned buffer with
// one contiguous read: no value steps, quantize or byte swap, and no mapping to view or copy
// from (so never in mmap mode; `mapping` is the plan's mapping). Such reads of small
// tensors may be coalesced.
bool is_plain_owned_read(const LoadPlan& plan, ReadMode mode, const MappedRegion* mapping);

}  // namespace ballast
