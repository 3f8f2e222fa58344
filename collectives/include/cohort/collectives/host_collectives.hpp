// Collectives on small host arrays (a metric, a hash, a digest) with any communicator.
//
// A communicator that takes only device memory (nccl; PyTorch's NCCL group refuses CPU tensors
// the same way) gets them through a scratch buffer on `dev`, the device the caller computes on;
// every other communicator takes the host memory as it is. Library code that reduces host values
// (the Trainer's metrics, DDP's same-model check and digest comparison, the examples) calls these,
// so that it works unchanged with `--comm nccl`. Blocking; for small arrays only (each call
// allocates and copies).
#pragma once

#include <cstddef>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"

namespace cohort::comm {

// values[i] = op over ranks of values[i], in place. `dev` is used only when `comm` cannot take
// host memory, and then must be a device it can take (nullptr: an error naming the call).
void allreduce_host(Communicator& comm, Device* dev, void* values, std::size_t count, DType dtype,
                    ReduceOp op, Timeout timeout = kDefaultTimeout);
// recv[r * count + i] = send of rank r [i]; recv holds size() * count elements.
void allgather_host(Communicator& comm, Device* dev, const void* send, void* recv,
                    std::size_t count, DType dtype, Timeout timeout = kDefaultTimeout);

}  // namespace cohort::comm
