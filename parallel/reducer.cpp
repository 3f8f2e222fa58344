// make_reducer: the one place that decides how a bucket is reduced (see reducer.hpp).
#include "reducer.hpp"

namespace cohort::parallel::detail {

bool comm_can_use(const comm::Communicator& comm, const Device& dev) {
  const comm::Capabilities c = comm.capabilities();
  return dev.host_accessible() ? c.host_memory : c.device_memory;
}

std::unique_ptr<Reducer> make_reducer(const DDPOptions& options, comm::Communicator& comm,
                                      Device& dev, std::int64_t numel,
                                      comm::Communicator* replica) {
  // The deterministic reducer does its arithmetic on the host, whatever the device; the compressed
  // ones on the parameters' device.
  // Stage 2 releases the bucket between steps; alone (one rank) the whole gradient is the shard.
  if (options.zero_stage > 0)
    return make_sharded_reducer(comm, dev, numel, options.deterministic,
                                options.zero_stage >= 2 && comm.size() > 1, replica);
  if (options.deterministic) return make_deterministic_reducer(comm, dev, numel);
  if (options.bf16_compression) return make_compressed_reducer(comm, dev, numel, DType::bf16);
  if (options.f16_compression) return make_compressed_reducer(comm, dev, numel, DType::f16);
  if (comm_can_use(comm, dev)) return make_plain_reducer(comm, dev, numel);
  return make_host_staged_reducer(comm, dev, numel);
}

}  // namespace cohort::parallel::detail
