// `ballast load --cooperative` (see cooperative_load.hpp).
#include "cooperative_load.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "ballast/cuda.hpp"
#include "ballast/distributed.hpp"
#include "ballast/hash.hpp"
#if BALLAST_HAVE_MPI
#include "ballast/mpi_communicator.hpp"
#endif
#if BALLAST_HAVE_NCCL
#include "ballast/nccl_communicator.hpp"
#include "wording.hpp"
#endif

namespace ballast::cli {
namespace {

#if BALLAST_HAVE_MPI
// MPI for the life of one command: initialized on entry, finalized on every way out.
class MpiSession {
 public:
  MpiSession() { MPI_Init(nullptr, nullptr); }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

// Every selected tensor of `source`, with the --transform/--dtype steps; with --shard, this
// rank's shard first (tensors with too few dimensions stay whole, as replicated ones are).
std::vector<TensorSpec> specs_for(const CooperativeLoadOptions& options, WeightLoader& loader,
                                  const WeightSource& source, int rank, int world, Device device) {
  const WeightMetadata meta = loader.get_metadata(source);
  std::vector<std::string> names;
  for (const auto& [name, info] : meta.tensors) names.push_back(name);
  const bool raw = source.format && source.format->kind == WeightFormat::Kind::raw;
  const auto steps = load_steps(options.source, options.transform, raw);
  std::vector<TensorSpec> specs;
  for (const std::string& name : select_tensors(names, options.tensors)) {
    TensorSpec spec{.name = name, .device = device, .source = source};
    auto info = meta.tensors.find(name);
    const auto dims = info == meta.tensors.end() ? 0 : static_cast<int>(info->second.shape.size());
    if (options.shard && options.shard_dim < dims && options.shard_dim >= -dims)
      spec.transformations.push_back(Shard{.rank = rank, .world = world, .dim = options.shard_dim});
    spec.transformations.insert(spec.transformations.end(), steps.begin(), steps.end());
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Rank 0 prints every rank's text in rank order: mpirun forwards each rank's output in chunks,
// so long lines printed by several ranks at once could interleave.
void print_in_rank_order(Communicator& comm, const std::string& text) {
  const auto world = static_cast<size_t>(comm.size());
  const auto me = static_cast<size_t>(comm.rank());
  std::vector<uint64_t> sizes(world), offsets(world), eight(world, 8);
  for (size_t r = 0; r < world; ++r) offsets[r] = 8 * r;
  sizes[me] = text.size();
  comm.allgatherv_in_place(std::as_writable_bytes(std::span(sizes)), eight, offsets);
  uint64_t total = 0;
  for (size_t r = 0; r < world; ++r) {
    offsets[r] = total;
    total += sizes[r];
  }
  std::string all(total, '\0');
  std::copy(text.begin(), text.end(), all.begin() + static_cast<std::ptrdiff_t>(offsets[me]));
  comm.allgatherv_in_place(std::as_writable_bytes(std::span(all)), sizes, offsets);
  if (me == 0) std::cout << all << std::flush;
}

std::string report(const CooperativeLoadOptions& options, const std::vector<TensorSpec>& specs,
                   const CooperativeResult& result, int rank, int world, Device device,
                   double seconds) {
  uint64_t bytes = 0;
  nlohmann::json tensors = nlohmann::json::object();
  for (size_t i = 0; i < specs.size(); ++i)
    for (const TensorRef& t : tensors_of(result.tensors[i])) {
      bytes += t->nbytes();
      const std::string name =
          t == result.tensors[i] ? specs[i].name : fmt::format("{}.{}", specs[i].name, t->name());
      tensors[name] = {{"dtype", dtype_name(t->dtype())}, {"shape", t->shape()}};
      if (t->device().is_host()) tensors[name]["sha256"] = sha256_hex(*t);
    }
  if (options.json) {
    const nlohmann::json out = {{"rank", rank},
                                {"world", world},
                                {"device", to_string(device)},
                                {"source", source_text(options.source)},
                                {"storage_bytes", result.storage_bytes},
                                {"received_bytes", result.received_bytes},
                                {"verified_bytes", result.verified_bytes},
                                {"rounds", result.rounds},
                                {"bytes", bytes},
                                {"seconds", seconds},
                                {"tensors", tensors}};
    return json_text(out, -1) + "\n";
  }
  return fmt::format(
      "rank {} of {}: {}, {} on {} in {:.3f} s; read {} from storage, received {} from "
      "the other ranks in {} rounds\n",
      rank, world, counted(specs.size(), "tensor"), human_bytes(bytes), to_string(device), seconds,
      human_bytes(result.storage_bytes), human_bytes(result.received_bytes), result.rounds);
}

// This rank's GPU for --device cuda: its rank among the ranks of its host, modulo the host's
// GPUs; more ranks on a host than GPUs, or no GPU, fail with Error(unsupported).
int local_gpu(Communicator& comm) {
#if BALLAST_HAVE_NCCL
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &local);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  const int gpus = cuda_device_count();
  if (gpus == 0)
    throw Error(ErrorCode::unsupported,
                fmt::format("--device cuda: rank {} sees no CUDA device (no GPU or driver here)",
                            comm.rank()));
  if (local_size > gpus)
    throw Error(ErrorCode::unsupported,
                fmt::format("--device cuda: {} ranks on rank {}'s host but {} CUDA devices: run "
                            "one rank per GPU (mpirun -np {} on one host)",
                            local_size, comm.rank(), gpus, gpus));
  return local_rank % gpus;
#else
  (void)comm;
  throw Error(ErrorCode::unsupported,
              "--device cuda needs ballast built with CUDA and NCCL (BALLAST_NCCL; NCCL comes "
              "with the CUDA toolkit or libnccl-dev)");
#endif
}

#endif  // BALLAST_HAVE_MPI

}  // namespace

void run_cooperative_load(const CooperativeLoadOptions& options) {
#if BALLAST_HAVE_MPI
  MpiSession mpi;
  auto comm = make_mpi_communicator(MPI_COMM_WORLD);
  // Each rank reads only ranges of a remote source: nothing is downloaded whole.
  WeightLoaderConfig config = loader_config(options.source);
  config.enable_caching = false;
  auto loader = make_weight_loader(config);
  try {
    const WeightSource source = parse_source(options.source);
    const auto start = std::chrono::steady_clock::now();
    std::vector<TensorSpec> specs;
    Device device = Device::cpu();
    std::exception_ptr failure;
    try {
      if (options.device == "cuda") device = Device::cuda(local_gpu(*comm));
      specs = specs_for(options, *loader, source, comm->rank(), comm->size(), device);
    } catch (...) {
      failure = std::current_exception();
    }
    agree_on_failure(*comm, failure, "listing the tensors");
    // Over NCCL the exchange is in device memory; the MPI communicator carries the agreements.
    std::unique_ptr<Communicator> exchange;
#if BALLAST_HAVE_NCCL
    if (!device.is_host()) exchange = make_nccl_communicator(*comm, device.index);
#endif
    const CooperativeResult result = load_cooperative(*loader, exchange ? *exchange : *comm, specs,
                                                      {.round_bytes = options.round_bytes});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_in_rank_order(
        *comm, report(options, specs, result, comm->rank(), comm->size(), device, seconds));
  } catch (const std::exception& e) {
    fmt::print(stderr, "ballast: error: {}\n", e.what());
    std::fflush(stderr);
    try {
      comm->allreduce_max(0);          // every rank has printed its error
    } catch (const std::exception&) {  // the communicator itself failed: nothing to wait for
    }
    throw ReportedFailure(e.what());
  }
#else
  (void)options;
  throw Error(ErrorCode::unsupported,
              "--cooperative needs ballast built with MPI (install libopenmpi-dev and configure "
              "with -DBALLAST_MPI=ON; the app preset leaves MPI out)");
#endif
}

}  // namespace ballast::cli
