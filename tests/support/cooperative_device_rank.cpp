// One rank of the device cooperative-load tests (tests/cooperative_device_test.cpp), run under
// mpirun: `cooperative_device_rank host|nccl FILE OUT_DIR [--shard DIM] [--cast DTYPE]` loads
// every tensor of FILE cooperatively into device memory and writes OUT_DIR/rankR.json:
// {rank, world, storage_bytes, received_bytes, tensors: name -> sha256 of the bytes copied
// back to the host} or {rank, error}.
//   host: the host-memory device backend stands in for cuda:0 on every rank, and the ranks
//         exchange its "device" memory (host memory) over MPI: the device routing of
//         load_cooperative, tested on the CPU over a real transport;
//   nccl: each rank on its GPU (its rank among the host's ranks), exchanged over NCCL.
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ballast/ballast.hpp"
#include "ballast/distributed.hpp"
#include "ballast/hash.hpp"
#include "ballast/mpi_communicator.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_tensor_factory.hpp"
#include "cuda/host_device_backend.hpp"
#if BALLAST_HAVE_NCCL
#include "ballast/nccl_communicator.hpp"
#endif

namespace {

using namespace ballast;

// The MPI communicator, its buffers declared to be the host backend's cuda:0 memory.
class HostBackendCommunicator final : public Communicator {
 public:
  explicit HostBackendCommunicator(Communicator& mpi) : mpi_(mpi) {}
  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  Device memory_device() const override { return Device::cuda(0); }
  Communicator& control() override { return mpi_; }
  void allgatherv_in_place(std::span<std::byte> buffer, std::span<const uint64_t> counts,
                           std::span<const uint64_t> displacements) override {
    mpi_.allgatherv_in_place(buffer, counts, displacements);
  }
  void alltoallv(std::span<const std::byte> send, std::span<const uint64_t> send_counts,
                 std::span<const uint64_t> send_displacements, std::span<std::byte> recv,
                 std::span<const uint64_t> recv_counts,
                 std::span<const uint64_t> recv_displacements) override {
    mpi_.alltoallv(send, send_counts, send_displacements, recv, recv_counts, recv_displacements);
  }
  void broadcast(std::span<std::byte> bytes, int root) override { mpi_.broadcast(bytes, root); }
  int64_t allreduce_max(int64_t value) override { return mpi_.allreduce_max(value); }

 private:
  Communicator& mpi_;
};

int local_rank() {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int rank = 0;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_free(&local);
  return rank;
}

nlohmann::json run(Communicator& mpi, const std::string& mode, const std::string& file,
                   std::optional<int> shard_dim, std::optional<DType> cast) {
  const bool host = mode == "host";
  const Device device = Device::cuda(host ? 0 : local_rank());
  std::shared_ptr<DeviceBackend> backend =
      host ? make_host_device_backend({.device = device}) : cuda_backend(device.index);
  WeightLoaderConfig config;
  std::shared_ptr<TensorFactory> factory;
  if (host) {
    factory = make_device_tensor_factory(backend);
    config.factories = {factory};
  }
  auto loader = make_weight_loader(config);
  const WeightSource source = WeightSource::file(file);
  std::vector<TensorSpec> specs;
  for (const auto& [name, info] : loader->get_metadata(source).tensors) {
    TensorSpec spec{.name = name, .device = device, .source = source};
    if (shard_dim && *shard_dim < static_cast<int>(info.shape.size()))
      spec.transformations.push_back(
          Shard{.rank = mpi.rank(), .world = mpi.size(), .dim = *shard_dim});
    if (cast) spec.transformations.push_back(Cast{.dtype = *cast});
    specs.push_back(std::move(spec));
  }
  std::unique_ptr<Communicator> exchange;
  if (host) exchange = std::make_unique<HostBackendCommunicator>(mpi);
#if BALLAST_HAVE_NCCL
  else
    exchange = make_nccl_communicator(mpi, device.index);
#endif
  if (!exchange) throw Error(ErrorCode::unsupported, "built without NCCL");
  const CooperativeResult result =
      load_cooperative(*loader, *exchange, specs, {.device_factory = factory});
  nlohmann::json tensors = nlohmann::json::object();
  for (size_t i = 0; i < specs.size(); ++i) {
    const Tensor& t = *result.tensors[i];
    if (t.device() != device)
      throw Error(ErrorCode::integrity, "a result is not on " + to_string(device));
    std::vector<std::byte> bytes(t.nbytes());
    if (!bytes.empty()) backend->copy_to_host(bytes.data(), t.data(), t.nbytes());
    tensors[specs[i].name] = sha256_hex(bytes);
  }
  return {{"rank", mpi.rank()},
          {"world", mpi.size()},
          {"storage_bytes", result.storage_bytes},
          {"received_bytes", result.received_bytes},
          {"tensors", tensors}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s host|nccl FILE OUT_DIR [--shard DIM] [--cast DTYPE]\n",
                 argv[0]);
    return 2;
  }
  std::optional<int> shard_dim;
  std::optional<DType> cast;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--shard") shard_dim = std::stoi(argv[i + 1]);
    if (flag == "--cast") cast = parse_dtype(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  int code = 0;
  {
    auto mpi = make_mpi_communicator(MPI_COMM_WORLD);
    nlohmann::json out;
    try {
      out = run(*mpi, argv[1], argv[2], shard_dim, cast);
    } catch (const std::exception& e) {
      out = {{"rank", mpi->rank()}, {"error", e.what()}};
      code = 1;
    }
    std::ofstream(std::string(argv[3]) + "/rank" + std::to_string(mpi->rank()) + ".json")
        << out.dump() << "\n";
    mpi->allreduce_max(0);  // every rank has written its report before any exits
  }
  MPI_Finalize();
  return code;
}
